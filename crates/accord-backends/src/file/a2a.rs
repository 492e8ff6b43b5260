//! `[[a2a]]`: the remote A2A agents whose skills become skills.

use reqwest::header::HeaderName;
use toml::{Table, Value};

use super::A2aSpec;
use super::mcp::is_key_prefix;
use super::reader::{Fields, Reader, kind};
use super::skill::Terms;
use crate::secret::Secret;

/// The bindings `binding` may name.
const BINDINGS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

impl Reader<'_> {
    /// Reads the `[[a2a]]` array, when there is one.
    pub(super) fn a2a_agents(&mut self, a2a: Option<&Value>) -> Vec<A2aSpec> {
        let mut specs = Vec::new();
        match a2a {
            None => {}
            Some(Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    let path = format!("a2a[{index}]");
                    match item {
                        Value::Table(table) => specs.extend(self.a2a(table, &path)),
                        other => self.error(path, format!("expected a table ([[a2a]]), found {}", kind(other))),
                    }
                }
            }
            Some(other) => self.error("a2a", format!("expected an array of tables ([[a2a]]), found {}", kind(other))),
        }
        specs
    }

    fn a2a(&mut self, table: &Table, path: &str) -> Option<A2aSpec> {
        let before = self.errors.len();
        let mut fields = Fields::new(table, path);
        let url = match self.string(&mut fields, "url") {
            Some(text) => self.url(&text, &fields.key("url")).map(|url| url.to_string()),
            None => {
                if !table.contains_key("url") {
                    self.error(path, "no agent: give `url` (the remote agent's base URL or its card's URL)");
                }
                None
            }
        };
        let mut headers = Vec::new();
        if let Some(table) = self.table(&mut fields, "headers") {
            for (name, value) in table {
                let key = format!("{}.{name}", fields.key("headers"));
                let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
                    self.error(key, "not a valid header name");
                    continue;
                };
                if header.as_str() == "a2a-version" {
                    self.error(key, "this header is set by Accord");
                    continue;
                }
                match value {
                    // The value is not repeated: it may be an expanded secret.
                    Value::String(text) if reqwest::header::HeaderValue::from_str(text).is_ok() => {
                        headers.push((header, Secret::new(text.clone())));
                    }
                    Value::String(_) => self.error(key, "not a valid header value (control characters?)"),
                    other => self.error(key, format!("expected a string, found {}", kind(other))),
                }
            }
        }
        let prefix = self.string(&mut fields, "prefix").unwrap_or_default();
        if !is_key_prefix(&prefix) {
            self.error(
                fields.key("prefix"),
                "must be characters of [A-Za-z0-9._-], starting with a letter or digit, and shorter than 128 (each remote skill's key is the prefix followed by the skill's id)",
            );
        }
        let skills = match fields.get("skills") {
            Some(value) => self.strings(value, &fields.key("skills")),
            None => None,
        };
        let bindings = match fields.get("binding") {
            None => None,
            Some(Value::String(binding)) => Some(vec![binding.clone()]),
            Some(value) => self.strings(value, &fields.key("binding")),
        };
        if let Some(bindings) = &bindings {
            if bindings.is_empty() {
                self.error(fields.key("binding"), "must name at least one binding: JSONRPC, HTTP+JSON or GRPC");
            }
            for binding in bindings.iter().filter(|binding| !BINDINGS.contains(&binding.as_str())) {
                self.error(
                    fields.key("binding"),
                    format!("{binding:?} is not a binding Accord speaks (JSONRPC, HTTP+JSON or GRPC)"),
                );
            }
        }
        let name = self.string(&mut fields, "name").unwrap_or_else(|| path.to_owned());
        if name.trim().is_empty() {
            self.error(fields.key("name"), "must not be empty");
        }
        let timeout = self.duration(&mut fields, "timeout").unwrap_or(crate::a2a::DEFAULT_A2A_TIMEOUT);
        let Terms { pricing, scope, safe_to_repeat } = self.terms(&mut fields);
        self.finish(fields);
        if self.errors.len() > before {
            return None;
        }
        Some(A2aSpec {
            url: url?,
            headers,
            name,
            prefix,
            skills,
            bindings,
            timeout,
            pricing: pricing?,
            scope,
            safe_to_repeat: safe_to_repeat.unwrap_or(false),
        })
    }
}
