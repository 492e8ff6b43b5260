//! What the backends that stay reachable between runs (MCP servers, remote A2A agents) say of
//! their health, for `/health` and the metrics: one [`BackendStatus`] each, and the histogram of
//! their calls' durations.

use std::time::{Duration, SystemTime};

/// The histogram of the seconds each finished call of a backend took, by `backend` (its name):
/// an MCP tool call or a run of a remote A2A agent's skill, answered or failed, whatever the
/// reason, but not cancelled. Recorded through the `metrics` facade, so it shows wherever the
/// process installed a recorder (`/metrics`).
pub const BACKEND_CALL_SECONDS: &str = "accord_backend_call_duration_seconds";

/// Records one finished call of the backend `backend` in [`BACKEND_CALL_SECONDS`].
pub(crate) fn record_call_duration(backend: &str, took: Duration) {
    static DESCRIBED: std::sync::Once = std::sync::Once::new();
    DESCRIBED.call_once(|| {
        metrics::describe_histogram!(
            BACKEND_CALL_SECONDS,
            metrics::Unit::Seconds,
            "Seconds a backend call (an MCP tool call, a remote A2A agent's run) took until its answer or its failure (not a cancelled one), by backend."
        );
    });
    metrics::histogram!(BACKEND_CALL_SECONDS, "backend" => backend.to_owned()).record(took.as_secs_f64());
}

/// The health of one backend, for `/health` and metrics: whether it is up, since when, why it
/// is not, and how many calls it served and failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackendStatus {
    /// The backend's name (`[[mcp]]`'s or `[[a2a]]`'s `name`).
    pub name: String,
    /// Whether it can take calls now. A remote A2A agent is down from a call that could not
    /// reach it until a call reaches it again.
    pub up: bool,
    /// When `up` last changed (or when the backend was first reached).
    pub since: SystemTime,
    /// Why it last went down or failed to come back (kept after it is back, for the record).
    pub last_error: Option<String>,
    /// Calls made: MCP tool calls, runs of a remote A2A agent's skills.
    pub calls: u64,
    /// Calls that failed for the backend's sake (unavailable, timed out, refused, a wrong
    /// answer); a tool's own error (`tool_error`), a remote task that failed or was rejected,
    /// and a cancelled run do not count.
    pub failures: u64,
    /// Times the backend was brought back (or came back) after going down.
    pub reconnects: u64,
}
