//! The official A2A v1.0 agent card (proto `AgentCard` and the messages it contains).
//!
//! Strict where the proto says `REQUIRED` (a missing field fails deserialization; [`Validate`]
//! rejects empty ones), and faithful to what it does not know: every unknown field of the card, an
//! interface, the capabilities or a skill is kept in that value's `extra` map and written back out.
//! Accord's own card carries Lucid fields there (`url`, `protocolVersion`, `entrypoints`, …), and a
//! signed card must survive a round trip byte-for-byte in content.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::de::null_as_default;
use super::validate::{self, FieldViolation, Validate};

/// Where an agent publishes its card (§8.2).
pub const WELL_KNOWN_AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// The protocol version these types speak, as written in [`AgentInterface::protocol_version`].
pub const PROTOCOL_VERSION: &str = "1.0";

/// The JSON-RPC binding's name in [`AgentInterface::protocol_binding`].
pub const PROTOCOL_BINDING_JSONRPC: &str = "JSONRPC";

/// The HTTP+JSON (REST) binding's name in [`AgentInterface::protocol_binding`].
pub const PROTOCOL_BINDING_HTTP_JSON: &str = "HTTP+JSON";

/// The gRPC binding's name in [`AgentInterface::protocol_binding`].
pub const PROTOCOL_BINDING_GRPC: &str = "GRPC";

/// An agent's self-description (proto `AgentCard`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// A human-readable name. Required.
    pub name: String,
    /// What the agent does. Required.
    pub description: String,
    /// The interfaces, the preferred one first. Required, at least one.
    #[serde(alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who provides the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version, e.g. `1.0.0`. Required.
    pub version: String,
    /// Documentation of the agent.
    #[serde(default, alias = "documentation_url", skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// Optional capabilities. Required (the object, not its fields).
    pub capabilities: AgentCapabilities,
    /// Security schemes by name.
    #[serde(
        default,
        alias = "security_schemes",
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Security requirements for calling the agent (any one of them suffices).
    #[serde(
        default,
        alias = "security_requirements",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Media types accepted by default. Required, at least one.
    #[serde(alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    /// Media types produced by default. Required, at least one.
    #[serde(alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    /// The skills. Required, at least one.
    pub skills: Vec<AgentSkill>,
    /// JWS signatures of the card.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
    /// An icon of the agent.
    #[serde(default, alias = "icon_url", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    /// Every field this type does not name (Lucid's `url`, `protocolVersion`, `entrypoints`, …),
    /// kept as received and written back out.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AgentCard {
    /// The first interface whose binding is exactly `binding` (`JSONRPC`, `HTTP+JSON`, …), the
    /// way official clients choose.
    pub fn interface(&self, binding: &str) -> Option<&AgentInterface> {
        self.supported_interfaces.iter().find(|interface| interface.protocol_binding == binding)
    }

    /// A skill by id.
    pub fn skill(&self, id: &str) -> Option<&AgentSkill> {
        self.skills.iter().find(|skill| skill.id == id)
    }
}

impl Validate for AgentCard {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "name", &self.name);
        validate::required_str(out, path, "description", &self.description);
        validate::required_list(out, path, "supportedInterfaces", &self.supported_interfaces);
        validate::each(out, path, "supportedInterfaces", &self.supported_interfaces);
        if let Some(provider) = &self.provider {
            validate::nested(out, path, "provider", provider);
        }
        validate::required_str(out, path, "version", &self.version);
        for (name, scheme) in &self.security_schemes {
            scheme.collect_violations(&format!("{}[{name:?}]", validate::field_path(path, "securitySchemes")), out);
        }
        validate::required_list(out, path, "defaultInputModes", &self.default_input_modes);
        validate::required_list(out, path, "defaultOutputModes", &self.default_output_modes);
        validate::required_list(out, path, "skills", &self.skills);
        validate::each(out, path, "skills", &self.skills);
        validate::each(out, path, "signatures", &self.signatures);
    }
}

/// One way to reach the agent (proto `AgentInterface`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// Where the interface is served (`host:port` for gRPC). Required.
    pub url: String,
    /// `JSONRPC`, `GRPC`, `HTTP+JSON`, or a URI naming a custom binding. Required.
    #[serde(alias = "protocol_binding")]
    pub protocol_binding: String,
    /// The tenant a client must put in its requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The A2A version spoken there, `Major.Minor` (`"1.0"`). Required.
    #[serde(alias = "protocol_version")]
    pub protocol_version: String,
    /// Every field this type does not name, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AgentInterface {
    /// An interface at `url` speaking `binding` in A2A [`PROTOCOL_VERSION`].
    pub fn new(url: impl Into<String>, binding: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            protocol_binding: binding.into(),
            tenant: None,
            protocol_version: PROTOCOL_VERSION.to_owned(),
            extra: Map::new(),
        }
    }
}

impl Validate for AgentInterface {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "url", &self.url);
        validate::required_str(out, path, "protocolBinding", &self.protocol_binding);
        validate::required_str(out, path, "protocolVersion", &self.protocol_version);
    }
}

/// Who provides the agent (proto `AgentProvider`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentProvider {
    /// The provider's website. Required.
    pub url: String,
    /// The provider's organization. Required.
    pub organization: String,
}

impl Validate for AgentProvider {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "url", &self.url);
        validate::required_str(out, path, "organization", &self.organization);
    }
}

/// Optional capabilities of the agent (proto `AgentCapabilities`). The three flags are proto
/// `optional`: set-to-false and absent stay distinct, which matters for card signatures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Whether `SendStreamingMessage` and `SubscribeToTask` are served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Whether push notifications are served.
    #[serde(default, alias = "push_notifications", skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// The protocol extensions the agent supports.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    /// Whether an authenticated client can fetch an extended card.
    #[serde(default, alias = "extended_agent_card", skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
    /// Every field this type does not name, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A protocol extension the agent supports (proto `AgentExtension`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentExtension {
    /// The URI identifying the extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// How the agent uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether a client must activate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Extension-specific parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

/// A skill of the agent (proto `AgentSkill`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Unique id. Required.
    pub id: String,
    /// A human-readable name. Required.
    pub name: String,
    /// What the skill does. Required.
    pub description: String,
    /// Keywords. Required, at least one.
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Accepted media types, overriding the card's defaults.
    #[serde(
        default,
        alias = "input_modes",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub input_modes: Vec<String>,
    /// Produced media types, overriding the card's defaults.
    #[serde(
        default,
        alias = "output_modes",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub output_modes: Vec<String>,
    /// Security requirements for this skill.
    #[serde(
        default,
        alias = "security_requirements",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Every field this type does not name, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Validate for AgentSkill {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "id", &self.id);
        validate::required_str(out, path, "name", &self.name);
        validate::required_str(out, path, "description", &self.description);
        validate::required_list(out, path, "tags", &self.tags);
    }
}

/// A JWS (RFC 7515, detached payload) over the card (proto `AgentCardSignature`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentCardSignature {
    /// The base64url-encoded protected header. Required.
    pub protected: String,
    /// The base64url-encoded signature. Required.
    pub signature: String,
    /// The unprotected header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Map<String, Value>>,
}

impl Validate for AgentCardSignature {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "protected", &self.protected);
        validate::required_str(out, path, "signature", &self.signature);
    }
}

/// A list of strings (proto `StringList`): `{"list": […]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StringList {
    /// The strings.
    #[serde(default, deserialize_with = "null_as_default")]
    pub list: Vec<String>,
}

/// Schemes that together authorize a call, each with its required scopes (proto
/// `SecurityRequirement`): `{"schemes": {"oauth": {"list": ["read"]}}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SecurityRequirement {
    /// Scheme name (a key of [`AgentCard::security_schemes`]) to required scopes.
    #[serde(default, deserialize_with = "null_as_default")]
    pub schemes: BTreeMap<String, StringList>,
}

proto_oneof! {
    /// A way to authenticate to the agent (proto `SecurityScheme`, after the OpenAPI 3.2
    /// Security Scheme Object): `{"httpAuthSecurityScheme": {…}}` and so on.
    pub enum SecurityScheme in "SecurityScheme" {
        /// An API key in a header, query parameter or cookie.
        ApiKey(ApiKeySecurityScheme) = "apiKeySecurityScheme" | "api_key_security_scheme",
        /// HTTP authentication (Basic, Bearer, …).
        HttpAuth(HttpAuthSecurityScheme) = "httpAuthSecurityScheme" | "http_auth_security_scheme",
        /// OAuth 2.0.
        OAuth2(OAuth2SecurityScheme) = "oauth2SecurityScheme" | "oauth2_security_scheme",
        /// OpenID Connect.
        OpenIdConnect(OpenIdConnectSecurityScheme) = "openIdConnectSecurityScheme" | "open_id_connect_security_scheme",
        /// Mutual TLS.
        MutualTls(MutualTlsSecurityScheme) = "mtlsSecurityScheme" | "mtls_security_scheme",
    }
}

impl Validate for SecurityScheme {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        let path = validate::field_path(path, self.member_name());
        match self {
            Self::ApiKey(scheme) => {
                validate::required_str(out, &path, "location", &scheme.location);
                validate::required_str(out, &path, "name", &scheme.name);
            }
            Self::HttpAuth(scheme) => validate::required_str(out, &path, "scheme", &scheme.scheme),
            Self::OAuth2(scheme) => validate::nested(out, &path, "flows", &scheme.flows),
            Self::OpenIdConnect(scheme) => {
                validate::required_str(out, &path, "openIdConnectUrl", &scheme.open_id_connect_url);
            }
            Self::MutualTls(_) => {}
        }
    }
}

/// An API key scheme (proto `APIKeySecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApiKeySecurityScheme {
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `query`, `header` or `cookie`. Required.
    pub location: String,
    /// The header, query parameter or cookie name. Required.
    pub name: String,
}

/// An HTTP authentication scheme (proto `HTTPAuthSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The scheme of the `Authorization` header (RFC 7235), e.g. `Bearer`. Required.
    pub scheme: String,
    /// How bearer tokens are formatted, e.g. `JWT`.
    #[serde(default, alias = "bearer_format", skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
}

/// An OAuth 2.0 scheme (proto `OAuth2SecurityScheme`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The supported flow. Required.
    pub flows: OAuthFlows,
    /// The authorization server metadata URL (RFC 8414).
    #[serde(default, alias = "oauth2_metadata_url", skip_serializing_if = "Option::is_none")]
    pub oauth2_metadata_url: Option<String>,
}

/// An OpenID Connect scheme (proto `OpenIdConnectSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The OpenID Connect discovery URL. Required.
    #[serde(alias = "open_id_connect_url")]
    pub open_id_connect_url: String,
}

/// A mutual TLS scheme (proto `MutualTlsSecurityScheme`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MutualTlsSecurityScheme {
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

proto_oneof! {
    /// The OAuth 2.0 flow of a scheme (proto `OAuthFlows`, a oneof).
    pub enum OAuthFlows in "OAuthFlows" {
        /// Authorization code (with PKCE).
        AuthorizationCode(AuthorizationCodeOAuthFlow) = "authorizationCode" | "authorization_code",
        /// Client credentials.
        ClientCredentials(ClientCredentialsOAuthFlow) = "clientCredentials" | "client_credentials",
        /// Implicit; deprecated by the specification.
        Implicit(ImplicitOAuthFlow) = "implicit",
        /// Resource owner password; deprecated by the specification.
        Password(PasswordOAuthFlow) = "password",
        /// Device code (RFC 8628).
        DeviceCode(DeviceCodeOAuthFlow) = "deviceCode" | "device_code",
    }
}

impl Validate for OAuthFlows {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        let path = validate::field_path(path, self.member_name());
        match self {
            Self::AuthorizationCode(flow) => {
                validate::required_str(out, &path, "authorizationUrl", &flow.authorization_url);
                validate::required_str(out, &path, "tokenUrl", &flow.token_url);
            }
            Self::ClientCredentials(flow) => validate::required_str(out, &path, "tokenUrl", &flow.token_url),
            Self::DeviceCode(flow) => {
                validate::required_str(out, &path, "deviceAuthorizationUrl", &flow.device_authorization_url);
                validate::required_str(out, &path, "tokenUrl", &flow.token_url);
            }
            Self::Implicit(_) | Self::Password(_) => {}
        }
    }
}

/// The authorization code flow (proto `AuthorizationCodeOAuthFlow`).
///
/// `scopes` is required by the proto but may be empty, and ProtoJSON writers leave an empty map
/// out, so it reads as empty when absent; it is always written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationCodeOAuthFlow {
    /// The authorization URL. Required.
    #[serde(alias = "authorization_url")]
    pub authorization_url: String,
    /// The token URL. Required.
    #[serde(alias = "token_url")]
    pub token_url: String,
    /// The refresh URL.
    #[serde(default, alias = "refresh_url", skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description.
    #[serde(default, deserialize_with = "null_as_default")]
    pub scopes: BTreeMap<String, String>,
    /// Whether PKCE (RFC 7636) is required.
    #[serde(default, alias = "pkce_required", skip_serializing_if = "Option::is_none")]
    pub pkce_required: Option<bool>,
}

/// The client credentials flow (proto `ClientCredentialsOAuthFlow`); `scopes` as in
/// [`AuthorizationCodeOAuthFlow`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientCredentialsOAuthFlow {
    /// The token URL. Required.
    #[serde(alias = "token_url")]
    pub token_url: String,
    /// The refresh URL.
    #[serde(default, alias = "refresh_url", skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description.
    #[serde(default, deserialize_with = "null_as_default")]
    pub scopes: BTreeMap<String, String>,
}

/// The implicit flow (proto `ImplicitOAuthFlow`); deprecated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImplicitOAuthFlow {
    /// The authorization URL.
    #[serde(default, alias = "authorization_url", skip_serializing_if = "Option::is_none")]
    pub authorization_url: Option<String>,
    /// The refresh URL.
    #[serde(default, alias = "refresh_url", skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, String>,
}

/// The resource owner password flow (proto `PasswordOAuthFlow`); deprecated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordOAuthFlow {
    /// The token URL.
    #[serde(default, alias = "token_url", skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// The refresh URL.
    #[serde(default, alias = "refresh_url", skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, String>,
}

/// The device code flow (proto `DeviceCodeOAuthFlow`); `scopes` as in
/// [`AuthorizationCodeOAuthFlow`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCodeOAuthFlow {
    /// The device authorization URL. Required.
    #[serde(alias = "device_authorization_url")]
    pub device_authorization_url: String,
    /// The token URL. Required.
    #[serde(alias = "token_url")]
    pub token_url: String,
    /// The refresh URL.
    #[serde(default, alias = "refresh_url", skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description.
    #[serde(default, deserialize_with = "null_as_default")]
    pub scopes: BTreeMap<String, String>,
}
