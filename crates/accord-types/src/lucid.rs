//! Bodies of the Lucid HTTP profile: invoke, stream envelopes, health, the entrypoint list and the
//! error body.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The body of every Lucid error response: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "LucidError")]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

impl ErrorBody {
    /// An error with a code and a message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { error: ErrorDetail { code: code.into(), message: Some(message.into()), ..ErrorDetail::default() } }
    }

    /// An error with a code only (the Lucid `errorResponse` form has no message).
    pub fn code_only(code: impl Into<String>) -> Self {
        Self { error: ErrorDetail { code: code.into(), ..ErrorDetail::default() } }
    }
}

/// The inside of an [`ErrorBody`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "LucidErrorDetail")]
pub struct ErrorDetail {
    /// A stable, machine-readable code such as `invalid_input`.
    pub code: String,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Validation issues, for `invalid_input` and `invalid_output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issues: Option<Vec<Value>>,
    /// The entrypoint key, for `stream_not_supported`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// `GET /health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HealthResponse {
    /// `true` when the agent takes work; `false` (with status 503) while it drains before a stop.
    /// A backend that is down does not change it: the agent's other skills still work.
    pub ok: bool,
    /// The agent's version.
    pub version: String,
    /// The backends the agent's skills call (an agent file's MCP servers and remote A2A agents), each with its state;
    /// left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<BackendHealth>,
}

/// One backend's state in [`HealthResponse::backends`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BackendHealth {
    /// Its name (an MCP server's or a remote A2A agent's `name` in the agent file).
    pub name: String,
    /// Whether it takes calls now.
    pub up: bool,
    /// Since when `up` has been what it is (ISO 8601, UTC).
    pub since: String,
    /// Why it last went down or failed to come back, if it ever did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Calls made to it.
    pub calls: u64,
    /// Calls that failed for its sake (unavailable, timed out, an answer that is not one).
    pub failures: u64,
    /// Times it was brought back after going down.
    pub reconnects: u64,
}

/// `GET /entrypoints`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntrypointsResponse {
    /// One item per skill.
    pub items: Vec<EntrypointItem>,
}

/// One item of [`EntrypointsResponse`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntrypointItem {
    /// The skill key.
    pub key: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it streams.
    pub streaming: bool,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// The handler returned an output.
    Succeeded,
    /// The handler failed.
    Failed,
    /// The run was cancelled.
    Cancelled,
}

/// `POST /entrypoints/:key/invoke` → 200.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InvokeResponse {
    /// The run's id (a UUID when Accord served it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Always [`RunStatus::Succeeded`] from Accord; other servers may differ.
    pub status: RunStatus,
    /// The skill's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Usage figures reported by the handler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// The model the handler used, if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// One SSE event of `POST /entrypoints/:key/stream`: a payload plus the run envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamEnvelope {
    /// The event itself, tagged by `kind`.
    #[serde(flatten)]
    pub payload: StreamPayload,
    /// The run this event belongs to.
    #[serde(rename = "runId")]
    pub run_id: String,
    /// The event's position in the run, from 0.
    pub sequence: u64,
    /// When the event was made (ISO 8601, milliseconds, UTC).
    #[serde(rename = "createdAt")]
    pub created_at: String,
}

/// The payload kinds of a Lucid stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum StreamPayload {
    /// The first event of every run.
    RunStart {},
    /// A complete piece of text.
    Text {
        /// The text.
        text: String,
        /// Its media type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime: Option<String>,
        /// Who speaks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// An increment of text.
    Delta {
        /// The increment.
        delta: String,
        /// Its media type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime: Option<String>,
        /// Whether this is the last increment of its text.
        #[serde(default, rename = "final", skip_serializing_if = "Option::is_none")]
        is_final: Option<bool>,
        /// Who speaks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// A file or blob, inline or by reference.
    Asset {
        /// The asset's id.
        #[serde(rename = "assetId")]
        asset_id: String,
        /// Its media type.
        mime: String,
        /// A file name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Its size.
        #[serde(default, rename = "sizeBytes", skip_serializing_if = "Option::is_none")]
        size_bytes: Option<u64>,
        /// `inline` (with `data`) or `external` (with `href`).
        transfer: String,
        /// Inline data (base64 for binary).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
        /// Where to fetch an external asset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        href: Option<String>,
        /// Until when `href` is valid.
        #[serde(default, rename = "expiresAt", skip_serializing_if = "Option::is_none")]
        expires_at: Option<String>,
    },
    /// An application-defined control signal.
    Control {
        /// Its name.
        control: String,
        /// Its data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        payload: Option<Value>,
    },
    /// An error; a failed `run-end` follows when it ends the run.
    Error {
        /// A stable code.
        code: String,
        /// What went wrong.
        message: String,
        /// Whether trying again may help.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retryable: Option<bool>,
    },
    /// The last event of every run.
    RunEnd {
        /// How the run ended.
        status: RunStatus,
        /// The output, when it succeeded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
        /// Usage figures.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Value>,
        /// The model used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Why it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<RunEndError>,
        /// Anything else the handler attached.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
}

impl StreamPayload {
    /// The `kind` string of this payload, as used for the SSE `event:` field.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::RunStart {} => "run-start",
            Self::Text { .. } => "text",
            Self::Delta { .. } => "delta",
            Self::Asset { .. } => "asset",
            Self::Control { .. } => "control",
            Self::Error { .. } => "error",
            Self::RunEnd { .. } => "run-end",
        }
    }
}

/// The error of a failed `run-end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunEndError {
    /// A stable code.
    pub code: String,
    /// What went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stream_envelope_matches_the_lucid_wire() {
        let event = StreamEnvelope {
            payload: StreamPayload::Delta { delta: "t0".into(), mime: None, is_final: None, role: None },
            run_id: "r".into(),
            sequence: 1,
            created_at: "2026-01-01T00:00:00.000Z".into(),
        };
        let wire = serde_json::to_value(&event).expect("json");
        assert_eq!(
            wire,
            json!({"kind": "delta", "delta": "t0", "runId": "r", "sequence": 1,
                   "createdAt": "2026-01-01T00:00:00.000Z"})
        );
        assert_eq!(serde_json::from_value::<StreamEnvelope>(wire).expect("back"), event);
        let start = json!({"kind": "run-start", "runId": "r", "sequence": 0, "createdAt": "x"});
        let parsed: StreamEnvelope = serde_json::from_value(start).expect("run-start");
        assert_eq!(parsed.payload.kind(), "run-start");
    }
}
