//! Reading request bodies: the JSON content type, the size cap and framing.
//!
//! Every face reads its body here and projects a [`BodyFailure`] onto its own error shape, so
//! that a body over the cap (413, or the dialect's own code) is never confused with one that broke
//! off or was malformed on the wire (400).

use axum::body::{Body, HttpBody};
use axum::http::{HeaderMap, header};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

/// Why a request body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFailure {
    /// It is larger than the cap (the rest is not read).
    TooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
    /// It broke off before its declared length, or its chunked framing is invalid.
    Broken,
}

impl BodyFailure {
    /// A message for the caller.
    pub(crate) fn message(self) -> String {
        match self {
            Self::TooLarge { limit } => format!("The request body exceeds {limit} bytes"),
            Self::Broken => BROKEN.to_owned(),
        }
    }
}

const BROKEN: &str =
    "The request body could not be read: it ended before its declared length or its framing is invalid";

/// Reads the whole body, refusing one larger than `limit` without reading the rest, and telling
/// a body that broke off or is badly framed apart from one that is too large.
pub(crate) async fn read_capped(body: Body, limit: usize) -> Result<Bytes, BodyFailure> {
    // A declared length over the cap is refused before anything is read.
    if usize::try_from(body.size_hint().lower()).map_or(true, |declared| declared > limit) {
        return Err(BodyFailure::TooLarge { limit });
    }
    let mut read = BytesMut::new();
    let mut frames = body.into_data_stream();
    while let Some(frame) = frames.next().await {
        let Ok(data) = frame else { return Err(BodyFailure::Broken) };
        if data.len() > limit.saturating_sub(read.len()) {
            return Err(BodyFailure::TooLarge { limit });
        }
        read.extend_from_slice(&data);
    }
    Ok(read.freeze())
}

/// Whether `Content-Type` names JSON: `application/json` or a `+json` type such as
/// `application/a2a+json`, parameters allowed. Only the media type itself counts: `text/plain;
/// x=application/json` is text, and a browser sends it cross-origin without a preflight.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn typed(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn only_json_media_types_are_json() {
        for json in
            ["application/json", "Application/JSON; charset=utf-8", "application/a2a+json", " application/json "]
        {
            assert!(is_json(&typed(json)), "{json}");
        }
        for other in ["text/plain", "text/plain; x=application/json", "application/jsonp", "text/json+x", ""] {
            assert!(!is_json(&typed(other)), "{other}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }

    #[tokio::test]
    async fn a_body_over_the_cap_is_too_large_and_one_within_it_is_read() {
        assert_eq!(read_capped(Body::from("12345"), 4).await, Err(BodyFailure::TooLarge { limit: 4 }));
        assert_eq!(read_capped(Body::from("1234"), 4).await.as_deref(), Ok(&b"1234"[..]));
        assert_eq!(read_capped(Body::empty(), 0).await.as_deref(), Ok(&b""[..]));
    }
}
