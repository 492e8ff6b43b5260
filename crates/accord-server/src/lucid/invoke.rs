//! `POST /entrypoints/{key}/invoke`, with target-side idempotency.

use accord_engine::idempotency::{self, Claim, StoredResponse};
use accord_types::lucid::{InvokeResponse, RunStatus};
use axum::body::Body;
use axum::extract::{OriginalUri, Path};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::State;
use crate::error::LucidError;

const IDEMPOTENCY_KEY: &str = "idempotency-key";
const REPLAYED: HeaderName = HeaderName::from_static("idempotency-replayed");

/// Credentials that make two otherwise equal requests different requests: a replay must never
/// hand one caller's response to another.
const SECURITY_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "payment",
    "payment-signature",
    "x-payment",
    "sign-in-with-x",
    "x-sign-in-with-x",
];

pub(crate) async fn invoke(
    axum::extract::State(state): State,
    Path(key): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, LucidError> {
    let skill = state.agent.skill(&key).map_err(|_| LucidError::entrypoint_not_found())?;
    if !skill.is_invocable() {
        return Err(LucidError::code_only(StatusCode::NOT_IMPLEMENTED, "not_implemented"));
    }
    let checked = super::read_input(&state, skill, body).await?;
    let idempotency_key = idempotency_key(&headers)?;

    let claim = match &idempotency_key {
        None => None,
        Some(idempotency_key) => {
            let body = serde_json::to_vec(&checked.payload).unwrap_or_default();
            let mut parts: Vec<&[u8]> = vec![
                Method::POST.as_str().as_bytes(),
                uri.path_and_query().map_or(uri.path(), |pq| pq.as_str()).as_bytes(),
                &body,
            ];
            for name in SECURITY_HEADERS {
                parts.push(name.as_bytes());
                for value in headers.get_all(*name) {
                    parts.push(value.as_bytes());
                }
            }
            let fingerprint = idempotency::fingerprint(parts);
            let scope = format!("entrypoint:{key}:invoke");
            match state.idempotency.claim(&scope, idempotency_key, &fingerprint) {
                Claim::Acquired(claim) => Some(claim),
                Claim::Replay(stored) => return Ok(replay(stored)),
                Claim::InProgress => {
                    return Err(LucidError::new(
                        StatusCode::CONFLICT,
                        "idempotency_in_progress",
                        "A request with this Idempotency-Key is still in progress",
                    )
                    .with_header(header::RETRY_AFTER, HeaderValue::from_static("1")));
                }
                Claim::Conflict => {
                    return Err(LucidError::new(
                        StatusCode::CONFLICT,
                        "idempotency_key_conflict",
                        "This Idempotency-Key was used for a different request",
                    ));
                }
                Claim::Full => {
                    return Err(LucidError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "idempotency_store_error",
                        "The idempotency store is full; retry later",
                    )
                    .with_header(header::RETRY_AFTER, HeaderValue::from_static("1")));
                }
            }
        }
    };

    // A failed run drops the claim, which releases the key for a retry.
    let invocation = state.agent.invoke(checked.valid).await?;
    let completion = invocation.completion;
    let body = InvokeResponse {
        run_id: Some(invocation.run_id),
        status: RunStatus::Succeeded,
        output: Some(completion.output),
        usage: completion.usage,
        model: completion.model,
    };
    let bytes = bytes::Bytes::from(serde_json::to_vec(&body).map_err(|error| {
        tracing::error!(%error, "invoke response does not serialize");
        LucidError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal error")
    })?);
    if let Some(claim) = claim {
        let stored = StoredResponse {
            status: StatusCode::OK.as_u16(),
            headers: vec![(header::CONTENT_TYPE.to_string(), "application/json".into())],
            body: bytes.clone(),
        };
        if !claim.complete(stored) {
            tracing::warn!(skill = %key, "idempotency claim expired before the run finished");
        }
    }
    Ok(([(header::CONTENT_TYPE, "application/json")], bytes).into_response())
}

/// The `Idempotency-Key` header, trimmed; 20 to 256 characters when present.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, LucidError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    let invalid = || {
        LucidError::new(
            StatusCode::BAD_REQUEST,
            "invalid_idempotency_key",
            "Idempotency-Key must contain 20 to 256 characters",
        )
    };
    let key = value.to_str().map_err(|_| invalid())?.trim();
    if !(20..=256).contains(&key.chars().count()) {
        return Err(invalid());
    }
    Ok(Some(key.to_owned()))
}

fn replay(stored: StoredResponse) -> Response {
    let mut response = Response::new(Body::from(stored.body));
    *response.status_mut() = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    for (name, value) in stored.headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().append(name, value);
        }
    }
    response.headers_mut().insert(REPLAYED, HeaderValue::from_static("true"));
    response
}
