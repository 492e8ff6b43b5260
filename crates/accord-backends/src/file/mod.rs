//! The agent file: a TOML description of an agent whose skills are backends
//! (`docs/agent-file.md`).
//!
//! This module owns reading the file — `${NAME}` expansion, types, unknown keys, schemas, prices,
//! programs and URLs — and reports every problem at once, one line each, naming the file, the key
//! and the reason. It builds the [`Agent`] with each skill wired to its backend. It does not
//! interpret `[serve]` or `[payments]`: those tables are handed on as they are.
//!
//! The reading is driven by `reader` (the TOML text, `${NAME}`, the top-level tables and the typed
//! values every section reads); each section has its own file: `agent` (`[agent]`), `skill`
//! (`[[skill]]`), `mcp` (`[[mcp]]`), `a2a` (`[[a2a]]`), and `backend` (the `http` and `command` tables both take).

mod a2a;
mod agent;
mod backend;
mod mcp;
mod reader;
mod skill;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use accord_engine::{Agent, AgentBuilder, BuildError, Completion, Outcome, Pricing, Run, Skill};
use serde_json::{Map, Value as Json};
use toml::Table;

use crate::a2a::{A2aAgent, A2aOptions};
use crate::command::{CommandBackend, CommandConfig};
use crate::http::{HttpBackend, HttpConfig};
use crate::mcp::{McpOptions, McpServer, McpTransport};
use crate::secret::Secret;
use reader::Reader;

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
    /// Whether `[agent]` names the agent; when not, the file fronts one remote A2A agent, whose
    /// card gives the name (and what else `[agent]` leaves out) once it is read.
    named: bool,
    description: Option<String>,
    version: Option<String>,
    card_fields: Map<String, Json>,
    cancel_grace: Option<Duration>,
    /// `[agent] default_skill`, as written.
    default_skill: Option<String>,
    skills: Vec<SkillSpec>,
    mcp: Vec<McpSpec>,
    a2a: Vec<A2aSpec>,
    serve: Option<Table>,
    payments: Option<Table>,
}

/// What [`AgentFile::build_with_servers`] makes: the agent, the keys of the skills that are MCP
/// tools or skills of remote A2A agents, the MCP servers (in the order of the file), whose health
/// [`McpServer::status`] reports, and the remote A2A agents.
#[derive(Debug)]
#[non_exhaustive]
pub struct BuiltAgent {
    /// The agent.
    pub agent: Agent,
    /// The skill keys of the MCP servers' tools, then those of the remote A2A agents' skills.
    pub tool_keys: Vec<String>,
    /// The MCP servers, one per `[[mcp]]` entry.
    pub mcp_servers: Vec<McpServer>,
    /// The remote A2A agents, one per `[[a2a]]` entry.
    pub a2a_agents: Vec<A2aAgent>,
}

/// One `[[a2a]]` of the file, checked: a remote A2A agent whose skills become skills.
#[derive(Clone)]
pub struct A2aSpec {
    /// Not printed: its userinfo or query may be an expanded secret.
    url: String,
    headers: Vec<(reqwest::header::HeaderName, Secret)>,
    name: String,
    prefix: String,
    skills: Option<Vec<String>>,
    bindings: Option<Vec<String>>,
    timeout: Duration,
    pricing: Pricing,
    scope: Option<String>,
    safe_to_repeat: bool,
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

impl std::fmt::Debug for A2aSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL without userinfo or query, the headers by name: either may hold a secret.
        f.debug_struct("A2aSpec")
            .field("url", &crate::a2a::shown_url(&self.url))
            .field("headers", &self.headers.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>())
            .field("name", &self.name)
            .field("prefix", &self.prefix)
            .field("skills", &self.skills)
            .field("bindings", &self.bindings)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
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
            .field("a2a", &self.a2a)
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

    /// The agent's name. A file that fronts one remote A2A agent and names no agent of its own
    /// is known by its `[[a2a]]` entry's name until it is built; the built agent has the remote
    /// card's name ([`AgentFile::fronts_remote_agent`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the file fronts one remote A2A agent as a whole: its one backend is one `[[a2a]]`
    /// entry and `[agent]` gives no `name`. The built agent then takes the remote card's name,
    /// and its description, version and provider unless `[agent]` sets them.
    pub fn fronts_remote_agent(&self) -> bool {
        !self.named
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
    /// `[[mcp]]` servers and the skills of `[[a2a]]` agents named by their skill keys (`tools`:
    /// what [`AgentFile::build`] found).
    pub fn scopes_with_tools(&self, tools: &[String]) -> BTreeMap<String, String> {
        let mut scopes = self.scopes();
        for spec in &self.mcp {
            if let Some(scope) = &spec.scope {
                for key in tools.iter().filter(|key| key.starts_with(&spec.prefix)) {
                    scopes.entry(key.clone()).or_insert_with(|| scope.clone());
                }
            }
        }
        for spec in &self.a2a {
            if let Some(scope) = &spec.scope {
                let of_spec = |key: &&String| {
                    key.strip_prefix(spec.prefix.as_str()).is_some_and(|id| {
                        spec.skills.as_ref().is_none_or(|wanted| wanted.iter().any(|wanted| wanted == id))
                    })
                };
                for key in tools.iter().filter(of_spec) {
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
        let mut agents = Vec::new();
        for (index, spec) in self.a2a.iter().enumerate() {
            let path = format!("a2a[{index}]");
            let mut options = A2aOptions::new(spec.name.clone()).timeout(spec.timeout);
            for (name, value) in &spec.headers {
                options = options.header(name.clone(), value.clone());
            }
            if let Some(bindings) = &spec.bindings {
                options = options.bindings(bindings.iter().cloned());
            }
            let agent = match A2aAgent::connect(&spec.url, options).await {
                Ok(agent) => agent,
                Err(error) => {
                    errors.push(FileError { key: path, reason: error.to_string() });
                    continue;
                }
            };
            if let Some(wanted) = &spec.skills {
                for id in wanted.iter().filter(|id| !agent.skills().iter().any(|skill| skill.id == id.as_str())) {
                    errors.push(FileError {
                        key: format!("{path}.skills"),
                        reason: format!(
                            "remote A2A agent '{}' has no skill {id:?} (its skills: {})",
                            spec.name,
                            skill_list(agent.skills().iter().map(|skill| skill.id.as_str()))
                        ),
                    });
                }
            }
            let mut added = 0;
            for remote in agent.skills() {
                let named = spec.skills.as_ref().map(|wanted| wanted.iter().any(|id| remote.id == id.as_str()));
                if named == Some(false) {
                    continue;
                }
                let key = format!("{}{}", spec.prefix, remote.id);
                if !is_skill_key(&key) {
                    if named == Some(true) {
                        errors.push(FileError {
                            key: format!("{path}.skills"),
                            reason: format!(
                                "skill {:?} gives the skill key {key:?}, which is not 1 to 128 characters of [A-Za-z0-9._-] starting with a letter or digit (remove it from `skills`)",
                                remote.id
                            ),
                        });
                    } else {
                        // One odd skill of a third-party agent does not stop the agent.
                        tracing::warn!(
                            "{}: {path}: skill {:?} of remote A2A agent '{}' is left out: its skill key {key:?} is not 1 to 128 characters of [A-Za-z0-9._-] starting with a letter or digit",
                            self.file,
                            remote.id,
                            spec.name
                        );
                    }
                    continue;
                }
                if !keys.insert(key.clone()) {
                    errors.push(FileError {
                        key: path.clone(),
                        reason: format!(
                            "skill {:?} of remote A2A agent '{}' gives the skill key {key:?}, which another skill has (set `prefix`)",
                            remote.id, spec.name
                        ),
                    });
                    continue;
                }
                let mut skill =
                    agent.skill_with(remote, key.clone(), spec.safe_to_repeat).pricing(spec.pricing.clone());
                if let Some(scope) = &spec.scope {
                    skill = skill.scope(scope.clone());
                }
                tool_keys.push(key);
                builder = builder.skill(skill);
                added += 1;
            }
            if added == 0 && spec.skills.is_none() {
                errors.push(FileError {
                    key: path.clone(),
                    reason: format!("remote A2A agent '{}' lists no skill Accord can serve", spec.name),
                });
            }
            if !self.named {
                builder = self.fronting(builder, agent.card());
            }
            agents.push(agent);
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
        Ok(BuiltAgent { agent, tool_keys, mcp_servers: servers, a2a_agents: agents })
    }

    /// The agent of a file that fronts the remote agent of `card` as a whole: the card's name,
    /// and its description, version and provider where `[agent]` gives none.
    fn fronting(&self, mut builder: AgentBuilder, card: &accord_types::a2a::AgentCard) -> AgentBuilder {
        builder = builder.name(card.name.clone());
        if self.description.is_none() && !card.description.trim().is_empty() {
            builder = builder.description(card.description.clone());
        }
        if self.version.is_none() && !card.version.trim().is_empty() {
            builder = builder.version(card.version.clone());
        }
        if !self.card_fields.contains_key("provider")
            && let Some(provider) = card.provider.as_ref().and_then(|provider| serde_json::to_value(provider).ok())
        {
            builder = builder.card_field("provider", provider);
        }
        builder
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

    /// Builds the agent, every skill wired to its backend. A file with `[[mcp]]` servers or
    /// `[[a2a]]` agents needs [`AgentFile::build`], which reaches them: here they are an error.
    pub fn build_agent(&self) -> Result<Agent, FileErrors> {
        if !self.a2a.is_empty() {
            return Err(FileErrors::new(
                &self.file,
                vec![FileError {
                    key: "a2a".into(),
                    reason: "remote A2A agents are reached by AgentFile::build (async)".into(),
                }],
            ));
        }
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

/// Whether `key` is a skill key: 1 to 128 characters of `[A-Za-z0-9._-]`, starting with a
/// letter or digit.
fn is_skill_key(key: &str) -> bool {
    (1..=128).contains(&key.len())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && key.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
}

/// `a, b, c`, or `none`.
fn skill_list<'a>(ids: impl Iterator<Item = &'a str>) -> String {
    let ids: Vec<&str> = ids.collect();
    if ids.is_empty() { "none".to_owned() } else { ids.join(", ") }
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
