//! What a task's handler emits while it runs, as entries of the task's log: the one rule every
//! face and every backend shares, so that a delta from a Rust skill, a command, an HTTP service or
//! an MCP tool reaches every stream of the task (A2A on every binding, push, the Lucid and JSON-RPC
//! task streams) the same way.
//!
//! - A message ([`RunEvent::Message`]) and an artifact ([`RunEvent::Artifact`]) are stored as they
//!   are.
//! - Text increments ([`RunEvent::Delta`], and complete pieces of text, [`RunEvent::Text`]) are
//!   chunks of one streamed text artifact, [`STREAM_ARTIFACT_ID`] (`append` on every chunk after
//!   the first, `lastChunk` on the chunk that holds a final delta); a final delta closes it, and
//!   text after it streams a new one (`stream-2`, …). The task's record holds the artifact whole.
//! - A file ([`RunEvent::Asset`]) is an artifact of one file part, named after the asset.
//! - Progress ([`RunEvent::Status`] with the `working` state, say an MCP server's progress
//!   notification) is a `working` status update with the handler's message. The other states are
//!   the engine's to set: a handler's status of another state is not stored.
//! - Control signals and non-fatal errors stay on the direct stream only.
//!
//! Progress is coalesced: the deltas and progress updates that arrive while one write is under
//! way, or within [`RuntimeConfig::progress_interval`](super::RuntimeConfig::progress_interval) of
//! the last progress write, become one write — the deltas one chunk, the progress updates the
//! latest of them. A run stores at most [`MAX_PROGRESS_UPDATES`] progress updates; later ones are
//! dropped (the deltas' text is kept whole, within the task's artifact budget).

use crate::model::TaskEventKind;
use crate::run::{Artifact, AssetTransfer, Message, Part, RunEvent, RunFrame, TaskState};

/// The id of the text artifact a run's deltas stream into (the second one, after a final delta,
/// is `stream-2`, and so on).
pub const STREAM_ARTIFACT_ID: &str = "stream";

/// The most progress updates (`working` status updates with a message) one run stores.
pub const MAX_PROGRESS_UPDATES: usize = 1_000;

/// Turns a run's frames into log entries, coalescing progress.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Entries not yet written.
    pending: Vec<TaskEventKind>,
    /// Which streamed text artifact the deltas go to (0: the first).
    stream: usize,
    /// Whether a chunk of the current stream was written already (or is pending).
    streaming: bool,
    /// Progress updates stored (or pending) so far.
    updates: usize,
}

impl Progress {
    /// Takes in one frame.
    pub(crate) fn push(&mut self, frame: RunFrame) {
        match frame.event {
            RunEvent::Message(message) => self.pending.push(TaskEventKind::Message { message }),
            RunEvent::Artifact { artifact, append, last_chunk } => {
                self.pending.push(TaskEventKind::Artifact { artifact, append, last_chunk });
            }
            RunEvent::Delta { delta, mime, is_final } => self.text(delta, mime, is_final),
            RunEvent::Text { text, mime } => self.text(text, mime, false),
            RunEvent::Asset(asset) => {
                let (bytes_base64, uri) = match asset.transfer {
                    AssetTransfer::Inline { data } => (Some(data), None),
                    AssetTransfer::External { href, .. } => (None, Some(href)),
                };
                let part = Part::File { name: asset.name.clone(), mime: Some(asset.mime), bytes_base64, uri };
                let artifact = Artifact { artifact_id: asset.asset_id, name: asset.name, parts: vec![part] };
                self.pending.push(TaskEventKind::Artifact { artifact, append: false, last_chunk: true });
            }
            RunEvent::Status { state: TaskState::Working, message } => self.update(message),
            _ => {}
        }
    }

    /// A piece of streamed text: joined to the pending chunk of the same stream when only progress
    /// updates came after it.
    fn text(&mut self, text: String, mime: Option<String>, is_final: bool) {
        let id = self.stream_id();
        let open = self
            .pending
            .iter_mut()
            .rev()
            .find(|event| !matches!(event, TaskEventKind::Status { state: TaskState::Working, .. }));
        if let Some(TaskEventKind::Artifact { artifact, last_chunk, .. }) = open
            && artifact.artifact_id == id
            && !*last_chunk
            && let [Part::Text(pending)] = artifact.parts.as_mut_slice()
        {
            pending.push_str(&text);
            *last_chunk = is_final;
        } else if !text.is_empty() || is_final {
            let artifact =
                Artifact { artifact_id: id, name: Some(STREAM_ARTIFACT_ID.into()), parts: vec![Part::Text(text)] };
            self.pending.push(TaskEventKind::Artifact { artifact, append: self.streaming, last_chunk: is_final });
            self.streaming = true;
        }
        let _ = mime;
        if is_final {
            self.stream += 1;
            self.streaming = false;
        }
    }

    fn stream_id(&self) -> String {
        match self.stream {
            0 => STREAM_ARTIFACT_ID.to_owned(),
            n => format!("{STREAM_ARTIFACT_ID}-{}", n + 1),
        }
    }

    /// A progress update: replaces one still pending (when only text chunks came after it), so
    /// that a write carries the latest only.
    fn update(&mut self, message: Option<Message>) {
        let update = TaskEventKind::Status { state: TaskState::Working, message };
        let open = self.pending.iter_mut().rev().find(|event| !is_stream_chunk(event));
        if let Some(last @ TaskEventKind::Status { state: TaskState::Working, .. }) = open {
            *last = update;
            return;
        }
        if self.updates >= MAX_PROGRESS_UPDATES {
            if self.updates == MAX_PROGRESS_UPDATES {
                tracing::debug!(limit = MAX_PROGRESS_UPDATES, "a run's later progress updates are not stored");
                self.updates += 1;
            }
            return;
        }
        self.updates += 1;
        self.pending.push(update);
    }

    /// Whether nothing waits to be written.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Whether everything pending is progress (text chunks and progress updates), which may wait
    /// for the progress interval; a message or an artifact of the handler's own is written at once.
    pub(crate) fn only_progress(&self) -> bool {
        self.pending.iter().all(|event| {
            is_stream_chunk(event) || matches!(event, TaskEventKind::Status { state: TaskState::Working, .. })
        })
    }

    /// The entries to write now.
    pub(crate) fn take(&mut self) -> Vec<TaskEventKind> {
        std::mem::take(&mut self.pending)
    }
}

/// Whether `event` is a chunk of a streamed text artifact.
fn is_stream_chunk(event: &TaskEventKind) -> bool {
    matches!(event, TaskEventKind::Artifact { artifact, .. } if artifact.name.as_deref() == Some(STREAM_ARTIFACT_ID))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn frame(event: RunEvent) -> RunFrame {
        RunFrame { sequence: 1, created_at: SystemTime::now(), event }
    }

    fn delta(text: &str, is_final: bool) -> RunFrame {
        frame(RunEvent::Delta { delta: text.into(), mime: None, is_final })
    }

    fn chunk(event: &TaskEventKind) -> (&str, String, bool, bool) {
        match event {
            TaskEventKind::Artifact { artifact, append, last_chunk } => {
                let text = artifact.parts.iter().map(|part| match part {
                    Part::Text(text) => text.as_str(),
                    _ => "?",
                });
                (artifact.artifact_id.as_str(), text.collect(), *append, *last_chunk)
            }
            other => panic!("a chunk, not {other:?}"),
        }
    }

    #[test]
    fn deltas_pending_together_are_one_chunk_and_later_ones_append() {
        let mut progress = Progress::default();
        progress.push(delta("Hel", false));
        progress.push(delta("lo", false));
        assert!(progress.only_progress());
        let first = progress.take();
        assert_eq!(first.len(), 1);
        assert_eq!(chunk(&first[0]), ("stream", "Hello".into(), false, false));
        progress.push(delta(", ", false));
        progress.push(frame(RunEvent::Text { text: "world".into(), mime: None }));
        progress.push(delta("!", true));
        let second = progress.take();
        assert_eq!(second.len(), 1);
        assert_eq!(chunk(&second[0]), ("stream", ", world!".into(), true, true));
        // After a final delta, text streams a new artifact.
        progress.push(delta("again", false));
        assert_eq!(chunk(&progress.take()[0]), ("stream-2", "again".into(), false, false));
    }

    #[test]
    fn interleaved_deltas_and_updates_pending_together_are_one_chunk_and_the_latest_update() {
        let mut progress = Progress::default();
        for step in 0..10 {
            progress.push(delta(&format!("{step}"), false));
            progress.push(frame(RunEvent::Status { state: TaskState::Working, message: None }));
        }
        let written = progress.take();
        assert_eq!(written.len(), 2, "{written:?}");
        assert_eq!(chunk(&written[0]), ("stream", "0123456789".into(), false, false));
        // A message between them keeps the order: text after it is a new chunk.
        progress.push(delta("a", false));
        progress.push(frame(RunEvent::Message(Message::agent_text("between"))));
        progress.push(delta("b", false));
        let written = progress.take();
        assert_eq!(written.len(), 3);
        assert_eq!(chunk(&written[2]), ("stream", "b".into(), true, false));
    }

    #[test]
    fn progress_updates_pending_together_keep_the_latest_and_a_message_is_not_progress() {
        let mut progress = Progress::default();
        for step in 1..=3 {
            progress.push(frame(RunEvent::Status {
                state: TaskState::Working,
                message: Some(Message::agent_text(format!("step {step}"))),
            }));
        }
        // A handler does not set the engine's states.
        progress.push(frame(RunEvent::Status { state: TaskState::Completed, message: None }));
        let written = progress.take();
        assert_eq!(written.len(), 1);
        match &written[0] {
            TaskEventKind::Status { state: TaskState::Working, message: Some(message) } => {
                assert_eq!(message.text(), "step 3");
            }
            other => panic!("{other:?}"),
        }
        progress.push(frame(RunEvent::Message(Message::agent_text("said"))));
        assert!(!progress.only_progress());
        assert!(!progress.is_empty());
    }

    #[test]
    fn a_run_stores_a_bounded_number_of_progress_updates() {
        let mut progress = Progress::default();
        let mut stored = 0;
        for _ in 0..MAX_PROGRESS_UPDATES + 50 {
            progress.push(frame(RunEvent::Status { state: TaskState::Working, message: None }));
            stored += progress.take().len();
        }
        assert_eq!(stored, MAX_PROGRESS_UPDATES);
    }

    #[test]
    fn an_asset_is_a_file_artifact() {
        let mut progress = Progress::default();
        progress.push(frame(RunEvent::Asset(crate::run::Asset {
            asset_id: "chart".into(),
            mime: "image/png".into(),
            name: Some("chart.png".into()),
            size_bytes: Some(3),
            transfer: AssetTransfer::Inline { data: "iVBO".into() },
        })));
        match &progress.take()[..] {
            [TaskEventKind::Artifact { artifact, append: false, last_chunk: true }] => {
                assert_eq!(artifact.artifact_id, "chart");
                assert_eq!(
                    artifact.parts,
                    vec![Part::File {
                        name: Some("chart.png".into()),
                        mime: Some("image/png".into()),
                        bytes_base64: Some("iVBO".into()),
                        uri: None
                    }]
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
