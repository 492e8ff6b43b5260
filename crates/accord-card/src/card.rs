//! The identity card that gets signed: who issues it, which agent it names, what the agent can
//! do and where it is served.
//!
//! The schema and its error codes are the blamejs `b.a2a` ones (`a2a/missing-field`,
//! `a2a/bad-field`, …) so that a card valid there is valid here, with one deliberate difference:
//! a plain-`http` endpoint is accepted only when its host *is* `localhost`, `127.0.0.1` or
//! `[::1]` (blamejs tests a prefix, so `http://localhost.evil` passes there).

use std::fmt;

use accord_types::card::AgentCard;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use url::{Host, Url};

/// The version a card gets when none is given.
pub const DEFAULT_CARD_VERSION: &str = "1.0.0";
/// The longest issuer or agent id, in characters.
pub const MAX_ID_LEN: usize = 256;
/// The longest version string, in characters.
pub const MAX_VERSION_LEN: usize = 64;
/// The longest capability name, in UTF-16 code units (what JavaScript's `length` counts).
pub const MAX_CAPABILITY_LEN: usize = 128;

/// An identity card: the `card` member of a signed envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Card {
    /// Who vouches for the agent, for example its domain (`[a-zA-Z0-9._:/-]{1,256}`).
    pub issuer: String,
    /// The agent's identifier under the issuer (same shape as the issuer).
    pub agent_id: String,
    /// The card's version: `MAJOR.MINOR[.PATCH][-PRE]`.
    pub version: String,
    /// What the agent can do, each 1..128 characters.
    pub capabilities: Vec<String>,
    /// Where the agent is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<Endpoint>>,
    /// Free-form policies (not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<Value>,
    /// Free-form contact details (not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact: Option<Value>,
    /// A free-form metadata bag (not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Members this type does not name, kept as received (a verifier accepts unknown members).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Card {
    /// Checks the card against the schema, stopping at the first problem (the order of the
    /// blamejs checks, so both report the same code).
    pub fn validate(&self) -> Result<(), CardError> {
        validate_card_value(&self.to_value())
    }

    /// The card as a JSON value, exactly as it is signed.
    pub fn to_value(&self) -> Value {
        // A struct of strings, vectors and JSON values always converts.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// One place where the agent is served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    /// An `https` URL, or `http` on a loopback host.
    pub url: String,
    /// Other members, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Endpoint {
    /// An endpoint with only a URL.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), extra: Map::new() }
    }
}

/// The error codes of card validation and signing, as blamejs names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CardErrorCode {
    /// `a2a/bad-card`: the card is not a JSON object.
    BadCard,
    /// `a2a/missing-field`: a required field is absent or `null`.
    MissingField,
    /// `a2a/bad-field`: a field has the wrong type or shape.
    BadField,
    /// `a2a/insecure-endpoint`: an endpoint is neither `https` nor `http` on a loopback host.
    InsecureEndpoint,
    /// `a2a/bad-ttl`: the signing TTL is not a positive whole number of milliseconds.
    BadTtl,
    /// `a2a/bad-key`: the key could not sign.
    BadKey,
}

impl CardErrorCode {
    /// The code as a string, for example `a2a/missing-field`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadCard => "a2a/bad-card",
            Self::MissingField => "a2a/missing-field",
            Self::BadField => "a2a/bad-field",
            Self::InsecureEndpoint => "a2a/insecure-endpoint",
            Self::BadTtl => "a2a/bad-ttl",
            Self::BadKey => "a2a/bad-key",
        }
    }
}

impl fmt::Display for CardErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a card could not be built, validated or signed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CardError {
    /// The card is not a JSON object.
    BadCard,
    /// A required field (`issuer`, `agentId`, `capabilities`, `version`) is absent or `null`.
    MissingField {
        /// The field's JSON name.
        field: &'static str,
    },
    /// A field has the wrong type or shape.
    BadField {
        /// The field's JSON path, for example `capabilities[2]`.
        field: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// An endpoint URL is neither `https` nor `http` on `localhost` / `127.0.0.1` / `[::1]`.
    InsecureEndpoint {
        /// The index of the endpoint.
        index: usize,
    },
    /// The signing TTL is zero, not a whole number of milliseconds, or pushes `expiresAt`
    /// beyond 2^53 − 1 (the largest integer every JSON peer reads exactly).
    BadTtl,
    /// The key could not sign.
    BadKey(crate::KeyError),
}

impl CardError {
    /// The blamejs error code of this error.
    pub fn code(&self) -> CardErrorCode {
        match self {
            Self::BadCard => CardErrorCode::BadCard,
            Self::MissingField { .. } => CardErrorCode::MissingField,
            Self::BadField { .. } => CardErrorCode::BadField,
            Self::InsecureEndpoint { .. } => CardErrorCode::InsecureEndpoint,
            Self::BadTtl => CardErrorCode::BadTtl,
            Self::BadKey(_) => CardErrorCode::BadKey,
        }
    }
}

impl fmt::Display for CardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = self.code();
        match self {
            Self::BadCard => write!(f, "{code}: card must be an object"),
            Self::MissingField { field } => write!(f, "{code}: card.{field} is required"),
            Self::BadField { field, problem } => write!(f, "{code}: card.{field} {problem}"),
            Self::InsecureEndpoint { index } => {
                write!(
                    f,
                    "{code}: card.endpoints[{index}].url must be https (or http on localhost, 127.0.0.1 or [::1])"
                )
            }
            Self::BadTtl => write!(f, "{code}: ttl must be a positive whole number of milliseconds"),
            Self::BadKey(error) => write!(f, "{code}: {error}"),
        }
    }
}

impl std::error::Error for CardError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::BadKey(error) => Some(error),
            _ => None,
        }
    }
}

/// What [`create_card`] builds a card from.
///
/// Mirrors blamejs `createCard(opts)`: a missing issuer or agent id is a
/// [`CardError::MissingField`], an absent or empty version becomes [`DEFAULT_CARD_VERSION`],
/// and a `null`, `false`, `0` or `""` policies / contact / metadata is left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CardOptions {
    /// Who vouches for the agent.
    pub issuer: Option<String>,
    /// The agent's identifier under the issuer.
    pub agent_id: Option<String>,
    /// The card's version (default `1.0.0`).
    pub version: Option<String>,
    /// What the agent can do.
    pub capabilities: Vec<String>,
    /// Where the agent is served.
    pub endpoints: Option<Vec<Endpoint>>,
    /// Free-form policies.
    pub policies: Option<Value>,
    /// Free-form contact details.
    pub contact: Option<Value>,
    /// A free-form metadata bag.
    pub metadata: Option<Value>,
}

impl CardOptions {
    /// Options with an issuer and an agent id and nothing else.
    pub fn new(issuer: impl Into<String>, agent_id: impl Into<String>) -> Self {
        Self { issuer: Some(issuer.into()), agent_id: Some(agent_id.into()), ..Self::default() }
    }

    /// The identity card options of an Accord agent: the capabilities are its skill ids and the
    /// endpoints are the URLs of its `supportedInterfaces` (each once, in order), or its `url`
    /// when it lists none. A `GRPC` interface is left out: its `url` is a `host:port` to dial,
    /// not a URL the identity card's schema takes. The version is the agent's own version, if it
    /// has one.
    pub fn from_agent_card(agent: &AgentCard, issuer: impl Into<String>, agent_id: impl Into<String>) -> Self {
        let mut urls: Vec<&str> = Vec::new();
        for interface in &agent.supported_interfaces {
            if interface.protocol_binding == accord_types::a2a::card::PROTOCOL_BINDING_GRPC {
                continue;
            }
            if !urls.contains(&interface.url.as_str()) {
                urls.push(&interface.url);
            }
        }
        if urls.is_empty() {
            urls.extend(agent.url.as_deref());
        }
        Self {
            version: agent.version.clone(),
            capabilities: agent.skills.iter().map(|skill| skill.id.clone()).collect(),
            endpoints: (!urls.is_empty()).then(|| urls.into_iter().map(Endpoint::new).collect()),
            ..Self::new(issuer, agent_id)
        }
    }

    /// Sets the version.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Adds a capability.
    pub fn capability(mut self, capability: impl Into<String>) -> Self {
        self.capabilities.push(capability.into());
        self
    }

    /// Adds an endpoint URL.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoints.get_or_insert_with(Vec::new).push(Endpoint::new(url));
        self
    }

    /// Sets the policies.
    pub fn policies(mut self, policies: Value) -> Self {
        self.policies = Some(policies);
        self
    }

    /// Sets the contact details.
    pub fn contact(mut self, contact: Value) -> Self {
        self.contact = Some(contact);
        self
    }

    /// Sets the metadata bag.
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }
}

/// Builds and validates a card (blamejs `createCard`).
///
/// ```
/// use accord_card::{CardOptions, create_card};
///
/// let card = create_card(
///     CardOptions::new("agent.example.com", "ops-bot-1")
///         .capability("chat.respond")
///         .endpoint("https://agent.example.com/a2a/v1"),
/// )
/// .unwrap();
/// assert_eq!(card.version, "1.0.0");
///
/// let refused = create_card(CardOptions::new("agent.example.com", "ops-bot-1").endpoint("http://localhost.evil/"));
/// assert_eq!(refused.unwrap_err().code().as_str(), "a2a/insecure-endpoint");
/// ```
pub fn create_card(options: CardOptions) -> Result<Card, CardError> {
    let mut card = Map::new();
    if let Some(issuer) = options.issuer {
        card.insert("issuer".into(), Value::String(issuer));
    }
    if let Some(agent_id) = options.agent_id {
        card.insert("agentId".into(), Value::String(agent_id));
    }
    let version = options.version.filter(|version| !version.is_empty());
    card.insert("version".into(), Value::String(version.unwrap_or_else(|| DEFAULT_CARD_VERSION.to_owned())));
    card.insert("capabilities".into(), options.capabilities.into_iter().map(Value::String).collect());
    if let Some(endpoints) = options.endpoints {
        let endpoints = endpoints.into_iter().map(|endpoint| serde_json::to_value(endpoint).unwrap_or(Value::Null));
        card.insert("endpoints".into(), endpoints.collect());
    }
    for (name, value) in [("policies", options.policies), ("contact", options.contact), ("metadata", options.metadata)]
    {
        if let Some(value) = value.filter(is_truthy) {
            card.insert(name.into(), value);
        }
    }
    let card = Value::Object(card);
    validate_card_value(&card)?;
    card_from_value(card)
}

/// The identity card of an Accord agent (see [`CardOptions::from_agent_card`]), validated.
pub fn card_from_agent_card(
    agent: &AgentCard,
    issuer: impl Into<String>,
    agent_id: impl Into<String>,
) -> Result<Card, CardError> {
    create_card(CardOptions::from_agent_card(agent, issuer, agent_id))
}

/// Checks a JSON card against the schema and returns the first problem, in blamejs order: not an
/// object; a missing `issuer`, `agentId`, `capabilities`, `version` (in that order); then the
/// shapes of issuer, agent id, version, capabilities and endpoints.
pub fn validate_card_value(card: &Value) -> Result<(), CardError> {
    let mut problems = Vec::new();
    check_card(card, &mut problems, true);
    match problems.into_iter().next() {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// Every problem of a JSON card, not just the first (for linting). Empty when it is valid.
pub fn card_problems(card: &Value) -> Vec<CardError> {
    let mut problems = Vec::new();
    check_card(card, &mut problems, false);
    problems
}

pub(crate) fn card_from_value(card: Value) -> Result<Card, CardError> {
    serde_json::from_value(card).map_err(|_| CardError::BadCard)
}

/// JavaScript truthiness of a JSON value: `null`, `false`, `0` and `""` are falsy.
pub(crate) fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

const REQUIRED_FIELDS: [&str; 4] = ["issuer", "agentId", "capabilities", "version"];

fn check_card(card: &Value, problems: &mut Vec<CardError>, first_only: bool) {
    let Some(card) = card.as_object() else {
        problems.push(CardError::BadCard);
        return;
    };
    let present = |field: &str| card.get(field).is_some_and(|value| !value.is_null());
    for field in REQUIRED_FIELDS {
        if !present(field) {
            problems.push(CardError::MissingField { field });
            if first_only {
                return;
            }
        }
    }
    let mut report = |problem: CardError| {
        problems.push(problem);
        first_only
    };

    for (field, problem) in
        [("issuer", "must match [a-zA-Z0-9._:/-]{1,256}"), ("agentId", "must match [a-zA-Z0-9._:/-]{1,256}")]
    {
        if present(field) && !card[field].as_str().is_some_and(is_identifier) && report(bad(field, problem)) {
            return;
        }
    }
    if present("version")
        && !card["version"].as_str().is_some_and(is_version)
        && report(bad("version", "must be semver (MAJOR.MINOR[.PATCH][-PRE], at most 64 characters)"))
    {
        return;
    }
    if present("capabilities") {
        match card["capabilities"].as_array() {
            None => {
                if report(bad("capabilities", "must be an array")) {
                    return;
                }
            }
            Some(capabilities) => {
                for (index, capability) in capabilities.iter().enumerate() {
                    if !capability.as_str().is_some_and(is_capability)
                        && report(bad(&format!("capabilities[{index}]"), "must be a string of 1-128 characters"))
                    {
                        return;
                    }
                }
            }
        }
    }
    // blamejs checks `endpoints !== undefined`, so an explicit `null` is a bad field too.
    if let Some(endpoints) = card.get("endpoints") {
        let Some(endpoints) = endpoints.as_array() else {
            report(bad("endpoints", "must be an array"));
            return;
        };
        for (index, endpoint) in endpoints.iter().enumerate() {
            let url = endpoint.as_object().and_then(|endpoint| endpoint.get("url")).and_then(Value::as_str);
            let problem = match url {
                None => bad(&format!("endpoints[{index}]"), "must be an object with a string url"),
                Some(url) if !is_secure_endpoint(url) => CardError::InsecureEndpoint { index },
                Some(_) => continue,
            };
            if report(problem) {
                return;
            }
        }
    }
}

fn bad(field: &str, problem: &'static str) -> CardError {
    CardError::BadField { field: field.to_owned(), problem }
}

/// `^[a-zA-Z0-9._:/-]{1,256}$`.
fn is_identifier(text: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&text.len())
        && text.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b':' | b'/' | b'-'))
}

/// `^[0-9]+\.[0-9]+(?:\.[0-9]+)?(?:-[A-Za-z0-9.-]+)?$`, at most 64 characters.
fn is_version(text: &str) -> bool {
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
    if text.len() > MAX_VERSION_LEN {
        return false;
    }
    let (core, pre_release) = match text.split_once('-') {
        Some((core, pre_release)) => (core, Some(pre_release)),
        None => (text, None),
    };
    let pre_release_ok = pre_release.is_none_or(|pre| {
        !pre.is_empty() && pre.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'-'))
    });
    let parts: Vec<&str> = core.split('.').collect();
    pre_release_ok && matches!(parts.len(), 2 | 3) && parts.into_iter().all(digits)
}

/// 1..=128 UTF-16 code units, as JavaScript's `length` counts (an emoji counts twice).
fn is_capability(text: &str) -> bool {
    (1..=MAX_CAPABILITY_LEN).contains(&text.encode_utf16().count())
}

/// `https` with a host, or `http` whose host is exactly `localhost`, `127.0.0.1` or `[::1]`,
/// compared on the parsed URL (so `http://localhost.evil` and `http://127.0.0.1.nip.io` fail).
pub(crate) fn is_secure_endpoint(url: &str) -> bool {
    let Ok(parsed) = Url::parse(url) else {
        return false;
    };
    match (parsed.scheme(), parsed.host()) {
        ("https", Some(_)) => true,
        ("http", Some(Host::Domain(domain))) => domain == "localhost",
        ("http", Some(Host::Ipv4(address))) => address == std::net::Ipv4Addr::LOCALHOST,
        ("http", Some(Host::Ipv6(address))) => address == std::net::Ipv6Addr::LOCALHOST,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_interface_is_not_an_endpoint() {
        let agent: AgentCard = serde_json::from_value(serde_json::json!({
            "name": "a", "description": "d", "version": "1.0.0",
            "supportedInterfaces": [
                {"url": "https://agent.example/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "agent.example:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
        }))
        .expect("a card");
        let options = CardOptions::from_agent_card(&agent, "issuer", "agent");
        let endpoints: Vec<&str> = options.endpoints.iter().flatten().map(|endpoint| endpoint.url.as_str()).collect();
        assert_eq!(endpoints, ["https://agent.example/a2a/jsonrpc"]);
    }

    #[test]
    fn versions_follow_the_blamejs_pattern() {
        for good in ["1.0", "1.0.0", "10.20.30", "1.0.0-rc.1", "1.0-alpha", "0.0.0-a-b.c", "1.2.3--"] {
            assert!(is_version(good), "{good}");
        }
        for bad in ["", "1", "1.", ".1", "1.0.0.0", "1.0.0+build", "v1.0", "1.0.0-", "1.a", "1.0 ", "1.0.0-ü"] {
            assert!(!is_version(bad), "{bad}");
        }
        assert!(is_version(&format!("1.0.0-{}", "a".repeat(58))));
        assert!(!is_version(&format!("1.0.0-{}", "a".repeat(59))));
    }

    #[test]
    fn identifiers_are_ascii_of_the_allowed_set() {
        assert!(is_identifier("agent.example.com"));
        assert!(is_identifier("urn:agent/ops-bot_1"));
        assert!(is_identifier(&"a".repeat(256)));
        assert!(!is_identifier(&"a".repeat(257)));
        assert!(!is_identifier(""));
        assert!(!is_identifier("has space"));
        assert!(!is_identifier("é"));
        assert!(!is_identifier("a\n"));
    }

    #[test]
    fn endpoint_hosts_are_compared_not_prefixed() {
        for good in [
            "https://agent.example.com/a2a",
            "http://localhost/",
            "http://localhost:8080/x",
            "http://LOCALHOST:8080/",
            "http://127.0.0.1:3000",
            "http://[::1]:3000/",
            "HTTPS://agent.example.com",
        ] {
            assert!(is_secure_endpoint(good), "{good}");
        }
        for bad in [
            "http://localhost.evil/",
            "http://localhost.evil.com:80/",
            "http://127.0.0.1.nip.io/",
            "http://[::1].evil/",
            "http://localhostevil/",
            "http://example.com/",
            "http://10.0.0.1/",
            "http://127.0.0.2/",
            "http://0.0.0.0/",
            "ftp://localhost/",
            "https://",
            "localhost:8080",
            "not a url",
            "",
        ] {
            assert!(!is_secure_endpoint(bad), "{bad}");
        }
    }

    #[test]
    fn truthiness_matches_javascript() {
        use serde_json::json;
        for falsy in [json!(null), json!(false), json!(0), json!(0.0), json!("")] {
            assert!(!is_truthy(&falsy), "{falsy}");
        }
        for truthy in [json!(true), json!(1), json!(-0.5), json!("x"), json!([]), json!({})] {
            assert!(is_truthy(&truthy), "{truthy}");
        }
    }
}
