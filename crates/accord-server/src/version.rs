//! A2A version negotiation, once for every binding (a layer below the faces, naming none): a layer reads the requested version
//! (`A2A-Version` header, or the query parameter of that name) before any handler runs. The
//! HTTP+JSON binding, whose first check it is, refuses an unsupported version in the layer; the
//! JSON-RPC binding checks content type, size and envelope first, so its layer records what was
//! asked for in the request's extensions and the handler picks the dialect — 1.0, or 0.3 when
//! that dialect is served — or reports the refusal with the request's id.

use accord_types::a2a::{A2aError, A2aErrorKind};

use crate::refusal::{Refusal, RefusalKind, Refusals};
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;

/// The protocol version a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Requested {
    /// `1.0` (patch numbers ignored).
    V1_0,
    /// `0.3`, or no version at all (which the specification reads as 0.3).
    V0_3,
    /// Anything else, as sent.
    Other(String),
}

impl Requested {
    /// Reads the `A2A-Version` header, else the query parameter of that name.
    pub(crate) fn of(headers: &HeaderMap, query: Option<&str>) -> Self {
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
            ["1", "0"] => Self::V1_0,
            [""] | ["0", "3"] => Self::V0_3,
            _ => Self::Other(requested),
        }
    }

    /// Whether an error about this request is best written in the 0.3 shape: the request asked
    /// for 0.3 or another 0.x version, and this binding speaks 0.3.
    pub(crate) fn is_legacy(&self) -> bool {
        match self {
            Self::V1_0 => false,
            Self::V0_3 => true,
            Self::Other(version) => version.starts_with("0."),
        }
    }

    /// The refusal of this request by a binding that speaks 1.0 when `v10` and 0.3 when `v03`.
    pub(crate) fn refusal_in(&self, v10: bool, v03: bool) -> A2aError {
        A2aError::new(A2aErrorKind::VersionNotSupported).with_message(self.refusal_message(v10, v03))
    }

    /// Why a binding that speaks 1.0 when `v10` and 0.3 when `v03` refuses this request.
    fn refusal_message(&self, v10: bool, v03: bool) -> String {
        let speaks = match (v10, v03) {
            (true, true) => "1.0 and 0.3",
            (true, false) => "1.0",
            (false, true) => "0.3",
            (false, false) => "no A2A version",
        };
        match self {
            Self::V1_0 if !v10 => format!("A2A 1.0 is not supported by this interface, which speaks {speaks}"),
            Self::V0_3 if !v03 => "A2A 0.3 (no A2A-Version, or 0.3) is not supported by this interface, which \
                                   speaks 1.0: send A2A-Version: 1.0"
                .to_owned(),
            Self::Other(version) => format!("A2A-Version {version} is not supported; this interface speaks {speaks}"),
            _ => format!("this interface speaks {speaks}"),
        }
    }
}

/// What the layer found, kept in the request's extensions.
#[derive(Debug, Clone)]
struct Negotiated(Requested);

/// Whether a binding that serves 1.0 when `v10` takes a request (0.3 is served under paths of
/// its own): only `1.0` (patch numbers ignored), from the `A2A-Version` header or query
/// parameter; none at all means 0.3. The refusal's message otherwise.
pub(crate) fn negotiate(headers: &HeaderMap, query: Option<&str>, v10: bool) -> Result<(), String> {
    match Requested::of(headers, query) {
        Requested::V1_0 if v10 => Ok(()),
        Requested::V1_0 => Err(Requested::V1_0.refusal_message(false, true)),
        other => Err(other.refusal_message(true, false)),
    }
}

/// Records the requested version for the handler ([`requested`]).
pub(crate) async fn record(mut request: Request, next: Next) -> Response {
    let requested = Requested::of(request.headers(), request.uri().query());
    request.extensions_mut().insert(Negotiated(requested));
    next.run(request).await
}

/// Refuses an unsupported version before anything else, in the shape of the face mounted behind
/// it (every version, when 1.0 is not served).
pub(crate) async fn refuse(State((refusals, v10)): State<(Refusals, bool)>, request: Request, next: Next) -> Response {
    match negotiate(request.headers(), request.uri().query(), v10) {
        Ok(()) => next.run(request).await,
        Err(message) => refusals.render(&Refusal::new(RefusalKind::VersionNotSupported, message)),
    }
}

/// What [`record`] found for this request.
pub(crate) fn requested(extensions: &axum::http::Extensions) -> Result<Requested, A2aError> {
    match extensions.get::<Negotiated>() {
        Some(Negotiated(requested)) => Ok(requested.clone()),
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
        assert_eq!(negotiate(&headers, None, true).map_err(|m| m.contains("not supported")), Err(true));
        assert!(negotiate(&headers, Some("A2A-Version=1.0"), true).is_ok());
        headers.insert("a2a-version", "1.0".parse().expect("header"));
        assert!(negotiate(&headers, None, true).is_ok());
        assert!(negotiate(&headers, None, false).is_err(), "1.0 is refused where only 0.3 is served");
        headers.insert("a2a-version", "1.0.3".parse().expect("header"));
        assert!(negotiate(&headers, None, true).is_ok(), "patch numbers do not count");
        headers.insert("a2a-version", "99.0".parse().expect("header"));
        assert_eq!(negotiate(&headers, None, true).map_err(|m| m.contains("not supported")), Err(true));
        headers.insert("a2a-version", "0.3".parse().expect("header"));
        assert!(negotiate(&headers, None, true).is_err());
        assert_eq!(Requested::of(&headers, None), Requested::V0_3);
        assert_eq!(Requested::of(&HeaderMap::new(), None), Requested::V0_3, "no version means 0.3");
        headers.insert("a2a-version", "0.2".parse().expect("header"));
        assert!(Requested::of(&headers, None).is_legacy());
        headers.insert("a2a-version", "2.0".parse().expect("header"));
        assert!(!Requested::of(&headers, None).is_legacy());
    }
}
