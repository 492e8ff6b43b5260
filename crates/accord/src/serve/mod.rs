//! Serving an agent with every production feature: one call for every Accord server.
//!
//! [`Serve`] takes any [`Agent`] and does what `accord serve` does: it opens the task store named
//! by a URL (SQLite by default, PostgreSQL for several workers, or in-process), runs the task
//! runtime with its leases and recovery, mounts every face (Lucid, JSON-RPC tasks, A2A JSON-RPC,
//! HTTP+JSON and gRPC, the cards, the landing page, `/openapi.json`, `/metrics`), applies
//! authentication, rate limits, connection limits and budgets, signs the card when a key is
//! given, sends push notifications, and stops gracefully on SIGINT or SIGTERM: `/health` answers
//! 503, the listeners close, requests in flight finish within `--shutdown-grace`, streams end
//! cleanly, and running tasks give up their leases so that another worker takes them over at
//! once. A second signal stops at once.
//!
//! Its settings are [`ServeArgs`], a clap [`Args`](clap::Args) struct: a binary of your own can
//! `#[command(flatten)]` it and gets every flag and `ACCORD_*` variable of `accord serve`.
//! A program that takes no flags builds [`Serve`] from [`ServeArgs::default`] (no flags, no
//! environment) and sets what it needs.
//!
//! ```no_run
//! use accord::{Agent, Serve, ServeArgs, Skill, SkillError};
//! use clap::Parser;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     serve: ServeArgs,
//! }
//!
//! # async fn main_() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = Agent::builder("my-agent")
//!     .skill(Skill::builder("hello").typed(|name: String, _run| async move {
//!         Ok::<_, SkillError>(format!("Hello, {name}!"))
//!     }))
//!     .build()?;
//! Serve::with_args(agent, Cli::parse().serve).run().await?;
//! # Ok(()) }
//! ```
//!
//! What this module must not do: hold a protocol rule. It only carries settings to the engine,
//! the stores and the server's faces, and runs the listeners.

mod args;
mod auth;
mod bind;
mod budgets;
mod card;
mod connections;
#[cfg(feature = "backends")]
mod file;
mod observe;
#[cfg(feature = "otlp")]
mod otlp;
mod pay;
mod push;
mod running;
mod store;
mod tls;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use accord_engine::Agent;
use accord_server::{PaymentsConfig, ServerConfig};
use accord_types::a2a::ErrorMapping;
use accord_types::card::AgentSkill;

use self::args::positive_seconds;
pub use self::args::{ErrorMappingArg, ServeArgs, StoreArgs, WorkerArgs};
pub use self::auth::AuthArgs;
#[cfg(feature = "backends")]
use self::bind::backends_health;
pub use self::budgets::{BudgetArgs, parse_bytes, parse_duration};
pub use self::card::{SignedCardArgs, read_private_key};
pub use self::connections::{ConnectionArgs, connection_cap, raise_descriptor_limit};
#[cfg(feature = "backends")]
pub use self::file::{parse_with_agent_file, parse_with_agent_file_from};
pub use self::observe::{LogFormat, MetricsAt, ObserveArgs, Telemetry};
pub use self::pay::{PaymentArgs, RailKind};
pub use self::push::{DEFAULT_PUSH_KEY_FILE, PushArgs, load_or_make_key};
pub use self::running::{Running, Stopper};
pub use self::store::{DEFAULT_STORE, DurableLimits, StoreOptions, StoreSpec, Synchronous, open_store};
pub use self::tls::{ClientAuthArg, ClientScopes, TLS_RELOAD_POLL, TlsArgs};

/// Why a server did not start or stopped with an error. Its text is written for the operator and
/// names the flag or file at fault, never a secret; `Debug` prints the same text, so that a
/// `main` returning this error reads well.
pub struct ServeError {
    kind: ServeErrorKind,
    message: String,
}

/// What kind of [`ServeError`] it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeErrorKind {
    /// The settings are wrong (a flag, a key file, a combination): the operator's mistake.
    Usage,
    /// Something failed: the store could not be opened, a port could not be bound, a listener
    /// failed.
    Failed,
}

impl ServeError {
    /// A settings mistake.
    pub fn usage(message: impl Into<String>) -> Self {
        Self { kind: ServeErrorKind::Usage, message: message.into() }
    }

    /// A failure.
    pub fn failed(message: impl Into<String>) -> Self {
        Self { kind: ServeErrorKind::Failed, message: message.into() }
    }

    /// What kind of error it is.
    pub fn kind(&self) -> ServeErrorKind {
        self.kind
    }
}

impl std::fmt::Debug for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ServeError {}

type ConfigHook = Box<dyn FnOnce(ServerConfig) -> ServerConfig + Send>;
type StopSignal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A server for one agent: its settings, then [`Serve::run`] (or [`Serve::bind`] to start it
/// and keep a handle).
#[must_use = "a Serve does nothing until it is run or bound"]
pub struct Serve {
    agent: Agent,
    args: ServeArgs,
    label: Option<String>,
    error_mapping: ErrorMapping,
    operator_scopes: Vec<String>,
    skill_scopes: BTreeMap<String, String>,
    default_skill: Option<(String, bool)>,
    backends: Option<accord_server::BackendsHealth>,
    extended_skills: Option<Vec<AgentSkill>>,
    payments: Option<PaymentsConfig>,
    hooks: Vec<ConfigHook>,
    notes: Vec<String>,
    stop_on: Option<StopSignal>,
    logging: bool,
    /// The log subscriber [`Serve::from_agent_file`] installed before it started the file's
    /// servers.
    telemetry: Option<Telemetry>,
    /// Whether the agent is the one of the agent file `--config` names.
    from_file: bool,
}

impl std::fmt::Debug for Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve").field("agent", &self.agent.name()).field("args", &self.args).finish_non_exhaustive()
    }
}

impl Serve {
    /// Serves `agent` with the default settings ([`ServeArgs::default`]: 127.0.0.1:8787, the
    /// SQLite file `accord.db` in the working directory, every face on).
    pub fn new(agent: Agent) -> Self {
        Self::with_args(agent, ServeArgs::default())
    }

    /// Serves `agent` as `args` say (flags parsed by your binary, or built by hand).
    pub fn with_args(agent: Agent, args: ServeArgs) -> Self {
        Self {
            agent,
            args,
            label: None,
            error_mapping: ErrorMapping::V1_0_1,
            operator_scopes: Vec::new(),
            skill_scopes: BTreeMap::new(),
            default_skill: None,
            backends: None,
            extended_skills: None,
            payments: None,
            hooks: Vec::new(),
            notes: Vec::new(),
            stop_on: None,
            logging: true,
            telemetry: None,
            from_file: false,
        }
    }

    /// Serves the agent an agent file describes (`docs/agent-file.md`): its skills wired to their
    /// backends, the tools of its MCP servers as skills (the servers are started or reached and
    /// asked for their tools first), labelled with its name, each skill's `scope` required on every
    /// face and held by every credential of [`AuthArgs`] (the operator's). The file's `[serve]`
    /// and `[payments]` tables are flags: read the command line with [`parse_with_agent_file`],
    /// which merges them into `args` (as `accord serve --config` does). The log subscriber
    /// `--log-format` describes is installed first, so that what starting the servers logs is
    /// seen (unless the application installed a subscriber of its own before: then that one
    /// stays, as with [`Serve::logging`]). A file whose agent cannot
    /// be built is a usage error listing every problem, one per line.
    #[cfg(feature = "backends")]
    pub async fn from_agent_file(file: &accord_backends::AgentFile, args: ServeArgs) -> Result<Self, ServeError> {
        // The log first: what starting the file's servers says (a tool left out, a server that
        // does not answer) is seen.
        let telemetry = args.observe.init().map_err(ServeError::usage)?;
        let built = file.build_with_servers().await.map_err(|errors| ServeError::usage(errors.to_string()))?;
        let accord_backends::BuiltAgent { agent, tool_keys: tools, mcp_servers, a2a_agents, .. } = built;
        // The built agent's name: a file that fronts a remote agent has the remote card's.
        let label = agent.name().to_owned();
        let mut serve = Self::with_args(agent, args).label(label);
        serve.from_file = true;
        serve.telemetry = Some(telemetry);
        if !mcp_servers.is_empty() || !a2a_agents.is_empty() {
            serve = serve.backend_status(move || {
                let servers = mcp_servers.iter().map(accord_backends::McpServer::status);
                servers.chain(a2a_agents.iter().map(accord_backends::A2aAgent::status)).collect()
            });
        }
        let scopes = file.scopes_with_tools(&tools);
        // The credentials of the flags are the operator's: they hold every scope the file names
        // (a JWT holds the scopes of its own claims).
        let mut operator: Vec<String> = scopes.values().cloned().collect();
        operator.sort();
        operator.dedup();
        serve = serve.operator_scopes(operator);
        for (skill, scope) in scopes {
            serve = serve.skill_scope(skill, scope);
        }
        if let Some(default) = file.default_skill_with_tools(&tools) {
            serve.default_skill = Some((default, file.default_skill_is_configured()));
        }
        Ok(serve)
    }

    /// The settings, to read or change.
    pub fn args_mut(&mut self) -> &mut ServeArgs {
        &mut self.args
    }

    /// Listens on `host` (default `127.0.0.1`).
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.args.host = host.into();
        self
    }

    /// Listens on `port` (default 8787; 0 picks a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.args.port = port;
        self
    }

    /// Keeps tasks in `store`: `memory`, `sqlite://PATH` or `postgres://URL`.
    pub fn store(mut self, store: StoreSpec) -> Self {
        self.args.store = store;
        self
    }

    /// The backends the agent's skills call, with their states, read by `read` whenever asked:
    /// `/health` lists them under `backends`, and the `accord_backend_*` metrics (up, calls,
    /// failures, reconnects, by `backend`) follow them. An agent file's MCP servers and remote
    /// A2A agents are given so; an agent of one's own gives its
    /// [`McpServer::status`](accord_backends::McpServer::status) and
    /// [`A2aAgent::status`](accord_backends::A2aAgent::status) the same way.
    #[cfg(feature = "backends")]
    pub fn backend_status(
        mut self,
        read: impl Fn() -> Vec<accord_backends::BackendStatus> + Send + Sync + 'static,
    ) -> Self {
        self.backends = Some(backends_health(read));
        self
    }

    /// The name `run` prints in its first line, `Accord <label> agent listening on <url>`
    /// (default: the agent's name).
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The A2A error table used when `--a2a-error-mapping` is not given (default v1.0.1).
    pub fn default_error_mapping(mut self, mapping: ErrorMapping) -> Self {
        self.error_mapping = mapping;
        self
    }

    /// The scopes every credential of [`AuthArgs`] is granted (the agent's operator).
    pub fn operator_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.operator_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The skill a message runs when it names none (default: the agent's first skill that can
    /// run as a task). A skill the agent lacks stops the start with a usage error.
    pub fn default_skill(mut self, skill: impl Into<String>) -> Self {
        self.default_skill = Some((skill.into(), true));
        self
    }

    /// Requires `scope` of every caller who runs `skill`, on every face (A2A, Lucid, JSON-RPC
    /// tasks): the agent's skill gets the scope ([`Agent::with_skill_scope`]) when the server
    /// starts, so it replaces one the skill was built with. A skill the agent lacks stops the
    /// start with a usage error.
    pub fn skill_scope(mut self, skill: impl Into<String>, scope: impl Into<String>) -> Self {
        self.skill_scopes.insert(skill.into(), scope.into());
        self
    }

    /// The skills the extended card shows authenticated callers (served only when some
    /// credential is configured).
    pub fn extended_skills(mut self, skills: Vec<AgentSkill>) -> Self {
        self.extended_skills = Some(skills);
        self
    }

    /// Collects the agent's prices with this payment rail. Checked against the agent when the
    /// server starts: a priced skill the rail cannot collect stops the start.
    pub fn payments(mut self, payments: PaymentsConfig) -> Self {
        self.payments = Some(payments);
        self
    }

    /// Changes the server's configuration after the settings are applied (before
    /// authentication and rate limits): to turn a face off, set a path, or anything
    /// [`ServerConfig`] can say. Hooks run in the order they were added.
    pub fn server_config(mut self, hook: impl FnOnce(ServerConfig) -> ServerConfig + Send + 'static) -> Self {
        self.hooks.push(Box::new(hook));
        self
    }

    /// A line `run` prints after its own summary.
    pub fn note(mut self, line: impl Into<String>) -> Self {
        self.notes.push(line.into());
        self
    }

    /// Stops gracefully when `signal` completes, as well as on SIGINT and SIGTERM.
    pub fn stop_on(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.stop_on = Some(Box::pin(signal));
        self
    }

    /// Whether to install the log subscriber `--log-format` describes (default yes; it is never
    /// installed over one the application installed first). [`Serve::from_agent_file`] has
    /// installed it already.
    pub fn logging(mut self, install: bool) -> Self {
        self.logging = install;
        self
    }
}
