//! The agent file: a TOML description of an agent whose skills are backends
//! (`docs/agent-file.md`).
//!
//! This module owns reading the file — `${NAME}` expansion, types, unknown keys, schemas, prices,
//! programs and URLs — and reports every problem at once, one line each, naming the file, the key
//! and the reason. It builds the [`Agent`] with each skill wired to its backend. It does not
//! interpret `[serve]` or `[payments]`: those tables are handed on as they are.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use accord_engine::{Agent, AgentBuilder, BuildError, Completion, Outcome, Pricing, Run, Skill, SkillOperation};
use reqwest::header::HeaderName;
use serde_json::{Map, Value as Json};
use toml::{Table, Value};
use url::Url;

use crate::command::{CommandBackend, CommandConfig};
use crate::http::{HttpBackend, HttpConfig, HttpMethod, RESERVED_HEADERS};
use crate::mcp::{McpOptions, McpServer, McpTransport};
use crate::secret::Secret;

/// One problem of an agent file: where (a key path such as `skill[1].http.url`, or a line and
/// column for a syntax error; empty for the file as a whole) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    /// The key path, or `line L, column C`, or empty.
    pub key: String,
    /// What is wrong. Never a secret: values are not repeated.
    pub reason: String,
}

/// Every problem found in an agent file. `Display` writes one line per problem:
/// `<file>: <key>: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileErrors {
    file: String,
    errors: Vec<FileError>,
}

impl FileErrors {
    fn new(file: &str, errors: Vec<FileError>) -> Self {
        Self { file: file.to_owned(), errors }
    }

    /// The file, as named in the messages.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The problems: unset variables first, then the rest in the order of the file.
    pub fn errors(&self) -> &[FileError] {
        &self.errors
    }
}

impl std::fmt::Display for FileErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (index, error) in self.errors.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            match error.key.as_str() {
                "" => write!(f, "{}: {}", self.file, error.reason)?,
                key => write!(f, "{}: {key}: {}", self.file, error.reason)?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for FileErrors {}

/// Where a skill's code lives.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Backend {
    /// An HTTP endpoint (`http = { url = … }`).
    Http(HttpConfig),
    /// A program (`command = [...]` or `command = { argv = [...], … }`).
    Command(CommandConfig),
}

/// One `[[skill]]` of the file, checked.
#[derive(Debug, Clone)]
pub struct SkillSpec {
    id: String,
    description: Option<String>,
    tags: Vec<String>,
    input_schema: Json,
    output_schema: Option<Json>,
    pricing: Pricing,
    scope: Option<String>,
    safe_to_repeat: bool,
    backend: Backend,
}

impl SkillSpec {
    /// The skill key.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The tags.
    pub fn tags(&self) -> &[String] {
        &self.tags
    }

    /// The input schema (`{"type": "object"}` when the file gives none).
    pub fn input_schema(&self) -> &Json {
        &self.input_schema
    }

    /// The output schema, when the file gives one.
    pub fn output_schema(&self) -> Option<&Json> {
        self.output_schema.as_ref()
    }

    /// The price.
    pub fn pricing(&self) -> &Pricing {
        &self.pricing
    }

    /// The scope a caller needs on the JSON-RPC tasks face.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// The backend.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }
}

/// An agent file, read and checked: the agent, its skills and their backends, and the
/// `[serve]` / `[payments]` tables for whoever serves it.
#[derive(Clone)]
pub struct AgentFile {
    file: String,
    base_dir: PathBuf,
    name: String,
    description: Option<String>,
    version: Option<String>,
    card_fields: Map<String, Json>,
    cancel_grace: Option<Duration>,
    /// `[agent] default_skill`, as written.
    default_skill: Option<String>,
    skills: Vec<SkillSpec>,
    mcp: Vec<McpSpec>,
    serve: Option<Table>,
    payments: Option<Table>,
}

/// What [`AgentFile::build_with_servers`] makes: the agent, the keys of the skills that are MCP
/// tools, and the MCP servers (in the order of the file), whose health
/// [`McpServer::status`] reports.
#[derive(Debug)]
#[non_exhaustive]
pub struct BuiltAgent {
    /// The agent.
    pub agent: Agent,
    /// The skill keys of the MCP servers' tools.
    pub tool_keys: Vec<String>,
    /// The MCP servers, one per `[[mcp]]` entry.
    pub mcp_servers: Vec<McpServer>,
}

/// One `[[mcp]]` of the file, checked: an MCP server whose tools become skills.
#[derive(Debug, Clone)]
pub struct McpSpec {
    transport: McpTransport,
    name: String,
    prefix: String,
    tools: Option<Vec<String>>,
    timeout: Duration,
    startup_timeout: Duration,
    pricing: Pricing,
    scope: Option<String>,
    safe_to_repeat: Option<bool>,
}

impl std::fmt::Debug for AgentFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `[serve]` and `[payments]` may hold expanded secrets: only their keys show.
        let keys = |table: &Option<Table>| table.as_ref().map(|table| table.keys().cloned().collect::<Vec<_>>());
        f.debug_struct("AgentFile")
            .field("file", &self.file)
            .field("name", &self.name)
            .field("default_skill", &self.default_skill)
            .field("skills", &self.skills)
            .field("mcp", &self.mcp)
            .field("serve", &keys(&self.serve))
            .field("payments", &keys(&self.payments))
            .finish_non_exhaustive()
    }
}

/// The largest agent file read (a schema file too): a configuration, not a data set.
const MAX_FILE_BYTES: u64 = 4 << 20;

impl AgentFile {
    /// Reads the file at `path`; `${NAME}` comes from the process environment, relative paths in
    /// the file are relative to its directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, FileErrors> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text =
            read_text(path).map_err(|reason| FileErrors::new(&name, vec![FileError { key: String::new(), reason }]))?;
        let base = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Self::parse(&text, &name, base)
    }

    /// Reads an agent file's `text`: `file` names it in messages, relative paths are relative to
    /// `base_dir`, and `${NAME}` comes from the process environment.
    pub fn parse(text: &str, file: &str, base_dir: impl AsRef<Path>) -> Result<Self, FileErrors> {
        Self::parse_with_env(text, file, base_dir, &|name| std::env::var(name).ok())
    }

    /// As [`AgentFile::parse`], with `${NAME}` (and the variables a command is allowed, and
    /// `PATH`) read from `env` instead of the process environment.
    pub fn parse_with_env(
        text: &str,
        file: &str,
        base_dir: impl AsRef<Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, FileErrors> {
        let base_dir = std::path::absolute(base_dir.as_ref()).unwrap_or_else(|_| base_dir.as_ref().to_path_buf());
        let mut reader = Reader { errors: Vec::new(), unexpanded: HashSet::new(), env, base_dir };
        let parsed = reader.file(text, file);
        match parsed {
            Some(parsed) if reader.errors.is_empty() => Ok(parsed),
            _ => Err(FileErrors::new(file, reader.errors)),
        }
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent's description.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The directory relative paths are resolved against.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// The skills, in the order of the file.
    pub fn skills(&self) -> &[SkillSpec] {
        &self.skills
    }

    /// The skill a message runs when it names none, for the server's default
    /// (`ServiceConfig::default_skill`, `A2aConfig::default_skill`): `[agent] default_skill` when
    /// the file sets it, else the first `[[skill]]` (the only one, in a file with one). `None`
    /// only for a file of `[[mcp]]` servers alone without `default_skill`: then see
    /// [`AgentFile::default_skill_with_tools`].
    ///
    /// `default_skill` is checked when the file loads: it must be the id of one of its
    /// `[[skill]]`s — or, in a file with `[[mcp]]` servers, may be a tool's skill key, which
    /// [`AgentFile::build`] checks once it knows the tools.
    pub fn default_skill(&self) -> Option<&str> {
        self.default_skill.as_deref().or_else(|| self.skills.first().map(|skill| skill.id.as_str()))
    }

    /// As [`AgentFile::default_skill`], with the tools of the `[[mcp]]` servers (`tools`: the
    /// keys [`AgentFile::build`] returned) after the `[[skill]]`s, as the agent orders its skills:
    /// the configured default, else the first `[[skill]]`, else the first tool.
    pub fn default_skill_with_tools(&self, tools: &[String]) -> Option<String> {
        self.default_skill().map(str::to_owned).or_else(|| tools.first().cloned())
    }

    /// Whether `[agent] default_skill` was written in the file (rather than chosen by the rule
    /// of [`AgentFile::default_skill`]).
    pub fn default_skill_is_configured(&self) -> bool {
        self.default_skill.is_some()
    }

    /// The scope each skill that names one requires on the JSON-RPC tasks face, by skill key.
    pub fn scopes(&self) -> BTreeMap<String, String> {
        self.skills.iter().filter_map(|skill| Some((skill.id.clone(), skill.scope.clone()?))).collect()
    }

    /// The `[serve]` table, as written (after `${NAME}` expansion).
    pub fn serve_table(&self) -> Option<&Table> {
        self.serve.as_ref()
    }

    /// The `[payments]` table, as written (after `${NAME}` expansion).
    pub fn payments_table(&self) -> Option<&Table> {
        self.payments.as_ref()
    }

    /// The agent's builder with every skill wired to its backend, for adding more before
    /// building. The agent's cancel grace is kept longer than every command's grace, so that a
    /// cancelled command is always stopped and reaped by its backend before the engine gives up.
    pub fn agent_builder(&self) -> Result<AgentBuilder, FileErrors> {
        let mut builder = Agent::builder(self.name.clone());
        if let Some(description) = &self.description {
            builder = builder.description(description.clone());
        }
        if let Some(version) = &self.version {
            builder = builder.version(version.clone());
        }
        for (name, value) in &self.card_fields {
            builder = builder.card_field(name.clone(), value.clone());
        }
        let mut grace = self.cancel_grace.unwrap_or(Duration::from_secs(5));
        let mut errors = Vec::new();
        for (index, spec) in self.skills.iter().enumerate() {
            let mut skill = Skill::builder(spec.id.clone())
                .input_schema(spec.input_schema.clone())
                .pricing(spec.pricing.clone())
                .safe_to_repeat(spec.safe_to_repeat);
            if let Some(description) = &spec.description {
                skill = skill.description(description.clone());
            }
            for tag in &spec.tags {
                skill = skill.tag(tag.clone());
            }
            if let Some(schema) = &spec.output_schema {
                skill = skill.output_schema(schema.clone());
            }
            let skill = match &spec.backend {
                Backend::Http(config) => match HttpBackend::new(config.clone()) {
                    Ok(backend) => skill.handler(backend),
                    Err(error) => {
                        errors.push(FileError { key: format!("skill[{index}].http"), reason: error.to_string() });
                        continue;
                    }
                },
                Backend::Command(config) => {
                    grace = grace.max(config.grace_period() + Duration::from_secs(1));
                    skill.handler(CommandBackend::new(config.clone()))
                }
            };
            builder = builder.skill(skill);
        }
        if !errors.is_empty() {
            return Err(FileErrors::new(&self.file, errors));
        }
        Ok(builder.cancel_grace(grace))
    }

    /// The scope each skill requires on the JSON-RPC tasks face, by skill key, with the tools of
    /// `[[mcp]]` servers named by their skill keys (`tools`: what [`AgentFile::build`] found).
    pub fn scopes_with_tools(&self, tools: &[String]) -> BTreeMap<String, String> {
        let mut scopes = self.scopes();
        for spec in &self.mcp {
            if let Some(scope) = &spec.scope {
                for key in tools.iter().filter(|key| key.starts_with(&spec.prefix)) {
                    scopes.entry(key.clone()).or_insert_with(|| scope.clone());
                }
            }
        }
        scopes
    }

    /// Builds the agent: every `[[skill]]` wired to its backend, and every tool of every
    /// `[[mcp]]` server as a skill (the servers are started or reached, initialized and asked
    /// for their tools first). Every problem is reported at once, as [`AgentFile::build_agent`]
    /// does. Returns the agent and the keys of the tool skills.
    pub async fn build(&self) -> Result<(Agent, Vec<String>), FileErrors> {
        let built = self.build_with_servers().await?;
        Ok((built.agent, built.tool_keys))
    }

    /// As [`AgentFile::build`], keeping the handles of the `[[mcp]]` servers, whose
    /// [`McpServer::status`] tells whether each is up (for `/health` and metrics).
    pub async fn build_with_servers(&self) -> Result<BuiltAgent, FileErrors> {
        let mut builder = self.agent_builder()?;
        let mut servers = Vec::new();
        let mut errors = Vec::new();
        let mut keys: HashSet<String> = self.skills.iter().map(|skill| skill.id.clone()).collect();
        let mut tool_keys = Vec::new();
        for (index, spec) in self.mcp.iter().enumerate() {
            let path = format!("mcp[{index}]");
            let options =
                McpOptions::new(spec.name.clone()).call_timeout(spec.timeout).startup_timeout(spec.startup_timeout);
            let server = match McpServer::connect(spec.transport.clone(), options).await {
                Ok(server) => server,
                Err(error) => {
                    errors.push(FileError { key: path, reason: error.to_string() });
                    continue;
                }
            };
            servers.push(server.clone());
            let tools = match server.tools().await {
                Ok(tools) => tools,
                Err(error) => {
                    errors.push(FileError { key: path, reason: error.to_string() });
                    continue;
                }
            };
            if let Some(wanted) = &spec.tools {
                for name in wanted.iter().filter(|name| !tools.iter().any(|tool| tool.name == name.as_str())) {
                    errors.push(FileError {
                        key: format!("{path}.tools"),
                        reason: format!("the server has no tool {name:?}"),
                    });
                }
            }
            let needs_tasks = server.tools_requiring_tasks();
            let mut left_out = Vec::new();
            for tool in tools {
                if spec.tools.as_ref().is_some_and(|wanted| !wanted.iter().any(|name| tool.name == name.as_str())) {
                    continue;
                }
                if needs_tasks.iter().any(|name| tool.name == name.as_str()) {
                    if spec.tools.is_some() {
                        errors.push(FileError {
                            key: format!("{path}.tools"),
                            reason: format!(
                                "tool {:?} requires MCP tasks (execution.taskSupport \"required\"), which Accord does not support as a client (remove it from `tools`)",
                                tool.name
                            ),
                        });
                    } else {
                        left_out.push(format!("{:?}", tool.name));
                    }
                    continue;
                }
                let key = format!("{}{}", spec.prefix, tool.name);
                let schema = Json::Object((*tool.input_schema).clone());
                let handler = server.tool_of(&tool);
                // Run again after an interruption only when the tool says a second call is harmless
                // (read-only or idempotent), or the file says so for all its tools.
                let safe = spec.safe_to_repeat.unwrap_or_else(|| handler.hints().safe_to_repeat());
                let mut skill = Skill::builder(key.clone())
                    .input_schema(schema.clone())
                    .pricing(spec.pricing.clone())
                    .safe_to_repeat(safe)
                    .handler(handler);
                if let Some(description) = tool.description.as_deref().or(tool.title.as_deref()) {
                    skill = skill.description(description.to_owned());
                }
                if let Some(schema) = &tool.output_schema {
                    skill = skill.output_schema(Json::Object((**schema).clone()));
                }
                // Each tool is checked alone, so that one bad tool is named with its reason.
                let probe = Skill::builder(key.clone())
                    .input_schema(schema)
                    .pricing(spec.pricing.clone())
                    .handler(|_run: Run| async { Ok(Outcome::Completed(Completion::default())) });
                let probe = Agent::builder("probe").skill(probe).build();
                if let Err(error) = probe {
                    let named = spec.tools.is_some();
                    let reason = match error {
                        // A tool the file did not ask for by name is left out, not fatal: one odd
                        // tool of a third-party server should not stop the agent.
                        BuildError::InvalidSkillKey { .. } if !named => {
                            tracing::warn!(
                                "{}: {path}: tool {:?} of mcp server '{}' is left out: its skill key {key:?} is not 1 to 128 characters of [A-Za-z0-9._-] starting with a letter or digit",
                                self.file,
                                tool.name,
                                spec.name
                            );
                            continue;
                        }
                        BuildError::InvalidSkillKey { .. } => format!(
                            "tool {:?} gives the skill key {key:?}, which is not 1 to 128 characters of [A-Za-z0-9._-] starting with a letter or digit (remove it from `tools`)",
                            tool.name
                        ),
                        other => format!("tool {:?}: {other}", tool.name),
                    };
                    errors.push(FileError { key: format!("{path}.tools"), reason });
                    continue;
                }
                if !keys.insert(key.clone()) {
                    errors.push(FileError {
                        key: path.clone(),
                        reason: format!(
                            "tool {:?} gives the skill key {key:?}, which another skill has (set `prefix`)",
                            tool.name
                        ),
                    });
                    continue;
                }
                tool_keys.push(key);
                builder = builder.skill(skill);
            }
            if !left_out.is_empty() {
                tracing::warn!(
                    "{}: {path}: tools {} of mcp server '{}' are left out: they require MCP tasks (execution.taskSupport \"required\"), which Accord does not support as a client",
                    self.file,
                    left_out.join(", "),
                    spec.name
                );
            }
        }
        if let Some(error) = self.unknown_default_skill(&tool_keys) {
            errors.push(error);
        }
        if !errors.is_empty() {
            return Err(FileErrors::new(&self.file, errors));
        }
        let agent = builder.build().map_err(|error| {
            FileErrors::new(&self.file, vec![FileError { key: "agent".into(), reason: error.to_string() }])
        })?;
        Ok(BuiltAgent { agent, tool_keys, mcp_servers: servers })
    }

    /// The problem with `[agent] default_skill` once the tools are known: it names no skill of
    /// the agent. (Without `[[mcp]]` servers, loading the file already checked it.)
    fn unknown_default_skill(&self, tools: &[String]) -> Option<FileError> {
        let wanted = self.default_skill.as_deref()?;
        let mut keys: Vec<&str> = self.skills.iter().map(|skill| skill.id.as_str()).collect();
        keys.extend(tools.iter().map(String::as_str));
        (!keys.contains(&wanted)).then(|| FileError {
            key: "agent.default_skill".into(),
            reason: unknown_skill_reason(wanted, &keys, "agent"),
        })
    }

    /// Builds the agent, every skill wired to its backend. A file with `[[mcp]]` servers needs
    /// [`AgentFile::build`], which reaches them: here they are an error.
    pub fn build_agent(&self) -> Result<Agent, FileErrors> {
        if !self.mcp.is_empty() {
            return Err(FileErrors::new(
                &self.file,
                vec![FileError {
                    key: "mcp".into(),
                    reason: "MCP servers are reached by AgentFile::build (async)".into(),
                }],
            ));
        }
        self.agent_builder()?.build().map_err(|error| {
            let key = match &error {
                BuildError::InvalidAgent { .. } => "agent".to_owned(),
                _ => "skill".to_owned(),
            };
            FileErrors::new(&self.file, vec![FileError { key, reason: error.to_string() }])
        })
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    let metadata = std::fs::metadata(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    if metadata.len() > MAX_FILE_BYTES {
        return Err(format!("{} is larger than {MAX_FILE_BYTES} bytes", path.display()));
    }
    std::fs::read_to_string(path).map_err(|error| format!("cannot read {}: {error}", path.display()))
}

/// "\"x\" is not a skill of this file (its skills: a, b)".
fn unknown_skill_reason(wanted: &str, keys: &[&str], of: &str) -> String {
    let list = if keys.is_empty() { "none".to_owned() } else { keys.join(", ") };
    format!("{wanted:?} is not a skill of this {of} (its skills: {list})")
}

/// `base.key`, or `key` at the top.
fn join(base: &str, key: &str) -> String {
    if base.is_empty() { key.to_owned() } else { format!("{base}.{key}") }
}

/// `a table`, `a string`, … for messages.
fn kind(value: &Value) -> &'static str {
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
struct Fields<'t> {
    table: &'t Table,
    path: String,
    known: Vec<&'static str>,
}

impl<'t> Fields<'t> {
    fn new(table: &'t Table, path: impl Into<String>) -> Self {
        Self { table, path: path.into(), known: Vec::new() }
    }

    fn key(&self, key: &str) -> String {
        join(&self.path, key)
    }

    fn get(&mut self, key: &'static str) -> Option<&'t Value> {
        self.known.push(key);
        self.table.get(key)
    }
}

struct Reader<'e> {
    errors: Vec<FileError>,
    /// Keys whose `${NAME}` could not be expanded: already reported, so what their unexpanded
    /// value would make of them is not.
    unexpanded: HashSet<String>,
    env: &'e dyn Fn(&str) -> Option<String>,
    base_dir: PathBuf,
}

impl Reader<'_> {
    fn error(&mut self, key: impl Into<String>, reason: impl Into<String>) {
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
    fn finish(&mut self, fields: Fields<'_>) {
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

    fn expand_table(&mut self, table: &mut Table, path: &str) {
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

    fn string(&mut self, fields: &mut Fields<'_>, key: &'static str) -> Option<String> {
        let value = fields.get(key)?;
        match value {
            Value::String(text) => Some(text.clone()),
            other => {
                self.error(fields.key(key), format!("expected a string, found {}", kind(other)));
                None
            }
        }
    }

    fn boolean(&mut self, fields: &mut Fields<'_>, key: &'static str) -> Option<bool> {
        let value = fields.get(key)?;
        match value {
            Value::Boolean(flag) => Some(*flag),
            other => {
                self.error(fields.key(key), format!("expected true or false, found {}", kind(other)));
                None
            }
        }
    }

    fn table<'t>(&mut self, fields: &mut Fields<'t>, key: &'static str) -> Option<&'t Table> {
        let value = fields.get(key)?;
        match value {
            Value::Table(table) => Some(table),
            other => {
                self.error(fields.key(key), format!("expected a table, found {}", kind(other)));
                None
            }
        }
    }

    fn strings(&mut self, value: &Value, path: &str) -> Option<Vec<String>> {
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
    fn duration(&mut self, fields: &mut Fields<'_>, key: &'static str) -> Option<Duration> {
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

    fn positive(&mut self, fields: &mut Fields<'_>, key: &'static str) -> Option<usize> {
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

    fn url(&mut self, text: &str, path: &str) -> Option<Url> {
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

    fn file(&mut self, text: &str, file: &str) -> Option<AgentFile> {
        let mut root: Table = match text.parse() {
            Ok(root) => root,
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
                return None;
            }
        };
        self.expand_table(&mut root, "");

        let mut top = Fields::new(&root, "");
        let agent = self.table(&mut top, "agent");
        let skills = top.get("skill");
        let mcp = top.get("mcp");
        let serve = self.table(&mut top, "serve").cloned();
        let payments = self.table(&mut top, "payments").cloned();
        self.finish(top);

        let Some(agent) = agent else {
            if !root.contains_key("agent") {
                self.error("agent", "missing: the file needs an [agent] table with a `name`");
            }
            return None;
        };
        let mut fields = Fields::new(agent, "agent");
        let name = self.string(&mut fields, "name");
        if name.is_none() && !agent.contains_key("name") {
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

        let mut specs = Vec::new();
        // `[[mcp]]` entries that are all wrong are reported as such, not as "no skill".
        let has_mcp = matches!(mcp, Some(Value::Array(items)) if !items.is_empty());
        match skills {
            None if has_mcp => {}
            None => self.error("skill", "missing: the file needs at least one [[skill]] or [[mcp]]"),
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

        // The default must be a skill of the file. The ids are taken as written, so that a skill
        // with another problem is not reported twice. A tool's key is known only when the
        // servers are reached: with `[[mcp]]`, `build` checks what is not a `[[skill]]`.
        if let Some(wanted) = default_skill.as_deref().filter(|id| !id.trim().is_empty()) {
            let ids: Vec<&str> = match skills {
                Some(Value::Array(items)) => {
                    items.iter().filter_map(|item| item.as_table()?.get("id")?.as_str()).collect()
                }
                _ => Vec::new(),
            };
            if !ids.contains(&wanted) && mcp.is_none() {
                self.error("agent.default_skill", unknown_skill_reason(wanted, &ids, "file"));
            }
        }

        Some(AgentFile {
            file: file.to_owned(),
            base_dir: self.base_dir.clone(),
            name: name?,
            description,
            version,
            card_fields,
            cancel_grace,
            default_skill,
            skills: specs,
            mcp: mcp_specs,
            serve,
            payments,
        })
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
        let pricing = match fields.get("price") {
            Some(value) => self.price(value, &fields.key("price")),
            None => Some(Pricing::default()),
        };
        let scope = self.string(&mut fields, "scope");
        if scope.as_deref().is_some_and(|scope| scope.trim().is_empty()) {
            self.error(fields.key("scope"), "must not be empty");
        }
        let safe_to_repeat = self.boolean(&mut fields, "safe_to_repeat");
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
        let pricing = match fields.get("price") {
            Some(value) => self.price(value, &fields.key("price")),
            None => Some(Pricing::default()),
        };
        let scope = self.string(&mut fields, "scope");
        if scope.as_deref().is_some_and(|scope| scope.trim().is_empty()) {
            self.error(fields.key("scope"), "must not be empty");
        }
        let safe_to_repeat = self.boolean(&mut fields, "safe_to_repeat");
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

    fn http(&mut self, value: &Value, path: &str) -> Option<HttpConfig> {
        self.http_endpoint(value, path, None)
    }

    /// A `[[skill]]`'s `http`: beside what every HTTP endpoint takes, a `method` and a URL whose
    /// path may hold `{name}` variables, each a property of the input schema when there is one.
    fn skill_http(&mut self, value: &Value, path: &str, input_schema: Option<&Json>) -> Option<HttpConfig> {
        self.http_endpoint(value, path, Some(SkillHttp { input_schema }))
    }

    fn http_endpoint(&mut self, value: &Value, path: &str, skill: Option<SkillHttp<'_>>) -> Option<HttpConfig> {
        let Value::Table(table) = value else {
            self.error(path, format!("expected a table such as {{ url = \"http://...\" }}, found {}", kind(value)));
            return None;
        };
        let before = self.errors.len();
        let mut fields = Fields::new(table, path);
        let url = self.string(&mut fields, "url");
        if url.is_none() && !table.contains_key("url") {
            self.error(fields.key("url"), "missing");
        }
        let url_key = fields.key("url");
        let (url, template) = match (&skill, url) {
            // A skill's URL may be a path template; it is checked as a URL like any other.
            (Some(skill), Some(text)) => match HttpConfig::from_template(&text) {
                Ok(template) => {
                    // The URL's checks, on the URL with its variables standing as letters.
                    let url = self.url(&template_free(&text), &url_key);
                    for name in template.path_variables() {
                        if let Some(schema) = skill.input_schema
                            && !schema.get("properties").and_then(Json::as_object).is_some_and(|p| p.contains_key(name))
                        {
                            self.error(
                                &url_key,
                                format!("the path variable `{{{name}}}` is not a property of the skill's input schema"),
                            );
                        }
                    }
                    (url, Some(template))
                }
                Err(error) => {
                    self.error(&url_key, error.to_string());
                    (None, None)
                }
            },
            (None, Some(text)) => (self.url(&text, &url_key), None),
            (_, None) => (None, None),
        };
        let method = match &skill {
            Some(_) => match fields.get("method") {
                None => HttpMethod::Post,
                Some(Value::String(name)) => HttpMethod::from_name(name).unwrap_or_else(|| {
                    self.error(fields.key("method"), "expected GET, POST, PUT, PATCH or DELETE");
                    HttpMethod::Post
                }),
                Some(other) => {
                    self.error(
                        fields.key("method"),
                        format!("expected a string such as \"GET\", found {}", kind(other)),
                    );
                    HttpMethod::Post
                }
            },
            None => HttpMethod::Post,
        };
        let mut headers = Vec::new();
        if let Some(table) = self.table(&mut fields, "headers") {
            for (name, value) in table {
                let key = format!("{}.{name}", fields.key("headers"));
                let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
                    self.error(key, "not a valid header name");
                    continue;
                };
                if RESERVED_HEADERS.contains(&header.as_str()) {
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
        let timeout = self.duration(&mut fields, "timeout");
        let concurrency = self.positive(&mut fields, "concurrency");
        let max_answer_bytes = self.positive(&mut fields, "max_answer_bytes");
        self.finish(fields);
        if self.errors.len() > before {
            return None;
        }
        let url = url?;
        let mut config = match template {
            Some(template) => template,
            None => HttpConfig::new(url),
        }
        .method(method)
        .concurrency(concurrency);
        for (name, value) in headers {
            config = config.header(name, value);
        }
        if let Some(timeout) = timeout {
            config = config.timeout(timeout);
        }
        if let Some(bytes) = max_answer_bytes {
            config = config.max_answer_bytes(bytes);
        }
        Some(config)
    }

    fn command(&mut self, value: &Value, path: &str) -> Option<CommandConfig> {
        let before = self.errors.len();
        let (argv, argv_path, mut options) = match value {
            Value::Array(_) => (self.strings(value, path), path.to_owned(), None),
            Value::Table(table) => {
                let mut fields = Fields::new(table, path);
                let argv_path = fields.key("argv");
                let argv = match fields.get("argv") {
                    Some(argv) => self.strings(argv, &argv_path),
                    None => {
                        self.error(&argv_path, "missing");
                        None
                    }
                };
                (argv, argv_path, Some(fields))
            }
            other => {
                self.error(path, format!("expected an array (argv) or a table with `argv`, found {}", kind(other)));
                return None;
            }
        };
        let argv = argv.unwrap_or_default();
        if argv.is_empty() && self.errors.len() == before {
            self.error(&argv_path, "must name a program");
        }

        // The child's environment: PATH, the variables allowed through, then the ones set here.
        let mut env: Vec<(String, Secret)> = Vec::new();
        if let Some(path_var) = (self.env)("PATH") {
            env.push(("PATH".into(), Secret::new(path_var)));
        }
        let mut cwd = self.base_dir.clone();
        let (mut timeout, mut grace, mut concurrency, mut max_output_bytes) = (None, None, None, None);
        if let Some(fields) = &mut options {
            if let Some(dir) = self.string(fields, "cwd") {
                let dir = self.base_dir.join(dir);
                if dir.is_dir() {
                    cwd = dir;
                } else {
                    self.error(fields.key("cwd"), format!("{} is not a directory", dir.display()));
                }
            }
            if let Some(names) = fields.get("env") {
                let key = fields.key("env");
                for (index, name) in self.strings(names, &key).unwrap_or_default().into_iter().enumerate() {
                    if !is_variable_name(&name) {
                        self.error(format!("{key}[{index}]"), "not a variable name");
                    } else if let Some(value) = (self.env)(&name) {
                        // A variable that is not set is simply not passed.
                        env.push((name, Secret::new(value)));
                    }
                }
            }
            if let Some(table) = self.table(fields, "env_set") {
                for (name, value) in table {
                    let key = format!("{}.{name}", fields.key("env_set"));
                    match value {
                        _ if !is_variable_name(name) => self.error(key, "not a variable name"),
                        Value::String(text) => env.push((name.clone(), Secret::new(text.clone()))),
                        other => self.error(key, format!("expected a string, found {}", kind(other))),
                    }
                }
            }
            timeout = self.duration(fields, "timeout");
            grace = self.duration(fields, "grace");
            concurrency = self.positive(fields, "concurrency");
            max_output_bytes = self.positive(fields, "max_output_bytes");
        }
        if let Some(fields) = options {
            self.finish(fields);
        }
        if self.errors.len() > before {
            return None;
        }
        let program = self.program(&argv[0], &cwd, &env, &format!("{argv_path}[0]"))?;
        let mut config = CommandConfig::new(program).args(argv[1..].iter().cloned()).cwd(cwd);
        for (name, value) in env {
            config = config.env(name, value);
        }
        if let Some(timeout) = timeout {
            config = config.timeout(timeout);
        }
        if let Some(grace) = grace {
            config = config.grace(grace);
        }
        if concurrency.is_some() {
            config = config.concurrency(concurrency);
        }
        if let Some(bytes) = max_output_bytes {
            config = config.max_output_bytes(bytes);
        }
        Some(config)
    }

    /// The program to run: a name looked up on `PATH`, or a path (relative to the command's
    /// working directory) to an executable file.
    fn program(&mut self, program: &str, cwd: &Path, env: &[(String, Secret)], path: &str) -> Option<PathBuf> {
        if program.contains('/') {
            let candidate = cwd.join(program);
            if is_executable(&candidate) {
                return Some(candidate);
            }
            self.error(path, format!("{} is not an executable file", candidate.display()));
            return None;
        }
        let search = env.iter().rev().find(|(name, _)| name == "PATH").map(|(_, value)| value.expose().to_owned());
        let found = search.as_deref().and_then(|search| {
            std::env::split_paths(search)
                .map(|dir| cwd.join(dir).join(program))
                .find(|candidate| is_executable(candidate))
        });
        if found.is_none() {
            self.error(path, format!("program {program:?} is not found on PATH"));
        }
        found
    }
}

/// What a `[[skill]]`'s `http` knows beyond an endpoint's keys.
struct SkillHttp<'s> {
    /// The input schema, when the file gives one.
    input_schema: Option<&'s Json>,
}

/// A template URL with each `{name}` as plain letters, for the checks of a URL.
fn template_free(text: &str) -> String {
    text.replace(['{', '}'], "")
}

/// Whether `prefix` can start a skill key: the key rule (1 to 128 characters of
/// `[A-Za-z0-9._-]` starting with a letter or digit) leaves room for a tool's name after it.
fn is_key_prefix(prefix: &str) -> bool {
    prefix.len() < 128
        && prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && prefix.chars().next().is_none_or(|c| c.is_ascii_alphanumeric())
}

/// A name a variable of a child's environment may have.
fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else { return false };
    if !metadata.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// A TOML value as JSON (date-times become their RFC 3339 text).
fn to_json(value: &Value) -> Result<Json, String> {
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
