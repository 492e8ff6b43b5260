//! The HTTP core every client of the crate reads answers through: the card GET, the
//! response-size cap, the bounded body reader and the bounded SSE byte stream. It knows no dialect and no error type of
//! the clients above it; each maps [`BodyError`] and [`BoundError`] into its own.

use std::time::Duration;

use futures_util::{Stream, StreamExt};
use reqwest::header::{ACCEPT, HeaderMap};
use reqwest::{StatusCode, Url};

/// The largest response body accepted (for a stream: the largest single event).
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// The body is larger than the limit it was read under.
    TooLarge(usize),
    /// The connection failed while the body was read.
    Transport(reqwest::Error),
}

/// GETs an agent card at `url` as JSON, with `headers`: the status and the body read under
/// [`MAX_RESPONSE_BYTES`] (kept apart, as callers judge a failed body by the status).
pub(crate) async fn get_card(
    http: &reqwest::Client,
    url: &Url,
    headers: HeaderMap,
    timeout: Option<Duration>,
) -> Result<(StatusCode, Result<Vec<u8>, BodyError>), reqwest::Error> {
    let mut request = http.get(url.clone()).headers(headers).header(ACCEPT, "application/json");
    if let Some(timeout) = timeout {
        request = request.timeout(timeout);
    }
    let response = request.send().await?;
    let status = response.status();
    Ok((status, read_bounded(response, MAX_RESPONSE_BYTES).await))
}

/// Reads a body, refusing more than `limit` bytes (announced or received).
pub(crate) async fn read_bounded(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|length| length > limit as u64) {
        return Err(BodyError::TooLarge(limit));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The byte stream of an SSE response, failing once a single event grows past
/// [`MAX_RESPONSE_BYTES`] (the parser would otherwise buffer without bound).
pub(crate) fn bounded_sse<B: AsRef<[u8]> + Send + 'static>(
    bytes: impl Stream<Item = Result<B, reqwest::Error>> + Send + 'static,
) -> impl Stream<Item = Result<B, BoundError>> + Send + 'static {
    let mut pending = 0usize;
    // Whether the bytes since the last line feed are empty (a `\r` aside): a line feed then
    // ends an event.
    let mut at_line_start = false;
    bytes.map(move |chunk| {
        let chunk = chunk.map_err(|error| BoundError { reason: error.to_string(), oversized: false })?;
        let data = chunk.as_ref();
        let mut last_boundary = None;
        for (index, byte) in data.iter().enumerate() {
            match byte {
                b'\n' => {
                    if at_line_start {
                        last_boundary = Some(index);
                    }
                    at_line_start = true;
                }
                b'\r' => {}
                _ => at_line_start = false,
            }
        }
        pending = match last_boundary {
            Some(index) => data.len() - index - 1,
            None => pending + data.len(),
        };
        if pending > MAX_RESPONSE_BYTES {
            return Err(BoundError {
                reason: format!("a stream event exceeds {MAX_RESPONSE_BYTES} bytes"),
                oversized: true,
            });
        }
        Ok(chunk)
    })
}

/// Why the SSE byte stream stopped.
#[derive(Debug)]
pub(crate) struct BoundError {
    pub(crate) reason: String,
    /// An event outgrew [`MAX_RESPONSE_BYTES`] (rather than the connection failing).
    pub(crate) oversized: bool,
}

impl std::fmt::Display for BoundError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for BoundError {}

/// The start of a body, as text, for error messages.
pub(crate) fn excerpt(body: &[u8]) -> String {
    const LIMIT: usize = 64 * 1024;
    let text = String::from_utf8_lossy(&body[..body.len().min(LIMIT)]).into_owned();
    if body.len() > LIMIT { format!("{text}…") } else { text }
}

/// A fresh random id (128 bits, hex), for messages and JSON-RPC requests.
pub(crate) fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: fall back on the clock, which is unique enough for request ids.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        return format!("{nanos:032x}");
    }
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_oversized_event_stops_the_stream_but_many_small_ones_do_not() {
        let small = "data: x\n\n".repeat(1000);
        let chunks: Vec<Result<Vec<u8>, reqwest::Error>> = (0..2000).map(|_| Ok(small.as_bytes().to_vec())).collect();
        let total = bounded_sse(futures_util::stream::iter(chunks)).filter(|item| std::future::ready(item.is_err()));
        assert_eq!(total.count().await, 0, "18 MB in small events is fine");
        let big = vec![b'a'; 1024 * 1024];
        let chunks: Vec<Result<Vec<u8>, reqwest::Error>> = (0..9).map(|_| Ok(big.clone())).collect();
        let errors = bounded_sse(futures_util::stream::iter(chunks)).filter(|item| std::future::ready(item.is_err()));
        assert_eq!(errors.count().await, 1);
        let crlf: Vec<Result<Vec<u8>, reqwest::Error>> =
            (0..20).map(|_| Ok([vec![b'a'; 512 * 1024], b"\r\n\r\n".to_vec()].concat())).collect();
        let errors = bounded_sse(futures_util::stream::iter(crlf)).filter(|item| std::future::ready(item.is_err()));
        assert_eq!(errors.count().await, 0, "CRLF boundaries count");
    }
}
