//! The answer checkers: every answer the load generator receives is checked against the unique
//! text its request carried, and only a right answer counts as throughput.
//!
//! A check fails with a [`CheckError`]: a short `kind` (what the report groups errors by) and a
//! `detail` (an excerpt of the answer, for the first few of each kind).

use serde_json::Value;

/// Why an answer was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckError {
    /// A short class of the failure, e.g. `HTTP 503`, `JSON-RPC error -32603`, `wrong echo`.
    pub kind: String,
    /// What was received, shortened.
    pub detail: String,
}

impl CheckError {
    /// An error of `kind` with `detail`.
    pub fn new(kind: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { kind: kind.into(), detail: detail.into() }
    }
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.detail)
    }
}

/// The first 300 characters of a body, for error details.
pub fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut short: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        short.push('…');
    }
    short
}

/// The A2A state names of a completed and of the other terminal tasks.
const COMPLETED: &str = "TASK_STATE_COMPLETED";
const TERMINAL: [&str; 4] = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"];

fn json_body(status: u16, body: &[u8]) -> Result<Value, CheckError> {
    if status != 200 {
        return Err(CheckError::new(format!("HTTP {status}"), excerpt(body)));
    }
    serde_json::from_slice(body).map_err(|_| CheckError::new("not JSON", excerpt(body)))
}

/// The `result` of a JSON-RPC response; an `error` member (or neither) is a failure.
pub fn jsonrpc_result(answer: &Value) -> Result<&Value, CheckError> {
    if let Some(error) = answer.get("error") {
        let code = error.get("code").map_or_else(|| "?".to_owned(), Value::to_string);
        return Err(CheckError::new(format!("JSON-RPC error {code}"), excerpt(error.to_string().as_bytes())));
    }
    answer.get("result").ok_or_else(|| CheckError::new("no JSON-RPC result", excerpt(answer.to_string().as_bytes())))
}

/// Whether one A2A part carries `token`: a text part containing it, or a data part whose JSON does.
fn part_echoes(part: &Value, token: &str) -> bool {
    if let Some(text) = part.get("text").and_then(Value::as_str) {
        return text.contains(token);
    }
    part.get("data").is_some_and(|data| data.to_string().contains(token))
}

fn parts_echo(parts: Option<&Value>, token: &str) -> bool {
    parts.and_then(Value::as_array).is_some_and(|parts| parts.iter().any(|part| part_echoes(part, token)))
}

/// Whether a task's output — its artifacts or its status message, never its history, which holds
/// the request itself — echoes `token`.
pub fn task_echoes(task: &Value, token: &str) -> bool {
    let in_artifacts = task
        .get("artifacts")
        .and_then(Value::as_array)
        .is_some_and(|artifacts| artifacts.iter().any(|artifact| parts_echo(artifact.get("parts"), token)));
    in_artifacts || parts_echo(task.pointer("/status/message/parts"), token)
}

/// Checks a task (the `task` of a `SendMessage` result, say): completed, echoing `token`.
pub fn completed_task(task: &Value, token: &str) -> Result<(), CheckError> {
    let state = task.pointer("/status/state").and_then(Value::as_str).unwrap_or("no state");
    if state != COMPLETED {
        return Err(CheckError::new(format!("task {state}"), excerpt(task.to_string().as_bytes())));
    }
    if !task_echoes(task, token) {
        return Err(CheckError::new("wrong echo", excerpt(task.to_string().as_bytes())));
    }
    Ok(())
}

/// A blocking JSON-RPC `SendMessage` answer: HTTP 200, a JSON-RPC result holding a task in
/// `TASK_STATE_COMPLETED` whose output echoes `token`.
pub fn a2a_send(status: u16, body: &[u8], token: &str) -> Result<(), CheckError> {
    let answer = json_body(status, body)?;
    let result = jsonrpc_result(&answer)?;
    match result.get("task") {
        Some(task) => completed_task(task, token),
        None if result.get("message").is_some() => Err(CheckError::new("a message, not a task", excerpt(body))),
        None => Err(CheckError::new("no task in the result", excerpt(body))),
    }
}

/// Follows the events of a JSON-RPC `SendStreamingMessage` stream.
#[derive(Debug, Default)]
pub struct StreamCheck {
    /// Events seen.
    pub events: u64,
    state: Option<String>,
    echoed: bool,
}

impl StreamCheck {
    /// Checks one event's data (a JSON-RPC response whose result is a `StreamResponse`).
    pub fn event(&mut self, data: &str, token: &str) -> Result<(), CheckError> {
        self.events += 1;
        let answer: Value =
            serde_json::from_str(data).map_err(|_| CheckError::new("event not JSON", excerpt(data.as_bytes())))?;
        let result = jsonrpc_result(&answer)?;
        if let Some(task) = result.get("task") {
            self.echoed |= task_echoes(task, token);
            self.state = task.pointer("/status/state").and_then(Value::as_str).map(str::to_owned);
        } else if let Some(update) = result.get("statusUpdate") {
            self.echoed |= parts_echo(update.pointer("/status/message/parts"), token);
            self.state = update.pointer("/status/state").and_then(Value::as_str).map(str::to_owned);
        } else if let Some(update) = result.get("artifactUpdate") {
            self.echoed |= parts_echo(update.pointer("/artifact/parts"), token);
        } else if let Some(message) = result.get("message") {
            return Err(CheckError::new("a message, not a task", excerpt(message.to_string().as_bytes())));
        } else {
            return Err(CheckError::new("unknown stream event", excerpt(data.as_bytes())));
        }
        Ok(())
    }

    /// Whether the stream reached a terminal state.
    pub fn ended(&self) -> bool {
        self.state.as_deref().is_some_and(|state| TERMINAL.contains(&state))
    }

    /// The verdict once the stream is over: completed, echoing the token.
    pub fn finish(&self) -> Result<(), CheckError> {
        match self.state.as_deref() {
            Some(COMPLETED) if self.echoed => Ok(()),
            Some(COMPLETED) => Err(CheckError::new("wrong echo", format!("{} events, no echo", self.events))),
            Some(state) => Err(CheckError::new(format!("task {state}"), format!("after {} events", self.events))),
            None => Err(CheckError::new("stream without a task state", format!("{} events", self.events))),
        }
    }
}

/// Checks an `a2a-deltas` stream: text chunks of the artifact `stream` whose texts, joined, are
/// `tick 1tick 2…tick N`, then the task completed. How the server groups deltas into chunks is
/// its own choice; what it sends is checked whole.
#[derive(Debug, Default)]
pub struct DeltaCheck {
    /// Events seen.
    pub events: u64,
    /// Chunks of the artifact `stream` seen.
    pub chunks: u64,
    text: String,
    state: Option<String>,
}

impl DeltaCheck {
    /// Checks one event's data (a JSON-RPC response whose result is a `StreamResponse`).
    pub fn event(&mut self, data: &str) -> Result<(), CheckError> {
        self.events += 1;
        let answer: Value =
            serde_json::from_str(data).map_err(|_| CheckError::new("event not JSON", excerpt(data.as_bytes())))?;
        let result = jsonrpc_result(&answer)?;
        if let Some(task) = result.get("task") {
            self.state = task.pointer("/status/state").and_then(Value::as_str).map(str::to_owned);
        } else if let Some(update) = result.get("statusUpdate") {
            self.state = update.pointer("/status/state").and_then(Value::as_str).map(str::to_owned);
        } else if let Some(update) = result.get("artifactUpdate") {
            if update.pointer("/artifact/artifactId").and_then(Value::as_str) == Some("stream") {
                self.chunks += 1;
                let parts = update.pointer("/artifact/parts").and_then(Value::as_array).into_iter().flatten();
                for text in parts.filter_map(|part| part.get("text").and_then(Value::as_str)) {
                    self.text.push_str(text);
                }
            }
        } else {
            return Err(CheckError::new("unknown stream event", excerpt(data.as_bytes())));
        }
        Ok(())
    }

    /// The verdict once the stream is over: completed, with every one of `deltas` deltas.
    pub fn finish(&self, deltas: u64) -> Result<(), CheckError> {
        let expected: String = (1..=deltas).map(|tick| format!("tick {tick}")).collect();
        match self.state.as_deref() {
            Some(COMPLETED) if self.text == expected => Ok(()),
            Some(COMPLETED) => Err(CheckError::new(
                "wrong deltas",
                format!("{} chunks, {} of {} bytes of text", self.chunks, self.text.len(), expected.len()),
            )),
            Some(state) => Err(CheckError::new(format!("task {state}"), format!("after {} events", self.events))),
            None => Err(CheckError::new("stream without a task state", format!("{} events", self.events))),
        }
    }
}

/// A Lucid `POST /entrypoints/echo/invoke` answer: HTTP 200, `status: succeeded`, and the output
/// `{"text": token}`.
pub fn lucid_invoke(status: u16, body: &[u8], token: &str) -> Result<(), CheckError> {
    let answer = json_body(status, body)?;
    let run_status = answer.get("status").and_then(Value::as_str).unwrap_or("no status");
    if run_status != "succeeded" {
        return Err(CheckError::new(format!("run {run_status}"), excerpt(body)));
    }
    if answer.pointer("/output/text").and_then(Value::as_str) != Some(token) {
        return Err(CheckError::new("wrong echo", excerpt(body)));
    }
    Ok(())
}

/// A Lucid task capability (`POST /tasks`): its task id, access token and status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capability {
    /// The task id.
    pub task_id: String,
    /// The token every later request about the task carries.
    pub access_token: String,
    /// `running`, `completed`, `failed` or `cancelled`.
    pub status: String,
}

/// A Lucid `POST /tasks` answer: a 2xx capability.
pub fn lucid_created(status: u16, body: &[u8]) -> Result<Capability, CheckError> {
    if !(200..300).contains(&status) {
        return Err(CheckError::new(format!("HTTP {status}"), excerpt(body)));
    }
    let answer: Value = serde_json::from_slice(body).map_err(|_| CheckError::new("not JSON", excerpt(body)))?;
    let field = |name: &str| answer.get(name).and_then(Value::as_str).map(str::to_owned);
    match (field("taskId"), field("accessToken"), field("status")) {
        (Some(task_id), Some(access_token), Some(status)) => Ok(Capability { task_id, access_token, status }),
        _ => Err(CheckError::new("not a task capability", excerpt(body))),
    }
}

/// Whether a Lucid task status is final.
pub fn lucid_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// A Lucid `GET /tasks/{id}` answer: HTTP 200, the same task, `completed`, with the result output
/// `{"text": token}`.
pub fn lucid_task(status: u16, body: &[u8], task_id: &str, token: &str) -> Result<(), CheckError> {
    let answer = json_body(status, body)?;
    if answer.get("taskId").and_then(Value::as_str) != Some(task_id) {
        return Err(CheckError::new("another task", excerpt(body)));
    }
    let task_status = answer.get("status").and_then(Value::as_str).unwrap_or("no status");
    if task_status != "completed" {
        return Err(CheckError::new(format!("task {task_status}"), excerpt(body)));
    }
    if answer.pointer("/result/output/text").and_then(Value::as_str) != Some(token) {
        return Err(CheckError::new("wrong echo", excerpt(body)));
    }
    Ok(())
}

/// A JSON-RPC `ListTasks` answer: HTTP 200, a result with a `tasks` array of tasks with ids, and
/// — when `min_total` is given — a `totalSize` of at least that.
pub fn a2a_list(status: u16, body: &[u8], min_total: Option<u64>) -> Result<usize, CheckError> {
    let answer = json_body(status, body)?;
    let result = jsonrpc_result(&answer)?;
    let tasks =
        result.get("tasks").and_then(Value::as_array).ok_or_else(|| CheckError::new("no tasks", excerpt(body)))?;
    if tasks.iter().any(|task| task.get("id").and_then(Value::as_str).is_none()) {
        return Err(CheckError::new("a task without an id", excerpt(body)));
    }
    if let Some(min_total) = min_total {
        let total = result.get("totalSize").and_then(Value::as_u64).unwrap_or(0);
        if total < min_total {
            return Err(CheckError::new("totalSize too small", format!("totalSize {total} < {min_total}")));
        }
    }
    Ok(tasks.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TOKEN: &str = "b7-3-41";

    fn send_answer(task: Value) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": 1, "result": {"task": task}}).to_string().into_bytes()
    }

    fn task(state: &str, artifact_text: &str) -> Value {
        json!({
            "id": "t1", "contextId": "c1",
            "status": {"state": state},
            "artifacts": [{"artifactId": "a", "parts": [{"text": artifact_text}]}],
            // The history holds the request, token included: it must not count as the echo.
            "history": [{"role": "ROLE_USER", "parts": [{"text": format!("{{\"text\":\"{TOKEN}\"}}")}]}],
        })
    }

    #[test]
    fn a_completed_echo_passes_in_text_or_data_parts() {
        let body = send_answer(task("TASK_STATE_COMPLETED", &format!("echo: {{\"text\":\"{TOKEN}\"}}")));
        assert_eq!(a2a_send(200, &body, TOKEN), Ok(()));
        let data = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"},
                          "artifacts": [{"parts": [{"data": {"text": TOKEN}}]}]});
        assert_eq!(a2a_send(200, &send_answer(data), TOKEN), Ok(()));
        let in_status = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED",
                               "message": {"role": "ROLE_AGENT", "parts": [{"text": TOKEN}]}}});
        assert_eq!(a2a_send(200, &send_answer(in_status), TOKEN), Ok(()));
    }

    #[test]
    fn a_wrong_echo_is_an_error() {
        // Another request's answer: the history still carries this token, the artifact does not.
        let body = send_answer(task("TASK_STATE_COMPLETED", "echo: {\"text\":\"b7-3-40\"}"));
        assert_eq!(a2a_send(200, &body, TOKEN).map_err(|error| error.kind), Err("wrong echo".to_owned()));
        let no_output = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"},
                               "history": [{"parts": [{"text": TOKEN}]}]});
        assert_eq!(a2a_send(200, &send_answer(no_output), TOKEN).map_err(|error| error.kind), Err("wrong echo".into()));
    }

    #[test]
    fn a_failed_task_is_an_error() {
        let body = send_answer(task("TASK_STATE_FAILED", TOKEN));
        assert_eq!(a2a_send(200, &body, TOKEN).map_err(|error| error.kind), Err("task TASK_STATE_FAILED".into()));
        let working = send_answer(task("TASK_STATE_WORKING", TOKEN));
        assert_eq!(a2a_send(200, &working, TOKEN).map_err(|error| error.kind), Err("task TASK_STATE_WORKING".into()));
    }

    #[test]
    fn a_jsonrpc_error_is_an_error() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}}).to_string();
        let error = a2a_send(200, body.as_bytes(), TOKEN).expect_err("an error");
        assert_eq!(error.kind, "JSON-RPC error -32603");
        assert!(error.detail.contains("boom"));
    }

    #[test]
    fn http_failures_and_other_shapes_are_errors() {
        let body = send_answer(task("TASK_STATE_COMPLETED", TOKEN));
        assert_eq!(a2a_send(503, &body, TOKEN).map_err(|error| error.kind), Err("HTTP 503".into()));
        assert_eq!(a2a_send(200, b"<html>", TOKEN).map_err(|error| error.kind), Err("not JSON".into()));
        let message = json!({"jsonrpc": "2.0", "id": 1, "result": {"message": {"parts": [{"text": TOKEN}]}}});
        assert_eq!(
            a2a_send(200, message.to_string().as_bytes(), TOKEN).map_err(|error| error.kind),
            Err("a message, not a task".into())
        );
        assert_eq!(
            a2a_send(200, br#"{"jsonrpc":"2.0","id":1}"#, TOKEN).map_err(|error| error.kind),
            Err("no JSON-RPC result".into())
        );
    }

    fn event(result: Value) -> String {
        json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string()
    }

    #[test]
    fn a_stream_must_complete_and_echo() {
        let submitted = event(json!({"task": {"id": "t", "status": {"state": "TASK_STATE_SUBMITTED"}}}));
        let working = event(json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}}));
        let artifact = event(json!({"artifactUpdate": {"taskId": "t", "artifact": {"parts": [{"text": TOKEN}]}}}));
        let completed = event(json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}));

        let mut good = StreamCheck::default();
        for data in [&submitted, &working, &artifact, &completed] {
            good.event(data, TOKEN).expect("a good event");
        }
        assert!(good.ended());
        assert_eq!(good.finish(), Ok(()));
        assert_eq!(good.events, 4);

        let mut no_echo = StreamCheck::default();
        for data in [&submitted, &working, &completed] {
            no_echo.event(data, TOKEN).expect("a good event");
        }
        assert_eq!(no_echo.finish().map_err(|error| error.kind), Err("wrong echo".into()));

        let mut failed = StreamCheck::default();
        failed.event(&submitted, TOKEN).expect("a good event");
        let failure = event(json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_FAILED"}}}));
        failed.event(&failure, TOKEN).expect("a good event");
        assert!(failed.ended());
        assert_eq!(failed.finish().map_err(|error| error.kind), Err("task TASK_STATE_FAILED".into()));

        let mut cut = StreamCheck::default();
        cut.event(&submitted, TOKEN).expect("a good event");
        assert!(!cut.ended());
        assert!(cut.finish().is_err());

        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone"}}).to_string();
        assert_eq!(
            StreamCheck::default().event(&error, TOKEN).map_err(|error| error.kind),
            Err("JSON-RPC error -32001".into())
        );
    }

    #[test]
    fn lucid_answers() {
        let good = json!({"runId": "r", "status": "succeeded", "output": {"text": TOKEN}}).to_string();
        assert_eq!(lucid_invoke(200, good.as_bytes(), TOKEN), Ok(()));
        let wrong = json!({"runId": "r", "status": "succeeded", "output": {"text": "b7-3-4"}}).to_string();
        assert_eq!(lucid_invoke(200, wrong.as_bytes(), TOKEN).map_err(|error| error.kind), Err("wrong echo".into()));
        let failed = json!({"status": "failed", "error": {"code": "x"}}).to_string();
        assert_eq!(lucid_invoke(200, failed.as_bytes(), TOKEN).map_err(|error| error.kind), Err("run failed".into()));
        assert_eq!(lucid_invoke(500, good.as_bytes(), TOKEN).map_err(|error| error.kind), Err("HTTP 500".into()));

        let capability = json!({"taskId": "t1", "accessToken": "a".repeat(32), "status": "running"}).to_string();
        let parsed = lucid_created(201, capability.as_bytes()).expect("a capability");
        assert_eq!(parsed.task_id, "t1");
        assert!(!lucid_terminal(&parsed.status));
        assert!(lucid_created(200, b"{}").is_err());

        let view = json!({"taskId": "t1", "status": "completed", "result": {"output": {"text": TOKEN}}}).to_string();
        assert_eq!(lucid_task(200, view.as_bytes(), "t1", TOKEN), Ok(()));
        assert_eq!(
            lucid_task(200, view.as_bytes(), "t2", TOKEN).map_err(|error| error.kind),
            Err("another task".into())
        );
        let failed = json!({"taskId": "t1", "status": "failed", "error": {"code": "x"}}).to_string();
        assert_eq!(
            lucid_task(200, failed.as_bytes(), "t1", TOKEN).map_err(|error| error.kind),
            Err("task failed".into())
        );
        let wrong = json!({"taskId": "t1", "status": "completed", "result": {"output": {"text": "x"}}}).to_string();
        assert_eq!(
            lucid_task(200, wrong.as_bytes(), "t1", TOKEN).map_err(|error| error.kind),
            Err("wrong echo".into())
        );
    }

    #[test]
    fn list_answers() {
        let page = json!({"jsonrpc": "2.0", "id": 1, "result": {"tasks": [{"id": "a"}, {"id": "b"}], "totalSize": 2}});
        assert_eq!(a2a_list(200, page.to_string().as_bytes(), None), Ok(2));
        assert_eq!(a2a_list(200, page.to_string().as_bytes(), Some(2)), Ok(2));
        assert_eq!(
            a2a_list(200, page.to_string().as_bytes(), Some(3)).map_err(|error| error.kind),
            Err("totalSize too small".into())
        );
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "no"}});
        assert!(a2a_list(200, error.to_string().as_bytes(), None).is_err());
    }
}
