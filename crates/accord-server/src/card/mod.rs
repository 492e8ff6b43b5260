//! The agent card: one [`CardBuilder`], made when the router is built from the agent and the
//! server's configuration, renders the card for the origin and base path a request used; every
//! card route (the plain card here, the signed envelope in `signed`) serves that value. The
//! plain card carries an entity tag and a `Last-Modified` date so that caches and pollers can
//! revalidate cheaply.
//!
//! What the card says follows from the faces it lists:
//! - every mounted face is one `supportedInterfaces` entry, with the protocol version it speaks;
//! - the Lucid members (`entrypoints`, with per-entrypoint `pricing`, and `payments`) appear only
//!   when the Lucid face is listed;
//! - the v0.3 members (`url`, `preferredTransport`, `protocolVersion`, `additionalInterfaces`,
//!   `supportsAuthenticatedExtendedCard`, `capabilities.stateTransitionHistory`) appear only when
//!   a v0.3 face is listed, so a v1.0 card has none of them;
//! - skill schemas and prices, which the A2A `AgentSkill` has no member for, are the params of
//!   Accord's skill extension ([`SKILL_EXTENSION`]) in `capabilities.extensions`;
//! - `securitySchemes` and `securityRequirements` are generated from the configured
//!   authentication schemes (none without; with a 0.3 interface listed, each scheme carries its
//!   0.3 members too, and 0.3's `security` is added, see `CardBuilder::declare_auth`), and `capabilities.extendedAgentCard` is `true` only
//!   when an extended card is configured; [`CardBuilder::extended`] is the one place that decides
//!   who gets the extended card, for both A2A bindings.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use accord_engine::Agent;
use accord_types::a2a::card::{PROTOCOL_BINDING_GRPC, PROTOCOL_BINDING_HTTP_JSON, PROTOCOL_BINDING_JSONRPC};
use accord_types::a2a::v03::card as v03_card;
use accord_types::a2a::{A2aError, A2aErrorKind, SecurityRequirement, StringList};
use accord_types::card::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill, EntrypointDescriptor, LUCID_BINDING,
    PROTOCOL_VERSION, SKILL_EXTENSION,
};
use axum::extract::OriginalUri;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::payments::{PaymentsConfig, priced_operations};
use crate::{JSONRPC_TASKS_BINDING, ServerConfig, State};

pub(crate) mod jws;
mod paths;
pub(crate) mod signed;

pub use paths::SIGNED_CARD_PATH;
pub(crate) use paths::{CARD_PATH, LEGACY_CARD_PATH, base_url, base_url_before, host_and_port, origin};

/// The card's URL depends on these request headers, so shared caches must key on them.
const VARY: &str = "host, x-forwarded-host, x-forwarded-proto";

const JSON: &str = "application/json";
const TEXT: &str = "text/plain";

/// One face the card lists in `supportedInterfaces`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeclaredInterface {
    /// Where the face is, relative to the agent's base URL; `""` is the base URL itself, which is
    /// written with a trailing `/`.
    pub(crate) path: String,
    /// For the gRPC binding, its address instead of a path.
    pub(crate) grpc: Option<crate::GrpcAddress>,
    /// The binding: `JSONRPC`, `HTTP+JSON`, or a URI for a custom one.
    pub(crate) binding: String,
    /// The A2A version spoken there (`"1.0"`; `"0.3"` brings the v0.3 card members).
    pub(crate) protocol_version: String,
}

impl DeclaredInterface {
    pub(crate) fn new(path: &str, binding: &str, protocol_version: &str) -> Self {
        Self {
            path: path.to_owned(),
            grpc: None,
            binding: binding.to_owned(),
            protocol_version: protocol_version.to_owned(),
        }
    }

    /// The gRPC binding at `address`.
    pub(crate) fn grpc(address: &crate::GrpcAddress) -> Self {
        Self { grpc: Some(address.clone()), ..Self::new("", PROTOCOL_BINDING_GRPC, PROTOCOL_VERSION) }
    }

    fn url(&self, base_url: &str) -> String {
        match &self.grpc {
            Some(crate::GrpcAddress::Fixed(address)) => address.clone(),
            Some(crate::GrpcAddress::Port(port)) => match host_and_port(base_url) {
                Some((host, _)) => format!("{host}:{port}"),
                None => format!("localhost:{port}"),
            },
            Some(crate::GrpcAddress::SamePort) => match host_and_port(base_url) {
                Some((host, port)) => format!("{host}:{port}"),
                None => base_url.to_owned(),
            },
            None if self.path.is_empty() => format!("{base_url}/"),
            None => format!("{base_url}{}", self.path),
        }
    }

    fn is_v0(&self) -> bool {
        self.protocol_version.starts_with("0.")
    }

    fn is_official(&self) -> bool {
        [PROTOCOL_BINDING_JSONRPC, PROTOCOL_BINDING_HTTP_JSON, PROTOCOL_BINDING_GRPC].contains(&self.binding.as_str())
    }
}

/// The faces `config` mounts, in the order the card lists them: the Lucid profile first (Lucid
/// clients take the first binding containing `HTTP`), then the official bindings, then the
/// JSON-RPC tasks face.
pub(crate) fn declared_interfaces(config: &ServerConfig) -> Vec<DeclaredInterface> {
    let mut interfaces = Vec::new();
    if config.lucid {
        interfaces.push(DeclaredInterface::new("", LUCID_BINDING, PROTOCOL_VERSION));
    }
    if let Some(a2a) = config.served_a2a() {
        if a2a.v10 {
            interfaces.push(DeclaredInterface::new(&a2a.jsonrpc_path, PROTOCOL_BINDING_JSONRPC, PROTOCOL_VERSION));
            interfaces.push(DeclaredInterface::new(&a2a.rest_path, PROTOCOL_BINDING_HTTP_JSON, PROTOCOL_VERSION));
            // Listed only where it is served: without the `grpc` feature there is no binding.
            if let Some(grpc) = a2a.grpc.as_ref().filter(|_| cfg!(feature = "grpc")) {
                interfaces.push(DeclaredInterface::grpc(grpc));
            }
        }
        if a2a.v03 {
            // After the 1.0 entries: a 1.0 client takes the first entry of its binding it speaks.
            interfaces.push(DeclaredInterface::new(
                &a2a.jsonrpc_path,
                PROTOCOL_BINDING_JSONRPC,
                accord_types::a2a::v03::PROTOCOL_VERSION,
            ));
            // The 0.3 REST routes live under `/v1/` of the same base path (a 0.3 client appends it).
            interfaces.push(DeclaredInterface::new(
                &a2a.rest_path,
                PROTOCOL_BINDING_HTTP_JSON,
                accord_types::a2a::v03::PROTOCOL_VERSION,
            ));
        }
    }
    if let Some(jsonrpc) = config.served_jsonrpc_tasks() {
        interfaces.push(DeclaredInterface::new(&jsonrpc.path, JSONRPC_TASKS_BINDING, PROTOCOL_VERSION));
    }
    interfaces
}

/// Builds the agent's card. Everything but the URLs is decided once, when the builder is made;
/// [`CardBuilder::build`] adds the URLs of one origin and base path.
#[derive(Debug)]
pub(crate) struct CardBuilder {
    /// The card without `supportedInterfaces` and the v0.3 `url`.
    template: AgentCard,
    interfaces: Vec<DeclaredInterface>,
    /// When the template was made, to the second (what `Last-Modified` says).
    built_at: SystemTime,
    /// The extended card's skill entries, when an extended card is declared.
    extended_skills: Option<Vec<AgentSkill>>,
    /// `WWW-Authenticate` challenges for an anonymous request of the extended card.
    challenges: Vec<HeaderValue>,
    /// The scope of each scoped skill, by skill id.
    scopes: BTreeMap<String, String>,
}

impl CardBuilder {
    /// The card of `agent` as served with `config`.
    pub(crate) fn from_config(agent: &Agent, config: &ServerConfig) -> Self {
        let extensions = config.served_a2a().map(|a2a| a2a.extensions.clone()).unwrap_or_default();
        let mut builder =
            Self::new(agent, declared_interfaces(config), config.tasks.is_some(), extensions, config.payments.as_ref());
        builder.declare_auth(&config.auth, config.served_a2a().is_some());
        // Push notifications are sent for tasks made through the official faces.
        if let Some(capabilities) = builder.template.capabilities.as_mut() {
            capabilities.push_notifications = config.served_push().is_some();
            capabilities.streaming &= config.streaming;
        }
        if !config.streaming {
            for entrypoint in builder.template.entrypoints.values_mut() {
                entrypoint.streaming = false;
            }
        }
        builder
    }

    /// Writes the configured schemes into the card (one requirement per scheme: any one
    /// suffices) and declares the extended card when one is configured and an A2A face serves it.
    ///
    /// With a 0.3 interface listed, the card is read by 0.3 and 1.0 clients alike, and both name
    /// the schemes `securitySchemes`: each scheme then carries both spellings side by side — the
    /// 1.0 oneof member (`httpAuthSecurityScheme`, …) and the 0.3 members (`type`, `scheme`,
    /// `in`, …) — each dialect's readers taking theirs and ignoring the other's; the 0.3
    /// requirements are `security`, next to 1.0's `securityRequirements`.
    fn declare_auth(&mut self, auth: &crate::auth::AuthConfig, a2a: bool) {
        let schemes = auth.security_schemes();
        if !schemes.is_empty() {
            let v03 = self.interfaces.iter().any(DeclaredInterface::is_v0);
            let requirements: Vec<SecurityRequirement> = schemes
                .iter()
                .map(|(name, _)| SecurityRequirement {
                    schemes: BTreeMap::from([((*name).to_owned(), StringList::default())]),
                })
                .collect();
            let rendered: Map<String, Value> = schemes
                .iter()
                .filter_map(|(name, scheme)| {
                    let mut value = serde_json::to_value(scheme).ok()?;
                    if v03 && let Value::Object(members) = &mut value {
                        members.extend(v03_card::security_scheme(scheme));
                    }
                    Some(((*name).to_owned(), value))
                })
                .collect();
            self.template.extra.insert("securitySchemes".into(), Value::Object(rendered));
            if let Ok(value) = serde_json::to_value(&requirements) {
                self.template.extra.insert("securityRequirements".into(), value);
            }
            if v03 {
                let security = requirements.iter().map(v03_card::security_requirement).collect();
                self.template.extra.insert("security".into(), Value::Array(security));
            }
            // A scoped skill requires its scope of any one scheme.
            for skill in &mut self.template.skills {
                let Some(scope) = self.scopes.get(&skill.id) else { continue };
                let requirements: Vec<SecurityRequirement> = schemes
                    .iter()
                    .map(|(name, _)| SecurityRequirement {
                        schemes: BTreeMap::from([((*name).to_owned(), StringList { list: vec![scope.clone()] })]),
                    })
                    .collect();
                if let Ok(value) = serde_json::to_value(&requirements) {
                    skill.extra.insert("securityRequirements".into(), value);
                }
                if v03 {
                    let security = requirements.iter().map(v03_card::security_requirement).collect();
                    skill.extra.insert("security".into(), Value::Array(security));
                }
            }
        }
        if a2a && let Some(skills) = &auth.extended_skills {
            if let Some(capabilities) = self.template.capabilities.as_mut() {
                capabilities.extra.insert("extendedAgentCard".into(), Value::Bool(true));
            }
            self.extended_skills = Some(skills.clone());
            self.challenges = auth.challenges(false);
            // The 0.3 member, present only when a 0.3 interface is listed.
            if let Some(supports) = self.template.supports_authenticated_extended_card.as_mut() {
                *supports = true;
            }
        }
    }

    /// The extended card for a caller of `GetExtendedAgentCard` (spec §4 items 9 and 12): not
    /// declared → `UnsupportedOperationError`; declared, anonymous caller → the unauthenticated
    /// error (with the challenges to answer with); otherwise the public card with the extended
    /// skill entries (one with a public skill's `id` replaces it). Declaring and configuring the
    /// extended card are one setting here, so `ExtendedAgentCardNotConfiguredError` cannot arise.
    pub(crate) fn extended(
        &self,
        principal: Option<&crate::auth::Principal>,
        base_url: &str,
    ) -> Result<AgentCard, (A2aError, Vec<HeaderValue>)> {
        let Some(skills) = &self.extended_skills else {
            return Err((
                A2aError::new(A2aErrorKind::UnsupportedOperation)
                    .with_message("this agent does not declare an extended agent card"),
                Vec::new(),
            ));
        };
        if principal.is_none() {
            return Err((
                A2aError::new(A2aErrorKind::Unauthenticated)
                    .with_message("the extended agent card is for authenticated callers"),
                self.challenges.clone(),
            ));
        }
        let mut card = self.build(base_url);
        for skill in skills {
            match card.skills.iter_mut().find(|public| public.id == skill.id) {
                Some(public) => {
                    // The entry replaces the public one's words, not its requirements: a scoped
                    // skill shows its scope on both cards.
                    let mut extended = skill.clone();
                    for member in ["securityRequirements", "security"] {
                        if let Some(requirements) = public.extra.get(member) {
                            extended.extra.entry(member).or_insert_with(|| requirements.clone());
                        }
                    }
                    *public = extended;
                }
                None => card.skills.push(skill.clone()),
            }
        }
        Ok(card)
    }

    /// The card of `agent` listing `interfaces`. `tasks` says whether tasks are served,
    /// `extensions` are declared as given, and `payments` describes how priced skills are paid.
    pub(crate) fn new(
        agent: &Agent,
        interfaces: Vec<DeclaredInterface>,
        tasks: bool,
        mut extensions: Vec<AgentExtension>,
        payments: Option<&PaymentsConfig>,
    ) -> Self {
        let lucid = interfaces.iter().any(|interface| interface.binding == LUCID_BINDING);
        let v0 = interfaces.iter().find(|interface| interface.is_v0());
        let skills = agent.skills();
        if let Some(extension) = skill_extension(agent) {
            extensions.push(extension);
        }
        let mut extra = agent.card_fields().clone();
        if let Some(v0) = v0 {
            // A v0.3 client that reads `url` assumes JSON-RPC unless told otherwise.
            extra.insert("preferredTransport".into(), Value::String(v0.binding.clone()));
        }
        if lucid && let Some(payments) = payments.filter(|_| skills.iter().any(|skill| skill.pricing().is_priced())) {
            extra.insert("payments".into(), Value::Array(vec![payments.rail.card_entry()]));
        }
        let template = AgentCard {
            protocol_version: v0.map(|v0| v0.protocol_version.clone()),
            name: agent.name().to_owned(),
            // A2A v1.0 requires a description; the name stands in for a missing one.
            description: Some(agent.description().unwrap_or(agent.name()).to_owned()),
            url: None,
            supported_interfaces: Vec::new(),
            version: Some(agent.version().to_owned()),
            capabilities: Some(AgentCapabilities {
                // The official faces always stream (SendStreamingMessage, SubscribeToTask); the
                // Lucid face streams the skills that have a stream handler.
                streaming: interfaces.iter().any(DeclaredInterface::is_official)
                    || (lucid && skills.iter().any(|skill| skill.is_streaming())),
                push_notifications: false,
                state_transition_history: v0.map(|_| tasks),
                extensions,
                extra: Map::new(),
            }),
            default_input_modes: vec![JSON.into()],
            default_output_modes: vec![JSON.into(), TEXT.into()],
            skills: skills
                .iter()
                .map(|skill| AgentSkill {
                    id: skill.key().to_owned(),
                    name: skill.name().unwrap_or(skill.key()).to_owned(),
                    // A2A v1.0 requires a description and tags on every skill.
                    description: Some(
                        skill.description().map_or_else(|| format!("The {} skill.", skill.key()), str::to_owned),
                    ),
                    input_modes: match skill.input_modes() {
                        [] => vec![JSON.into()],
                        modes => modes.to_vec(),
                    },
                    output_modes: match skill.output_modes() {
                        [] => vec![JSON.into(), TEXT.into()],
                        modes => modes.to_vec(),
                    },
                    tags: if skill.tags().is_empty() { vec![skill.key().to_owned()] } else { skill.tags().to_vec() },
                    extra: match skill.examples() {
                        [] => Map::new(),
                        examples => Map::from_iter([("examples".to_owned(), Value::from(examples.to_vec()))]),
                    },
                })
                .collect(),
            supports_authenticated_extended_card: v0.map(|_| false),
            entrypoints: if lucid { entrypoints(agent, payments) } else { BTreeMap::new() },
            extra,
        };
        let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Self {
            template,
            interfaces,
            built_at: UNIX_EPOCH + Duration::from_secs(since_epoch.as_secs()),
            extended_skills: None,
            challenges: Vec::new(),
            scopes: skills
                .iter()
                .filter_map(|skill| Some((skill.key().to_owned(), skill.scope()?.to_owned())))
                .collect(),
        }
    }

    /// The card as served from `base_url` (the public origin plus the base path, no trailing `/`).
    pub(crate) fn build(&self, base_url: &str) -> AgentCard {
        let mut card = self.template.clone();
        card.supported_interfaces = self
            .interfaces
            .iter()
            .map(|interface| AgentInterface {
                url: interface.url(base_url),
                protocol_binding: interface.binding.clone(),
                protocol_version: Some(interface.protocol_version.clone()),
                extra: Map::new(),
            })
            .collect();
        card.url = self.interfaces.iter().find(|interface| interface.is_v0()).map(|v0| v0.url(base_url));
        // 0.3 clients choose among `url` (with `preferredTransport`) and `additionalInterfaces`.
        let additional: Vec<Value> = self
            .interfaces
            .iter()
            .filter(|interface| interface.is_v0())
            .map(|v0| serde_json::json!({"url": v0.url(base_url), "transport": v0.binding}))
            .collect();
        if !additional.is_empty() {
            card.extra.insert("additionalInterfaces".into(), Value::Array(additional));
        }
        card
    }

    /// When the card last changed: when the builder was made.
    pub(crate) fn last_modified(&self) -> SystemTime {
        self.built_at
    }
}

/// Accord's skill extension: each skill's schemas and prices, keyed by skill id.
fn skill_extension(agent: &Agent) -> Option<AgentExtension> {
    if agent.skills().is_empty() {
        return None;
    }
    let skills: Map<String, Value> = agent
        .skills()
        .iter()
        .map(|skill| {
            let mut details = Map::new();
            details.insert("inputSchema".into(), skill.input_schema().clone());
            if let Some(output) = skill.output_schema() {
                details.insert("outputSchema".into(), output.clone());
            }
            if let Some(pricing) = pricing(skill) {
                details.insert("pricing".into(), Value::Object(pricing));
            }
            if let Some(scope) = skill.scope() {
                details.insert("scope".into(), Value::String(scope.to_owned()));
            }
            (skill.key().to_owned(), Value::Object(details))
        })
        .collect();
    let mut params = Map::new();
    params.insert("skills".into(), Value::Object(skills));
    Some(AgentExtension {
        uri: Some(SKILL_EXTENSION.into()),
        description: Some(
            "JSON Schemas of each skill's input and output, the prices of priced skills and the scopes of scoped skills"
                .into(),
        ),
        // Informational: nothing for a client to activate, so never required.
        required: None,
        params: Some(params),
    })
}

/// A skill's priced operations and their amounts, if any.
fn pricing(skill: &accord_engine::Skill) -> Option<Map<String, Value>> {
    let operations = priced_operations(skill);
    (!operations.is_empty()).then(|| {
        operations
            .iter()
            .map(|(operation, amount)| (operation.as_str().to_owned(), Value::String((*amount).to_owned())))
            .collect()
    })
}

/// The Lucid profile's entrypoint descriptors; a priced one carries its `pricing`, and the rail's
/// `payment_protocol` and `network` when payments are configured.
fn entrypoints(agent: &Agent, payments: Option<&PaymentsConfig>) -> BTreeMap<String, EntrypointDescriptor> {
    agent
        .skills()
        .iter()
        .map(|skill| {
            let mut extra = Map::new();
            if let Some(pricing) = pricing(skill) {
                extra.insert("pricing".into(), Value::Object(pricing));
                if let Some(payments) = payments {
                    extra.insert("payment_protocol".into(), payments.rail.protocol().into());
                    extra.insert("network".into(), payments.network.clone().into());
                }
            }
            let descriptor = EntrypointDescriptor {
                description: skill.description().map(str::to_owned),
                streaming: skill.is_streaming(),
                input_schema: Some(skill.input_schema().clone()),
                output_schema: skill.output_schema().cloned(),
                extra,
            };
            (skill.key().to_owned(), descriptor)
        })
        .collect()
}

/// The card as the card routes serve it for `base_url`: built, then signed when a JWS signer is
/// configured. The landing page shows this same document.
pub(crate) fn served_card(state: &crate::AppState, base_url: &str) -> Result<serde_json::Value, serde_json::Error> {
    let card = serde_json::to_value(state.card.build(base_url))?;
    Ok(match &state.card_signer {
        Some(signer) => signer.sign(base_url, card),
        None => card,
    })
}

/// An error of the card routes (and of `/openapi.json`): `{"error": {"code", "message"}}`, the
/// shape those routes have always answered with. It is the card routes' own, written here, so that
/// they depend on no protocol face (it happens to read like a Lucid error, which keeps their
/// answers unchanged).
pub(crate) fn error_response(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = serde_json::json!({ "error": { "code": code, "message": message.into() } });
    (status, axum::Json(body)).into_response()
}

pub(crate) async fn card(
    axum::extract::State(state): State,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Response {
    let base_url = base_url(&headers, &uri);
    let body = match served_card(&state, &base_url).and_then(|card| serde_json::to_vec(&card)) {
        Ok(body) => body,
        Err(error) => {
            tracing::error!(%error, "the card does not serialize");
            return error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal error");
        }
    };
    let etag = entity_tag(&body);
    let last_modified = state.card.last_modified();
    let cache_control = format!("public, max-age={}", state.config.card_max_age.as_secs());
    // RFC 9110 §13.1.3: `If-Modified-Since` counts only when `If-None-Match` is absent.
    let unchanged = if headers.contains_key(header::IF_NONE_MATCH) {
        if_none_match(&headers, &etag)
    } else {
        not_modified_since(&headers, last_modified)
    };
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let response_headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response_headers.insert(header::ETAG, value);
    }
    if let Ok(value) = HeaderValue::from_str(&httpdate::fmt_http_date(last_modified)) {
        response_headers.insert(header::LAST_MODIFIED, value);
    }
    if let Ok(value) = HeaderValue::from_str(&cache_control) {
        response_headers.insert(header::CACHE_CONTROL, value);
    }
    response_headers.insert(header::VARY, HeaderValue::from_static(VARY));
    response
}

/// A strong entity tag: the first 128 bits of the body's SHA-256.
pub(crate) fn entity_tag(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    format!("\"{}\"", hex::encode(&digest[..16]))
}

/// Whether `If-Modified-Since` is a valid date no earlier than `last_modified` (an invalid one is
/// ignored, as RFC 9110 asks).
fn not_modified_since(headers: &HeaderMap, last_modified: SystemTime) -> bool {
    headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| httpdate::parse_http_date(value.trim()).ok())
        .is_some_and(|since| last_modified <= since)
}

/// Whether `If-None-Match` matches (weak comparison, as RFC 9110 asks for this header).
pub(crate) fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers.get_all(header::IF_NONE_MATCH).iter().filter_map(|value| value.to_str().ok()).any(|value| {
        value.split(',').map(str::trim).any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == etag)
    })
}

#[cfg(test)]
mod tests {
    use accord_engine::{Completion, Outcome, Run, Skill};
    use serde_json::json;

    use super::*;

    fn agent() -> Agent {
        Agent::builder("t")
            .skill(
                Skill::builder("echo")
                    .input_schema(json!({"type": "object"}))
                    .output_schema(json!({"type": "object"}))
                    .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
            )
            .build()
            .expect("agent")
    }

    fn card(interfaces: Vec<DeclaredInterface>) -> Value {
        let card = CardBuilder::new(&agent(), interfaces, true, Vec::new(), None).build("https://a.example/x");
        serde_json::to_value(card).expect("json")
    }

    #[test]
    fn a_v0_3_interface_brings_the_v0_3_members() {
        let v1 = DeclaredInterface::new("/a2a/jsonrpc", PROTOCOL_BINDING_JSONRPC, "1.0");
        let v0 = DeclaredInterface::new("/a2a/v0.3/rest", PROTOCOL_BINDING_HTTP_JSON, "0.3");
        let without = card(vec![v1.clone()]);
        for member in ["url", "preferredTransport", "protocolVersion", "supportsAuthenticatedExtendedCard"] {
            assert!(without.get(member).is_none(), "{member}: {without}");
        }
        assert!(without["capabilities"].get("stateTransitionHistory").is_none());

        let with = card(vec![v1, v0]);
        assert_eq!(with["url"], "https://a.example/x/a2a/v0.3/rest");
        assert_eq!(with["preferredTransport"], "HTTP+JSON");
        assert_eq!(with["protocolVersion"], "0.3");
        assert_eq!(with["supportsAuthenticatedExtendedCard"], false);
        assert_eq!(with["capabilities"]["stateTransitionHistory"], true);
        assert_eq!(with["supportedInterfaces"][1]["protocolVersion"], "0.3");
    }

    #[test]
    fn lucid_members_follow_the_lucid_interface() {
        let lucid = card(vec![DeclaredInterface::new("", LUCID_BINDING, "1.0")]);
        assert_eq!(lucid["supportedInterfaces"][0]["url"], "https://a.example/x/");
        assert_eq!(lucid["entrypoints"]["echo"]["input_schema"], json!({"type": "object"}));
        assert_eq!(lucid["capabilities"]["streaming"], false, "no skill streams on the Lucid face");

        let official = card(vec![DeclaredInterface::new("/a2a/rest", PROTOCOL_BINDING_HTTP_JSON, "1.0")]);
        assert!(official.get("entrypoints").is_none(), "{official}");
        assert_eq!(official["capabilities"]["streaming"], true, "the official faces stream");
        let extension = &official["capabilities"]["extensions"][0];
        assert_eq!(extension["uri"], SKILL_EXTENSION);
        assert_eq!(
            extension["params"]["skills"]["echo"],
            json!({"inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}})
        );
    }

    #[test]
    fn if_modified_since_compares_to_the_second() {
        let built = UNIX_EPOCH + Duration::from_secs(784_111_777);
        let since = |value: &str| not_modified_since(&headers(&[("if-modified-since", value)]), built);
        assert!(since("Sun, 06 Nov 1994 08:49:37 GMT"));
        assert!(since("Sun, 06 Nov 1994 08:49:38 GMT"));
        assert!(!since("Sun, 06 Nov 1994 08:49:36 GMT"));
        assert!(!since("not a date"));
        assert!(!not_modified_since(&HeaderMap::new(), built));
    }

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
    fn a_grpc_port_is_listed_on_the_card_host() {
        let host = |base_url: &str| host_and_port(base_url).map(|(host, _)| host);
        assert_eq!(host("http://127.0.0.1:8787").as_deref(), Some("127.0.0.1"));
        assert_eq!(host("https://agent.example/base/path").as_deref(), Some("agent.example"));
        assert_eq!(host("http://[::1]:8787/x").as_deref(), Some("[::1]"));
        assert_eq!(host("http://[::1]").as_deref(), Some("[::1]"));
        let port = DeclaredInterface::grpc(&crate::GrpcAddress::Port(50051));
        assert_eq!(port.url("http://agent.example:8787/agents/echo"), "agent.example:50051");
        let fixed = DeclaredInterface::grpc(&crate::GrpcAddress::Fixed("grpc.example:443".into()));
        assert_eq!(fixed.url("http://agent.example:8787"), "grpc.example:443");
        let same = DeclaredInterface::grpc(&crate::GrpcAddress::SamePort);
        assert_eq!(same.url("http://127.0.0.1:8787/base"), "127.0.0.1:8787");
        assert_eq!(same.url("https://agent.example/base"), "agent.example:443");
        assert_eq!(same.url("http://[::1]:9000"), "[::1]:9000");
        assert_eq!(same.url("http://agent.example"), "agent.example:80");
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
