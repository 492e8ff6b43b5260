//! `POST /entrypoints/{key}/invoke`, with target-side idempotency and, for a priced skill, the
//! payment gate: validate, challenge (no credential), verify, look the key up (a paid answer per
//! payer), run, settle, answer with the receipt.

use accord_engine::idempotency::{self, Claim, IdempotencyClaim, StoredResponse};
use accord_types::lucid::{InvokeResponse, RunStatus};
use axum::body::Body;
use axum::extract::{OriginalUri, Path};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use accord_engine::PaidRun;
use accord_engine::task::PaymentFlow;
use accord_payments::Operation;

use super::error::LucidError;
use super::payments::HttpPayment;
use crate::State;
use crate::payments;

const IDEMPOTENCY_KEY: &str = "idempotency-key";
const REPLAYED: HeaderName = HeaderName::from_static("idempotency-replayed");

/// Credentials that make two otherwise equal requests different requests: a replay must never
/// hand one caller's response to another. Payment credentials are not among them: each payment is
/// a new credential. A paid answer is instead kept per payer (see [`invoke`]). An
/// `Authorization: Payment …` credential is left out for the same reason.
const SECURITY_HEADERS: &[&str] =
    &["authorization", "proxy-authorization", "cookie", "x-api-key", "sign-in-with-x", "x-sign-in-with-x"];

/// Whether a header value is a payment credential rather than an identity.
fn is_payment_credential(name: &str, value: &HeaderValue) -> bool {
    name == "authorization" && value.as_bytes().get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case(b"payment "))
}

/// Invokes a skill. With an `Idempotency-Key`, a repeat of a request that succeeded is answered
/// from its record, not run again — for a priced skill only to the same payer: the payment is
/// verified first (a request without a credential is challenged, as a first call is), and the
/// record is kept under the payer the verified credential names. The same payer's repeat is
/// answered from the record, its new payment released unsettled; another payer's is a first call
/// of their own, paid. A free skill's record answers whoever repeats the request.
pub(crate) async fn invoke(
    axum::extract::State(state): State,
    Path(key): Path<String>,
    OriginalUri(uri): OriginalUri,
    crate::auth::RequestCaller(caller): crate::auth::RequestCaller,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, LucidError> {
    let skill = state.agent.invocable(&key, &caller)?;
    let checked = super::read_input(&state, skill, &headers, body).await?;
    let idempotency_key = idempotency_key(&headers)?;

    // The engine runs the payment steps in order: a request without a credential is challenged;
    // a credential is verified (nothing moves yet), so the payer is known before the record is
    // looked at; a failed run drops the claim, which releases the key for a retry, and the payment
    // is released unsettled; an output whose payment did not settle is not handed out.
    let resource = format!("{}{}", crate::card::origin(&headers, &uri), uri.path());
    let mut payment = HttpPayment::new(
        state.config.payments.as_ref(),
        &headers,
        resource,
        Operation::Invoke,
        idempotency_key.as_deref(),
    );
    match state.agent.admit_invoke(&checked.valid, &mut payment).await {
        None => {}
        Some(PaidRun::ChallengeNeeded) => return Ok(payment.challenge()),
        Some(PaidRun::Refused(response)) => return Ok(response),
        Some(_) => return Err(LucidError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal error")),
    }
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
            // A paid answer is kept under its payer (a digest, never the credential): only the
            // same payer's verified repeat finds it.
            let scope = match payment.payer_digest() {
                Some(payer) => format!("entrypoint:{key}:invoke:payer:{payer}"),
                None => format!("entrypoint:{key}:invoke"),
            };
            match claimed(state.idempotency.claim(&scope, idempotency_key, &fingerprint)) {
                Claimed::Run(claim) => Some(claim),
                Claimed::Answer(answer) => {
                    // Answered from the record (or refused): the verified payment is released,
                    // never settled.
                    payment.abort().await;
                    return Ok(answer);
                }
            }
        }
    };

    let (invocation, receipt) = match state.agent.invoke_admitted(checked.valid, &mut payment).await? {
        PaidRun::Ran { output, receipt } => (output, receipt),
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

/// What a look-up of the key leaves to do.
enum Claimed {
    /// Run the request under this claim.
    Run(IdempotencyClaim),
    /// Answer with this instead: the record's response, or why the key cannot be used now.
    Answer(Response),
}

fn claimed(claim: Claim) -> Claimed {
    let refused = match claim {
        Claim::Acquired(claim) => return Claimed::Run(claim),
        Claim::Replay(stored) => return Claimed::Answer(replay(stored)),
        Claim::NotReplayable(digest) => LucidError::new(
            StatusCode::CONFLICT,
            "idempotency_response_not_kept",
            format!(
                "A request with this Idempotency-Key already succeeded and was not run again, but its response was too large to keep for replay (status {}, {} bytes, SHA-256 {})",
                digest.status, digest.body_len, digest.body_sha256
            ),
        ),
        Claim::InProgress => LucidError::new(
            StatusCode::CONFLICT,
            "idempotency_in_progress",
            "A request with this Idempotency-Key is still in progress",
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1")),
        Claim::Conflict => LucidError::new(
            StatusCode::CONFLICT,
            "idempotency_key_conflict",
            "This Idempotency-Key was used for a different request",
        ),
        Claim::Full => LucidError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "idempotency_store_error",
            "The idempotency store is full; retry later",
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1")),
    };
    Claimed::Answer(refused.into_response())
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
