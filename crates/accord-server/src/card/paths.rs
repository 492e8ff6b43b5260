//! Where the agent's cards are served and the public URLs built from a request: the well-known
//! paths of the card, the legacy card and the signed envelope, the origin (with the forwarding
//! headers a proxy sets) and the base URL the agent is mounted at.

use axum::http::HeaderMap;

/// The card, relative to the agent's base path.
pub(crate) const CARD_PATH: &str = "/.well-known/agent-card.json";
/// The card at the path older clients ask for.
pub(crate) const LEGACY_CARD_PATH: &str = "/.well-known/agent.json";
/// Where the signed envelope is served, relative to the agent's base path.
pub const SIGNED_CARD_PATH: &str = "/.well-known/agent-card.signed.json";

/// The agent's public base URL for this request: the origin plus the path the router is mounted
/// under, without a trailing `/`.
pub(crate) fn base_url(headers: &HeaderMap, uri: &axum::http::Uri) -> String {
    format!("{}{}", origin(headers, uri), base_path(uri.path()))
}

/// The agent's public base URL for an A2A request whose path ends with `suffix` (the binding's
/// path, and for REST the operation): what the card's URLs start with.
pub(crate) fn base_url_before(headers: &HeaderMap, uri: &axum::http::Uri, suffix: &str) -> String {
    let path = uri.path().trim_end_matches('/');
    let base = path.strip_suffix(suffix.trim_end_matches('/')).unwrap_or("").trim_end_matches('/');
    format!("{}{base}", origin(headers, uri))
}

/// The host of a base URL (`http://agent.example:8787/base` → `agent.example`; an IPv6
/// literal keeps its brackets) and its port (the scheme's when it has none), for the gRPC
/// binding's `host:port`. `None` for a base URL that does not parse (it is built from the
/// request's origin, so it always does).
pub(crate) fn host_and_port(base_url: &str) -> Option<(String, u16)> {
    let url = url::Url::parse(base_url).ok()?;
    Some((url.host_str()?.to_owned(), url.port_or_known_default()?))
}

/// The path under which the router is mounted: the request path without the card route.
fn base_path(path: &str) -> &str {
    [CARD_PATH, LEGACY_CARD_PATH, SIGNED_CARD_PATH]
        .into_iter()
        .find_map(|route| path.strip_suffix(route))
        .unwrap_or("")
        .trim_end_matches('/')
}

/// The public origin. The request's own scheme is `https` when its URI says so (the serve loop
/// gives every request of a TLS connection that scheme), `http` otherwise. `X-Forwarded-Proto`
/// (`http` or `https` only) and `X-Forwarded-Host` are honoured, except when the resulting host is
/// a loopback name (`localhost`, `127.0.0.1…`), where the request's own origin is used: a loopback
/// card must stay reachable from where it was asked.
pub(crate) fn origin(headers: &HeaderMap, uri: &axum::http::Uri) -> String {
    let first = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split(',').next())
            .map(str::trim)
            .filter(|value| !value.is_empty())
    };
    let request_host =
        first("host").or_else(|| uri.authority().map(|authority| authority.as_str())).unwrap_or("localhost");
    let request_scheme = if uri.scheme() == Some(&axum::http::uri::Scheme::HTTPS) { "https" } else { "http" };
    let request_origin = format!("{request_scheme}://{request_host}");
    let scheme = match first("x-forwarded-proto").map(str::to_ascii_lowercase).as_deref() {
        Some("https") => "https",
        Some("http") => "http",
        _ => request_scheme,
    };
    let host = first("x-forwarded-host").unwrap_or(request_host);
    if host.contains("localhost") || host.starts_with("127.0.0.1") {
        return request_origin;
    }
    format!("{scheme}://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_path_is_what_precedes_the_card_route() {
        assert_eq!(base_path("/.well-known/agent-card.json"), "");
        assert_eq!(base_path("/api/agent/.well-known/agent.json"), "/api/agent");
        assert_eq!(base_path("/a/.well-known/agent-card.signed.json"), "/a");
    }
}
