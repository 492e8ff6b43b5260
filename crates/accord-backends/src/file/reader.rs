//! The driver of the reading: the TOML text parsed, `${NAME}` expanded, the top-level tables
//! taken in turn (each section is read by its own file beside this one), and the values every
//! section reads — strings, booleans, tables, durations, URLs — checked with one message each.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value as Json;
use toml::{Table, Value};
use url::Url;

use super::{AgentFile, FileError};

/// `base.key`, or `key` at the top.
pub(super) fn join(base: &str, key: &str) -> String {
    if base.is_empty() { key.to_owned() } else { format!("{base}.{key}") }
}

/// `a table`, `a string`, … for messages.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

/// A table being read: the keys taken are remembered, so the ones left over are unknown.
pub(super) struct Fields<'t> {
    table: &'t Table,
    path: String,
    known: Vec<&'static str>,
}

impl<'t> Fields<'t> {
    pub(super) fn new(table: &'t Table, path: impl Into<String>) -> Self {
        Self { table, path: path.into(), known: Vec::new() }
    }

    pub(super) fn key(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub(super) fn get(&mut self, key: &'static str) -> Option<&'t Value> {
        self.known.push(key);
        self.table.get(key)
    }
}

/// Reads one agent file, gathering every problem it finds.
pub(super) struct Reader<'e> {
    pub(super) errors: Vec<FileError>,
    /// Keys whose `${NAME}` could not be expanded: already reported, so what their unexpanded
    /// value would make of them is not.
    pub(super) unexpanded: HashSet<String>,
    pub(super) env: &'e dyn Fn(&str) -> Option<String>,
    pub(super) base_dir: PathBuf,
}

impl Reader<'_> {
    pub(super) fn error(&mut self, key: impl Into<String>, reason: impl Into<String>) {
        let key = key.into();
        if !self.unexpanded.contains(&key) {
            self.errors.push(FileError { key, reason: reason.into() });
        }
    }

    /// A problem with a `${NAME}` reference at `key`.
    fn expansion_error(&mut self, key: &str, reason: impl Into<String>) {
        self.errors.push(FileError { key: key.to_owned(), reason: reason.into() });
        self.unexpanded.insert(key.to_owned());
    }

    /// Reports the keys of `fields` that were not asked for.
    pub(super) fn finish(&mut self, fields: Fields<'_>) {
        let mut unknown: Vec<&String> =
            fields.table.keys().filter(|key| !fields.known.contains(&key.as_str())).collect();
        unknown.sort();
        for key in unknown {
            let known = fields.known.join(", ");
            self.error(fields.key(key), format!("unknown key (known here: {known})"));
        }
    }

    // ---- `${NAME}` ---------------------------------------------------------------------------

    /// Expands `${NAME}` in every string of `value`.
    fn expand_value(&mut self, value: &mut Value, path: &str) {
        match value {
            Value::String(text) => {
                if let Some(expanded) = self.expand(text, path) {
                    *text = expanded;
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter_mut().enumerate() {
                    self.expand_value(item, &format!("{path}[{index}]"));
                }
            }
            Value::Table(table) => self.expand_table(table, path),
            _ => {}
        }
    }

    pub(super) fn expand_table(&mut self, table: &mut Table, path: &str) {
        for (key, value) in table.iter_mut() {
            self.expand_value(value, &join(path, key));
        }
    }

    /// `text` with each `${NAME}` replaced by the variable's value and each `$${` by `${`;
    /// `None` (and an error per problem) when a variable is unset or a reference malformed.
    fn expand(&mut self, text: &str, path: &str) -> Option<String> {
        if !text.contains("${") {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        let mut ok = true;
        while let Some(at) = rest.find("${") {
            if rest[..at].ends_with('$') {
                // `$${` is a literal `${`.
                out.push_str(&rest[..at - 1]);
                out.push_str("${");
                rest = &rest[at + 2..];
                continue;
            }
            out.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            let Some(end) = after.find('}') else {
                self.expansion_error(path, "`${` without a closing `}` (write `$${` for a literal `${`)");
                return None;
            };
            let name = &after[..end];
            let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                self.expansion_error(
                    path,
                    format!("`${{{name}}}` is not a variable reference (names are [A-Za-z_][A-Za-z0-9_]*)"),
                );
                ok = false;
            } else {
                match (self.env)(name) {
                    Some(value) => out.push_str(&value),
                    None => {
                        self.expansion_error(path, format!("environment variable {name} is not set"));
                        ok = false;
                    }
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        ok.then_some(out)
    }

    // ---- typed values ----------------------------------------------------------------------

    pub(super) fn string(&mut self, fields: &mut Fields<'_>, key: &'static str) -> Option<String> {
        let value = fields.get(key)?;
        match value {
            Value::String(text) => Some(text.clone()),
            other => {
                self.error(fields.key(key), format!("expected a string, found {}", kind(other)));
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, fields: &mut Fields<'_>, key: &'static str) -> Option<bool> {
        let value = fields.get(key)?;
        match value {
            Value::Boolean(flag) => Some(*flag),
            other => {
                self.error(fields.key(key), format!("expected true or false, found {}", kind(other)));
                None
            }
        }
    }

    pub(super) fn table<'t>(&mut self, fields: &mut Fields<'t>, key: &'static str) -> Option<&'t Table> {
        let value = fields.get(key)?;
        match value {
            Value::Table(table) => Some(table),
            other => {
                self.error(fields.key(key), format!("expected a table, found {}", kind(other)));
                None
            }
        }
    }

    pub(super) fn strings(&mut self, value: &Value, path: &str) -> Option<Vec<String>> {
        let Value::Array(items) = value else {
            self.error(path, format!("expected an array of strings, found {}", kind(value)));
            return None;
        };
        let mut strings = Vec::with_capacity(items.len());
        let mut ok = true;
        for (index, item) in items.iter().enumerate() {
            match item {
                Value::String(text) => strings.push(text.clone()),
                other => {
                    self.error(format!("{path}[{index}]"), format!("expected a string, found {}", kind(other)));
                    ok = false;
                }
            }
        }
        ok.then_some(strings)
    }

    /// Seconds, as a positive integer or float.
    pub(super) fn duration(&mut self, fields: &mut Fields<'_>, key: &'static str) -> Option<Duration> {
        let value = fields.get(key)?;
        let seconds = match value {
            Value::Integer(seconds) => *seconds as f64,
            Value::Float(seconds) => *seconds,
            other => {
                self.error(fields.key(key), format!("expected a number of seconds, found {}", kind(other)));
                return None;
            }
        };
        match Duration::try_from_secs_f64(seconds) {
            Ok(duration) if !duration.is_zero() => Some(duration),
            _ => {
                self.error(fields.key(key), "expected a positive number of seconds");
                None
            }
        }
    }

    pub(super) fn positive(&mut self, fields: &mut Fields<'_>, key: &'static str) -> Option<usize> {
        let value = fields.get(key)?;
        match value {
            Value::Integer(number) if *number >= 1 => usize::try_from(*number).ok(),
            Value::Integer(_) => {
                self.error(fields.key(key), "expected a positive integer");
                None
            }
            other => {
                self.error(fields.key(key), format!("expected a positive integer, found {}", kind(other)));
                None
            }
        }
    }

    pub(super) fn url(&mut self, text: &str, path: &str) -> Option<Url> {
        // The URL is not repeated: its userinfo or query may be an expanded secret.
        match Url::parse(text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some_and(|h| !h.is_empty()) => {
                Some(url)
            }
            Ok(_) => {
                self.error(path, "not an http:// or https:// URL with a host");
                None
            }
            Err(error) => {
                self.error(path, format!("not a valid URL ({error})"));
                None
            }
        }
    }

    // ---- the file --------------------------------------------------------------------------

    /// Reads the whole file: the top-level keys, then `[agent]`, the `[[mcp]]` servers, the
    /// `[[a2a]]` agents, the `[[skill]]`s and the default skill, in that order (the order of the messages).
    pub(super) fn file(&mut self, text: &str, file: &str) -> Option<AgentFile> {
        let mut root = self.toml(text)?;
        self.expand_table(&mut root, "");

        let mut top = Fields::new(&root, "");
        let agent = self.table(&mut top, "agent");
        let skills = top.get("skill");
        let mcp = top.get("mcp");
        let a2a = top.get("a2a");
        let serve = self.table(&mut top, "serve").cloned();
        let payments = self.table(&mut top, "payments").cloned();
        self.finish(top);

        // A file whose one backend is one remote A2A agent fronts it as a whole: what `[agent]`
        // leaves out (all of it, even the table) comes from the remote card.
        let fronts = skills.is_none()
            && mcp.is_none()
            && a2a.and_then(Value::as_array).is_some_and(|entries| entries.len() == 1);
        let empty = Table::new();
        let agent = match agent {
            Some(agent) => agent,
            None if fronts && !root.contains_key("agent") => &empty,
            None => {
                if !root.contains_key("agent") {
                    self.error("agent", "missing: the file needs an [agent] table with a `name`");
                }
                return None;
            }
        };
        let agent = self.agent(agent, fronts);
        let mcp_specs = self.mcp_servers(mcp);
        let a2a_specs = self.a2a_agents(a2a);
        // Skills that are known only once their servers or agents are reached.
        let remote = [mcp, a2a].into_iter().flatten().collect::<Vec<_>>();
        let specs = self.skills(skills, &remote);
        if let Some(wanted) = agent.default_skill.as_deref().filter(|id| !id.trim().is_empty()) {
            self.default_skill(wanted, skills, !remote.is_empty());
        }

        // Until the remote card is read, a fronting file is known by its entry's name.
        let (name, named) = match agent.name {
            Some(name) => (name, true),
            None if fronts => (a2a_specs.first()?.name.clone(), false),
            None => return None,
        };
        Some(AgentFile {
            file: file.to_owned(),
            base_dir: self.base_dir.clone(),
            name,
            named,
            description: agent.description,
            version: agent.version,
            card_fields: agent.card_fields,
            cancel_grace: agent.cancel_grace,
            default_skill: agent.default_skill,
            skills: specs,
            mcp: mcp_specs,
            a2a: a2a_specs,
            serve,
            payments,
        })
    }

    /// The file's text as a TOML table; `None` (and the error, at its line and column) when it is
    /// not valid TOML.
    fn toml(&mut self, text: &str) -> Option<Table> {
        match text.parse() {
            Ok(root) => Some(root),
            Err(error) => {
                let error: toml::de::Error = error;
                let key = match error.span() {
                    Some(span) => {
                        let before = &text[..span.start.min(text.len())];
                        let line = before.matches('\n').count() + 1;
                        let column = before.rsplit('\n').next().map_or(0, |tail| tail.chars().count()) + 1;
                        format!("line {line}, column {column}")
                    }
                    None => String::new(),
                };
                self.error(key, format!("not valid TOML: {}", error.message().trim()));
                None
            }
        }
    }
}

/// A TOML value as JSON (date-times become their RFC 3339 text).
pub(super) fn to_json(value: &Value) -> Result<Json, String> {
    Ok(match value {
        Value::String(text) => Json::String(text.clone()),
        Value::Integer(number) => Json::from(*number),
        Value::Float(number) => {
            serde_json::Number::from_f64(*number).map(Json::Number).ok_or("a schema number must be finite")?
        }
        Value::Boolean(value) => Json::Bool(*value),
        Value::Datetime(datetime) => Json::String(datetime.to_string()),
        Value::Array(items) => Json::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Table(table) => Json::Object(
            table.iter().map(|(key, value)| Ok((key.clone(), to_json(value)?))).collect::<Result<_, String>>()?,
        ),
    })
}
