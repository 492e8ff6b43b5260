//! A2A version negotiation, once for both bindings: a layer reads the requested version
//! (`A2A-Version` header, or the query parameter of that name) before any handler runs. The
//! HTTP+JSON binding, whose first check it is, refuses an unsupported version in the layer; the
//! JSON-RPC binding checks content type, size and envelope first, so its layer records the outcome
//! in the request's extensions and the handler reports it with the request's id.

use accord_types::a2a::{A2aError, A2aErrorKind, ErrorMapping};
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;

/// What the layer found, kept in the request's extensions.
#[derive(Debug, Clone)]
struct Negotiated(Result<(), A2aError>);

/// The requested protocol version, from the `A2A-Version` header or query parameter: only
/// `1.0` (patch numbers ignored) is served; none at all means 0.3, which this binding does not speak.
pub(crate) fn negotiate(headers: &HeaderMap, query: Option<&str>) -> Result<(), A2aError> {
    let from_query = query.and_then(|query| {
        query.split('&').find_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            name.eq_ignore_ascii_case("a2a-version").then(|| value.to_owned())
        })
    });
    let requested = headers
        .get("a2a-version")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .or(from_query)
        .map(|value| value.trim().to_owned())
        .unwrap_or_default();
    let major_minor: Vec<&str> = requested.split('.').take(2).collect();
    match major_minor.as_slice() {
        ["1", "0"] => Ok(()),
        [""] => Err(A2aError::new(A2aErrorKind::VersionNotSupported).with_message(
            "no A2A-Version was sent, which means 0.3; this interface speaks 1.0: send A2A-Version: 1.0",
        )),
        _ => Err(A2aError::new(A2aErrorKind::VersionNotSupported)
            .with_message(format!("A2A-Version {requested} is not supported; this interface speaks 1.0"))),
    }
}

/// Records the negotiation for the handler to report ([`negotiated`]).
pub(crate) async fn record(mut request: Request, next: Next) -> Response {
    let outcome = negotiate(request.headers(), request.uri().query());
    request.extensions_mut().insert(Negotiated(outcome));
    next.run(request).await
}

/// Refuses an unsupported version before anything else, rendered with `mapping`.
pub(crate) async fn refuse(State(mapping): State<ErrorMapping>, request: Request, next: Next) -> Response {
    match negotiate(request.headers(), request.uri().query()) {
        Ok(()) => next.run(request).await,
        Err(error) => super::rest::error_with(mapping, &error),
    }
}

/// The outcome [`record`] kept for this request.
pub(crate) fn negotiated(extensions: &axum::http::Extensions) -> Result<(), A2aError> {
    match extensions.get::<Negotiated>() {
        Some(Negotiated(outcome)) => outcome.clone(),
        None => {
            tracing::error!("an A2A binding was mounted without its version layer");
            Err(A2aError::new(A2aErrorKind::Internal))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_negotiation() {
        let mut headers = HeaderMap::new();
        assert_eq!(negotiate(&headers, None).map_err(|e| e.kind), Err(A2aErrorKind::VersionNotSupported));
        assert!(negotiate(&headers, Some("A2A-Version=1.0")).is_ok());
        headers.insert("a2a-version", "1.0".parse().expect("header"));
        assert!(negotiate(&headers, None).is_ok());
        headers.insert("a2a-version", "1.0.3".parse().expect("header"));
        assert!(negotiate(&headers, None).is_ok(), "patch numbers do not count");
        headers.insert("a2a-version", "99.0".parse().expect("header"));
        assert_eq!(negotiate(&headers, None).map_err(|e| e.kind), Err(A2aErrorKind::VersionNotSupported));
        headers.insert("a2a-version", "0.3".parse().expect("header"));
        assert!(negotiate(&headers, None).is_err());
    }
}
