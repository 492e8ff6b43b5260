//! The wire contract both backends share: what a backend receives (the input, or the envelope of
//! a resumed task), what its answer and its stream events may be, and a line reader that never
//! holds more than a fixed number of bytes. `docs/backends.md` is the reader's version of this
//! module; a change here is a change there.

use accord_engine::{Artifact, Completion, Message, Outcome, Part, Role, Run, RunEvent, SkillError};
use serde_json::{Map, Value};

/// The longest text taken from a backend for a message the caller sees (a refusal's reason, an
/// error's message): a backend cannot make an error body as large as its answer cap.
pub(crate) const MAX_REASON_CHARS: usize = 1024;

/// The error a cancelled run returns. The engine discards it (a cancelled run's result is
/// ignored), so it only has to be honest.
pub(crate) fn cancelled() -> SkillError {
    SkillError::new("cancelled", "the run was cancelled")
}

/// `Some(body)` for a run that resumes a task that waited for the caller: `{"input", "history"}`.
/// A first run — every direct invocation or stream, and a task's first run — gets `None`, and
/// its backend receives the input itself.
pub(crate) fn envelope(run: &Run) -> Option<Value> {
    let task = run.task()?;
    // The payment exchange of a paid A2A task (the x402 extension's messages) is the server's,
    // not the skill's: the backend sees neither it nor, for it, a resumed run.
    let conversation: Vec<&Message> = task.history.iter().filter(|message| !is_payment_turn(message)).collect();
    // A new task's history holds only the caller's message; the agent speaks in it only once
    // the task asked for something and was answered.
    if !conversation.iter().any(|message| message.role == Role::Agent) {
        return None;
    }
    let history = serde_json::to_value(&conversation).unwrap_or(Value::Array(Vec::new()));
    let mut body = Map::new();
    body.insert("input".into(), run.input().clone());
    body.insert("history".into(), history);
    Some(Value::Object(body))
}

/// A message of the x402 extension's payment exchange (`x402.payment.status` in its metadata).
pub(crate) fn is_payment_turn(message: &Message) -> bool {
    message.metadata.as_ref().is_some_and(|metadata| metadata.contains_key("x402.payment.status"))
}

/// What a backend's request body is for `run`: the input, or the envelope of a resumed task.
pub(crate) fn request_body(run: &Run) -> Value {
    envelope(run).unwrap_or_else(|| run.input().clone())
}

/// `text` cut to at most `max` characters (on a character boundary), marked when cut.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// A backend's failure that is the skill's, not the caller's: a failed run.
pub(crate) fn failure(code: &str, message: impl Into<String>) -> SkillError {
    SkillError::new(code, message)
}

/// The answer is not what the contract allows.
pub(crate) fn invalid_answer(message: impl Into<String>) -> SkillError {
    failure("backend_invalid_answer", message)
}

/// Reads `{"message": "...", "data": ...}` as the agent's message (text part, then data part).
fn agent_message(value: &Value, shape: &str) -> Result<Message, SkillError> {
    let object = value
        .as_object()
        .ok_or_else(|| invalid_answer(format!("`{shape}` must be an object such as {{\"message\": \"...\"}}")))?;
    let mut parts = Vec::new();
    match object.get("message") {
        Some(Value::String(text)) => parts.push(Part::Text(bounded(text, MAX_REASON_CHARS))),
        Some(_) => return Err(invalid_answer(format!("`{shape}.message` must be a string"))),
        None => {}
    }
    if let Some(data) = object.get("data") {
        parts.push(Part::Data(data.clone()));
    }
    if parts.is_empty() {
        return Err(invalid_answer(format!("`{shape}` needs a `message` or a `data`")));
    }
    Ok(Message::new(Role::Agent, parts))
}

/// The one key of `value`, when it is an object with exactly one key.
fn only_key(value: &Value) -> Option<(&str, &Value)> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    object.iter().next().map(|(key, value)| (key.as_str(), value))
}

/// A backend's whole answer (an HTTP JSON body, a command's last line): the output as it is,
/// unless it is an object whose one key is `input_required` or `rejected`, or an object with
/// files (`{"output", "files"}`, see [`answer_with_files`]).
pub(crate) fn outcome_of_answer(answer: Value, files: &mut Files) -> Result<Outcome, SkillError> {
    match only_key(&answer) {
        Some(("input_required", body)) => Ok(Outcome::InputRequired(agent_message(body, "input_required")?)),
        Some(("rejected", body)) => Ok(Outcome::Rejected(agent_message(body, "rejected")?)),
        _ => match answer_with_files(&answer) {
            Some(object) => completion(object, files).map(Outcome::Completed),
            None => Ok(Outcome::Completed(Completion::new(answer))),
        },
    }
}

/// The keys an answer with files may have; `output` and `files` are required.
const ANSWER_KEYS: [&str; 4] = ["output", "files", "usage", "model"];

/// `answer` as an answer with files: an object with the keys `output` and `files`, and no keys
/// beside them but `usage` and `model`. Any other JSON is an output as it is.
fn answer_with_files(answer: &Value) -> Option<&Map<String, Value>> {
    let object = answer.as_object()?;
    let shaped = object.contains_key("output")
        && object.contains_key("files")
        && object.keys().all(|key| ANSWER_KEYS.contains(&key.as_str()));
    shaped.then_some(object)
}

/// The completion of an `{"output", "files"?, "usage"?, "model"?}` object (an answer with
/// files, a stream's `output` event).
fn completion(object: &Map<String, Value>, files: &mut Files) -> Result<Completion, SkillError> {
    let mut completion = Completion::new(object.get("output").cloned().unwrap_or(Value::Null));
    completion.usage = object.get("usage").cloned();
    completion.model = object.get("model").and_then(Value::as_str).map(str::to_owned);
    match object.get("files") {
        None => {}
        Some(Value::Array(entries)) => {
            for (index, entry) in entries.iter().enumerate() {
                completion.artifacts.push(files.artifact(entry, &format!("files[{index}]"))?);
            }
        }
        Some(_) => return Err(invalid_answer("`files` must be an array of file objects")),
    }
    Ok(completion)
}

/// The files of one run, as artifacts: each file is an artifact of one file part, numbered
/// `file-1`, `file-2`, … after the task's artifacts so far (so a resumed task's files add to the
/// earlier ones instead of replacing them).
#[derive(Debug)]
pub(crate) struct Files {
    next: usize,
}

/// The keys of a file object: the same shape as the file parts of the history a backend gets.
const FILE_KEYS: [&str; 4] = ["name", "mime", "bytes_base64", "uri"];

impl Files {
    pub(crate) fn new(run: &Run) -> Self {
        Self { next: run.task().map_or(0, |task| task.artifacts.len()) + 1 }
    }

    /// The artifact of one file object (`shape` names it in errors: `files[0]`, `file`).
    pub(crate) fn artifact(&mut self, entry: &Value, shape: &str) -> Result<Artifact, SkillError> {
        let part = file_part(entry, shape)?;
        let name = match &part {
            Part::File { name, .. } => name.clone(),
            _ => None,
        };
        let artifact = Artifact { artifact_id: format!("file-{}", self.next), name, parts: vec![part] };
        self.next += 1;
        Ok(artifact)
    }
}

/// A file object: `{"name"?, "mime"?, "bytes_base64" | "uri"}` as a file part.
fn file_part(entry: &Value, shape: &str) -> Result<Part, SkillError> {
    let bad = |what: String| invalid_answer(format!("`{shape}` {what}"));
    let Some(object) = entry.as_object() else {
        return Err(bad(
            "must be an object such as {\"name\": \"a.pdf\", \"mime\": \"application/pdf\", \"bytes_base64\": \"…\"}"
                .into(),
        ));
    };
    if let Some(unknown) = object.keys().find(|key| !FILE_KEYS.contains(&key.as_str())) {
        return Err(bad(format!(
            "has an unknown key `{}` (a file has `name`, `mime`, and `bytes_base64` or `uri`)",
            bounded(unknown, 64)
        )));
    }
    let text = |key: &str| -> Result<Option<String>, SkillError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(bad(format!("has a `{key}` that is not a string"))),
        }
    };
    let (name, mime, bytes_base64, uri) = (text("name")?, text("mime")?, text("bytes_base64")?, text("uri")?);
    if let Some(mime) = &mime
        && !is_media_type(mime)
    {
        return Err(bad("has a `mime` that is not a media type such as \"application/pdf\"".into()));
    }
    match (&bytes_base64, &uri) {
        (Some(_), Some(_)) => return Err(bad("has both `bytes_base64` and `uri`: give one".into())),
        (None, None) => return Err(bad("has neither `bytes_base64` nor `uri`: give one".into())),
        (Some(bytes), None) if !is_base64(bytes) => {
            return Err(bad("has a `bytes_base64` that is not base64 (standard alphabet, padded)".into()));
        }
        (None, Some(uri)) if url::Url::parse(uri).is_err() => {
            return Err(bad("has a `uri` that is not an absolute URI".into()));
        }
        _ => {}
    }
    Ok(Part::File { name, mime, bytes_base64, uri })
}

/// `type/subtype`, optionally with parameters: what a file part's media type must look like.
fn is_media_type(text: &str) -> bool {
    let essence = text.split(';').next().unwrap_or("").trim();
    let token = |part: &str| {
        !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&byte))
    };
    matches!(essence.split_once('/'), Some((kind, sub)) if token(kind) && token(sub))
}

/// Standard base64 with padding (RFC 4648 §4), what A2A's inline file bytes are.
fn is_base64(text: &str) -> bool {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|byte| **byte == b'=').count();
    padding <= 2
        && bytes[..bytes.len() - padding]
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || *byte == b'+' || *byte == b'/')
}

/// One event of a backend's stream.
#[derive(Debug)]
pub(crate) enum StreamEvent {
    /// Forwarded to the run's watchers.
    Progress(RunEvent),
    /// Ends the run.
    End(Result<Outcome, SkillError>),
}

/// A `{"delta": "...", "mime"?: "..."}` event, or `None` when `value` is not one.
pub(crate) fn delta_of(value: &Value) -> Option<Result<RunEvent, SkillError>> {
    let object = value.as_object()?;
    let delta = object.get("delta")?;
    if object.keys().any(|key| key != "delta" && key != "mime") {
        return None;
    }
    let Value::String(delta) = delta else {
        return Some(Err(invalid_answer("`delta` must be a string")));
    };
    let mime = match object.get("mime") {
        None => None,
        Some(Value::String(mime)) => Some(mime.clone()),
        Some(_) => return Some(Err(invalid_answer("`mime` must be a string"))),
    };
    Some(Ok(RunEvent::Delta { delta: delta.clone(), mime, is_final: false }))
}

/// A `{"file": {…}}` event (an object whose one key is `file`), or `None` when `value` is not
/// one: the file as an artifact event, which task faces show as an artifact with a file part.
pub(crate) fn file_of(value: &Value, files: &mut Files) -> Option<Result<RunEvent, SkillError>> {
    let ("file", entry) = only_key(value)? else { return None };
    Some(files.artifact(entry, "file").map(|artifact| RunEvent::Artifact { artifact, append: false, last_chunk: true }))
}

/// A command's event line: a delta or a file; `None` for any other value (an answer).
pub(crate) fn command_event(value: &Value, files: &mut Files) -> Option<Result<RunEvent, SkillError>> {
    delta_of(value).or_else(|| file_of(value, files))
}

/// A code a backend may put in an `error` event: snake_case, short. Anything else is replaced.
fn backend_code(code: Option<&Value>) -> String {
    match code.and_then(Value::as_str) {
        Some(code)
            if !code.is_empty()
                && code.len() <= 64
                && code.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_') =>
        {
            code.to_owned()
        }
        _ => "backend_error".to_owned(),
    }
}

/// One event of an HTTP stream (an NDJSON line, an SSE event's data).
pub(crate) fn stream_event(value: Value, files: &mut Files) -> StreamEvent {
    if let Some(delta) = command_event(&value, files) {
        return match delta {
            Ok(event) => StreamEvent::Progress(event),
            Err(error) => StreamEvent::End(Err(error)),
        };
    }
    let Some(object) = value.as_object() else {
        return StreamEvent::End(Err(invalid_answer("a stream event is not a JSON object")));
    };
    if object.contains_key("output") {
        return StreamEvent::End(completion(object, files).map(Outcome::Completed));
    }
    if let Some(body) = object.get("input_required") {
        return StreamEvent::End(agent_message(body, "input_required").map(Outcome::InputRequired));
    }
    if let Some(body) = object.get("rejected") {
        return StreamEvent::End(agent_message(body, "rejected").map(Outcome::Rejected));
    }
    if let Some(error) = object.get("error") {
        let message = error.get("message").and_then(Value::as_str).unwrap_or("the backend reported an error");
        return StreamEvent::End(Err(failure(&backend_code(error.get("code")), bounded(message, MAX_REASON_CHARS))));
    }
    StreamEvent::End(Err(invalid_answer(
        "a stream event is none of `delta`, `file`, `output`, `input_required`, `rejected`, `error`",
    )))
}

/// A line reader over chunks of bytes that holds at most `cap` bytes in all: lines are split on
/// `\n` (a trailing `\r` dropped), and the total of the bytes fed is capped, so a backend that
/// sends more than the cap — in one line or many — is refused without being buffered.
#[derive(Debug)]
pub(crate) struct Lines {
    partial: Vec<u8>,
    total: usize,
    cap: usize,
}

/// More bytes than the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overflow;

impl Lines {
    pub(crate) fn new(cap: usize) -> Self {
        Self { partial: Vec::new(), total: 0, cap }
    }

    /// Feeds a chunk; returns the lines it completes.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, Overflow> {
        self.total = self.total.saturating_add(chunk.len());
        if self.total > self.cap {
            return Err(Overflow);
        }
        let mut lines = Vec::new();
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|byte| *byte == b'\n') {
            self.partial.extend_from_slice(&rest[..end]);
            let mut line = std::mem::take(&mut self.partial);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            lines.push(line);
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(lines)
    }

    /// The last line, when the input did not end with a newline.
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        let mut line = std::mem::take(&mut self.partial);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        (!line.is_empty()).then_some(line)
    }
}

/// Server-sent events over [`Lines`]: `data:` lines gathered until a blank line dispatches them.
/// `event:`, `id:`, `retry:` and comments are read and ignored (the data says what it is).
#[derive(Debug, Default)]
pub(crate) struct SseEvents {
    data: Option<String>,
}

impl SseEvents {
    /// Takes one line; returns an event's data when the line ends one.
    pub(crate) fn line(&mut self, line: &[u8]) -> Option<String> {
        if line.is_empty() {
            return self.data.take();
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
        None
    }

    /// The data of an event the stream ended in without a blank line.
    pub(crate) fn finish(&mut self) -> Option<String> {
        self.data.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_split_on_newlines_and_refuse_more_than_the_cap() {
        let mut lines = Lines::new(16);
        assert_eq!(lines.feed(b"ab\r\ncd").expect("fits"), vec![b"ab".to_vec()]);
        assert_eq!(lines.feed(b"e\n").expect("fits"), vec![b"cde".to_vec()]);
        assert_eq!(lines.feed(b"tail").expect("fits"), Vec::<Vec<u8>>::new());
        assert_eq!(lines.finish(), Some(b"tail".to_vec()));
        assert_eq!(lines.feed(b"0123456789"), Err(Overflow));
    }

    #[test]
    fn sse_data_lines_join_until_a_blank_line() {
        let mut events = SseEvents::default();
        assert_eq!(events.line(b": comment"), None);
        assert_eq!(events.line(b"event: delta"), None);
        assert_eq!(events.line(b"data: {\"delta\":"), None);
        assert_eq!(events.line(b"data: \"x\"}"), None);
        assert_eq!(events.line(b""), Some("{\"delta\":\n\"x\"}".to_owned()));
        assert_eq!(events.line(b""), None);
    }

    #[test]
    fn answers_are_outputs_unless_they_ask_or_refuse() {
        assert_eq!(
            outcome_of_answer(json!({"price": 3}), &mut Files { next: 1 }),
            Ok(Outcome::Completed(Completion::new(json!({"price": 3}))))
        );
        // Two keys: an output that happens to have an `input_required` field.
        assert!(matches!(
            outcome_of_answer(json!({"input_required": 1, "x": 2}), &mut Files { next: 1 }),
            Ok(Outcome::Completed(_))
        ));
        match outcome_of_answer(json!({"input_required": {"message": "What size?"}}), &mut Files { next: 1 }) {
            Ok(Outcome::InputRequired(message)) => assert_eq!(message.text(), "What size?"),
            other => panic!("{other:?}"),
        }
        assert!(outcome_of_answer(json!({"rejected": {}}), &mut Files { next: 1 }).is_err());
    }

    #[test]
    fn stream_events_are_deltas_or_an_end() {
        assert!(matches!(
            stream_event(json!({"delta": "a"}), &mut Files { next: 1 }),
            StreamEvent::Progress(RunEvent::Delta { ref delta, .. }) if delta == "a"
        ));
        assert!(matches!(
            stream_event(json!({"output": 1}), &mut Files { next: 1 }),
            StreamEvent::End(Ok(Outcome::Completed(_)))
        ));
        match stream_event(json!({"error": {"code": "Bad Code", "message": "no"}}), &mut Files { next: 1 }) {
            StreamEvent::End(Err(error)) => {
                assert_eq!((error.code.as_str(), error.message.as_str()), ("backend_error", "no"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(stream_event(json!([1]), &mut Files { next: 1 }), StreamEvent::End(Err(_))));
    }

    #[test]
    fn files_are_artifacts_of_one_file_part_and_bad_entries_say_what_is_wrong() {
        let answer = json!({"output": {"n": 1}, "files": [
            {"name": "a.txt", "mime": "text/plain", "bytes_base64": "aGk="},
            {"uri": "https://files.example/b.pdf"},
        ], "usage": {"pages": 2}});
        let Ok(Outcome::Completed(completion)) = outcome_of_answer(answer, &mut Files { next: 3 }) else {
            panic!("an answer with files");
        };
        assert_eq!(completion.output, json!({"n": 1}));
        assert_eq!(completion.usage, Some(json!({"pages": 2})));
        let ids: Vec<&str> = completion.artifacts.iter().map(|a| a.artifact_id.as_str()).collect();
        assert_eq!(ids, ["file-3", "file-4"]);
        assert_eq!(completion.artifacts[0].name.as_deref(), Some("a.txt"));
        assert_eq!(
            completion.artifacts[1].parts,
            [Part::File {
                name: None,
                mime: None,
                bytes_base64: None,
                uri: Some("https://files.example/b.pdf".into())
            }]
        );
        // `files` beside keys other than output/usage/model: an output as it is.
        let plain = json!({"files": ["a", "b"], "count": 2});
        assert_eq!(
            outcome_of_answer(plain.clone(), &mut Files { next: 1 }),
            Ok(Outcome::Completed(Completion::new(plain)))
        );
        for (entry, says) in [
            (json!("a.txt"), "`files[0]` must be an object"),
            (json!({"name": "a", "bytes": "aGk="}), "`files[0]` has an unknown key `bytes`"),
            (json!({"name": "a"}), "`files[0]` has neither `bytes_base64` nor `uri`: give one"),
            (json!({"bytes_base64": "aGk=", "uri": "https://x/"}), "`files[0]` has both"),
            (json!({"bytes_base64": "not base64!"}), "`files[0]` has a `bytes_base64` that is not base64"),
            (json!({"uri": "/relative"}), "`files[0]` has a `uri` that is not an absolute URI"),
            (json!({"uri": "https://x/", "mime": "pdf"}), "`files[0]` has a `mime` that is not a media type"),
            (json!({"uri": "https://x/", "name": 5}), "`files[0]` has a `name` that is not a string"),
        ] {
            match outcome_of_answer(json!({"output": 1, "files": [entry]}), &mut Files { next: 1 }) {
                Err(error) => {
                    assert_eq!(error.code, "backend_invalid_answer");
                    assert!(error.message.starts_with(says), "{} for {entry}", error.message);
                }
                other => panic!("{other:?} for {entry}"),
            }
        }
        assert!(outcome_of_answer(json!({"output": 1, "files": {}}), &mut Files { next: 1 }).is_err());
        assert!(is_base64("") && is_base64("aGk=") && is_base64("aGkh") && !is_base64("aGk") && !is_base64("a==="));
    }

    #[test]
    fn bounded_cuts_on_characters() {
        assert_eq!(bounded("héllo", 2), "hé…");
        assert_eq!(bounded("hé", 2), "hé");
    }
}
