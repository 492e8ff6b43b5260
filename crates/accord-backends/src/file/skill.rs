//! `[[skill]]`: a skill — its id, description, tags, schemas, price, scope — and its backend.

use std::collections::HashSet;

use accord_engine::{Agent, BuildError, Completion, Outcome, Pricing, Run, Skill, SkillOperation};
use serde_json::Value as Json;
use toml::{Table, Value};

use super::reader::{Fields, Reader, kind, to_json};
use super::{Backend, SkillSpec, read_text};

/// What a `[[skill]]` and an `[[mcp]]` server (for each of its tools) both say of their runs:
/// their price, the scope a caller needs, and whether a run may be repeated.
pub(super) struct Terms {
    /// `price` (free when not given); `None` when it is wrong.
    pub(super) pricing: Option<Pricing>,
    /// `scope`.
    pub(super) scope: Option<String>,
    /// `safe_to_repeat`.
    pub(super) safe_to_repeat: Option<bool>,
}

impl Reader<'_> {
    /// Reads `price`, `scope` and `safe_to_repeat` of `fields`, in that order.
    pub(super) fn terms(&mut self, fields: &mut Fields<'_>) -> Terms {
        let pricing = match fields.get("price") {
            Some(value) => self.price(value, &fields.key("price")),
            None => Some(Pricing::default()),
        };
        let scope = self.string(fields, "scope");
        if scope.as_deref().is_some_and(|scope| scope.trim().is_empty()) {
            self.error(fields.key("scope"), "must not be empty");
        }
        let safe_to_repeat = self.boolean(fields, "safe_to_repeat");
        Terms { pricing, scope, safe_to_repeat }
    }

    /// Reads the `[[skill]]` array; with no `[[skill]]` at all, the file needs an `[[mcp]]`
    /// server or an `[[a2a]]` agent (`remote`: the `mcp` and `a2a` values, a non-empty array).
    pub(super) fn skills(&mut self, skills: Option<&Value>, remote: &[&Value]) -> Vec<SkillSpec> {
        let mut specs = Vec::new();
        // `[[mcp]]` or `[[a2a]]` entries that are all wrong are reported as such, not as "no skill".
        let has_remote = remote.iter().any(|value| matches!(value, Value::Array(items) if !items.is_empty()));
        match skills {
            None if has_remote => {}
            None => self.error("skill", "missing: the file needs at least one [[skill]], [[mcp]] or [[a2a]]"),
            Some(Value::Array(items)) => {
                let mut seen = HashSet::new();
                for (index, item) in items.iter().enumerate() {
                    let path = format!("skill[{index}]");
                    let Value::Table(table) = item else {
                        self.error(path, format!("expected a table ([[skill]]), found {}", kind(item)));
                        continue;
                    };
                    // A repeated id is a problem whatever else is wrong with either skill.
                    let repeated = match table.get("id") {
                        Some(Value::String(id)) if !seen.insert(id.clone()) => {
                            self.error(format!("{path}.id"), format!("skill id {id:?} is used twice"));
                            true
                        }
                        _ => false,
                    };
                    if let Some(spec) = self.skill(table, &path).filter(|_| !repeated) {
                        specs.push(spec);
                    }
                }
            }
            Some(other) => {
                self.error("skill", format!("expected an array of tables ([[skill]]), found {}", kind(other)))
            }
        }
        specs
    }

    fn skill(&mut self, table: &Table, path: &str) -> Option<SkillSpec> {
        let before = self.errors.len();
        let mut fields = Fields::new(table, path);
        let id = self.string(&mut fields, "id");
        if id.is_none() && !table.contains_key("id") {
            self.error(fields.key("id"), "missing");
        }
        let description = self.string(&mut fields, "description");
        let tags = match fields.get("tags") {
            Some(value) => self.strings(value, &fields.key("tags")).unwrap_or_default(),
            None => Vec::new(),
        };
        let input_schema = self.schema(&mut fields, "input_schema", "input_schema_file");
        let output_schema = self.schema(&mut fields, "output_schema", "output_schema_file");
        let Terms { pricing, scope, safe_to_repeat } = self.terms(&mut fields);
        let http = fields.get("http");
        let command = fields.get("command");
        let backend = match (http, command) {
            (Some(http), None) => {
                let schema = input_schema.as_ref().and_then(Option::as_ref);
                self.skill_http(http, &fields.key("http"), schema).map(Backend::Http)
            }
            (None, Some(command)) => self.command(command, &fields.key("command")).map(Backend::Command),
            (None, None) => {
                self.error(path, "no backend: give `http = { url = ... }` or `command = [...]`");
                None
            }
            (Some(_), Some(_)) => {
                self.error(path, "two backends: give either `http` or `command`, not both");
                None
            }
        };
        self.finish(fields);

        // The engine's own rules for keys and prices, applied here so that they are reported
        // with the rest rather than when the agent is built.
        if let (Some(id), Some(pricing)) = (&id, &pricing) {
            let probe = Skill::builder(id.clone())
                .pricing(pricing.clone())
                .handler(|_run: Run| async { Ok(Outcome::Completed(Completion::default())) });
            match Agent::builder("probe").skill(probe).build() {
                Err(BuildError::InvalidSkillKey { .. }) => self.error(
                    format!("{path}.id"),
                    "must be 1 to 128 characters of [A-Za-z0-9._-], starting with a letter or digit",
                ),
                Err(BuildError::InvalidPrice { reason, .. }) => self.error(format!("{path}.price"), reason),
                Err(other) => self.error(path, other.to_string()),
                Ok(_) => {}
            }
        }
        if self.errors.len() > before {
            return None;
        }
        Some(SkillSpec {
            id: id?,
            description,
            tags,
            input_schema: input_schema?.unwrap_or_else(|| serde_json::json!({"type": "object"})),
            output_schema: output_schema?,
            pricing: pricing?,
            scope,
            safe_to_repeat: safe_to_repeat.unwrap_or(false),
            backend: backend?,
        })
    }

    /// An inline schema (`key`) or a schema file (`file_key`): `Some(None)` when neither is
    /// given, `None` when there is a problem.
    fn schema(&mut self, fields: &mut Fields<'_>, key: &'static str, file_key: &'static str) -> Option<Option<Json>> {
        let inline = fields.get(key);
        let from_file = fields.get(file_key);
        let (schema, path) = match (inline, from_file) {
            (None, None) => return Some(None),
            (Some(_), Some(_)) => {
                self.error(fields.key(key), format!("give `{key}` or `{file_key}`, not both"));
                return None;
            }
            (Some(Value::Table(table)), None) => (to_json(&Value::Table(table.clone())), fields.key(key)),
            (Some(Value::Boolean(value)), None) => (Ok(Json::Bool(*value)), fields.key(key)),
            (Some(other), None) => {
                self.error(fields.key(key), format!("expected a table (an inline JSON Schema), found {}", kind(other)));
                return None;
            }
            (None, Some(Value::String(file))) => {
                let path = self.base_dir.join(file);
                let schema = read_text(&path).and_then(|text| {
                    serde_json::from_str::<Json>(&text)
                        .map_err(|error| format!("{} is not JSON: {error}", path.display()))
                });
                (schema, fields.key(file_key))
            }
            (None, Some(other)) => {
                self.error(fields.key(file_key), format!("expected a path (a string), found {}", kind(other)));
                return None;
            }
        };
        let schema = match schema {
            Ok(schema) => schema,
            Err(reason) => {
                self.error(path, reason);
                return None;
            }
        };
        if let Err(error) = jsonschema::validator_for(&schema) {
            self.error(path, format!("not a valid JSON Schema: {error}"));
            return None;
        }
        Some(Some(schema))
    }

    fn price(&mut self, value: &Value, path: &str) -> Option<Pricing> {
        match value {
            Value::String(amount) => Some(Pricing {
                invoke: Some(amount.clone()),
                stream: Some(amount.clone()),
                task: Some(amount.clone()),
                free: Vec::new(),
            }),
            Value::Table(table) => {
                let before = self.errors.len();
                let mut fields = Fields::new(table, path);
                let invoke = self.string(&mut fields, "invoke");
                let stream = self.string(&mut fields, "stream");
                let task = self.string(&mut fields, "task");
                let mut free = Vec::new();
                if let Some(value) = fields.get("free") {
                    let key = fields.key("free");
                    for (index, name) in self.strings(value, &key).unwrap_or_default().into_iter().enumerate() {
                        match SkillOperation::ALL.into_iter().find(|operation| operation.as_str() == name) {
                            Some(operation) => free.push(operation),
                            None => self.error(format!("{key}[{index}]"), "expected `invoke`, `stream` or `task`"),
                        }
                    }
                }
                self.finish(fields);
                (self.errors.len() == before).then_some(Pricing { invoke, stream, task, free })
            }
            other => {
                self.error(
                    path,
                    format!(
                        "expected an amount (a string such as \"1000\") or a table of amounts, found {}",
                        kind(other)
                    ),
                );
                None
            }
        }
    }
}
