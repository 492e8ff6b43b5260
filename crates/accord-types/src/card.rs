//! The agent card: the document an agent publishes at `/.well-known/agent-card.json`.
//!
//! The shape is the union of what the Lucid profile emits, what the official A2A card carries and
//! the v0.3 members older peers still read. Decoding follows the Lucid rules: only `name` is
//! required, a known field of the wrong type reads as absent, and unknown fields are kept in
//! [`AgentCard::extra`] and written back out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::a2a::AgentExtension;
use crate::lenient;

/// The protocol version this card format speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The URI of Accord's skill extension, declared in `capabilities.extensions`. Its
/// `params.skills` maps each skill id to what the A2A `AgentSkill` has no member for:
/// `inputSchema` and `outputSchema` (JSON Schemas) and `pricing` (`{"invoke"|"stream"|"task":
/// amount}`, priced operations only).
pub const SKILL_EXTENSION: &str = "urn:accord:ext:skills:v1";

/// The binding name under which an Accord card lists the Lucid HTTP profile: a URI (A2A §5.8)
/// that contains `HTTP`, so Lucid clients (which take the first binding containing `HTTP`) find it,
/// while official A2A clients, which pick `JSONRPC` or `HTTP+JSON` by exact name, skip it.
pub const LUCID_BINDING: &str = "urn:accord:binding:lucid-http";

/// An agent card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// The protocol version of the card: a v0.3 member, written only when a v0.3 interface is
    /// listed.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::option")]
    pub protocol_version: Option<String>,
    /// The agent's name; the one required field.
    pub name: String,
    /// What the agent does.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::option")]
    pub description: Option<String>,
    /// The preferred endpoint: a v0.3 member (older Accord cards put the Lucid base URL here).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::option")]
    pub url: Option<String>,
    /// The interfaces the agent serves, in order of preference.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "lenient::or_default")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// The agent's own version.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::option")]
    pub version: Option<String>,
    /// What the agent can do beyond plain requests.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::option")]
    pub capabilities: Option<AgentCapabilities>,
    /// Media types the agent accepts by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "lenient::or_default")]
    pub default_input_modes: Vec<String>,
    /// Media types the agent produces by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "lenient::or_default")]
    pub default_output_modes: Vec<String>,
    /// The agent's skills.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub skills: Vec<AgentSkill>,
    /// Whether an authenticated caller can fetch a richer card: a v0.3 member (v1.0 says
    /// `capabilities.extendedAgentCard`).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::option")]
    pub supports_authenticated_extended_card: Option<bool>,
    /// The Lucid profile's per-skill entrypoint descriptors, keyed by skill key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "lenient::or_default")]
    pub entrypoints: BTreeMap<String, EntrypointDescriptor>,
    /// Every field this type does not name, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AgentCard {
    /// Finds a skill by its id.
    pub fn skill(&self, id: &str) -> Option<&AgentSkill> {
        self.skills.iter().find(|skill| skill.id == id)
    }

    /// A protocol extension declared in `capabilities.extensions`, by URI.
    pub fn extension(&self, uri: &str) -> Option<&AgentExtension> {
        self.capabilities.as_ref()?.extensions.iter().find(|extension| extension.uri.as_deref() == Some(uri))
    }

    /// What Accord's skill extension ([`SKILL_EXTENSION`]) says about a skill.
    pub fn skill_details(&self, id: &str) -> Option<&Map<String, Value>> {
        self.extension(SKILL_EXTENSION)?.params.as_ref()?.get("skills")?.get(id)?.as_object()
    }

    /// The JSON Schema of a skill's input: from [`SKILL_EXTENSION`], else the Lucid entrypoint,
    /// else the `x_input_schema` member older Accord cards put on the skill.
    pub fn skill_input_schema(&self, id: &str) -> Option<&Value> {
        self.skill_member(id, "inputSchema", |entry| entry.input_schema.as_ref(), "x_input_schema")
    }

    /// The JSON Schema of a skill's output, looked up as [`AgentCard::skill_input_schema`] does.
    pub fn skill_output_schema(&self, id: &str) -> Option<&Value> {
        self.skill_member(id, "outputSchema", |entry| entry.output_schema.as_ref(), "x_output_schema")
    }

    /// A skill's prices (`{"invoke": "1000", …}`): from [`SKILL_EXTENSION`], else the Lucid
    /// entrypoint's `pricing`.
    pub fn skill_pricing(&self, id: &str) -> Option<&Value> {
        self.skill_details(id)
            .and_then(|details| details.get("pricing"))
            .or_else(|| self.entrypoints.get(id)?.extra.get("pricing"))
    }

    fn skill_member(
        &self,
        id: &str,
        name: &str,
        from_entrypoint: impl Fn(&EntrypointDescriptor) -> Option<&Value>,
        legacy: &str,
    ) -> Option<&Value> {
        self.skill_details(id)
            .and_then(|details| details.get(name))
            .or_else(|| self.entrypoints.get(id).and_then(from_entrypoint))
            .or_else(|| self.skill(id)?.extra.get(legacy))
    }

    /// The base URL a Lucid-profile client talks to: the first interface whose binding contains
    /// `HTTP` (compared in upper case), else [`AgentCard::url`].
    pub fn http_base_url(&self) -> Option<&str> {
        self.supported_interfaces
            .iter()
            .find(|interface| interface.protocol_binding.to_ascii_uppercase().contains("HTTP"))
            .map(|interface| interface.url.as_str())
            .or(self.url.as_deref())
    }
}

/// One interface of an agent: a URL and the protocol binding spoken there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// Where the interface is served.
    pub url: String,
    /// The binding: `HTTP+JSON`, `JSONRPC`, or a URI for a custom binding.
    pub protocol_binding: String,
    /// The protocol version spoken there, when the card says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Every field this type does not name, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Optional capabilities of an agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Whether any skill can stream.
    #[serde(default)]
    pub streaming: bool,
    /// Whether the agent can push task updates to a webhook.
    #[serde(default)]
    pub push_notifications: bool,
    /// Whether the agent keeps a task's state history: a v0.3 member, gone from v1.0.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::option")]
    pub state_transition_history: Option<bool>,
    /// The protocol extensions the agent supports.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "lenient::or_default")]
    pub extensions: Vec<AgentExtension>,
    /// Every field this type does not name, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A skill as listed on the card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// The skill's key.
    pub id: String,
    /// A display name (Accord uses the key).
    #[serde(default)]
    pub name: String,
    /// What the skill does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Media types the skill accepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    /// Media types the skill produces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    /// Free-form tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Every field this type does not name, kept as received. Schemas and prices are not skill
    /// members: see [`SKILL_EXTENSION`] and [`AgentCard::skill_input_schema`].
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The Lucid profile's descriptor of one entrypoint (`card.entrypoints[key]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntrypointDescriptor {
    /// What the entrypoint does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `/entrypoints/:key/stream` is served.
    #[serde(default)]
    pub streaming: bool,
    /// The JSON Schema of the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// The JSON Schema of the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Every field this type does not name (pricing, payment protocol, …), kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_name_is_required_and_mistyped_fields_read_as_absent() {
        let card: AgentCard = serde_json::from_value(json!({
            "name": "x", "url": 7, "skills": "nope", "capabilities": [], "iconUrl": "https://i"
        }))
        .expect("card");
        assert_eq!(card.name, "x");
        assert_eq!(card.url, None);
        assert!(card.skills.is_empty());
        assert_eq!(card.capabilities, None);
        assert_eq!(card.extra.get("iconUrl"), Some(&json!("https://i")));
        assert!(serde_json::from_value::<AgentCard>(json!({"url": "u"})).is_err());
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let input = json!({"name": "x", "registrations": [{"a": 1}],
            "supportedInterfaces": [{"url": "u", "protocolBinding": "HTTP+JSON", "tenant": "t"}]});
        let card: AgentCard = serde_json::from_value(input.clone()).expect("card");
        assert_eq!(serde_json::to_value(&card).expect("json"), {
            let mut expected = input;
            expected["skills"] = json!([]);
            expected
        });
    }

    #[test]
    fn skill_schemas_come_from_the_extension_then_the_entrypoint_then_the_skill() {
        let card: AgentCard = serde_json::from_value(json!({
            "name": "x",
            "capabilities": {"extensions": [
                {"uri": "urn:other"},
                {"uri": SKILL_EXTENSION, "params": {"skills": {
                    "a": {"inputSchema": {"title": "ext"}, "pricing": {"invoke": "5"}}
                }}}
            ]},
            "skills": [
                {"id": "a", "name": "a", "x_input_schema": {"title": "old"}},
                {"id": "b", "name": "b", "x_input_schema": {"title": "old"}, "x_output_schema": {"title": "old out"}},
                {"id": "c", "name": "c", "x_input_schema": {"title": "old"}}
            ],
            "entrypoints": {
                "a": {"input_schema": {"title": "lucid"}, "output_schema": {"title": "lucid out"}},
                "c": {"input_schema": {"title": "lucid"}, "pricing": {"task": "7"}}
            }
        }))
        .expect("card");
        assert_eq!(card.extension("urn:other").and_then(|e| e.uri.as_deref()), Some("urn:other"));
        assert_eq!(card.skill_input_schema("a"), Some(&json!({"title": "ext"})));
        assert_eq!(card.skill_output_schema("a"), Some(&json!({"title": "lucid out"})));
        assert_eq!(card.skill_pricing("a"), Some(&json!({"invoke": "5"})));
        assert_eq!(card.skill_input_schema("b"), Some(&json!({"title": "old"})));
        assert_eq!(card.skill_output_schema("b"), Some(&json!({"title": "old out"})));
        assert_eq!(card.skill_pricing("b"), None);
        assert_eq!(card.skill_input_schema("c"), Some(&json!({"title": "lucid"})));
        assert_eq!(card.skill_pricing("c"), Some(&json!({"task": "7"})));
        assert_eq!(card.skill_input_schema("nope"), None);
    }

    #[test]
    fn v0_3_members_are_written_only_when_set() {
        let card: AgentCard =
            serde_json::from_value(json!({"name": "x", "capabilities": {"streaming": true}})).expect("card");
        let written = serde_json::to_value(&card).expect("json");
        assert_eq!(written["capabilities"], json!({"streaming": true, "pushNotifications": false}));
        assert!(written.get("url").is_none() && written.get("protocolVersion").is_none());
    }

    #[test]
    fn http_base_url_prefers_the_first_http_interface() {
        let card: AgentCard = serde_json::from_value(json!({
            "name": "x", "url": "https://fallback/",
            "supportedInterfaces": [
                {"url": "https://rpc/", "protocolBinding": "JSONRPC"},
                {"url": "https://rest/", "protocolBinding": "http+json"}
            ]
        }))
        .expect("card");
        assert_eq!(card.http_base_url(), Some("https://rest/"));
        let bare: AgentCard = serde_json::from_value(json!({"name": "x", "url": "https://fallback/"})).expect("card");
        assert_eq!(bare.http_base_url(), Some("https://fallback/"));
    }
}
