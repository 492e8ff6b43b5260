//! The official A2A card signature: `AgentCard.signatures`, each a JWS (RFC 7515) with a
//! detached payload.
//!
//! **What is signed.** The payload is the RFC 8785 form of the card without `signatures`, after
//! the presence rules the official SDKs apply ([`card_signing_payload`]): members whose value is
//! `null`, `""`, `[]` or `{}` are dropped, recursively (a container emptied that way goes too),
//! and so are the two proto booleans without presence when `false`
//! (`capabilities.extensions[].required`, `…oauth2SecurityScheme.flows.*.pkceRequired`). The
//! signing input is `ASCII(protected ‖ '.' ‖ BASE64URL(payload))`; the payload itself is not
//! carried. The payload is the **A2A card**: the members the A2A v1.0 `AgentCard` and the
//! messages it is made of define, at every depth. Other members (a Lucid card's `entrypoints` and
//! `payments`, the 0.3 dialect's `url`, `preferredTransport` or `capabilities.stateTransitionHistory`)
//! are left out, as the official SDKs leave them out when they read the card through the A2A types
//! before checking: a card that carries them still verifies there. They are covered by the signed
//! card envelope instead.
//!
//! **The header.** The protected header always has `alg` and `kid` (by default the key's RFC 7638
//! thumbprint), `typ: "JOSE"` unless asked otherwise, and `jku` when given. The unprotected
//! `header` is optional and never trusted.
//!
//! **Algorithms** ([`JwsAlgorithm`]): `ES256` (ECDSA P-256, SHA-256, 64-byte `r ‖ s`), `EdDSA`
//! (Ed25519, RFC 8037; the fully specified `Ed25519` of RFC 9864 is read as the same), and
//! `ML-DSA-87` (FIPS 204 pure mode, empty context, the identifier of the IETF draft for ML-DSA in
//! JOSE).
//!
//! **Verification** ([`verify_agent_card`]) never fails and never panics on what a peer sends:
//! each signature gets a verdict with a [`RejectReason`], and the card is accepted when at least
//! one signature verifies with a key of the [`TrustStore`]. For one signature the checks run in
//! this order, and the first failure is its reason:
//!
//! 1. the entry is not `{protected: string, signature: string, header?: object}` →
//!    `signature-shape`
//! 2. `protected` is not base64url of a JSON object, `alg` or `kid` is missing or not a string,
//!    `typ` / `jku` not strings, or a member appears in both headers → `header-malformed`
//! 3. `alg` is `none` → `alg-none`; not `ES256`, `EdDSA`, `Ed25519` or `ML-DSA-87` →
//!    `alg-unsupported`; not in [`JwsVerifyOptions::with_algorithms`] → `alg-not-allowed`
//! 4. `crit` (or `b64`) in either header → `crit-unsupported`
//! 5. no trusted key has the `kid` (and no key is trusted for every `kid`) → `key-unknown`
//! 6. no such key is of `alg`'s type, or its JWK names another `alg` → `alg-key-mismatch`
//! 7. `signature` is not base64url without padding → `signature-base64-bad`
//! 8. the signature does not verify → `signature-mismatch`
//!
//! Before any signature: the card is not an object → `card-not-object`; no `signatures` or an
//! empty list → `no-signatures`; `signatures` not a list → `signature-shape`; no canonical form →
//! `card-not-canonical`; a payload over the limit → `card-too-large`. Every signing and every
//! verification emits one audit event, as for the envelope (`a2a.card_signed`,
//! `a2a.card_verified`, `a2a.card_rejected`), with the `kid` and `alg`.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::audit::{AuditAction, AuditEvent, AuditOutcome, AuditSink};
use crate::envelope::unix_millis;
use crate::jcs::{CanonError, canonicalize_value, parse_strict};
use crate::jwk::{Jwk, jwk_thumbprint, public_key_from_jwk};
use crate::keys::{Algorithm, KeyError, PrivateKey, PublicKey, Randomness};
use crate::provider::CryptoProvider;
use crate::verify::{DEFAULT_MAX_BYTES, RejectReason};

/// The `typ` Accord writes in the protected header unless told otherwise.
pub const DEFAULT_TYP: &str = "JOSE";
/// The longest `kid` or `alg` copied into an audit event or a verdict, in bytes: they come from
/// the peer.
const MAX_ECHOED_LEN: usize = 128;

/// A JWS algorithm Accord signs and verifies card signatures with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JwsAlgorithm {
    /// `ES256`: ECDSA on P-256 with SHA-256 (RFC 7518).
    Es256,
    /// `EdDSA` with an Ed25519 key (RFC 8037).
    EdDsa,
    /// `ML-DSA-87`: FIPS 204, pure mode, empty context (IETF draft for ML-DSA in JOSE).
    MlDsa87,
}

impl JwsAlgorithm {
    /// Every algorithm, in the order a verifier allows them by default.
    pub const ALL: [JwsAlgorithm; 3] = [JwsAlgorithm::Es256, JwsAlgorithm::EdDsa, JwsAlgorithm::MlDsa87];

    /// The JOSE name written in `alg`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Es256 => "ES256",
            Self::EdDsa => "EdDSA",
            Self::MlDsa87 => "ML-DSA-87",
        }
    }

    /// The algorithm named `name` in an `alg` (exact case, as JOSE names are); RFC 9864's
    /// `Ed25519` is read as [`JwsAlgorithm::EdDsa`].
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "ES256" => Some(Self::Es256),
            "EdDSA" | "Ed25519" => Some(Self::EdDsa),
            "ML-DSA-87" => Some(Self::MlDsa87),
            _ => None,
        }
    }

    /// The JWS algorithm a key of `algorithm` signs with, if it has one (SLH-DSA has no JOSE
    /// identifier yet).
    pub fn for_key(algorithm: Algorithm) -> Option<Self> {
        match algorithm {
            Algorithm::EcdsaP256 => Some(Self::Es256),
            Algorithm::Ed25519 => Some(Self::EdDsa),
            Algorithm::MlDsa87 => Some(Self::MlDsa87),
            _ => None,
        }
    }

    /// The key algorithm this JWS algorithm needs.
    pub fn key_algorithm(self) -> Algorithm {
        match self {
            Self::Es256 => Algorithm::EcdsaP256,
            Self::EdDsa => Algorithm::Ed25519,
            Self::MlDsa87 => Algorithm::MlDsa87,
        }
    }
}

impl fmt::Display for JwsAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for JwsAlgorithm {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// One entry of `AgentCard.signatures` (A2A `AgentCardSignature`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCardSignature {
    /// The protected header: base64url of its JSON.
    pub protected: String,
    /// The signature: base64url.
    pub signature: String,
    /// The unprotected header, if any (not covered by the signature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Map<String, Value>>,
}

impl AgentCardSignature {
    /// The entry as a JSON value.
    pub fn to_value(&self) -> Value {
        // Strings and a JSON map always serialize.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Why a card could not be signed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwsError {
    /// The card is not a JSON object, or its `signatures` is not a list.
    NotACard,
    /// The card has no RFC 8785 form.
    NotCanonical(CanonError),
    /// The key has no JWS algorithm (SLH-DSA), or could not sign.
    Key(KeyError),
    /// `kid` or `jku` is empty, or `jku` is not an `https` URL.
    BadHeader(&'static str),
}

impl fmt::Display for JwsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotACard => f.write_str("the card must be a JSON object whose `signatures`, if any, is a list"),
            Self::NotCanonical(error) => write!(f, "the card has no canonical form: {error}"),
            Self::Key(error) => write!(f, "{error}"),
            Self::BadHeader(detail) => f.write_str(detail),
        }
    }
}

impl std::error::Error for JwsError {}

/// How to sign a card: the header members besides `alg`, the randomness, an audit sink.
#[derive(Clone, Default)]
pub struct JwsSignOptions {
    kid: Option<String>,
    jku: Option<String>,
    typ: Option<String>,
    header: Option<Map<String, Value>>,
    randomness: Randomness,
    audit_sink: Option<Arc<dyn AuditSink>>,
    now: Option<SystemTime>,
}

impl JwsSignOptions {
    /// The defaults: `kid` = the key's RFC 7638 thumbprint, `typ: "JOSE"`, no `jku`, no
    /// unprotected header, hedged signatures.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `kid` peers look the key up by.
    pub fn with_kid(mut self, kid: impl Into<String>) -> Self {
        self.kid = Some(kid.into());
        self
    }

    /// The `jku`: the `https` URL of a JWKS holding the key.
    pub fn with_jku(mut self, jku: impl Into<String>) -> Self {
        self.jku = Some(jku.into());
        self
    }

    /// Another `typ` than `JOSE`.
    pub fn with_typ(mut self, typ: impl Into<String>) -> Self {
        self.typ = Some(typ.into());
        self
    }

    /// An unprotected header (not signed; its members must not repeat the protected ones).
    pub fn with_header(mut self, header: Map<String, Value>) -> Self {
        self.header = Some(header);
        self
    }

    /// Hedged (default) or deterministic signatures (ML-DSA; Ed25519 is always deterministic,
    /// ECDSA never).
    pub fn with_randomness(mut self, randomness: Randomness) -> Self {
        self.randomness = randomness;
        self
    }

    /// Also records the audit event in `sink`.
    pub fn with_audit_sink(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit_sink = Some(sink);
        self
    }

    /// Stamps the audit event as if the clock read `now`.
    pub fn at(mut self, now: SystemTime) -> Self {
        self.now = Some(now);
        self
    }
}

impl fmt::Debug for JwsSignOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwsSignOptions")
            .field("kid", &self.kid)
            .field("jku", &self.jku)
            .field("typ", &self.typ)
            .field("header", &self.header)
            .field("randomness", &self.randomness)
            .field("audit_sink", &self.audit_sink.is_some())
            .finish()
    }
}

/// Drops what the official SDKs drop before canonicalizing; `None` when `value` itself goes.
fn present(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(text) if text.is_empty() => None,
        Value::Array(items) => {
            let kept: Vec<Value> = items.iter().filter_map(present).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(members) => {
            let kept: Map<String, Value> =
                members.iter().filter_map(|(name, value)| present(value).map(|value| (name.clone(), value))).collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

/// Removes `name: false` from `object`: a proto `bool` without presence, which ProtoJSON omits at
/// its default.
fn drop_false(object: Option<&mut Value>, name: &str) {
    if let Some(Value::Object(members)) = object
        && members.get(name) == Some(&Value::Bool(false))
    {
        members.remove(name);
    }
}

/// The card with the proto defaults ProtoJSON would not write removed (see the module docs).
fn drop_implicit_defaults(card: &mut Map<String, Value>) {
    if let Some(Value::Array(extensions)) = card.get_mut("capabilities").and_then(|caps| caps.get_mut("extensions")) {
        for extension in extensions {
            drop_false(Some(extension), "required");
        }
    }
    if let Some(Value::Object(schemes)) = card.get_mut("securitySchemes") {
        for scheme in schemes.values_mut() {
            if let Some(Value::Object(flows)) =
                scheme.get_mut("oauth2SecurityScheme").and_then(|oauth| oauth.get_mut("flows"))
            {
                for flow in flows.values_mut() {
                    drop_false(Some(flow), "pkceRequired");
                }
            }
        }
    }
}

/// What a member of an A2A message holds, for [`a2a_card`].
#[derive(Clone, Copy)]
enum Holds {
    /// A value kept as it is (a scalar, a list of scalars, a `google.protobuf.Struct`).
    Value,
    /// A message of this name.
    Message(&'static str),
    /// A list of messages of this name.
    List(&'static str),
    /// A map of messages of this name.
    Map(&'static str),
}

/// The members of each A2A v1.0 message an agent card is made of, and what each holds (from the
/// spec's JSON Schema): what a card signature covers ([`card_signing_payload`]). `signatures` is
/// left out of `AgentCard`.
const CARD_MESSAGES: &[(&str, &[(&str, Holds)])] = &[
    (
        "AgentCard",
        &[
            ("capabilities", Holds::Message("AgentCapabilities")),
            ("defaultInputModes", Holds::Value),
            ("defaultOutputModes", Holds::Value),
            ("description", Holds::Value),
            ("documentationUrl", Holds::Value),
            ("iconUrl", Holds::Value),
            ("name", Holds::Value),
            ("provider", Holds::Message("AgentProvider")),
            ("securityRequirements", Holds::List("SecurityRequirement")),
            ("securitySchemes", Holds::Map("SecurityScheme")),
            ("skills", Holds::List("AgentSkill")),
            ("supportedInterfaces", Holds::List("AgentInterface")),
            ("version", Holds::Value),
        ],
    ),
    (
        "AgentCapabilities",
        &[
            ("extendedAgentCard", Holds::Value),
            ("extensions", Holds::List("AgentExtension")),
            ("pushNotifications", Holds::Value),
            ("streaming", Holds::Value),
        ],
    ),
    ("AgentProvider", &[("organization", Holds::Value), ("url", Holds::Value)]),
    ("SecurityRequirement", &[("schemes", Holds::Map("StringList"))]),
    (
        "SecurityScheme",
        &[
            ("apiKeySecurityScheme", Holds::Message("APIKeySecurityScheme")),
            ("httpAuthSecurityScheme", Holds::Message("HTTPAuthSecurityScheme")),
            ("mtlsSecurityScheme", Holds::Message("MutualTlsSecurityScheme")),
            ("oauth2SecurityScheme", Holds::Message("OAuth2SecurityScheme")),
            ("openIdConnectSecurityScheme", Holds::Message("OpenIdConnectSecurityScheme")),
        ],
    ),
    (
        "AgentSkill",
        &[
            ("description", Holds::Value),
            ("examples", Holds::Value),
            ("id", Holds::Value),
            ("inputModes", Holds::Value),
            ("name", Holds::Value),
            ("outputModes", Holds::Value),
            ("securityRequirements", Holds::List("SecurityRequirement")),
            ("tags", Holds::Value),
        ],
    ),
    (
        "AgentInterface",
        &[
            ("protocolBinding", Holds::Value),
            ("protocolVersion", Holds::Value),
            ("tenant", Holds::Value),
            ("url", Holds::Value),
        ],
    ),
    (
        "AgentExtension",
        &[("description", Holds::Value), ("params", Holds::Value), ("required", Holds::Value), ("uri", Holds::Value)],
    ),
    ("StringList", &[("list", Holds::Value)]),
    ("APIKeySecurityScheme", &[("description", Holds::Value), ("location", Holds::Value), ("name", Holds::Value)]),
    (
        "HTTPAuthSecurityScheme",
        &[("bearerFormat", Holds::Value), ("description", Holds::Value), ("scheme", Holds::Value)],
    ),
    ("MutualTlsSecurityScheme", &[("description", Holds::Value)]),
    (
        "OAuth2SecurityScheme",
        &[("description", Holds::Value), ("flows", Holds::Message("OAuthFlows")), ("oauth2MetadataUrl", Holds::Value)],
    ),
    ("OpenIdConnectSecurityScheme", &[("description", Holds::Value), ("openIdConnectUrl", Holds::Value)]),
    (
        "OAuthFlows",
        &[
            ("authorizationCode", Holds::Message("AuthorizationCodeOAuthFlow")),
            ("clientCredentials", Holds::Message("ClientCredentialsOAuthFlow")),
            ("deviceCode", Holds::Message("DeviceCodeOAuthFlow")),
            ("implicit", Holds::Message("ImplicitOAuthFlow")),
            ("password", Holds::Message("PasswordOAuthFlow")),
        ],
    ),
    (
        "AuthorizationCodeOAuthFlow",
        &[
            ("authorizationUrl", Holds::Value),
            ("pkceRequired", Holds::Value),
            ("refreshUrl", Holds::Value),
            ("scopes", Holds::Value),
            ("tokenUrl", Holds::Value),
        ],
    ),
    (
        "ClientCredentialsOAuthFlow",
        &[("refreshUrl", Holds::Value), ("scopes", Holds::Value), ("tokenUrl", Holds::Value)],
    ),
    (
        "DeviceCodeOAuthFlow",
        &[
            ("deviceAuthorizationUrl", Holds::Value),
            ("refreshUrl", Holds::Value),
            ("scopes", Holds::Value),
            ("tokenUrl", Holds::Value),
        ],
    ),
    (
        "ImplicitOAuthFlow",
        &[("authorizationUrl", Holds::Value), ("refreshUrl", Holds::Value), ("scopes", Holds::Value)],
    ),
    ("PasswordOAuthFlow", &[("refreshUrl", Holds::Value), ("scopes", Holds::Value), ("tokenUrl", Holds::Value)]),
];

/// `value` read as the A2A message `message` reads it: the members the message does not define are
/// left out, at every depth, as the official SDKs leave them out when they parse a card into the
/// A2A types. A value of an unexpected shape is kept as it is.
fn a2a_card(value: &Value, message: &str) -> Value {
    let members = CARD_MESSAGES.iter().find(|(name, _)| *name == message).map(|(_, members)| *members);
    let (Some(members), Some(object)) = (members, value.as_object()) else { return value.clone() };
    let mut kept = Map::new();
    for (name, value) in object {
        let Some((_, holds)) = members.iter().find(|(member, _)| member == name) else { continue };
        let value = match (*holds, value) {
            (Holds::Message(inner), _) => a2a_card(value, inner),
            (Holds::List(inner), Value::Array(items)) => {
                Value::Array(items.iter().map(|item| a2a_card(item, inner)).collect())
            }
            (Holds::Map(inner), Value::Object(entries)) => {
                Value::Object(entries.iter().map(|(key, entry)| (key.clone(), a2a_card(entry, inner))).collect())
            }
            _ => value.clone(),
        };
        kept.insert(name.clone(), value);
    }
    Value::Object(kept)
}

/// The bytes a card signature covers (before base64url): the RFC 8785 form of `card` read as the
/// A2A v1.0 `AgentCard` (without `signatures`, and without the members A2A does not define, at
/// any depth), after the presence rules of the module docs.
pub fn card_signing_payload(card: &Value) -> Result<Vec<u8>, JwsError> {
    if !card.is_object() {
        return Err(JwsError::NotACard);
    }
    let Value::Object(mut members) = a2a_card(card, "AgentCard") else { return Err(JwsError::NotACard) };
    drop_implicit_defaults(&mut members);
    let cleaned = present(&Value::Object(members)).unwrap_or_else(|| Value::Object(Map::new()));
    canonicalize_value(&cleaned).map_err(JwsError::NotCanonical)
}

/// `ASCII(protected ‖ '.' ‖ BASE64URL(payload))`.
fn signing_input(protected: &str, payload: &[u8]) -> Vec<u8> {
    let mut input = Vec::with_capacity(protected.len() + 1 + payload.len().div_ceil(3) * 4);
    input.extend_from_slice(protected.as_bytes());
    input.push(b'.');
    input.extend_from_slice(URL_SAFE_NO_PAD.encode(payload).as_bytes());
    input
}

fn echoed(text: &str) -> String {
    if text.len() <= MAX_ECHOED_LEN {
        return text.to_owned();
    }
    let mut end = MAX_ECHOED_LEN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A signature of `card` by `key`: the entry to append to `signatures`. Emits an
/// `a2a.card_signed` audit event.
pub fn sign_agent_card_signature(
    card: &Value,
    key: &PrivateKey,
    options: &JwsSignOptions,
) -> Result<AgentCardSignature, JwsError> {
    let alg = JwsAlgorithm::for_key(key.algorithm()).ok_or(JwsError::Key(KeyError::UnsupportedEncoding {
        algorithm: key.algorithm(),
        detail: "this algorithm has no JWS identifier; use ml-dsa-87, ed25519 or ecdsa-p256",
    }))?;
    let public = key.public_key();
    let kid = match &options.kid {
        Some(kid) if kid.is_empty() => return Err(JwsError::BadHeader("the kid must not be empty")),
        Some(kid) => kid.clone(),
        None => jwk_thumbprint(&public).map_err(JwsError::Key)?,
    };
    let mut header = Map::new();
    header.insert("alg".into(), alg.name().into());
    header.insert("kid".into(), kid.clone().into());
    header.insert("typ".into(), options.typ.clone().unwrap_or_else(|| DEFAULT_TYP.to_owned()).into());
    if let Some(jku) = &options.jku {
        let https = url::Url::parse(jku).is_ok_and(|url| url.scheme() == "https");
        if !https {
            return Err(JwsError::BadHeader("the jku must be an https URL"));
        }
        header.insert("jku".into(), jku.clone().into());
    }
    if let Some(unprotected) = &options.header
        && unprotected.keys().any(|name| header.contains_key(name) || name == "crit")
    {
        return Err(JwsError::BadHeader("the unprotected header must not repeat a protected member or carry crit"));
    }
    let payload = card_signing_payload(card)?;
    if !matches!(card.get("signatures"), None | Some(Value::Array(_))) {
        return Err(JwsError::NotACard);
    }
    // Canonical header bytes: the same card and options always give the same `protected`.
    let header_bytes = canonicalize_value(&Value::Object(header)).map_err(JwsError::NotCanonical)?;
    let protected = URL_SAFE_NO_PAD.encode(header_bytes);
    let signature = key.sign(&signing_input(&protected, &payload), options.randomness).map_err(JwsError::Key)?;

    let now = unix_millis(options.now.unwrap_or_else(SystemTime::now));
    let mut event = AuditEvent::new(AuditAction::CardSigned, AuditOutcome::Success, now);
    event.metadata.algorithm = Some(key.algorithm());
    event.metadata.jws_alg = Some(alg.name().to_owned());
    event.metadata.kid = Some(echoed(&kid));
    event.metadata.bytes = Some(payload.len());
    event.metadata.key_fingerprint = public.fingerprint().map(str::to_owned);
    event.emit(options.audit_sink.as_ref());

    Ok(AgentCardSignature { protected, signature: URL_SAFE_NO_PAD.encode(signature), header: options.header.clone() })
}

/// `card` with one more signature by `key` appended to its `signatures` (made when missing):
/// signing a card that is already signed adds a signer and keeps the others valid, since
/// `signatures` is not part of what is signed.
///
/// ```
/// use accord_card::jws::{JwsSignOptions, JwsVerifyOptions, TrustStore, sign_agent_card, verify_agent_card};
/// use accord_card::{Algorithm, PrivateKey};
///
/// let es256 = PrivateKey::generate(Algorithm::EcdsaP256)?;
/// let ml_dsa = PrivateKey::generate(Algorithm::MlDsa87)?;
/// let card = serde_json::json!({"name": "Example Agent", "description": "", "skills": []});
/// let card = sign_agent_card(&card, &es256, &JwsSignOptions::new().with_kid("es-1"))?;
/// let card = sign_agent_card(&card, &ml_dsa, &JwsSignOptions::new().with_kid("pq-1"))?;
/// assert_eq!(card["signatures"].as_array().unwrap().len(), 2);
///
/// let mut trust = TrustStore::new();
/// trust.add_key(Some("pq-1"), ml_dsa.public_key());
/// let outcome = verify_agent_card(&card, &trust, &JwsVerifyOptions::new());
/// assert!(outcome.valid);
/// assert_eq!(outcome.signatures[0].reason.unwrap().as_str(), "key-unknown");
/// assert!(outcome.signatures[1].valid);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn sign_agent_card(card: &Value, key: &PrivateKey, options: &JwsSignOptions) -> Result<Value, JwsError> {
    let signature = sign_agent_card_signature(card, key, options)?;
    let mut card = card.clone();
    let Some(members) = card.as_object_mut() else { return Err(JwsError::NotACard) };
    match members.entry("signatures").or_insert_with(|| Value::Array(Vec::new())) {
        Value::Array(signatures) => signatures.push(signature.to_value()),
        _ => return Err(JwsError::NotACard),
    }
    Ok(card)
}

/// One key a verifier trusts.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    /// The `kid` it is trusted under; `None` trusts it for any `kid` (a key pinned by hand).
    pub kid: Option<String>,
    /// The key.
    pub key: PublicKey,
    /// The one algorithm it may be used with, when its JWK says so.
    pub alg: Option<JwsAlgorithm>,
}

/// The keys a verifier trusts: keys pinned by hand and the keys of JWKS documents.
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    keys: Vec<TrustedKey>,
}

/// Why a JWKS could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwksError {
    /// The document is not `{"keys": [...]}`.
    NotAJwks,
    /// A key of a supported kind is broken (its index and the problem).
    BadKey {
        /// The key's position in `keys`.
        index: usize,
        /// What is wrong with it.
        error: KeyError,
    },
}

impl fmt::Display for JwksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAJwks => f.write_str("not a JWKS: expected a JSON object with a \"keys\" list"),
            Self::BadKey { index, error } => write!(f, "JWKS key {index}: {error}"),
        }
    }
}

impl std::error::Error for JwksError {}

impl TrustStore {
    /// An empty store: every signature is `key-unknown`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts `key` under `kid` (`None`: under any `kid`).
    pub fn add_key(&mut self, kid: Option<&str>, key: PublicKey) -> &mut Self {
        self.keys.push(TrustedKey { kid: kid.map(str::to_owned), key, alg: None });
        self
    }

    /// Trusts the keys of a JWKS under their `kid`s. Keys of a kind Accord has no algorithm for
    /// (RSA, other curves), and keys whose `use` is not `sig`, are skipped and counted in the
    /// returned number; a broken key of a supported kind fails the whole document.
    pub fn add_jwks(&mut self, jwks: &Value, provider: &CryptoProvider) -> Result<usize, JwksError> {
        let Some(keys) = jwks.get("keys").and_then(Value::as_array) else { return Err(JwksError::NotAJwks) };
        let mut skipped = 0;
        let mut read = Vec::new();
        for (index, jwk) in keys.iter().enumerate() {
            if jwk.get("use").is_some_and(|usage| usage != "sig") {
                skipped += 1;
                continue;
            }
            match public_key_from_jwk(jwk, provider) {
                Ok(Jwk { key, kid, alg }) => read.push(TrustedKey { kid, key, alg }),
                Err(KeyError::UnsupportedAlgorithm { .. }) => skipped += 1,
                Err(error) => return Err(JwksError::BadKey { index, error }),
            }
        }
        self.keys.extend(read);
        Ok(skipped)
    }

    /// The trusted keys.
    pub fn keys(&self) -> &[TrustedKey] {
        &self.keys
    }

    /// The keys for `kid`: those trusted under it, else those trusted under any `kid`.
    fn candidates(&self, kid: &str) -> Vec<&TrustedKey> {
        let named: Vec<&TrustedKey> = self.keys.iter().filter(|key| key.kid.as_deref() == Some(kid)).collect();
        if named.is_empty() { self.keys.iter().filter(|key| key.kid.is_none()).collect() } else { named }
    }
}

/// How to verify card signatures.
#[derive(Clone)]
pub struct JwsVerifyOptions {
    algorithms: Vec<JwsAlgorithm>,
    max_bytes: NonZeroUsize,
    now: Option<SystemTime>,
    audit_sink: Option<Arc<dyn AuditSink>>,
}

impl Default for JwsVerifyOptions {
    fn default() -> Self {
        Self { algorithms: JwsAlgorithm::ALL.to_vec(), max_bytes: DEFAULT_MAX_BYTES, now: None, audit_sink: None }
    }
}

impl JwsVerifyOptions {
    /// The defaults: every [`JwsAlgorithm`], a 64 KiB limit on the canonical card, no audit
    /// sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts only these algorithms (others are `alg-not-allowed`).
    pub fn with_algorithms(mut self, algorithms: impl IntoIterator<Item = JwsAlgorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// The limit on the canonical card.
    pub fn with_max_bytes(mut self, max_bytes: NonZeroUsize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Stamps the audit event as if the clock read `now`.
    pub fn at(mut self, now: SystemTime) -> Self {
        self.now = Some(now);
        self
    }

    /// Also records the audit event in `sink`.
    pub fn with_audit_sink(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit_sink = Some(sink);
        self
    }
}

impl fmt::Debug for JwsVerifyOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwsVerifyOptions")
            .field("algorithms", &self.algorithms)
            .field("max_bytes", &self.max_bytes)
            .field("now", &self.now)
            .field("audit_sink", &self.audit_sink.is_some())
            .finish()
    }
}

/// The verdict on one entry of `signatures`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureVerdict {
    /// Its position in `signatures`.
    pub index: usize,
    /// Whether it verified.
    pub valid: bool,
    /// Why not, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<RejectReason>,
    /// Its `kid`, once the header was read (at most 128 bytes of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
    /// Its `alg`, once the header was read (at most 128 bytes of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// Its `jku`, when the header has one (Accord never fetches it by itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jku: Option<String>,
    /// The fingerprint of the key that verified it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_fingerprint: Option<String>,
}

impl SignatureVerdict {
    fn new(index: usize) -> Self {
        Self { index, valid: false, reason: None, kid: None, alg: None, jku: None, key_fingerprint: None }
    }

    fn refuse(mut self, reason: RejectReason) -> Self {
        self.reason = Some(reason);
        self
    }
}

/// The result of verifying a card's signatures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JwsVerifyOutcome {
    /// Whether at least one signature verified with a trusted key.
    pub valid: bool,
    /// Why the card was refused: a card-level reason, or that of the first signature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<RejectReason>,
    /// One verdict per entry of `signatures`, in order.
    pub signatures: Vec<SignatureVerdict>,
}

/// Verifies the `signatures` of an agent card against `trust`. See the [module docs](self).
pub fn verify_agent_card(card: &Value, trust: &TrustStore, options: &JwsVerifyOptions) -> JwsVerifyOutcome {
    let now = unix_millis(options.now.unwrap_or_else(SystemTime::now));
    let (outcome, event) = evaluate(card, trust, options, now);
    event.emit(options.audit_sink.as_ref());
    outcome
}

/// Verifies a card given as JSON text; text that is not a JSON object (including duplicate
/// member names) is `card-not-object`.
pub fn verify_agent_card_json(card: &[u8], trust: &TrustStore, options: &JwsVerifyOptions) -> JwsVerifyOutcome {
    let parsed = parse_strict(card).unwrap_or(Value::Null);
    verify_agent_card(&parsed, trust, options)
}

fn evaluate(card: &Value, trust: &TrustStore, options: &JwsVerifyOptions, now: u64) -> (JwsVerifyOutcome, AuditEvent) {
    let mut event = AuditEvent::new(AuditAction::CardRejected, AuditOutcome::Denied, now);
    let refuse = |reason: RejectReason, mut event: AuditEvent| {
        event.reason = Some(reason);
        (JwsVerifyOutcome { valid: false, reason: Some(reason), signatures: Vec::new() }, event)
    };
    let Some(members) = card.as_object() else { return refuse(RejectReason::CardNotObject, event) };
    let entries = match members.get("signatures") {
        None => return refuse(RejectReason::NoSignatures, event),
        Some(Value::Array(entries)) if entries.is_empty() => return refuse(RejectReason::NoSignatures, event),
        Some(Value::Array(entries)) => entries,
        Some(_) => return refuse(RejectReason::SignatureShape, event),
    };
    let payload = match card_signing_payload(card) {
        Ok(payload) => payload,
        Err(error) => {
            event.metadata.detail = Some(error.to_string());
            return refuse(RejectReason::CardNotCanonical, event);
        }
    };
    event.metadata.bytes = Some(payload.len());
    if payload.len() > options.max_bytes.get() {
        event.metadata.max_bytes = Some(options.max_bytes.get());
        return refuse(RejectReason::CardTooLarge, event);
    }
    let encoded_payload = URL_SAFE_NO_PAD.encode(&payload);

    let verdicts: Vec<SignatureVerdict> = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| verify_one(index, entry, &encoded_payload, trust, options))
        .collect();
    let accepted = verdicts.iter().find(|verdict| verdict.valid);
    let reported = accepted.or(verdicts.first());
    if let Some(verdict) = reported {
        event.metadata.kid = verdict.kid.clone();
        event.metadata.jws_alg = verdict.alg.clone();
        event.metadata.key_fingerprint = verdict.key_fingerprint.clone();
        event.metadata.algorithm =
            verdict.alg.as_deref().and_then(JwsAlgorithm::from_name).map(JwsAlgorithm::key_algorithm);
    }
    if verdicts.len() > 1 {
        let summary: Vec<String> = verdicts
            .iter()
            .map(|verdict| match verdict.reason {
                Some(reason) => format!("[{}] {reason}", verdict.index),
                None => format!("[{}] valid", verdict.index),
            })
            .collect();
        event.metadata.detail = Some(summary.join(", "));
    }
    let valid = accepted.is_some();
    let reason = if valid { None } else { verdicts.first().and_then(|verdict| verdict.reason) };
    if valid {
        event.action = AuditAction::CardVerified;
        event.outcome = AuditOutcome::Success;
    } else {
        event.reason = reason;
    }
    (JwsVerifyOutcome { valid, reason, signatures: verdicts }, event)
}

/// Decodes strict base64url without padding.
fn base64url(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text).ok()
}

fn verify_one(
    index: usize,
    entry: &Value,
    encoded_payload: &str,
    trust: &TrustStore,
    options: &JwsVerifyOptions,
) -> SignatureVerdict {
    let verdict = SignatureVerdict::new(index);
    let Some(entry) = entry.as_object() else { return verdict.refuse(RejectReason::SignatureShape) };
    let (protected, signature) = match (entry.get("protected"), entry.get("signature")) {
        (Some(Value::String(protected)), Some(Value::String(signature))) => (protected, signature),
        _ => return verdict.refuse(RejectReason::SignatureShape),
    };
    let unprotected = match entry.get("header") {
        None | Some(Value::Null) => None,
        Some(Value::Object(header)) => Some(header),
        Some(_) => return verdict.refuse(RejectReason::SignatureShape),
    };
    check_signature(verdict, protected, signature, unprotected, encoded_payload, trust, options)
}

fn check_signature(
    mut verdict: SignatureVerdict,
    protected: &str,
    signature: &str,
    unprotected: Option<&Map<String, Value>>,
    encoded_payload: &str,
    trust: &TrustStore,
    options: &JwsVerifyOptions,
) -> SignatureVerdict {
    let header = base64url(protected).and_then(|bytes| parse_strict(&bytes).ok());
    let Some(Value::Object(header)) = header else { return verdict.refuse(RejectReason::HeaderMalformed) };
    let text = |name: &str| match header.get(name) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.as_str())),
        Some(_) => Err(()),
    };
    let (Ok(Some(alg)), Ok(kid), Ok(jku), Ok(_typ)) = (text("alg"), text("kid"), text("jku"), text("typ")) else {
        return verdict.refuse(RejectReason::HeaderMalformed);
    };
    verdict.alg = Some(echoed(alg));
    verdict.kid = kid.map(echoed);
    verdict.jku = jku.map(echoed);
    let Some(kid) = kid else { return verdict.refuse(RejectReason::HeaderMalformed) };
    if unprotected.is_some_and(|extra| extra.keys().any(|name| header.contains_key(name))) {
        return verdict.refuse(RejectReason::HeaderMalformed);
    }
    if alg.eq_ignore_ascii_case("none") {
        return verdict.refuse(RejectReason::AlgNone);
    }
    let Some(algorithm) = JwsAlgorithm::from_name(alg) else { return verdict.refuse(RejectReason::AlgUnsupported) };
    if !options.algorithms.contains(&algorithm) {
        return verdict.refuse(RejectReason::AlgNotAllowed);
    }
    let critical = |map: &Map<String, Value>| map.contains_key("crit") || map.contains_key("b64");
    if critical(&header) || unprotected.is_some_and(critical) {
        return verdict.refuse(RejectReason::CritUnsupported);
    }
    let candidates = trust.candidates(kid);
    if candidates.is_empty() {
        return verdict.refuse(RejectReason::KeyUnknown);
    }
    let fitting: Vec<&TrustedKey> = candidates
        .into_iter()
        .filter(|trusted| {
            trusted.key.algorithm() == algorithm.key_algorithm() && trusted.alg.is_none_or(|alg| alg == algorithm)
        })
        .collect();
    if fitting.is_empty() {
        return verdict.refuse(RejectReason::AlgKeyMismatch);
    }
    let Some(signature) = base64url(signature) else { return verdict.refuse(RejectReason::SignatureBase64Bad) };
    let mut input = Vec::with_capacity(protected.len() + 1 + encoded_payload.len());
    input.extend_from_slice(protected.as_bytes());
    input.push(b'.');
    input.extend_from_slice(encoded_payload.as_bytes());
    match fitting.into_iter().find(|trusted| trusted.key.verify(&input, &signature)) {
        Some(trusted) => {
            verdict.valid = true;
            verdict.key_fingerprint = trusted.key.fingerprint().map(str::to_owned);
            verdict
        }
        None => verdict.refuse(RejectReason::SignatureMismatch),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_payload_follows_the_sdk_presence_rules() {
        let card = json!({
            "name": "Example Agent",
            "description": "",
            "skills": [],
            "capabilities": {"pushNotifications": false, "streaming": false,
                             "extensions": [{"uri": "u", "required": false, "params": {"a": null, "b": {}}}]},
            "securityRequirements": [{"schemes": {"x": {"list": []}}}],
            "signatures": [{"protected": "x", "signature": "y"}]
        });
        let payload = String::from_utf8(card_signing_payload(&card).expect("payload")).expect("utf-8");
        assert_eq!(
            payload,
            r#"{"capabilities":{"extensions":[{"uri":"u"}],"pushNotifications":false,"streaming":false},"name":"Example Agent"}"#
        );
    }

    #[test]
    fn algorithm_names_are_exact() {
        for algorithm in JwsAlgorithm::ALL {
            assert_eq!(JwsAlgorithm::from_name(algorithm.name()), Some(algorithm));
            assert_eq!(JwsAlgorithm::for_key(algorithm.key_algorithm()), Some(algorithm));
        }
        assert_eq!(JwsAlgorithm::from_name("Ed25519"), Some(JwsAlgorithm::EdDsa));
        assert_eq!(JwsAlgorithm::from_name("es256"), None);
        assert_eq!(JwsAlgorithm::for_key(Algorithm::SlhDsaShake256f), None);
    }
}
