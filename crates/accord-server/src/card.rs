//! The card routes: the card built for the origin and base path the caller used, with an
//! entity tag so that caches and pollers can revalidate cheaply.

use axum::extract::OriginalUri;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::State;

pub(crate) const CARD_PATH: &str = "/.well-known/agent-card.json";
pub(crate) const LEGACY_CARD_PATH: &str = "/.well-known/agent.json";

/// The card's URL depends on these request headers, so shared caches must key on them.
const VARY: &str = "host, x-forwarded-host, x-forwarded-proto";

pub(crate) async fn card(
    axum::extract::State(state): State,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Response {
    let base_path = base_path(uri.path());
    let base_url = format!("{}{}", origin(&headers, &uri), base_path);
    let mut card = state.agent.card(&base_url);
    crate::payments::decorate_card(&mut card, &state.agent, state.config.payments.as_ref());
    if state.config.tasks.is_some() {
        if let Some(capabilities) = card.capabilities.as_mut() {
            capabilities.state_transition_history = true;
        }
        if let Some(a2a) = &state.config.a2a {
            if let Some(capabilities) = card.capabilities.as_mut() {
                // The A2A faces always stream (SendStreamingMessage, SubscribeToTask).
                capabilities.streaming = true;
                if !a2a.extensions.is_empty() {
                    capabilities.extra.insert(
                        "extensions".into(),
                        serde_json::to_value(&a2a.extensions).unwrap_or(serde_json::Value::Null),
                    );
                }
            }
            for (path, binding) in [(&a2a.jsonrpc_path, "JSONRPC"), (&a2a.rest_path, "HTTP+JSON")] {
                card.supported_interfaces.push(accord_types::card::AgentInterface {
                    url: format!("{base_url}{path}"),
                    protocol_binding: binding.into(),
                    protocol_version: Some("1.0".into()),
                    extra: serde_json::Map::new(),
                });
            }
        }
        if let Some(jsonrpc) = &state.config.jsonrpc_tasks {
            card.supported_interfaces.push(accord_types::card::AgentInterface {
                url: format!("{base_url}{}", jsonrpc.path),
                protocol_binding: crate::JSONRPC_TASKS_BINDING.into(),
                protocol_version: Some("1.0".into()),
                extra: serde_json::Map::new(),
            });
        }
    }
    let body = match serde_json::to_vec(&card) {
        Ok(body) => body,
        Err(error) => {
            tracing::error!(%error, "the card does not serialize");
            return crate::LucidError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal error")
                .into_response();
        }
    };
    let etag = entity_tag(&body);
    let cache_control = format!("public, max-age={}", state.config.card_max_age.as_secs());
    let mut response = if if_none_match(&headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let response_headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response_headers.insert(header::ETAG, value);
    }
    if let Ok(value) = HeaderValue::from_str(&cache_control) {
        response_headers.insert(header::CACHE_CONTROL, value);
    }
    response_headers.insert(header::VARY, HeaderValue::from_static(VARY));
    response
}

/// The path under which the router is mounted: the request path without the card route.
fn base_path(path: &str) -> &str {
    path.strip_suffix(CARD_PATH).or_else(|| path.strip_suffix(LEGACY_CARD_PATH)).unwrap_or("").trim_end_matches('/')
}

/// The public origin. `X-Forwarded-Proto` (`http` or `https` only) and `X-Forwarded-Host` are
/// honoured, except when the resulting host is a loopback name (`localhost`, `127.0.0.1…`), where
/// the request's own origin is used: a loopback card must stay reachable from where it was asked.
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
    let request_origin = format!("http://{request_host}");
    let scheme = match first("x-forwarded-proto").map(str::to_ascii_lowercase).as_deref() {
        Some("https") => "https",
        _ => "http",
    };
    let host = first("x-forwarded-host").unwrap_or(request_host);
    if host.contains("localhost") || host.starts_with("127.0.0.1") {
        return request_origin;
    }
    format!("{scheme}://{host}")
}

/// A strong entity tag: the first 128 bits of the body's SHA-256.
fn entity_tag(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let hex: String = digest.iter().take(16).map(|byte| format!("{byte:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether `If-None-Match` matches (weak comparison, as RFC 9110 asks for this header).
fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers.get_all(header::IF_NONE_MATCH).iter().filter_map(|value| value.to_str().ok()).any(|value| {
        value.split(',').map(str::trim).any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == etag)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("header"));
        }
        map
    }

    #[test]
    fn forwarded_headers_set_the_public_origin() {
        let uri = axum::http::Uri::from_static("/.well-known/agent-card.json");
        let forwarded = headers(&[
            ("host", "127.0.0.1:8787"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "agent.example.com"),
        ]);
        assert_eq!(origin(&forwarded, &uri), "https://agent.example.com");
        let odd_proto = headers(&[("host", "h:1"), ("x-forwarded-proto", "gopher"), ("x-forwarded-host", "a.example")]);
        assert_eq!(origin(&odd_proto, &uri), "http://a.example");
        let loopback =
            headers(&[("host", "localhost:3000"), ("x-forwarded-proto", "https"), ("x-forwarded-host", "localhost:9")]);
        assert_eq!(origin(&loopback, &uri), "http://localhost:3000");
        assert_eq!(origin(&headers(&[("host", "a.example:80")]), &uri), "http://a.example:80");
    }

    #[test]
    fn base_path_is_what_precedes_the_card_route() {
        assert_eq!(base_path("/.well-known/agent-card.json"), "");
        assert_eq!(base_path("/api/agent/.well-known/agent.json"), "/api/agent");
    }

    #[test]
    fn if_none_match_accepts_lists_weak_tags_and_star() {
        let tag = "\"abc\"";
        assert!(if_none_match(&headers(&[("if-none-match", "\"x\", W/\"abc\"")]), tag));
        assert!(if_none_match(&headers(&[("if-none-match", "*")]), tag));
        assert!(!if_none_match(&headers(&[("if-none-match", "\"abd\"")]), tag));
        assert!(!if_none_match(&HeaderMap::new(), tag));
    }
}
