//! The settings of a server: [`ServeArgs`], and the groups of its flags that have no module of
//! their own.

use std::time::Duration;

use accord_engine::task::RuntimeConfig;
use accord_server::RateLimitConfig;
use accord_types::a2a::ErrorMapping;
use clap::{CommandFactory as _, FromArgMatches as _};

use super::{
    AuthArgs, BudgetArgs, ConnectionArgs, DEFAULT_STORE, ObserveArgs, PaymentArgs, PushArgs, SignedCardArgs,
    StoreOptions, StoreSpec, Synchronous, TlsArgs, parse_bytes,
};

/// Every setting of a server, as flags and `ACCORD_*` environment variables.
///
/// Flatten it into your own clap parser to give your binary `accord serve`'s flags; or start from
/// [`ServeArgs::default`] (the defaults, read from no flag and no variable) and set fields.
#[derive(Debug, Clone, clap::Args)]
#[non_exhaustive]
pub struct ServeArgs {
    /// Serve the agent this file describes (TOML; see docs/agent-file.md): its `[[skill]]`s are
    /// HTTP endpoints or commands, its `[[mcp]]` servers give one skill per tool, and its
    /// `[serve]` and `[payments]` tables set flags (a flag or `ACCORD_*` variable given here
    /// wins; their relative paths are relative to the file). Read by
    /// [`parse_with_agent_file`](super::parse_with_agent_file).
    #[arg(long, env = "ACCORD_CONFIG")]
    pub config: Option<std::path::PathBuf>,
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
    pub tls: TlsArgs,
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
pub(super) struct ServeOnly {
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
}
