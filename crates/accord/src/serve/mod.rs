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

mod auth;
mod budgets;
mod card;
mod connections;
mod file;
mod observe;
#[cfg(feature = "otlp")]
mod otlp;
mod pay;
mod push;
mod store;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use accord_engine::Agent;
use accord_engine::task::{AnonymousAccess, Durability, RuntimeConfig, ServiceConfig, TaskRuntime};
use accord_server::serve::Readiness;
use accord_server::{A2aConfig, Faces, GrpcAddress, JsonRpcTasksConfig, PaymentsConfig, RateLimitConfig, ServerConfig};
use accord_types::a2a::ErrorMapping;
use accord_types::card::AgentSkill;
use clap::{CommandFactory as _, FromArgMatches as _};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use self::auth::AuthArgs;
pub use self::budgets::{BudgetArgs, parse_bytes, parse_duration};
pub use self::card::{SignedCardArgs, read_private_key};
pub use self::connections::{ConnectionArgs, connection_cap, raise_descriptor_limit};
pub use self::file::{PATH_FLAGS, agent_file_flags, flags_from_table, with_paths_from};
pub use self::observe::{LogFormat, MetricsAt, ObserveArgs, Telemetry};
pub use self::pay::{PaymentArgs, RailKind};
pub use self::push::{DEFAULT_PUSH_KEY_FILE, PushArgs, load_or_make_key};
pub use self::store::{DEFAULT_STORE, DurableLimits, StoreOptions, StoreSpec, Synchronous, open_store};

/// Every setting of a server, as flags and `ACCORD_*` environment variables.
///
/// Flatten it into your own clap parser to give your binary `accord serve`'s flags; or start from
/// [`ServeArgs::default`] (the defaults, read from no flag and no variable) and set fields.
#[derive(Debug, Clone, clap::Args)]
#[non_exhaustive]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1", env = "ACCORD_HOST")]
    pub host: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8787, env = "ACCORD_PORT")]
    pub port: u16,
    /// Serve everything under this path prefix, e.g. `/agents/demo`.
    #[arg(long, default_value = "", env = "ACCORD_BASE_PATH")]
    pub base_path: String,
    /// The HTTP status mapping of A2A REST errors: `v1.0.1` (the current specification) or
    /// `v1.0.0` (what the public conformance kit checks). Default: v1.0.1, unless the program
    /// serving the agent chose otherwise.
    #[arg(long, value_enum, env = "ACCORD_A2A_ERROR_MAPPING")]
    pub a2a_error_mapping: Option<ErrorMappingArg>,
    /// Where tasks are kept: `sqlite://PATH` (a file, the default), `postgres://URL` (several
    /// servers on one database share the work) or `memory`.
    #[arg(long, default_value = DEFAULT_STORE, env = "ACCORD_STORE", hide_env_values = true)]
    pub store: StoreSpec,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub store_options: StoreArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub workers: WorkerArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub auth: AuthArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub signed_card: SignedCardArgs,
    /// Let anonymous callers list tasks. Anonymous callers from one client address (an IPv6
    /// /64) share an owner, so each would see the task ids — the capabilities — of the others
    /// behind the same address (a NAT, a proxy that is not trusted): off by default.
    #[arg(long, env = "ACCORD_ANONYMOUS_LIST")]
    pub anonymous_list: bool,
    /// Serve no landing page: no `/` (the page that shows the card and lets a browser try the
    /// skills), `/favicon.svg` or `/assets/…`.
    #[arg(long, env = "ACCORD_NO_LANDING")]
    pub no_landing: bool,
    /// Also serve the A2A gRPC binding on this port (a second listener on the same address;
    /// the card lists it there). Without it, gRPC is served on the HTTP port (HTTP/2) and the
    /// card lists that.
    #[arg(long, env = "ACCORD_GRPC_PORT", conflicts_with = "no_grpc")]
    pub grpc_port: Option<u16>,
    /// Serve no gRPC binding (and list none on the card).
    #[arg(long, env = "ACCORD_NO_GRPC")]
    pub no_grpc: bool,
    /// Turn streaming off: the card says `streaming: false`, and the streaming methods (A2A
    /// `SendStreamingMessage`, `SubscribeToTask` and their 0.3 names, the Lucid stream and task
    /// subscribe routes) are refused in each face's shape.
    #[arg(long, env = "ACCORD_NO_STREAMING")]
    pub no_streaming: bool,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub push: PushArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub payments: PaymentArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub connections: ConnectionArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub budgets: BudgetArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub observe: ObserveArgs,
}

impl Default for ServeArgs {
    /// The defaults of every flag, read from no command line and no environment variable.
    fn default() -> Self {
        let command = Self::command_without_env();
        let matches = command.get_matches_from(["serve"]);
        // The defaults are this struct's own and always parse.
        #[allow(clippy::expect_used)]
        Self::from_arg_matches(&matches).expect("the defaults of ServeArgs parse")
    }
}

/// A clap command holding only [`ServeArgs`], for parsing them on their own.
#[derive(clap::Parser)]
#[command(name = "serve")]
struct ServeOnly {
    #[command(flatten)]
    args: ServeArgs,
}

impl ServeArgs {
    /// The process's command line and `ACCORD_*` variables, read as `accord serve`'s flags: for
    /// a binary whose only flags are these. Like clap's `Parser::parse`, it prints the help or
    /// the mistake and exits the process when the command line asks for help or is wrong.
    pub fn parse() -> Self {
        let mut command = ServeOnly::command();
        if let Some(name) = std::env::args().next().as_deref().and_then(|path| path.rsplit('/').next()) {
            command = command.bin_name(name.to_owned());
        }
        let matches = command.get_matches();
        Self::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
    }

    /// The `ACCORD_*` variables of the process, with no command line: for programs that take
    /// their settings from the environment only.
    pub fn from_env() -> Result<Self, clap::Error> {
        let matches = ServeOnly::command().try_get_matches_from(["serve"])?;
        Self::from_arg_matches(&matches)
    }

    /// Parses `args` (without the program's name) as `accord serve`'s flags, with the
    /// `ACCORD_*` variables of the process under them.
    pub fn try_parse_from<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let argv = std::iter::once(std::ffi::OsString::from("serve")).chain(args.into_iter().map(Into::into));
        let matches = ServeOnly::command().try_get_matches_from(argv)?;
        Self::from_arg_matches(&matches)
    }

    fn command_without_env() -> clap::Command {
        ServeOnly::command().mut_args(|arg| arg.env(None::<&str>))
    }

    /// The runtime settings: worker id, leases, recovery, per-owner share, artifact budget.
    pub fn runtime_config(&self) -> RuntimeConfig {
        self.budgets.runtime(self.workers.runtime_config())
    }
}

/// Editions of the A2A error table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ErrorMappingArg {
    /// A2A v1.0.1.
    #[value(name = "v1.0.1")]
    V101,
    /// A2A v1.0.0.
    #[value(name = "v1.0.0")]
    V100,
}

impl From<ErrorMappingArg> for ErrorMapping {
    fn from(arg: ErrorMappingArg) -> Self {
        match arg {
            ErrorMappingArg::V100 => ErrorMapping::V1_0_0,
            ErrorMappingArg::V101 => ErrorMapping::V1_0_1,
        }
    }
}

/// How the store keeps tasks.
#[derive(Debug, Clone, clap::Args)]
#[non_exhaustive]
pub struct StoreArgs {
    /// SQLite only: when a commit waits for the disk. `normal` (the default) survives a killed
    /// process; `full` also survives a loss of power, at about a millisecond per commit. Paid
    /// tasks are always committed as with `full`.
    #[arg(long, value_enum, env = "ACCORD_SYNC")]
    pub sync: Option<Synchronous>,
    /// The in-process store (`--store memory`): the most tasks it keeps. When full, the terminal
    /// tasks changed longest ago make room; new tasks are refused when none has ended.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..), env = "ACCORD_MEMORY_TASKS")]
    pub memory_tasks: u64,
    /// The in-process store: the most bytes its tasks may take (inputs, histories, artifacts,
    /// results and logs, as their JSON length), e.g. `64MiB`, `1GiB` or a number of bytes.
    #[arg(long, default_value = "64MiB", value_parser = parse_bytes, env = "ACCORD_MEMORY_BYTES")]
    pub memory_bytes: usize,
}

impl StoreArgs {
    /// The store options these flags set.
    pub fn options(&self) -> StoreOptions {
        StoreOptions {
            sync: self.sync,
            memory: accord_engine::task::MemoryStoreConfig {
                max_tasks: usize::try_from(self.memory_tasks).unwrap_or(usize::MAX),
                max_bytes: self.memory_bytes,
                ..accord_engine::task::MemoryStoreConfig::default()
            },
            ..StoreOptions::default()
        }
    }
}

/// How this process works as one of several workers on a shared store.
#[derive(Debug, Clone, clap::Args)]
#[non_exhaustive]
pub struct WorkerArgs {
    /// This worker's id (default: random), used to fence its writes on a shared store.
    #[arg(long, env = "ACCORD_WORKER_ID")]
    pub worker_id: Option<String>,
    /// Seconds a task's lease lasts without renewal: a crashed worker's tasks are taken over
    /// after at most this long.
    #[arg(long, default_value_t = 30.0, value_parser = positive_seconds, env = "ACCORD_LEASE_TTL")]
    pub lease_ttl: f64,
    /// Seconds between two looks for tasks whose worker died (durable stores only).
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds, env = "ACCORD_RECOVERY_INTERVAL")]
    pub recovery_interval: f64,
    /// The most unfinished tasks one caller (owner) may have at once; more are refused with a
    /// retryable error (429), so one caller cannot fill the store. 0: no limit. Set the same on
    /// every worker of a shared store.
    #[arg(long, default_value_t = accord_engine::task::DEFAULT_MAX_ACTIVE_PER_OWNER, env = "ACCORD_MAX_ACTIVE_PER_OWNER")]
    pub max_active_per_owner: usize,
    /// Milliseconds a task whose caller waits for its answer (a blocking send) may run before it
    /// is first stored: a handler that ends sooner has its task written once, already ended; a
    /// longer one is stored `working` when they pass. 0: every task is stored before it runs.
    #[arg(
        long,
        default_value_t = accord_engine::task::DEFAULT_INLINE_WINDOW.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(..=1000),
        env = "ACCORD_INLINE_WINDOW_MS"
    )]
    pub inline_window_ms: u64,
    /// Requests a second each caller may make on the task and invoke routes, as `N/s` (off by
    /// default): an authenticated caller is counted by its owner, an anonymous one by its address.
    /// Over it: 429 with Retry-After. Counted per process.
    #[arg(long, value_parser = RateLimitConfig::parse, env = "ACCORD_RATE_LIMIT")]
    pub rate_limit: Option<RateLimitConfig>,
    /// With --rate-limit: how many requests a caller may make at once (default: the rate).
    #[arg(long, requires = "rate_limit", value_parser = clap::value_parser!(u32).range(1..), env = "ACCORD_RATE_BURST")]
    pub rate_burst: Option<u32>,
}

/// A number of seconds above 0 and at most a day.
pub(crate) fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0 => Ok(seconds),
        _ => Err("expected a number of seconds above 0 and at most 86400".into()),
    }
}

impl WorkerArgs {
    /// `--rate-limit` with its `--rate-burst`.
    pub fn rate_limit(&self) -> Option<RateLimitConfig> {
        let burst = self.rate_burst.and_then(std::num::NonZeroU32::new);
        self.rate_limit.map(|rate| burst.map_or(rate, |burst| rate.burst(burst)))
    }

    /// The runtime settings these flags set.
    pub fn runtime_config(&self) -> RuntimeConfig {
        let mut config = RuntimeConfig::default()
            .lease_ttl(Duration::from_secs_f64(self.lease_ttl))
            .recovery_interval(Some(Duration::from_secs_f64(self.recovery_interval)))
            .max_active_per_owner(Some(self.max_active_per_owner).filter(|limit| *limit > 0))
            .inline_window(Duration::from_millis(self.inline_window_ms));
        if let Some(worker_id) = &self.worker_id {
            config = config.worker_id(worker_id.clone());
        }
        config
    }
}

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
        }
    }

    /// Serves the agent an agent file describes (`docs/agent-file.md`): its skills wired to their
    /// backends, the tools of its MCP servers as skills (the servers are started or reached and
    /// asked for their tools first), labelled with its name, each skill's `scope` required on every
    /// face and held by every credential of [`AuthArgs`] (the operator's). The file's `[serve]` and `[payments]` tables are flags: merge them
    /// into `args` first with [`agent_file_flags`] (as `accord serve --config` does). A file
    /// whose agent cannot be built is a usage error listing every problem, one per line.
    #[cfg(feature = "backends")]
    pub async fn from_agent_file(file: &accord_backends::AgentFile, args: ServeArgs) -> Result<Self, ServeError> {
        let built = file.build_with_servers().await.map_err(|errors| ServeError::usage(errors.to_string()))?;
        let accord_backends::BuiltAgent { agent, tool_keys: tools, mcp_servers, .. } = built;
        let mut serve = Self::with_args(agent, args).label(file.name());
        if !mcp_servers.is_empty() {
            serve.backends = Some(mcp_health(mcp_servers));
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
    /// installed over one the application installed first).
    pub fn logging(mut self, install: bool) -> Self {
        self.logging = install;
        self
    }

    /// Serves until SIGINT, SIGTERM or the [`Serve::stop_on`] signal, then stops gracefully
    /// ([`Running::stop`]); a second signal stops at once ([`Stopper::stop_now`]). Prints where
    /// it listens first (one line per address on standard output).
    pub async fn run(mut self) -> Result<(), ServeError> {
        let stop_on = self.stop_on.take();
        let running = self.bind().await?;
        running.print_summary();
        let stopper = running.stopper();
        let grace = running.grace;
        tokio::spawn(async move {
            let signalled = stop_signal();
            match stop_on {
                Some(custom) => {
                    tokio::select! {
                        () = signalled => {}
                        () = custom => {}
                    }
                }
                None => signalled.await,
            }
            tracing::info!(
                grace_seconds = grace.as_secs_f64(),
                "stopping: requests in flight may finish; a second signal stops at once"
            );
            stopper.stop();
            stop_signal().await;
            tracing::warn!("a second signal: stopping at once");
            stopper.stop_now();
        });
        running.wait().await
    }

    /// Opens the store, binds the listeners and starts serving; returns at once with a handle.
    /// Nothing is printed and no signal is watched: stop it with [`Running::stop`].
    pub async fn bind(self) -> Result<Running, ServeError> {
        let Self {
            agent,
            args,
            label,
            error_mapping,
            operator_scopes,
            skill_scopes,
            default_skill,
            backends,
            extended_skills,
            payments,
            hooks,
            notes,
            stop_on: _,
            logging,
        } = self;
        let mut agent = agent;
        for (skill, scope) in &skill_scopes {
            agent = agent.with_skill_scope(skill, scope).map_err(|error| ServeError::usage(error.to_string()))?;
        }
        let telemetry = if logging { Some(args.observe.init().map_err(ServeError::usage)?) } else { None };
        let mapping = args.a2a_error_mapping.map_or(error_mapping, ErrorMapping::from);
        let jws_card = args.signed_card.load_jws()?;
        let signed_card = args.signed_card.load(&args.host, agent.name())?;
        let mut auth = args.auth.config(&operator_scopes).await.map_err(ServeError::usage)?;
        if !auth.is_empty()
            && let Some(skills) = extended_skills
        {
            auth = auth.extended_card(skills);
        }
        let store_options = args.budgets.store(args.store_options.options());
        if store_options.sync.is_some() && !matches!(args.store, StoreSpec::Sqlite(_)) {
            return Err(ServeError::usage("--sync sets how a SQLite store syncs; it cannot be used with this --store"));
        }
        let grpc = grpc_setting(&args)?;
        let task_store = open_store(&args.store, &store_options).await.map_err(|error| {
            ServeError::failed(format!("cannot open the task store {}: {error}", args.store.describe()))
        })?;
        let durability = task_store.durability();
        let runtime = TaskRuntime::new(agent.clone(), task_store, args.runtime_config());
        let scopes_note = scopes_note(&agent);
        let mut config =
            ServerConfig::default().tasks(runtime.clone()).jsonrpc_tasks(Some(JsonRpcTasksConfig::default()));
        // The gRPC listener is bound first, so that the card lists the port it got (`--grpc-port 0`).
        let grpc_listener = match grpc {
            GrpcServe::Port(grpc_port) => Some(bind(&args.host, grpc_port, "--grpc-port").await?),
            _ => None,
        };
        let grpc_address = match (&grpc_listener, grpc) {
            (_, GrpcServe::Off) => None,
            (Some(listener), _) => Some(GrpcAddress::Port(local_addr(listener)?.port())),
            (None, _) => Some(GrpcAddress::SamePort),
        };
        config.a2a = config.a2a.map(|a2a| A2aConfig { error_mapping: mapping, grpc: grpc_address.clone(), ..a2a });
        if args.anonymous_list {
            config = config.task_service(ServiceConfig::default().anonymous(AnonymousAccess::ListShared));
        }
        config = config
            .idempotency(args.budgets.idempotency())
            .landing(!args.no_landing)
            .streaming(!args.no_streaming)
            .trusted_proxies(args.auth.trusted_proxies.clone());
        config.task_service = args.budgets.service(config.task_service);
        if let Some(backends) = backends {
            tokio::spawn(backend_metrics(backends.clone()));
            config = config.backends(backends);
        }
        let default_note = match &default_skill {
            Some((key, chosen)) => {
                agent
                    .skill(key)
                    .map_err(|_| ServeError::usage(format!("the default skill {key:?} is not a skill of the agent")))?;
                config.task_service.default_skill = Some(key.clone());
                Some(if *chosen {
                    format!("default skill: {key}")
                } else {
                    format!("default skill: {key} (the first)")
                })
            }
            None => agent
                .skills()
                .iter()
                .find(|skill| skill.is_invocable())
                .map(|skill| format!("default skill: {} (the first)", skill.key())),
        };
        config.push = args.push.settings().map_err(ServeError::usage)?;
        let store_file = args.store.sqlite_file();
        let (push_key, push_key_file) = args
            .push
            .key_beside(durability == Durability::Durable, store_file.as_deref())
            .map_err(ServeError::usage)?;
        config.task_service.push_key = push_key;
        let push_note =
            push_key_file.filter(|_| config.push.is_some()).map(|file| format!("push key: {}", file.display()));
        // Payments set by the program win over the flags; a priced skill needs one or the other.
        let mut notes = notes;
        let payments = match payments {
            Some(payments) => Some(payments),
            None => {
                let from_flags = args.payments.payments().map_err(ServeError::usage)?;
                notes.extend(from_flags.as_ref().and(args.payments.describe()));
                from_flags
            }
        };
        match payments {
            Some(payments) => {
                payments.check(&agent).map_err(ServeError::usage)?;
                config = config.payments(payments);
            }
            None => {
                if let Some(skill) = agent.skills().iter().find(|skill| skill.pricing().is_priced()) {
                    return Err(ServeError::usage(format!(
                        "skill {:?} is priced, but no payment rail collects its price: set --pay-rail (x402, mpp or local)",
                        skill.key()
                    )));
                }
            }
        }
        if let Some(signed_card) = signed_card {
            config = config.signed_card(signed_card);
        }
        let metrics_at = args.observe.metrics_at();
        if !cfg!(feature = "prometheus") && matches!(metrics_at, MetricsAt::Own(_)) {
            return Err(ServeError::usage("--metrics-addr needs a build with the `prometheus` cargo feature"));
        }
        let readiness = Readiness::default();
        config = config.metrics(metrics_at == MetricsAt::AgentListener).readiness(readiness.clone());
        if let Some(jws_card) = jws_card {
            config = config.jws_card(jws_card);
        }
        for hook in hooks {
            config = hook(config);
        }
        let served = Served::of(&config);
        let landing = config.landing;
        let faces = Faces::new(&agent, config.auth(auth).rate_limit(args.workers.rate_limit()));
        let base_path = normalize_base_path(&args.base_path);
        let app = app(&faces, &base_path, landing, grpc != GrpcServe::Off);

        let listener = bind(&args.host, args.port, "--port").await?;
        let address = local_addr(&listener)?;
        let host_part = if address.is_ipv6() { format!("[{}]", address.ip()) } else { address.ip().to_string() };
        let url = format!("http://{host_part}:{}{base_path}/", address.port());
        let mut summary = vec![
            format!("Accord {} agent listening on {url}", label.as_deref().unwrap_or(agent.name())),
            format!("card: {url}.well-known/agent-card.json"),
        ];
        if served.jsonrpc_tasks {
            summary.push(format!("JSON-RPC tasks: {url}a2a/tasks"));
        }
        summary.extend(scopes_note);
        summary.extend(default_note);
        summary.extend(push_note);
        if served.a2a {
            let edition = match mapping {
                ErrorMapping::V1_0_0 => "v1.0.0",
                _ => "v1.0.1",
            };
            summary.push(format!(
                "A2A v1.0: {url}a2a/jsonrpc (JSON-RPC), {url}a2a/rest (HTTP+JSON; {edition} error statuses)"
            ));
        }
        if served.a2a_03 {
            summary.push(format!(
                "A2A 0.3: {url}a2a/jsonrpc (JSON-RPC, requests without A2A-Version: 1.0), {url}a2a/rest/v1 (HTTP+JSON)"
            ));
        }
        let descriptor_limit = raise_descriptor_limit();
        let limits = args.connections.limits_under(descriptor_limit);
        let grace = args.connections.shutdown_grace();
        summary.push(match descriptor_limit {
            Some(descriptors) => {
                format!("connections: up to {} at once (file descriptors: {descriptors})", limits.max_connections)
            }
            None => format!("connections: up to {} at once", limits.max_connections),
        });
        let (stop, requested) = watch::channel(StopLevel::Serving);
        let (close, stopped) = watch::channel(StopLevel::Serving);
        tokio::spawn(coordinate_stop(requested, close, readiness, args.connections.shutdown_delay()));
        let until = |mut stopped: watch::Receiver<StopLevel>, level: StopLevel| async move {
            let _ = stopped.wait_for(|stop| *stop >= level).await;
        };
        let until_stopped = move |stopped: watch::Receiver<StopLevel>| until(stopped, StopLevel::Graceful);
        let until_cut = move |stopped: watch::Receiver<StopLevel>| until(stopped, StopLevel::Now);
        let mut servers = Vec::new();
        let mut grpc_addr = None;
        match (grpc_address, grpc_listener) {
            (Some(_), Some(grpc_listener)) => {
                let bound = local_addr(&grpc_listener)?;
                grpc_addr = Some(bound);
                summary.push(format!("A2A v1.0 gRPC: {host_part}:{} (and on the HTTP port)", bound.port()));
                // The gRPC listener serves the same app, so its card and extended card are right
                // there too, and it stops with the HTTP one.
                let server = accord_server::serve::Server::new(grpc_listener, app.clone())
                    .limits(limits.clone())
                    .shutdown_grace(grace)
                    .with_graceful_shutdown(until_stopped(stopped.clone()))
                    .with_forced_shutdown(until_cut(stopped.clone()));
                servers.push(tokio::spawn(server.run()));
            }
            (Some(_), None) => {
                grpc_addr = Some(address);
                summary.push(format!("A2A v1.0 gRPC: {host_part}:{} (HTTP/2 on the same port)", address.port()));
            }
            _ => {}
        }
        summary.push(format!("task store: {} ({})", args.store.describe(), durability.as_str()));
        let mut metrics_url = None;
        match metrics_at {
            MetricsAt::AgentListener if cfg!(feature = "prometheus") => {
                metrics_url = Some(format!("{url}metrics"));
            }
            #[cfg(feature = "prometheus")]
            MetricsAt::Own(metrics_address) => {
                let metrics = accord_server::observe::metrics_router(Some(runtime.clone()));
                let listener = TcpListener::bind(metrics_address).await.map_err(|error| {
                    ServeError::failed(format!("cannot listen on {metrics_address} for --metrics-addr: {error}"))
                })?;
                let bound = local_addr(&listener)?;
                metrics_url = Some(format!("http://{bound}/metrics"));
                let stopped = until_stopped(stopped.clone());
                servers.push(tokio::spawn(async move {
                    axum::serve(listener, metrics).with_graceful_shutdown(stopped).await
                }));
            }
            _ => {}
        }
        if let Some(metrics_url) = &metrics_url {
            summary.push(format!("metrics: {metrics_url}"));
        }
        summary.extend(notes);
        let server = accord_server::serve::Server::new(listener, app)
            .limits(limits)
            .shutdown_grace(grace)
            .with_graceful_shutdown(until_stopped(stopped.clone()))
            .with_forced_shutdown(until_cut(stopped));
        servers.insert(0, tokio::spawn(server.run()));
        Ok(Running { url, address, grpc_addr, metrics_url, summary, stop, servers, runtime, telemetry, grace })
    }
}

/// The states of an agent file's MCP servers, for `/health`.
#[cfg(feature = "backends")]
fn mcp_health(servers: Vec<accord_backends::McpServer>) -> accord_server::BackendsHealth {
    accord_server::BackendsHealth::new(move || {
        servers
            .iter()
            .map(|server| {
                let status = server.status();
                accord_types::lucid::BackendHealth {
                    name: status.name,
                    up: status.up,
                    since: accord_engine::time::iso_millis(status.since),
                    error: status.last_error,
                    calls: status.calls,
                    failures: status.failures,
                    reconnects: status.reconnects,
                }
            })
            .collect()
    })
}

/// How often the backends' metrics are brought up to date.
const BACKEND_METRICS_PERIOD: std::time::Duration = std::time::Duration::from_secs(5);

/// Keeps the backends' metrics up to date (every [`BACKEND_METRICS_PERIOD`], from their states):
/// `accord_backend_up` (1 or 0), and the counters `accord_backend_calls_total`,
/// `accord_backend_failures_total` and `accord_backend_reconnects_total`, each by `backend`.
async fn backend_metrics(backends: accord_server::BackendsHealth) {
    let mut ticks = tokio::time::interval(BACKEND_METRICS_PERIOD);
    loop {
        ticks.tick().await;
        for backend in backends.read() {
            let name = backend.name;
            metrics::gauge!("accord_backend_up", "backend" => name.clone()).set(if backend.up { 1.0 } else { 0.0 });
            metrics::counter!("accord_backend_calls_total", "backend" => name.clone()).absolute(backend.calls);
            metrics::counter!("accord_backend_failures_total", "backend" => name.clone()).absolute(backend.failures);
            metrics::counter!("accord_backend_reconnects_total", "backend" => name).absolute(backend.reconnects);
        }
    }
}

/// What the configuration serves, for the summary.
struct Served {
    jsonrpc_tasks: bool,
    a2a: bool,
    a2a_03: bool,
}

impl Served {
    fn of(config: &ServerConfig) -> Self {
        Self {
            jsonrpc_tasks: config.jsonrpc_tasks.is_some(),
            a2a: config.a2a.as_ref().is_some_and(|a2a| a2a.v10),
            a2a_03: config.a2a.as_ref().is_some_and(|a2a| a2a.v03),
        }
    }
}

/// `scoped skills (every face): slow needs demo:slow`, or nothing when no skill needs a scope.
fn scopes_note(agent: &Agent) -> Option<String> {
    let scoped: Vec<String> =
        agent.skills().iter().filter_map(|skill| Some(format!("{} needs {}", skill.key(), skill.scope()?))).collect();
    (!scoped.is_empty()).then(|| format!("scoped skills (every face): {}", scoped.join(", ")))
}

/// Where the gRPC binding is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GrpcServe {
    Off,
    /// On the HTTP listener.
    SamePort,
    /// On the HTTP listener and on a listener of its own at this port.
    Port(u16),
}

fn grpc_setting(args: &ServeArgs) -> Result<GrpcServe, ServeError> {
    let wanted = match (args.no_grpc, args.grpc_port) {
        (true, _) => GrpcServe::Off,
        (false, None) => GrpcServe::SamePort,
        (false, Some(port)) => GrpcServe::Port(port),
    };
    if cfg!(feature = "grpc") {
        return Ok(wanted);
    }
    match wanted {
        GrpcServe::Port(_) => Err(ServeError::usage("--grpc-port needs a build with the `grpc` cargo feature")),
        _ => Ok(GrpcServe::Off),
    }
}

/// `/x/y/` → `/x/y`; `` and `/` → ``.
fn normalize_base_path(base_path: &str) -> String {
    let trimmed = base_path.trim().trim_matches('/');
    if trimmed.is_empty() { String::new() } else { format!("/{trimmed}") }
}

/// The faces under the base path; gRPC methods at `/lf.a2a.v1.A2AService/…` whatever the base
/// path.
fn app(faces: &Faces, base_path: &str, landing: bool, grpc: bool) -> axum::Router {
    let router = faces.router();
    let app = if base_path.is_empty() {
        router
    } else if grpc {
        axum::Router::new().nest(base_path, router).merge(faces.a2a_grpc())
    } else {
        axum::Router::new().nest(base_path, router)
    };
    // The printed URL ends with `/`, which a nested router does not match: it leads to the page.
    if landing && !base_path.is_empty() {
        let page = base_path.to_owned();
        let to_page = move || std::future::ready(axum::response::Redirect::permanent(&page));
        app.route(&format!("{base_path}/"), axum::routing::get(to_page))
    } else {
        app
    }
}

async fn bind(host: &str, port: u16, flag: &str) -> Result<TcpListener, ServeError> {
    TcpListener::bind((host, port)).await.map_err(|error| {
        let what = if flag == "--port" { String::new() } else { format!(" for {flag}") };
        ServeError::failed(format!("cannot listen on {host}:{port}{what}: {error}"))
    })
}

fn local_addr(listener: &TcpListener) -> Result<SocketAddr, ServeError> {
    listener.local_addr().map_err(|error| ServeError::failed(error.to_string()))
}

/// How far a stop has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum StopLevel {
    Serving,
    /// Requests in flight finish within the grace period.
    Graceful,
    /// Everything still open is cut.
    Now,
}

/// Turns stop requests into what the listeners see: on the first, `/health` answers 503 at once,
/// and the listeners close after `delay` (or at a request to stop now); a request to stop now
/// cuts what is open.
async fn coordinate_stop(
    mut requested: watch::Receiver<StopLevel>,
    close: watch::Sender<StopLevel>,
    readiness: Readiness,
    delay: Duration,
) {
    // A dropped sender (the Running handle is gone) stops everything too.
    let level = requested.wait_for(|level| *level >= StopLevel::Graceful).await.map(|level| *level).ok();
    readiness.drain();
    if level == Some(StopLevel::Graceful) && !delay.is_zero() {
        tracing::info!(delay_seconds = delay.as_secs_f64(), "draining: /health answers 503 until the listeners close");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = requested.wait_for(|level| *level == StopLevel::Now) => {}
        }
    }
    let _ = close.send(StopLevel::Graceful);
    let _ = requested.wait_for(|level| *level == StopLevel::Now).await;
    let _ = close.send(StopLevel::Now);
}

/// SIGINT (Ctrl-C) or SIGTERM (what service managers and container runtimes send).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A server that is serving: where it listens, and how to stop it.
#[must_use = "a Running server stops serving when its runtime ends; wait for it or stop it"]
pub struct Running {
    url: String,
    address: SocketAddr,
    grpc_addr: Option<SocketAddr>,
    metrics_url: Option<String>,
    summary: Vec<String>,
    stop: watch::Sender<StopLevel>,
    servers: Vec<JoinHandle<std::io::Result<()>>>,
    runtime: TaskRuntime,
    telemetry: Option<Telemetry>,
    grace: Duration,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").field("url", &self.url).field("grpc", &self.grpc_addr).finish_non_exhaustive()
    }
}

/// Stops a [`Running`] server from elsewhere (a signal handler, a test).
#[derive(Debug, Clone)]
pub struct Stopper(watch::Sender<StopLevel>);

impl Stopper {
    /// Starts the graceful stop: `/health` answers 503, and after `--shutdown-delay` the
    /// listeners close; requests in flight finish within `--shutdown-grace`, streams end
    /// cleanly, then running tasks give up their leases.
    pub fn stop(&self) {
        self.0.send_if_modified(|level| {
            let starts = *level == StopLevel::Serving;
            if starts {
                *level = StopLevel::Graceful;
            }
            starts
        });
    }

    /// Stops at once: whatever is still open is cut (a second Ctrl-C).
    pub fn stop_now(&self) {
        let _ = self.0.send(StopLevel::Now);
    }
}

impl Running {
    /// The agent's base URL, ending with `/` (e.g. `http://127.0.0.1:8787/`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address the HTTP listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The address gRPC is served on (the HTTP listener's, or `--grpc-port`'s), if it is.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc_addr
    }

    /// Where `/metrics` is served, if it is.
    pub fn metrics_url(&self) -> Option<&str> {
        self.metrics_url.as_deref()
    }

    /// The task runtime, for work beside the faces (reading tasks, its metrics).
    pub fn runtime(&self) -> &TaskRuntime {
        &self.runtime
    }

    /// What [`Serve::run`] prints: one line per address, then the store and the notes.
    pub fn summary(&self) -> &[String] {
        &self.summary
    }

    /// Prints the summary on standard output; a closed standard output does not stop the server.
    pub fn print_summary(&self) {
        use std::io::Write as _;
        let mut out = std::io::stdout();
        for line in &self.summary {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
    }

    /// A handle that stops the server.
    pub fn stopper(&self) -> Stopper {
        Stopper(self.stop.clone())
    }

    /// Stops gracefully ([`Stopper::stop`]) and waits until every listener has finished.
    pub async fn stop(self) -> Result<(), ServeError> {
        self.stopper().stop();
        self.wait().await
    }

    /// Waits until the server stops (through a [`Stopper`], or a listener's failure), then
    /// closes the task runtime and flushes the span exporter.
    pub async fn wait(self) -> Result<(), ServeError> {
        let Self { servers, runtime, telemetry, stop, .. } = self;
        let mut outcome = Ok(());
        for server in servers {
            let result = match server.await {
                Ok(result) => result.map_err(|error| ServeError::failed(error.to_string())),
                Err(error) => Err(ServeError::failed(format!("a listener stopped: {error}"))),
            };
            if let Err(error) = result {
                // One listener failing stops the others too.
                Stopper(stop.clone()).stop();
                if outcome.is_ok() {
                    outcome = Err(error);
                }
            }
        }
        runtime.close().await;
        if let Some(telemetry) = telemetry {
            telemetry.shutdown();
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_read_no_environment_and_match_the_flags_defaults() {
        let args = ServeArgs::default();
        assert_eq!((args.host.as_str(), args.port), ("127.0.0.1", 8787));
        assert_eq!(args.store, DEFAULT_STORE.parse().expect("the default store"));
        assert!(!args.no_grpc && args.grpc_port.is_none());
        assert_eq!(
            args.connections.limits_under(None),
            accord_server::serve::ConnectionLimits::default(),
            "the library's defaults where no descriptor limit is known"
        );
    }

    #[test]
    fn flags_parse_into_every_group() {
        let args = ServeArgs::try_parse_from([
            "--port",
            "0",
            "--store",
            "memory",
            "--grpc-port",
            "0",
            "--sync",
            "full",
            "--memory-tasks",
            "5",
            "--memory-bytes",
            "1MiB",
            "--max-connections",
            "7",
            "--rate-limit",
            "10/s",
            "--rate-burst",
            "3",
        ])
        .expect("valid flags");
        assert_eq!((args.port, args.grpc_port), (0, Some(0)));
        let options = args.store_options.options();
        assert_eq!(options.sync, Some(Synchronous::Full));
        assert_eq!((options.memory.max_tasks, options.memory.max_bytes), (5, 1 << 20));
        assert_eq!(args.connections.limits().max_connections, 7);
        assert!(args.workers.rate_limit().is_some());
        assert!(ServeArgs::try_parse_from(["--memory-tasks", "0"]).is_err());
        assert!(ServeArgs::try_parse_from(["--sync", "off"]).is_err());
        assert!(ServeArgs::try_parse_from(["--grpc-port", "1", "--no-grpc"]).is_err());
        assert!(ServeArgs::try_parse_from(["--rate-burst", "3"]).is_err(), "--rate-burst needs --rate-limit");
        assert!(ServeArgs::try_parse_from(["--lease-ttl", "0"]).is_err());
    }

    #[test]
    fn base_paths_are_normalized() {
        assert_eq!(normalize_base_path(""), "");
        assert_eq!(normalize_base_path("/"), "");
        assert_eq!(normalize_base_path("agents/demo/"), "/agents/demo");
        assert_eq!(normalize_base_path(" /x "), "/x");
    }
}
