//! `[[mcp]]`: the MCP servers whose tools become skills.

use toml::{Table, Value};

use super::McpSpec;
use super::reader::{Fields, Reader, kind};
use super::skill::Terms;
use crate::command::CommandConfig;
use crate::http::HttpConfig;

impl Reader<'_> {
    /// Reads the `[[mcp]]` array, when there is one.
    pub(super) fn mcp_servers(&mut self, mcp: Option<&Value>) -> Vec<McpSpec> {
        let mut mcp_specs = Vec::new();
        match mcp {
            None => {}
            Some(Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    let path = format!("mcp[{index}]");
                    match item {
                        Value::Table(table) => mcp_specs.extend(self.mcp(table, &path)),
                        other => self.error(path, format!("expected a table ([[mcp]]), found {}", kind(other))),
                    }
                }
            }
            Some(other) => self.error("mcp", format!("expected an array of tables ([[mcp]]), found {}", kind(other))),
        }
        mcp_specs
    }

    fn mcp(&mut self, table: &Table, path: &str) -> Option<McpSpec> {
        let before = self.errors.len();
        let mut fields = Fields::new(table, path);
        let http = fields.get("http");
        let command = fields.get("command");
        let transport = match (http, command) {
            (Some(http), None) => self.http(http, &fields.key("http")).map(HttpConfig::into_mcp),
            (None, Some(command)) => self.command(command, &fields.key("command")).map(CommandConfig::into_mcp),
            (None, None) => {
                self.error(
                    path,
                    "no server: give `command = [...]` (stdio) or `http = { url = ... }` (streamable HTTP)",
                );
                None
            }
            (Some(_), Some(_)) => {
                self.error(path, "two servers: give either `http` or `command`, not both");
                None
            }
        };
        let prefix = self.string(&mut fields, "prefix").unwrap_or_default();
        if !is_key_prefix(&prefix) {
            self.error(
                fields.key("prefix"),
                "must be characters of [A-Za-z0-9._-], starting with a letter or digit, and shorter than 128 (each tool's skill key is the prefix followed by the tool's name)",
            );
        }
        let tools = match fields.get("tools") {
            Some(value) => self.strings(value, &fields.key("tools")),
            None => None,
        };
        let name = self.string(&mut fields, "name").unwrap_or_else(|| path.to_owned());
        if name.trim().is_empty() {
            self.error(fields.key("name"), "must not be empty");
        }
        let timeout = self.duration(&mut fields, "timeout").unwrap_or(crate::mcp::DEFAULT_MCP_TIMEOUT);
        let startup_timeout =
            self.duration(&mut fields, "startup_timeout").unwrap_or(crate::mcp::DEFAULT_MCP_STARTUP_TIMEOUT);
        let Terms { pricing, scope, safe_to_repeat } = self.terms(&mut fields);
        self.finish(fields);
        if self.errors.len() > before {
            return None;
        }
        Some(McpSpec {
            transport: transport?,
            name,
            prefix,
            tools,
            timeout,
            startup_timeout,
            pricing: pricing?,
            scope,
            safe_to_repeat,
        })
    }
}

/// Whether `prefix` can start a skill key: the key rule (1 to 128 characters of
/// `[A-Za-z0-9._-]` starting with a letter or digit) leaves room for a tool's name after it.
pub(super) fn is_key_prefix(prefix: &str) -> bool {
    prefix.len() < 128
        && prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && prefix.chars().next().is_none_or(|c| c.is_ascii_alphanumeric())
}
