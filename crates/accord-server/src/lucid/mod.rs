//! The Lucid HTTP profile face: health, the entrypoint list, invoke and stream, the Lucid error
//! shape ([`error`]) and the profile's body rules ([`body`]).

use std::sync::Arc;

use accord_engine::{Skill, ValidInput};
use accord_types::lucid::{EntrypointItem, EntrypointsResponse, HealthResponse};
use axum::Json;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::refusal::{Refusal, RefusalKind, Refusals};
use crate::{AppState, State};

pub(crate) mod body;
pub(crate) mod error;
pub(crate) mod invoke;
pub(crate) mod payments;
pub(crate) mod stream;
pub(crate) mod tasks;

pub(crate) use error::LucidError;

/// How the Lucid face answers a layer's refusal: `{"error": {"code", "message"}}` with the code
/// `unauthenticated`, `rate_limited` or `server_busy`, at the transport's status (401, 429, 503),
/// with `Retry-After` and the challenges.
pub(crate) fn refusals() -> Refusals {
    Refusals::new(|refusal: &Refusal| {
        let code = match refusal.kind {
            RefusalKind::Unauthenticated => "unauthenticated",
            RefusalKind::RateLimited => "rate_limited",
            RefusalKind::Busy => "server_busy",
            _ => "invalid_request",
        };
        let error = LucidError::new(StatusCode::BAD_REQUEST, code, refusal.message.clone());
        refusal.finish_http(axum::response::IntoResponse::into_response(error))
    })
}

/// `200 {"ok": true}`, or `503 {"ok": false}` while the server drains before a stop; with the
/// backends' states, when the server has some ([`crate::ServerConfig::backends`]). A backend that
/// is down leaves the answer `200`: the agent's other skills still work, and a load balancer must
/// not take it out for one tool server.
pub(crate) async fn health(axum::extract::State(state): State) -> (StatusCode, Json<HealthResponse>) {
    let ok = !state.config.readiness.is_draining();
    let status = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let backends = state.config.backends.as_ref().map(crate::BackendsHealth::read).unwrap_or_default();
    (status, Json(HealthResponse { ok, version: state.agent.version().to_owned(), backends }))
}

pub(crate) async fn entrypoints(axum::extract::State(state): State) -> Json<EntrypointsResponse> {
    let items = state
        .agent
        .skills()
        .iter()
        .map(|skill| EntrypointItem {
            key: skill.key().to_owned(),
            description: skill.description().map(str::to_owned),
            streaming: skill.is_streaming() && state.config.streaming,
        })
        .collect();
    Json(EntrypointsResponse { items })
}

/// A request body read and checked in the profile's order: content type, size, JSON, then the
/// input schema.
pub(crate) struct CheckedBody {
    /// The decoded body, as sent.
    pub(crate) payload: Value,
    /// The input, validated for the skill.
    pub(crate) valid: ValidInput,
}

pub(crate) async fn read_input(
    state: &AppState,
    skill: &Arc<Skill>,
    headers: &HeaderMap,
    body: Body,
) -> Result<CheckedBody, LucidError> {
    body::require_json(headers, &body)?;
    let bytes = body::read_limited(body, state.config.body_limit).await?;
    let payload = body::parse_json(&bytes)?;
    let valid = state.agent.check_input(skill, extract_input(&payload))?;
    Ok(CheckedBody { payload, valid })
}

/// The profile's input rule: `{"input": X}` means X (`null` or absent X means `{}`); any other
/// body is the input itself.
pub(crate) fn extract_input(payload: &Value) -> Value {
    match payload.as_object().and_then(|object| object.get("input")) {
        Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(input) => input.clone(),
        None => payload.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_is_the_input_field_or_the_whole_body() {
        assert_eq!(extract_input(&json!({"input": {"a": 1}})), json!({"a": 1}));
        assert_eq!(extract_input(&json!({"input": null})), json!({}));
        assert_eq!(extract_input(&json!({"text": "x"})), json!({"text": "x"}));
        assert_eq!(extract_input(&json!([1])), json!([1]));
    }
}
