//! Card discovery: fetching an A2A agent card, reading it (a 0.3 card as one with
//! `supportedInterfaces`), and choosing the interface to bind to, at 1.0 or at 0.3.

use std::time::Duration;

use accord_types::a2a::card::{PROTOCOL_BINDING_JSONRPC, WELL_KNOWN_AGENT_CARD_PATH};
use accord_types::a2a::v03 as wire;
use accord_types::a2a::{AgentCard, AgentInterface};
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::transport::{A2A_VERSION, A2A_VERSION_HEADER, Binding};
use crate::error::{ClientError, Operation};
use crate::http::get_card;

/// Fetches an agent card: `url` is the card's own URL (ending in `.json`) or the agent's base
/// URL, under which `/.well-known/agent-card.json` is read (30 s timeout; `headers` are sent
/// along, with `A2A-Version: 1.0`). See [`parse_card`] for what is accepted.
pub async fn fetch_card(http: &reqwest::Client, url: &str, headers: &HeaderMap) -> Result<AgentCard, ClientError> {
    let card_url = card_url(url)?;
    let mut headers = headers.clone();
    headers.append(A2A_VERSION_HEADER, HeaderValue::from_static(A2A_VERSION));
    let (status, body) = get_card(http, &card_url, headers, Some(Duration::from_secs(30)))
        .await
        .map_err(|source| ClientError::transport(Operation::FetchCard, &card_url, source))?;
    let body = body.map_err(|error| ClientError::body(Operation::FetchCard, &card_url, error))?;
    if !status.is_success() {
        return Err(ClientError::status_body(Operation::FetchCard, &card_url, status.as_u16(), &body));
    }
    let value: Value = serde_json::from_slice(&body)
        .map_err(|error| ClientError::InvalidCard { url: card_url.to_string(), reason: error.to_string() })?;
    parse_card(value).map_err(|reason| ClientError::InvalidCard { url: card_url.to_string(), reason })
}

/// Reads an A2A v1.0 agent card.
///
/// The card must deserialize as [`AgentCard`] (every `REQUIRED` field present). One tolerance:
/// a `supportedInterfaces` entry of a binding this client does not speak (a custom URI) that is
/// itself malformed — e.g. Accord's own Lucid entry without `protocolVersion` — is dropped rather
/// than failing the whole card, since it is never used. Malformed `JSONRPC`, `HTTP+JSON` or `GRPC`
/// entries still fail.
pub fn parse_card(value: Value) -> Result<AgentCard, String> {
    let value = card_with_interfaces(value);
    match serde_json::from_value::<AgentCard>(value.clone()) {
        Ok(card) => Ok(card),
        Err(strict) => {
            let mut value = value;
            let Some(interfaces) = value.get_mut("supportedInterfaces").and_then(Value::as_array_mut) else {
                return Err(strict.to_string());
            };
            let before = interfaces.len();
            interfaces.retain(|interface| {
                let spoken = interface
                    .get("protocolBinding")
                    .or_else(|| interface.get("protocol_binding"))
                    .and_then(Value::as_str)
                    .and_then(Binding::from_name)
                    .is_some();
                spoken || serde_json::from_value::<AgentInterface>(interface.clone()).is_ok()
            });
            if interfaces.len() == before {
                return Err(strict.to_string());
            }
            serde_json::from_value::<AgentCard>(value).map_err(|error| error.to_string())
        }
    }
}

/// Picks the interface to use (see the module documentation). Returns the binding and the
/// interface.
pub fn choose_interface<'c>(
    card: &'c AgentCard,
    preference: &[String],
) -> Result<(Binding, &'c AgentInterface), ClientError> {
    for wanted in preference {
        let Some(binding) = Binding::from_name(wanted) else { continue };
        let candidates = || card.supported_interfaces.iter().filter(|interface| interface.protocol_binding == *wanted);
        let exact = candidates().find(|interface| major_minor(&interface.protocol_version) == Some((1, 0)));
        let any_v1 =
            || candidates().find(|interface| major_minor(&interface.protocol_version).is_some_and(|v| v.0 == 1));
        if let Some(interface) = exact.or_else(any_v1) {
            return Ok((binding, interface));
        }
    }
    Err(ClientError::NoCompatibleInterface {
        wanted: preference.to_vec(),
        offered: card
            .supported_interfaces
            .iter()
            .map(|interface| format!("{}@{}", interface.protocol_binding, interface.protocol_version))
            .collect(),
    })
}

pub(crate) fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

pub(crate) fn card_url(url: &str) -> Result<Url, ClientError> {
    let parsed =
        Url::parse(url).map_err(|error| ClientError::InvalidUrl { url: url.to_owned(), reason: error.to_string() })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.cannot_be_a_base() {
        return Err(ClientError::InvalidUrl {
            url: url.to_owned(),
            reason: "only http and https are supported".into(),
        });
    }
    if parsed.path().ends_with(".json") {
        return Ok(parsed);
    }
    let mut base = parsed;
    base.set_query(None);
    base.set_fragment(None);
    let path = format!("{}{}", base.path().trim_end_matches('/'), WELL_KNOWN_AGENT_CARD_PATH);
    base.set_path(&path);
    Ok(base)
}

/// The 0.3 interface of `card` to fall back on (or to use, when the card offers no 1.0 one):
/// an entry whose `protocolVersion` is `0.3`, of the binding `same` when there is one, else of
/// the first binding of `preference` this client speaks.
pub fn choose_interface_v03<'c>(
    card: &'c AgentCard,
    preference: &[String],
    same: Option<Binding>,
) -> Option<(Binding, &'c AgentInterface)> {
    let wanted = same.map(|binding| binding.as_str().to_owned()).into_iter().chain(preference.iter().cloned());
    for wanted in wanted {
        let Some(binding) = Binding::from_name(&wanted).filter(|binding| *binding != Binding::Grpc) else { continue };
        let found = card.supported_interfaces.iter().find(|interface| {
            interface.protocol_binding == wanted && major_minor(&interface.protocol_version) == Some((0, 3))
        });
        if let Some(interface) = found {
            return Some((binding, interface));
        }
    }
    None
}

/// A 0.3 card read as one with `supportedInterfaces`: when a card has none but has the 0.3 `url`,
/// its interfaces are `url` (binding `preferredTransport`, default `JSONRPC`) and each
/// `additionalInterfaces` entry (`{url, transport}`), all at the card's `protocolVersion` (major
/// and minor; default `0.3`). Its `securitySchemes` and `security`, in the 0.3 shape which the
/// 1.0 card type does not read, are left out (this client sends the headers it is given).
pub(crate) fn card_with_interfaces(mut value: Value) -> Value {
    let Some(card) = value.as_object_mut() else { return value };
    let listed = card.get("supportedInterfaces").or_else(|| card.get("supported_interfaces"));
    if listed.is_some_and(|listed| !listed.is_null()) {
        return value;
    }
    let Some(url) = card.get("url").and_then(Value::as_str).map(str::to_owned) else { return value };
    let version = card
        .get("protocolVersion")
        .and_then(Value::as_str)
        .and_then(major_minor)
        .map_or_else(|| wire::PROTOCOL_VERSION.to_owned(), |(major, minor)| format!("{major}.{minor}"));
    let preferred =
        card.get("preferredTransport").and_then(Value::as_str).unwrap_or(PROTOCOL_BINDING_JSONRPC).to_owned();
    let entry = |url: &str, binding: &str| serde_json::json!({"url": url, "protocolBinding": binding, "protocolVersion": version});
    let mut interfaces = vec![entry(&url, &preferred)];
    for additional in card.get("additionalInterfaces").and_then(Value::as_array).into_iter().flatten() {
        let (Some(url), Some(binding)) =
            (additional.get("url").and_then(Value::as_str), additional.get("transport").and_then(Value::as_str))
        else {
            continue;
        };
        let listed = entry(url, binding);
        if !interfaces.contains(&listed) {
            interfaces.push(listed);
        }
    }
    card.insert("supportedInterfaces".into(), Value::Array(interfaces));
    card.remove("securitySchemes");
    card.remove("security");
    value
}

/// Whether the card declares an extended card: 0.3's `supportsAuthenticatedExtendedCard`, or
/// 1.0's `capabilities.extendedAgentCard`.
pub(crate) fn declares_extended_card(card: &AgentCard) -> bool {
    card.extra.get("supportsAuthenticatedExtendedCard").and_then(Value::as_bool) == Some(true)
        || card.capabilities.extended_agent_card == Some(true)
}

/// A minimal 1.0 card (one skill, streaming) offering `interfaces`, for the bindings' unit tests.
#[cfg(test)]
pub(crate) fn test_card(interfaces: Value) -> Value {
    serde_json::json!({
        "name": "peer", "description": "a peer", "version": "1.0.0", "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "echo", "tags": ["echo"]}],
        "supportedInterfaces": interfaces,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_urls() {
        assert_eq!(card_url("http://h:1").expect("url").as_str(), "http://h:1/.well-known/agent-card.json");
        assert_eq!(card_url("http://h:1/base/").expect("url").as_str(), "http://h:1/base/.well-known/agent-card.json");
        assert_eq!(card_url("http://h/x/card.json").expect("url").as_str(), "http://h/x/card.json");
        assert!(card_url("file:///etc/passwd").is_err());
    }
}
