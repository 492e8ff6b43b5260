//! The conformance agent (`accord serve --agent conformance`): one skill, `tck`, that behaves as
//! the public A2A conformance kit's scenarios expect. The kit chooses a behaviour by the prefix of
//! each message's `messageId` — for every message, follow-ups included — and this agent routes on
//! exactly those prefixes (see [`Scenario`]); unknown prefixes complete the task, as the kit's own
//! reference systems do. The 0.3 kit names its messages differently (`<what>-message-id-<uuid>`,
//! such as `cancel-test-message-id-…` and `text-message-id-…`, and `test-state-message-id-…`) and
//! expects the task they start to stay open for its follow-ups and its cancel: such a message
//! starts a conversation ([`Scenario::Conversation`]) that waits for input after every turn.
//!
//! Everything the agent does goes through the ordinary engine: the scenarios are skill outcomes
//! and run events (status messages, artifact chunks, direct replies, input-required), so pointing
//! the kit at this agent exercises the same paths every other agent uses.

use std::time::Duration;

use accord_engine::{
    Agent, Artifact, BuildError, Completion, Message, Outcome, Part, Run, RunEvent, Skill, SkillError,
};
use base64::Engine as _;
use serde_json::{Value, json};

/// The text of a completed task's status message.
pub const COMPLETE_TEXT: &str = "Hello from TCK";
/// The text of a text artifact.
pub const ARTIFACT_TEXT: &str = "Generated text content";
/// The text of the direct reply.
pub const REPLY_TEXT: &str = "Direct message response";
/// What a conversation ([`Scenario::Conversation`]) says after each turn.
pub const CONVERSATION_TEXT: &str = "Go on, or cancel the task";
/// The URL of the file-by-reference artifact.
pub const FILE_URL: &str = "https://example.com/output.txt";
/// How long the resubscribe scenario stays `working`: twice the kit's default streaming timeout
/// of 2 s, as its reference systems do.
pub const RESUBSCRIBE_HOLD: Duration = Duration::from_secs(4);

/// The behaviours, by `messageId` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `tck-complete-task` (and any unknown prefix): completed, status message [`COMPLETE_TEXT`].
    Complete,
    /// `tck-artifact-text`: completed with a text artifact.
    ArtifactText,
    /// `tck-artifact-file`: completed with an inline file artifact `output.txt`.
    ArtifactFile,
    /// `tck-artifact-file-url`: completed with a file artifact by URL.
    ArtifactFileUrl,
    /// `tck-artifact-data`: completed with a data artifact `{"key":"value","count":42}`.
    ArtifactData,
    /// `tck-message-response`: a direct Message reply, not a task.
    MessageResponse,
    /// `tck-input-required`: the task waits for input; a follow-up completes it.
    InputRequired,
    /// `tck-reject-task`: rejected.
    Reject,
    /// `tck-stream-001`, `tck-stream-003`, `tck-stream-ordering-001`: working, a text artifact,
    /// completed.
    Stream,
    /// `tck-stream-002`: completed, nothing else.
    StreamCompleteOnly,
    /// `tck-stream-artifact-text`: working, a text artifact, completed.
    StreamArtifactText,
    /// `tck-stream-artifact-file`: working, a file artifact, completed.
    StreamArtifactFile,
    /// `tck-stream-artifact-chunked`: one artifact in two chunks (append, then last chunk).
    StreamArtifactChunked,
    /// `test-resubscribe-message-id`: working for [`RESUBSCRIBE_HOLD`], then completed.
    Resubscribe,
    /// A message id of the 0.3 kit's shape, `<what>-message-id-<uuid>` (other than the
    /// resubscribe one): the task waits for input, and keeps waiting after every follow-up
    /// (whatever the follow-up's own id) until it is cancelled — so that the kit's continuation,
    /// history and cancel tests find it open.
    Conversation,
}

/// What the 0.3 kit's message ids hold (`generate_test_message_id` writes
/// `<prefix>-message-id-<uuid>`; its literal ids are `test-<what>-message-id-<uuid>`).
const CONVERSATION_MARK: &str = "-message-id-";

/// Prefixes, longest first where one extends another.
const PREFIXES: &[(&str, Scenario)] = &[
    ("tck-complete-task", Scenario::Complete),
    ("tck-artifact-text", Scenario::ArtifactText),
    ("tck-artifact-file-url", Scenario::ArtifactFileUrl),
    ("tck-artifact-file", Scenario::ArtifactFile),
    ("tck-artifact-data", Scenario::ArtifactData),
    ("tck-message-response", Scenario::MessageResponse),
    ("tck-input-required", Scenario::InputRequired),
    ("tck-reject-task", Scenario::Reject),
    ("tck-stream-artifact-chunked", Scenario::StreamArtifactChunked),
    ("tck-stream-artifact-text", Scenario::StreamArtifactText),
    ("tck-stream-artifact-file", Scenario::StreamArtifactFile),
    ("tck-stream-ordering-001", Scenario::Stream),
    ("tck-stream-001", Scenario::Stream),
    ("tck-stream-002", Scenario::StreamCompleteOnly),
    ("tck-stream-003", Scenario::Stream),
    ("test-resubscribe-message-id", Scenario::Resubscribe),
];

impl Scenario {
    /// The scenario a `messageId` asks for.
    pub fn of(message_id: &str) -> Self {
        if let Some((_, scenario)) = PREFIXES.iter().find(|(prefix, _)| message_id.starts_with(prefix)) {
            return *scenario;
        }
        if message_id.contains(CONVERSATION_MARK) { Self::Conversation } else { Self::Complete }
    }

    /// The scenario of a run: a follow-up to a conversation goes on with it; any other message
    /// is routed by its own id.
    fn of_run(run: &Run) -> Self {
        let first = run.task().and_then(|task| task.history.first()).and_then(|message| message.message_id.as_deref());
        if first.is_some_and(|first| Self::of(first) == Self::Conversation) {
            return Self::Conversation;
        }
        Self::of(run.message().and_then(|message| message.message_id.as_deref()).unwrap_or_default())
    }
}

/// The conformance agent.
pub fn agent() -> Result<Agent, BuildError> {
    Agent::builder("accord-conformance")
        .version(env!("CARGO_PKG_VERSION"))
        .description(
            "Accord's conformance agent: behaves as the A2A conformance kit's scenarios expect, by the prefix of \
             each message's messageId.",
        )
        .skill(
            Skill::builder("tck")
                .description("Runs the conformance scenario named by the message's messageId prefix.")
                .tag("conformance")
                .input_schema(json!({"type": "object"}))
                .handler(run_scenario),
        )
        .build()
}

/// The extended card's skill entries (`accord serve --agent conformance --extended-card`): the
/// `tck` skill described in full, every scenario prefix listed, in place of the public entry.
pub fn extended_skills() -> Vec<accord_types::card::AgentSkill> {
    let prefixes: Vec<&str> = PREFIXES.iter().map(|(prefix, _)| *prefix).collect();
    vec![accord_types::card::AgentSkill {
        id: "tck".into(),
        name: "tck".into(),
        description: Some(format!(
            "Runs the conformance scenario named by the message's messageId prefix: {}; an id of the 0.3 kit's \
             shape (`<what>-message-id-<uuid>`) starts a task that waits for input until it is cancelled; any \
             other prefix completes the task. This entry is on the authenticated extended card only.",
            prefixes.join(", ")
        )),
        input_modes: vec!["application/json".into()],
        output_modes: vec!["application/json".into(), "text/plain".into()],
        tags: vec!["conformance".into(), "extended".into()],
        extra: serde_json::Map::new(),
    }]
}

fn text_artifact(id: &str, text: &str) -> Artifact {
    Artifact { artifact_id: id.into(), name: Some("text".into()), parts: vec![Part::Text(text.into())] }
}

fn file_artifact(id: &str) -> Artifact {
    let bytes = base64::engine::general_purpose::STANDARD.encode(COMPLETE_TEXT);
    Artifact {
        artifact_id: id.into(),
        name: Some("file".into()),
        parts: vec![Part::File {
            name: Some("output.txt".into()),
            mime: Some("text/plain".into()),
            bytes_base64: Some(bytes),
            uri: None,
        }],
    }
}

fn completed(artifacts: Vec<Artifact>) -> Outcome {
    Outcome::Completed(Completion {
        output: Value::Null,
        artifacts,
        message: Some(Message::agent_text(COMPLETE_TEXT)),
        ..Completion::default()
    })
}

/// Working (a status message), then the artifact, then completed.
async fn stream_one(run: &Run, artifact: Artifact) -> Outcome {
    run.emit(RunEvent::Message(Message::agent_text("Processing"))).await;
    run.emit(RunEvent::Artifact { artifact, append: false, last_chunk: true }).await;
    completed(Vec::new())
}

async fn run_scenario(run: Run) -> Result<Outcome, SkillError> {
    let scenario = Scenario::of_run(&run);
    tracing::debug!(?scenario, "conformance scenario");
    Ok(match scenario {
        Scenario::Complete | Scenario::StreamCompleteOnly => completed(Vec::new()),
        Scenario::ArtifactText => completed(vec![text_artifact("text-artifact", ARTIFACT_TEXT)]),
        Scenario::ArtifactFile => completed(vec![file_artifact("file-artifact")]),
        Scenario::ArtifactFileUrl => completed(vec![Artifact {
            artifact_id: "file-url-artifact".into(),
            name: Some("file".into()),
            parts: vec![Part::File {
                name: Some("output.txt".into()),
                mime: Some("text/plain".into()),
                bytes_base64: None,
                uri: Some(FILE_URL.into()),
            }],
        }]),
        Scenario::ArtifactData => completed(vec![Artifact {
            artifact_id: "data-artifact".into(),
            name: Some("data".into()),
            parts: vec![Part::Data(json!({"key": "value", "count": 42}))],
        }]),
        Scenario::MessageResponse => Outcome::Reply(Message::agent_text(REPLY_TEXT)),
        Scenario::InputRequired => Outcome::InputRequired(Message::agent_text("Please provide more input")),
        Scenario::Conversation => Outcome::InputRequired(Message::agent_text(CONVERSATION_TEXT)),
        Scenario::Reject => Outcome::Rejected(Message::agent_text("rejected")),
        Scenario::Stream | Scenario::StreamArtifactText => {
            stream_one(&run, text_artifact("stream-artifact", ARTIFACT_TEXT)).await
        }
        Scenario::StreamArtifactFile => stream_one(&run, file_artifact("stream-file-artifact")).await,
        Scenario::StreamArtifactChunked => {
            let chunk = |text: &str| text_artifact("chunked-artifact", text);
            run.emit(RunEvent::Artifact { artifact: chunk("chunk-1 "), append: false, last_chunk: false }).await;
            run.emit(RunEvent::Artifact { artifact: chunk("chunk-2"), append: true, last_chunk: true }).await;
            completed(Vec::new())
        }
        Scenario::Resubscribe => {
            run.emit(RunEvent::Message(Message::agent_text("Working"))).await;
            tokio::select! {
                () = tokio::time::sleep(RESUBSCRIBE_HOLD) => {}
                () = run.cancelled() => return Err(SkillError::new("cancelled", "cancelled")),
            }
            completed(Vec::new())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_route_to_their_scenarios() {
        assert_eq!(Scenario::of("tck-artifact-file-url-1a2b3c4d-jsonrpc"), Scenario::ArtifactFileUrl);
        assert_eq!(Scenario::of("tck-artifact-file-1a2b3c4d"), Scenario::ArtifactFile);
        assert_eq!(Scenario::of("tck-stream-ordering-001-x"), Scenario::Stream);
        assert_eq!(Scenario::of("tck-stream-002-x"), Scenario::StreamCompleteOnly);
        assert_eq!(Scenario::of("tck-stream-artifact-chunked-x"), Scenario::StreamArtifactChunked);
        assert_eq!(Scenario::of("test-resubscribe-message-id-9"), Scenario::Resubscribe);
        assert_eq!(Scenario::of("tck-input-required-x"), Scenario::InputRequired);
        assert_eq!(Scenario::of("something-else"), Scenario::Complete);
        // The 0.3 kit's ids.
        for id in
            ["cancel-test-message-id-1a2b", "text-message-id-9", "test-state-message-id-3", "continuation-message-id-4"]
        {
            assert_eq!(Scenario::of(id), Scenario::Conversation, "{id}");
        }
        assert_eq!(Scenario::of("test-resubscribe-message-id-1a2b"), Scenario::Resubscribe);
        assert_eq!(Scenario::of(""), Scenario::Complete);
    }
}
