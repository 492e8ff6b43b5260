//! `[agent]`: the agent's name, description and card fields, its cancel grace and its default
//! skill — and the check that the default names a skill of the file.

use std::time::Duration;

use serde_json::{Map, Value as Json};
use toml::{Table, Value};

use super::reader::{Fields, Reader};
use super::unknown_skill_reason;

/// What `[agent]` says; a value that is wrong is reported and left out.
pub(super) struct AgentSection {
    /// `name`, which the file cannot do without unless it fronts one remote A2A agent.
    pub(super) name: Option<String>,
    /// `description`.
    pub(super) description: Option<String>,
    /// `version`.
    pub(super) version: Option<String>,
    /// The card's own fields: `provider`, `documentationUrl`, `iconUrl`.
    pub(super) card_fields: Map<String, Json>,
    /// `cancel_grace`.
    pub(super) cancel_grace: Option<Duration>,
    /// `default_skill`, as written.
    pub(super) default_skill: Option<String>,
}

impl Reader<'_> {
    /// Reads `[agent]`. `fronts`: the file fronts one remote A2A agent, whose card names the
    /// agent when the file does not.
    pub(super) fn agent(&mut self, agent: &Table, fronts: bool) -> AgentSection {
        let mut fields = Fields::new(agent, "agent");
        let name = self.string(&mut fields, "name");
        if name.is_none() && !agent.contains_key("name") && !fronts {
            self.error("agent.name", "missing");
        }
        if name.as_deref().is_some_and(|name| name.trim().is_empty()) {
            self.error("agent.name", "must not be empty");
        }
        let description = self.string(&mut fields, "description");
        let version = self.string(&mut fields, "version");
        let mut card_fields = Map::new();
        if let Some(provider) = self.table(&mut fields, "provider") {
            let mut provider_fields = Fields::new(provider, "agent.provider");
            let organization = self.string(&mut provider_fields, "organization");
            let url = self.string(&mut provider_fields, "url");
            for (key, value) in [("organization", &organization), ("url", &url)] {
                if value.is_none() && !provider.contains_key(key) {
                    self.error(format!("agent.provider.{key}"), "missing");
                }
            }
            if let Some(url) = &url {
                self.url(url, "agent.provider.url");
            }
            self.finish(provider_fields);
            if let (Some(organization), Some(url)) = (organization, url) {
                card_fields.insert("provider".into(), serde_json::json!({ "organization": organization, "url": url }));
            }
        }
        for (key, card) in [("documentation_url", "documentationUrl"), ("icon_url", "iconUrl")] {
            if let Some(url) = self.string(&mut fields, key)
                && self.url(&url, &fields.key(key)).is_some()
            {
                card_fields.insert(card.into(), Json::String(url));
            }
        }
        let cancel_grace = self.duration(&mut fields, "cancel_grace");
        let default_skill = self.string(&mut fields, "default_skill");
        if default_skill.as_deref().is_some_and(|id| id.trim().is_empty()) {
            self.error("agent.default_skill", "must not be empty");
        }
        self.finish(fields);
        AgentSection { name, description, version, card_fields, cancel_grace, default_skill }
    }

    /// Reports a default skill (`wanted`, not empty) that is not a skill of the file.
    pub(super) fn default_skill(&mut self, wanted: &str, skills: Option<&Value>, remote: bool) {
        // The default must be a skill of the file. The ids are taken as written, so that a skill
        // with another problem is not reported twice. A tool's key is known only when the
        // servers are reached: with `[[mcp]]` or `[[a2a]]`, `build` checks what is not a `[[skill]]`.
        let ids: Vec<&str> = match skills {
            Some(Value::Array(items)) => items.iter().filter_map(|item| item.as_table()?.get("id")?.as_str()).collect(),
            _ => Vec::new(),
        };
        if !ids.contains(&wanted) && !remote {
            self.error("agent.default_skill", unknown_skill_reason(wanted, &ids, "file"));
        }
    }
}
