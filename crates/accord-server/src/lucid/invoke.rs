//! `POST /entrypoints/{key}/invoke`, with target-side idempotency and, for a priced skill, the
//! payment gate: validate, challenge (no credential), verify, run, settle, answer with the receipt.

use accord_engine::idempotency::{self, Claim, StoredResponse};
use accord_types::lucid::{InvokeResponse, RunStatus};
use axum::body::Body;
use axum::extract::{OriginalUri, Path};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use accord_engine::PaidRun;
use accord_payments::Operation;

use crate::State;
use crate::error::LucidError;
use crate::payments::{self, HttpPayment};

const IDEMPOTENCY_KEY: &str = "idempotency-key";
const REPLAYED: HeaderName = HeaderName::from_static("idempotency-replayed");

/// Credentials that make two otherwise equal requests different requests: a replay must never
/// hand one caller's response to another. Payment credentials are not among them: each payment is
/// a new credential, and a replay is exactly what must not be paid for again — a paid answer is
/// replayed, receipt included, to whoever repeats the request with its idempotency key (and the
/// same identity headers). An `Authorization: Payment …` credential is left out for the same reason.
const SECURITY_HEADERS: &[&str] =
    &["authorization", "proxy-authorization", "cookie", "x-api-key", "sign-in-with-x", "x-sign-in-with-x"];

/// Whether a header value is a payment credential rather than an identity.
fn is_payment_credential(name: &str, value: &HeaderValue) -> bool {
    name == "authorization" && value.as_bytes().get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case(b"payment "))
}

pub(crate) async fn invoke(
    axum::extract::State(state): State,
    Path(key): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, LucidError> {
    let skill = state.agent.invocable(&key)?;
    let checked = super::read_input(&state, skill, &headers, body).await?;
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
                for value in headers.get_all(*name).iter().filter(|value| !is_payment_credential(name, value)) {
                    parts.push(value.as_bytes());
                }
            }
            let fingerprint = idempotency::fingerprint(parts);
            let scope = format!("entrypoint:{key}:invoke");
            match state.idempotency.claim(&scope, idempotency_key, &fingerprint) {
                Claim::Acquired(claim) => Some(claim),
                Claim::Replay(stored) => return Ok(replay(stored)),
                Claim::NotReplayable(digest) => {
                    return Err(LucidError::new(
                        StatusCode::CONFLICT,
                        "idempotency_response_not_kept",
                        format!(
                            "A request with this Idempotency-Key already succeeded and was not run again, but its response was too large to keep for replay (status {}, {} bytes, SHA-256 {})",
                            digest.status, digest.body_len, digest.body_sha256
                        ),
                    ));
                }
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

    // A replay was answered above, free. The engine runs the payment steps in order: a first
    // request without a credential is challenged (and the claim dropped, so the paid retry can
    // take it); a failed run drops the claim, which releases the key for a retry, and the payment
    // is released unsettled; an output whose payment did not settle is not handed out.
    let resource = format!("{}{}", crate::card::origin(&headers, &uri), uri.path());
    let mut payment = HttpPayment::new(
        state.config.payments.as_ref(),
        &headers,
        resource,
        Operation::Invoke,
        idempotency_key.as_deref(),
    );
    let (invocation, receipt) = match state.agent.invoke_paid(checked.valid, &mut payment).await? {
        PaidRun::Ran { output, receipt } => (output, receipt),
        PaidRun::ChallengeNeeded => return Ok(payment.challenge()),
        PaidRun::Refused(response) => return Ok(response),
        _ => return Err(LucidError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal error")),
    };
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
    let mut response = ([(header::CONTENT_TYPE, "application/json")], bytes.clone()).into_response();
    if let Some(receipt) = &receipt {
        payments::with_receipt(&mut response, receipt);
    }
    if let Some(claim) = claim {
        // A replay hands back the same receipt; it never settles again.
        let stored = StoredResponse {
            status: StatusCode::OK.as_u16(),
            headers: response
                .headers()
                .iter()
                .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
                .collect(),
            body: bytes,
        };
        if !claim.complete(stored) {
            tracing::warn!(skill = %key, "idempotency claim expired before the run finished");
        }
    }
    Ok(response)
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
