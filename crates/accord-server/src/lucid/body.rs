//! The Lucid profile's rules for a request body: JSON only (415 `unsupported_media_type`), the
//! size cap as `413 payload_too_large`, and an empty body read as `{}`. The neutral reading is
//! [`crate::body`]'s; this module only words its failures in the Lucid shape.

use axum::body::{Body, HttpBody};
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use serde_json::Value;

use super::error::LucidError;
use crate::body::{BodyFailure, is_json, read_capped};

/// Reads the whole body for the Lucid face: 413 `payload_too_large` over the cap, 400
/// `invalid_request` when it broke off or is badly framed.
pub(crate) async fn read_limited(body: Body, limit: usize) -> Result<Bytes, LucidError> {
    read_capped(body, limit).await.map_err(|failure| match failure {
        BodyFailure::TooLarge { .. } => {
            LucidError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", failure.message())
        }
        BodyFailure::Broken => LucidError::new(StatusCode::BAD_REQUEST, "invalid_request", failure.message()),
    })
}

/// The Lucid rule for a route that takes a JSON body: a body, or any `Content-Type`, must be
/// JSON (415 `unsupported_media_type`). A bare POST without a body or a `Content-Type` is still
/// accepted (its input is `{}`). A web page can send `text/plain` and form bodies to any origin
/// without a CORS preflight; requiring JSON makes the browser ask first.
pub(crate) fn require_json(headers: &HeaderMap, body: &Body) -> Result<(), LucidError> {
    let bodiless = body.size_hint().exact() == Some(0);
    if is_json(headers) || (bodiless && !headers.contains_key(header::CONTENT_TYPE)) {
        return Ok(());
    }
    Err(LucidError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "Content-Type must be application/json",
    ))
}

/// Parses a JSON body; an empty body reads as `{}` so that skills without input can be called
/// with a bare POST.
pub(crate) fn parse_json(bytes: &[u8]) -> Result<Value, LucidError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_slice(bytes).map_err(|_| LucidError::invalid_json())
}
