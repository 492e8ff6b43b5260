//! `POST /entrypoints/{key}/stream`: a run as server-sent events, `run-start` … `run-end`.
//!
//! Each engine event becomes one SSE event `id: <sequence>`, `event: <kind>`, `data: <json>`.
//! Engine events the Lucid wire has no kind for are projected onto `control` events: a task
//! status change as `control: "status"` and an artifact chunk as `control: "artifact"`, so that no
//! event (and no sequence number) is silently dropped. When the client goes away the response
//! body is dropped, which drops the run stream, which cancels the run.
//!
//! A priced stream is settled before it starts (the receipt travels in the response headers, which
//! precede the events): validate, challenge, verify, settle, stream.

use std::convert::Infallible;

use accord_engine::{AssetTransfer, EndStatus, Part, RunEvent, RunFrame, time};
use accord_types::lucid::{RunEndError, RunStatus, StreamEnvelope, StreamPayload};
use axum::body::Body;
use axum::extract::Path;
use axum::response::Response;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::StreamExt;
use serde_json::{Value, json};

use accord_engine::PaidRun;
use accord_payments::Operation;
use axum::extract::OriginalUri;
use axum::http::HeaderMap;

use super::error::{LucidError, incomplete_code};
use super::payments::HttpPayment;
use crate::State;
use crate::payments;

pub(crate) async fn stream(
    axum::extract::State(state): State,
    Path(key): Path<String>,
    OriginalUri(uri): OriginalUri,
    crate::auth::RequestCaller(caller): crate::auth::RequestCaller,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, LucidError> {
    if !state.config.streaming {
        return Err(accord_engine::RunError::NotStreamable { key }.into());
    }
    let skill = state.agent.streamable(&key, &caller)?;
    let checked = super::read_input(&state, skill, &headers, body).await?;
    let resource = format!("{}{}", crate::card::origin(&headers, &uri), uri.path());
    let idempotency_key = headers.get("idempotency-key").and_then(|value| value.to_str().ok()).map(str::trim);
    let mut payment =
        HttpPayment::new(state.config.payments.as_ref(), &headers, resource, Operation::Stream, idempotency_key);
    let (run, receipt) = match state.agent.stream_paid(checked.valid, &mut payment).await? {
        PaidRun::Ran { output, receipt } => (output, receipt),
        PaidRun::ChallengeNeeded => return Ok(payment.challenge()),
        PaidRun::Refused(response) => return Ok(response),
        _ => {
            return Err(LucidError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "Internal error",
            ));
        }
    };
    let run_id = run.run_id().to_owned();
    let events = run.map(move |frame| Ok::<_, Infallible>(sse_event(&run_id, frame)));
    let mut response = crate::sse::sse_response(Sse::new(events).keep_alive(KeepAlive::default()));
    if let Some(receipt) = &receipt {
        payments::with_receipt(&mut response, receipt);
    }
    Ok(response)
}

fn sse_event(run_id: &str, frame: RunFrame) -> Event {
    let envelope = StreamEnvelope {
        payload: project(frame.event),
        run_id: run_id.to_owned(),
        sequence: frame.sequence,
        created_at: time::iso_millis(frame.created_at),
    };
    let data = serde_json::to_string(&envelope).unwrap_or_else(|error| {
        tracing::error!(%error, "stream event does not serialize");
        json!({"kind": "error", "code": "internal_error", "message": "Internal error", "runId": run_id,
               "sequence": frame.sequence})
        .to_string()
    });
    Event::default().id(frame.sequence.to_string()).event(envelope.payload.kind()).data(data)
}

/// Projects an engine event onto the Lucid stream's kinds.
pub(crate) fn project(event: RunEvent) -> StreamPayload {
    match event {
        RunEvent::RunStart => StreamPayload::RunStart {},
        RunEvent::Text { text, mime } => StreamPayload::Text { text, mime, role: None },
        RunEvent::Delta { delta, mime, is_final } => {
            StreamPayload::Delta { delta, mime, is_final: is_final.then_some(true), role: None }
        }
        RunEvent::Message(message) => {
            StreamPayload::Text { text: message.text(), mime: None, role: Some("agent".into()) }
        }
        RunEvent::Asset(asset) => {
            let (transfer, data, href, expires_at) = match asset.transfer {
                AssetTransfer::Inline { data } => ("inline", Some(data), None, None),
                AssetTransfer::External { href, expires_at } => ("external", None, Some(href), expires_at),
            };
            StreamPayload::Asset {
                asset_id: asset.asset_id,
                mime: asset.mime,
                name: asset.name,
                size_bytes: asset.size_bytes,
                transfer: transfer.into(),
                data,
                href,
                expires_at,
            }
        }
        RunEvent::Control { control, payload } => StreamPayload::Control { control, payload },
        RunEvent::Status { state, message } => StreamPayload::Control {
            control: "status".into(),
            payload: Some(json!({"state": state, "message": message.map(|m| m.text())})),
        },
        RunEvent::Artifact { artifact, append, last_chunk } => StreamPayload::Control {
            control: "artifact".into(),
            payload: Some(json!({
                "artifactId": artifact.artifact_id,
                "name": artifact.name,
                "parts": artifact.parts.iter().map(part_json).collect::<Vec<_>>(),
                "append": append,
                "lastChunk": last_chunk,
            })),
        },
        RunEvent::Error(error) => {
            StreamPayload::Error { code: error.code, message: error.message, retryable: error.retryable }
        }
        RunEvent::End(end) => {
            let end = *end;
            let status = match end.status {
                EndStatus::Succeeded => RunStatus::Succeeded,
                EndStatus::Cancelled => RunStatus::Cancelled,
                _ => RunStatus::Failed,
            };
            let error = match (end.error, end.status) {
                (Some(error), _) => Some(RunEndError { code: error.code, message: Some(error.message) }),
                (None, EndStatus::InputRequired | EndStatus::AuthRequired | EndStatus::Rejected) => Some(RunEndError {
                    code: incomplete_code(end.status).into(),
                    message: end.message.map(|message| message.text()),
                }),
                (None, _) => None,
            };
            let (output, usage, model) = match end.completion {
                Some(completion) => (Some(completion.output), completion.usage, completion.model),
                None => (None, None, None),
            };
            StreamPayload::RunEnd { status, output, usage, model, error, metadata: None }
        }
        other => {
            tracing::warn!(?other, "engine event without a Lucid projection");
            StreamPayload::Control { control: "unknown".into(), payload: None }
        }
    }
}

fn part_json(part: &Part) -> Value {
    match part {
        Part::Text(text) => json!({"text": text}),
        Part::Data(data) => json!({"data": data}),
        Part::File { name, mime, bytes_base64, uri } => {
            json!({"file": {"name": name, "mediaType": mime, "bytes": bytes_base64, "uri": uri}})
        }
        _ => Value::Null,
    }
}
