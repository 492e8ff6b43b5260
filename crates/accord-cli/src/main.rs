//! `accord`: serve a demo agent, show an agent's card, invoke or stream its skills.

use std::io::{IsTerminal, Read, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use accord_cli::budgets::parse_bytes;
use accord_cli::store::{StoreOptions, StoreSpec, open_store};
use accord_client::rpc::{RpcClientError, RpcOptions, RpcTask};
use accord_client::{Client, ClientError, InvokeOptions, ListOptions, SendOptions, TaskAccess};
use accord_engine::task::{AnonymousAccess, Durability, MemoryStoreConfig, RuntimeConfig, ServiceConfig, TaskRuntime};
use accord_server::{A2aConfig, JsonRpcTasksConfig, RateLimitConfig, ServerConfig};
use accord_store_sqlite::Synchronous;
use accord_types::a2a::ErrorMapping;
use accord_types::tasks::{TaskStatus, TaskView};
use clap::{Parser, Subcommand};
use futures_util::StreamExt;
use serde_json::{Value, json};

mod card_cmd;
mod card_jws;
#[cfg(feature = "otlp")]
mod otlp;
mod serve_auth;
mod serve_limits;
mod serve_observe;

/// Exit code when the agent answered with an error or a run failed.
const EXIT_FAILED: u8 = 1;
/// Exit code for bad arguments (clap uses it too).
const EXIT_USAGE: u8 = 2;
/// Exit code when the agent could not be reached.
const EXIT_UNREACHABLE: u8 = 3;

#[derive(Debug, Parser)]
#[command(name = "accord", version, about = "Accord: publish, discover and call agents.", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The agents `accord serve` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum AgentKind {
    /// The demo agent.
    Demo,
    /// The conformance agent.
    Conformance,
}

/// Editions of the A2A error table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ErrorMappingArg {
    /// A2A v1.0.1.
    #[value(name = "v1.0.1")]
    V101,
    /// A2A v1.0.0.
    #[value(name = "v1.0.0")]
    V100,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an agent over HTTP: the demo agent (skills: echo, summarize, slow, ticks, confirm) or the
    /// conformance agent.
    Serve {
        /// Which agent: `demo`, or `conformance` — the A2A conformance kit's scenarios, chosen by
        /// each message's messageId prefix (see the README).
        #[arg(long, value_enum, default_value_t = AgentKind::Demo, env = "ACCORD_AGENT")]
        agent: AgentKind,
        /// The HTTP status mapping of A2A REST errors: `v1.0.1` (the current specification) or
        /// `v1.0.0` (what the public conformance kit checks). Default: v1.0.0 for the conformance
        /// agent, v1.0.1 otherwise.
        #[arg(long, value_enum, env = "ACCORD_A2A_ERROR_MAPPING")]
        a2a_error_mapping: Option<ErrorMappingArg>,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1", env = "ACCORD_HOST")]
        host: String,
        /// Port to listen on (0 picks a free one).
        #[arg(long, default_value_t = 8787, env = "ACCORD_PORT")]
        port: u16,
        /// Serve everything under this path prefix, e.g. `/agents/demo`.
        #[arg(long, default_value = "", env = "ACCORD_BASE_PATH")]
        base_path: String,
        #[command(flatten)]
        auth: Box<serve_auth::AuthArgs>,
        /// Where tasks are kept: `sqlite://PATH` (a file, the default), `postgres://URL` (several
        /// `accord serve` processes on one database share the work) or `memory`.
        #[arg(long, default_value = accord_cli::store::DEFAULT_STORE, env = "ACCORD_STORE", hide_env_values = true)]
        store: StoreSpec,
        #[command(flatten)]
        store_options: StoreArgs,
        #[command(flatten)]
        workers: WorkerArgs,
        #[command(flatten)]
        signed_card: Box<card_cmd::SignedCardArgs>,
        /// Price the demo agent's skills (summarize: 1000 per invoke, per stream and per task; slow:
        /// 500 each) and collect with the local development rail, which accepts vouchers signed by any
        /// `accord wallet`. Paid tasks need a durable store (the default SQLite file is one).
        #[arg(long, env = "ACCORD_DEMO_PRICES")]
        demo_prices: bool,
        /// Let anonymous callers list tasks. They all share one owner, so each would see the task
        /// ids — the capabilities — of all the others: off by default, on for the conformance agent.
        #[arg(long, env = "ACCORD_ANONYMOUS_LIST")]
        anonymous_list: bool,
        /// Serve no landing page: no `/` (the page that shows the card and lets a browser try the
        /// skills), `/favicon.svg` or `/assets/…`.
        #[arg(long, env = "ACCORD_NO_LANDING")]
        no_landing: bool,
        /// Also serve the A2A gRPC binding on this port (a second listener on the same address;
        /// the card lists it there). Without it, gRPC is served on the HTTP port (HTTP/2) and the
        /// card lists that.
        #[arg(long, env = "ACCORD_GRPC_PORT", conflicts_with = "no_grpc")]
        grpc_port: Option<u16>,
        /// Serve no gRPC binding (and list none on the card).
        #[arg(long, env = "ACCORD_NO_GRPC")]
        no_grpc: bool,
        #[command(flatten)]
        push: accord_cli::push_cmd::PushServeArgs,
        #[command(flatten)]
        connections: serve_limits::ConnectionArgs,
        #[command(flatten)]
        budgets: Box<accord_cli::budgets::BudgetArgs>,
        #[command(flatten)]
        observe: Box<serve_observe::ObserveArgs>,
    },
    /// Manage a task's webhooks on an A2A agent, or receive webhooks locally.
    Push {
        #[command(subcommand)]
        command: accord_cli::push_cmd::PushCommand,
    },
    /// Make or inspect a local-rail wallet (for `--wallet` and `accord serve --demo-prices`).
    Wallet {
        #[command(subcommand)]
        command: WalletCommand,
    },
    /// Call a JSON-RPC tasks endpoint: tasks/send, tasks/get, tasks/cancel.
    Rpc {
        #[command(subcommand)]
        command: RpcCommand,
    },
    /// Create, read, list, cancel and watch owned tasks.
    Task {
        #[command(subcommand)]
        command: TaskCommand,
    },
    /// Work with agent cards.
    Card {
        #[command(subcommand)]
        command: CardCommand,
    },
    /// Invoke a skill and print its output.
    Invoke {
        /// The agent's base URL or card URL.
        url: String,
        /// The skill key.
        skill: String,
        /// The input as JSON (`-` reads it from standard input).
        input: String,
        /// Idempotency-Key to send (20 to 256 characters); a retry with the same key is not run twice.
        #[arg(long)]
        idempotency_key: Option<String>,
        /// Print the whole response as one line of JSON instead of the pretty output.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        wallet: WalletArgs,
    },
    /// Stream a skill and print its events as they arrive.
    Stream {
        /// The agent's base URL or card URL.
        url: String,
        /// The skill key.
        skill: String,
        /// The input as JSON (`-` reads it from standard input).
        input: String,
        /// Print each event's data as one line of JSON.
        #[arg(long)]
        json: bool,
    },
}

/// How the store keeps tasks.
#[derive(Debug, clap::Args)]
struct StoreArgs {
    /// SQLite only: when a commit waits for the disk. `normal` (the default) survives a killed
    /// process; `full` also survives a loss of power, at about a millisecond per commit. Paid
    /// tasks are always committed as with `full`.
    #[arg(long, value_enum, env = "ACCORD_SYNC")]
    sync: Option<SyncArg>,
    /// The in-process store (`--store memory`): the most tasks it keeps. When full, the terminal
    /// tasks changed longest ago make room; new tasks are refused when none has ended.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..), env = "ACCORD_MEMORY_TASKS")]
    memory_tasks: u64,
    /// The in-process store: the most bytes its tasks may take (inputs, histories, artifacts,
    /// results and logs, as their JSON length), e.g. `64MiB`, `1GiB` or a number of bytes.
    #[arg(long, default_value = "64MiB", value_parser = parse_bytes, env = "ACCORD_MEMORY_BYTES")]
    memory_bytes: usize,
}

/// `--sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SyncArg {
    /// Survives a killed process.
    Normal,
    /// Also survives a loss of power.
    Full,
}

impl StoreArgs {
    fn options(&self) -> StoreOptions {
        StoreOptions {
            sync: self.sync.map(|sync| match sync {
                SyncArg::Normal => Synchronous::Normal,
                SyncArg::Full => Synchronous::Full,
            }),
            memory: MemoryStoreConfig {
                max_tasks: usize::try_from(self.memory_tasks).unwrap_or(usize::MAX),
                max_bytes: self.memory_bytes,
                ..MemoryStoreConfig::default()
            },
            ..StoreOptions::default()
        }
    }
}

/// How this process works as one of several workers on a shared store.
#[derive(Debug, clap::Args)]
struct WorkerArgs {
    /// This worker's id (default: random), used to fence its writes on a shared store.
    #[arg(long, env = "ACCORD_WORKER_ID")]
    worker_id: Option<String>,
    /// Seconds a task's lease lasts without renewal: a crashed worker's tasks are taken over
    /// after at most this long.
    #[arg(long, default_value_t = 30.0, value_parser = positive_seconds)]
    lease_ttl: f64,
    /// Seconds between two looks for tasks whose worker died (durable stores only).
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    recovery_interval: f64,
    /// The most unfinished tasks one caller (owner) may have at once; more are refused with a
    /// retryable error (429), so one caller cannot fill the store. 0: no limit. Set the same on
    /// every worker of a shared store.
    #[arg(long, default_value_t = accord_engine::task::DEFAULT_MAX_ACTIVE_PER_OWNER, env = "ACCORD_MAX_ACTIVE_PER_OWNER")]
    max_active_per_owner: usize,
    /// Requests a second each caller may make on the task and invoke routes, as `N/s` (off by
    /// default): an authenticated caller is counted by its owner, an anonymous one by its address.
    /// Over it: 429 with Retry-After. Counted per process.
    #[arg(long, value_parser = RateLimitConfig::parse, env = "ACCORD_RATE_LIMIT")]
    rate_limit: Option<RateLimitConfig>,
    /// With --rate-limit: how many requests a caller may make at once (default: the rate).
    #[arg(long, requires = "rate_limit", value_parser = clap::value_parser!(u32).range(1..), env = "ACCORD_RATE_BURST")]
    rate_burst: Option<u32>,
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0 => Ok(seconds),
        _ => Err("expected a number of seconds above 0 and at most 86400".into()),
    }
}

impl WorkerArgs {
    /// `--rate-limit` with its `--rate-burst`.
    fn rate_limit(&self) -> Option<RateLimitConfig> {
        let burst = self.rate_burst.and_then(std::num::NonZeroU32::new);
        self.rate_limit.map(|rate| burst.map_or(rate, |burst| rate.burst(burst)))
    }

    fn runtime_config(&self) -> RuntimeConfig {
        let mut config = RuntimeConfig::default()
            .lease_ttl(Duration::from_secs_f64(self.lease_ttl))
            .recovery_interval(Some(Duration::from_secs_f64(self.recovery_interval)))
            .max_active_per_owner(Some(self.max_active_per_owner).filter(|limit| *limit > 0));
        if let Some(worker_id) = &self.worker_id {
            config = config.worker_id(worker_id.clone());
        }
        config
    }
}

#[derive(Debug, clap::Args)]
struct RpcTarget {
    /// The JSON-RPC tasks endpoint URL (e.g. `https://agent.example.com/a2a/tasks`).
    url: String,
    /// Sent as `Authorization: Bearer <token>`.
    #[arg(long, env = "ACCORD_BEARER", hide_env_values = true)]
    bearer: Option<String>,
    /// Allow plain http:// to a loopback host (https is required otherwise).
    #[arg(long)]
    allow_loopback_http: bool,
}

#[derive(Debug, Subcommand)]
enum RpcCommand {
    /// tasks/send: start a task running SKILL on the JSON object input.
    Send {
        #[command(flatten)]
        target: RpcTarget,
        /// The skill key.
        skill: String,
        /// The input as a JSON object (`-` reads it from standard input).
        input: String,
    },
    /// tasks/get: print a task's status.
    Get {
        #[command(flatten)]
        target: RpcTarget,
        /// The task id.
        id: String,
    },
    /// tasks/cancel: cancel a task.
    Cancel {
        #[command(flatten)]
        target: RpcTarget,
        /// The task id.
        id: String,
    },
}

/// Paying for priced skills with a local-rail wallet.
#[derive(Debug, clap::Args)]
struct WalletArgs {
    /// A wallet file (made by `accord wallet new`) that pays when the agent asks for payment
    /// (402): its signed vouchers are what `accord serve --demo-prices` accepts.
    #[arg(long, env = "ACCORD_WALLET")]
    wallet: Option<std::path::PathBuf>,
    /// The most one payment may cost, in the asset's smallest unit; a dearer price is declined.
    #[arg(long, requires = "wallet")]
    max_amount: Option<String>,
}

impl WalletArgs {
    /// A client that pays with the wallet, when one is given.
    fn client(&self) -> Result<Client, Failure> {
        let Some(path) = &self.wallet else { return Ok(Client::new()) };
        let wallet = accord_payments::wallet::Wallet::load(path)
            .map_err(|error| usage(format!("--wallet {}: {error}", path.display())))?;
        let wallet = match &self.max_amount {
            Some(max) => {
                wallet.with_max_amount(max.clone()).map_err(|error| usage(format!("--max-amount: {error}")))?
            }
            None => wallet,
        };
        Ok(Client::new().with_payments(std::sync::Arc::new(wallet)))
    }
}

/// `accord wallet …`.
#[derive(Debug, Subcommand)]
enum WalletCommand {
    /// Make a new wallet file (an Ed25519 key; readable by its owner only) and print its payer id.
    New {
        /// Where to write it.
        #[arg(long)]
        out: std::path::PathBuf,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Print a wallet's payer id.
    Show {
        /// The wallet file.
        path: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum TaskCommand {
    /// Create a task running SKILL on the JSON input; prints the task id and its access token.
    Send {
        /// The agent's base URL or card URL.
        url: String,
        /// The skill key.
        skill: String,
        /// The input as JSON (`-` reads it from standard input).
        input: String,
        /// Access token to own the task (20 to 256 characters); generated when absent.
        #[arg(long, env = "ACCORD_TASK_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// The conversation the task belongs to.
        #[arg(long)]
        context: Option<String>,
        /// Wait until the task ends and print it.
        #[arg(long)]
        wait: bool,
        /// How long `--wait` waits, in seconds.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        #[command(flatten)]
        wallet: WalletArgs,
    },
    /// Print a task.
    Get {
        /// The agent's base URL or card URL.
        url: String,
        /// The task id.
        id: String,
        /// The task's access token.
        #[arg(long, env = "ACCORD_TASK_TOKEN", hide_env_values = true)]
        token: String,
    },
    /// Cancel a task and print it.
    Cancel {
        /// The agent's base URL or card URL.
        url: String,
        /// The task id.
        id: String,
        /// The task's access token.
        #[arg(long, env = "ACCORD_TASK_TOKEN", hide_env_values = true)]
        token: String,
    },
    /// Print a task's updates as they happen, until it ends.
    Watch {
        /// The agent's base URL or card URL.
        url: String,
        /// The task id.
        id: String,
        /// The task's access token.
        #[arg(long, env = "ACCORD_TASK_TOKEN", hide_env_values = true)]
        token: String,
        /// Resume after this event id.
        #[arg(long)]
        after: Option<String>,
    },
    /// List the tasks an access token owns, newest first.
    List {
        /// The agent's base URL or card URL.
        url: String,
        /// The access token.
        #[arg(long, env = "ACCORD_TASK_TOKEN", hide_env_values = true)]
        token: String,
        /// Only these statuses (comma separated: running, completed, failed, cancelled).
        #[arg(long, value_delimiter = ',')]
        status: Vec<String>,
        /// Only this context.
        #[arg(long)]
        context: Option<String>,
        /// Page size (at most 1000).
        #[arg(long)]
        limit: Option<usize>,
        /// How many to skip.
        #[arg(long)]
        offset: Option<usize>,
    },
}

#[derive(Debug, Subcommand)]
enum CardCommand {
    /// Fetch an agent's card (from the URL, then its well-known paths) and print it.
    Show {
        /// The agent's base URL or card URL.
        url: String,
    },
    /// Generate a signing key pair: `DIR/<alg>.private.pem` (mode 0600) and `DIR/<alg>.public.pem`.
    Keygen(card_cmd::KeygenArgs),
    /// Sign an identity card: prints the envelope {card, signedAt, expiresAt, signature}; with
    /// --jws, add a JWS to an A2A agent card's `signatures`.
    Sign(card_cmd::SignArgs),
    /// Verify a signed card (an envelope, or an agent card's JWS signatures) against trusted
    /// keys; exits 0 only when it is valid.
    Verify(card_cmd::VerifyArgs),
    /// Print public keys as a JWKS (for `jku`, or for `accord card verify --jwks`).
    Jwks(card_cmd::JwksArgs),
    /// List every problem of an identity card (or a signed envelope's card); non-zero exit if any.
    Lint(card_cmd::LintArgs),
}

/// A failure with the exit code it maps to.
struct Failure {
    code: u8,
    message: String,
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        let code = match error {
            ClientError::Transport { .. } | ClientError::CardNotFound { .. } => EXIT_UNREACHABLE,
            ClientError::InvalidIdempotencyKey | ClientError::InvalidAccessToken | ClientError::InvalidUrl { .. } => {
                EXIT_USAGE
            }
            _ => EXIT_FAILED,
        };
        Self { code, message: error.to_string() }
    }
}

fn usage(message: impl Into<String>) -> Failure {
    Failure { code: EXIT_USAGE, message: message.into() }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve {
            agent,
            a2a_error_mapping,
            host,
            port,
            base_path,
            auth,
            store,
            store_options,
            workers,
            signed_card,
            demo_prices,
            anonymous_list,
            no_landing,
            grpc_port,
            no_grpc,
            push,
            connections,
            budgets,
            observe,
        } => {
            let mapping = match a2a_error_mapping {
                Some(ErrorMappingArg::V100) => ErrorMapping::V1_0_0,
                Some(ErrorMappingArg::V101) => ErrorMapping::V1_0_1,
                None if agent == AgentKind::Conformance => ErrorMapping::V1_0_0,
                None => ErrorMapping::V1_0_1,
            };
            let anonymous_list = anonymous_list || agent == AgentKind::Conformance;
            let options = ServeOptions {
                agent,
                mapping,
                auth,
                demo_prices,
                anonymous_list,
                landing: !no_landing,
                grpc: match (no_grpc, grpc_port) {
                    (true, _) => GrpcServe::Off,
                    (false, None) => GrpcServe::SamePort,
                    (false, Some(port)) => GrpcServe::Port(port),
                },
                push,
                connections,
                budgets,
                observe,
            };
            let store = (store, options.budgets.store(store_options.options()));
            serve(&host, port, &base_path, options, &store, &workers, &signed_card).await
        }
        Command::Rpc { command } => rpc(command).await,
        Command::Card { command: CardCommand::Show { url } } => card_show(&url).await,
        Command::Card { command: CardCommand::Keygen(args) } => card_cmd::keygen(args),
        Command::Card { command: CardCommand::Sign(args) } => card_cmd::sign(args),
        Command::Card { command: CardCommand::Verify(args) } => card_cmd::verify(args).await,
        Command::Card { command: CardCommand::Lint(args) } => card_cmd::lint(args).await,
        Command::Card { command: CardCommand::Jwks(args) } => card_cmd::jwks(args),
        Command::Invoke { url, skill, input, idempotency_key, json, wallet } => {
            invoke(&url, &skill, &input, idempotency_key, json, &wallet).await
        }
        Command::Wallet { command } => wallet(command),
        Command::Stream { url, skill, input, json } => stream(&url, &skill, &input, json).await,
        Command::Task { command } => task(command).await,
        Command::Push { command } => {
            accord_cli::push_cmd::run(command).await.map_err(|message| Failure { code: EXIT_FAILED, message })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// `/x/y/` → `/x/y`; `` and `/` → ``.
fn normalize_base_path(base_path: &str) -> String {
    let trimmed = base_path.trim().trim_matches('/');
    if trimmed.is_empty() { String::new() } else { format!("/{trimmed}") }
}

/// What `accord serve` runs, beside where.
struct ServeOptions {
    agent: AgentKind,
    mapping: ErrorMapping,
    auth: Box<serve_auth::AuthArgs>,
    demo_prices: bool,
    anonymous_list: bool,
    landing: bool,
    grpc: GrpcServe,
    push: accord_cli::push_cmd::PushServeArgs,
    connections: serve_limits::ConnectionArgs,
    budgets: Box<accord_cli::budgets::BudgetArgs>,
    observe: Box<serve_observe::ObserveArgs>,
}

/// Where `accord serve` serves the gRPC binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GrpcServe {
    Off,
    /// On the HTTP listener.
    SamePort,
    /// On the HTTP listener and on a listener of its own at this port.
    Port(u16),
}

async fn serve(
    host: &str,
    port: u16,
    base_path: &str,
    options: ServeOptions,
    (store, store_options): &(StoreSpec, StoreOptions),
    workers: &WorkerArgs,
    signed_card: &card_cmd::SignedCardArgs,
) -> Result<(), Failure> {
    let ServeOptions {
        agent: kind,
        mapping,
        auth,
        demo_prices,
        anonymous_list,
        landing,
        grpc,
        push,
        connections,
        budgets,
        observe,
    } = options;
    let telemetry = observe.init().map_err(usage)?;
    if demo_prices && kind != AgentKind::Demo {
        return Err(usage("--demo-prices prices the demo agent; it cannot be used with --agent conformance"));
    }
    let agent = match kind {
        AgentKind::Demo if demo_prices => accord_cli::demo::priced_agent(),
        AgentKind::Demo => accord_cli::demo::agent(),
        AgentKind::Conformance => accord_cli::conformance::agent(),
    }
    .map_err(|error| Failure { code: EXIT_FAILED, message: error.to_string() })?;
    let jws_card = signed_card.load_jws()?;
    let signed_card = signed_card.load(host, agent.name())?;
    // Every credential the flags admit is the demo's operator: granted `demo:slow`, and shown the
    // extended card (the `slow` skill in detail).
    let mut auth = auth.config(&[accord_cli::demo::SLOW_SCOPE]).await.map_err(usage)?;
    if !auth.is_empty() && kind == AgentKind::Demo {
        auth = auth.extended_card(accord_cli::demo::extended_skills());
    }
    if store_options.sync.is_some() && !matches!(store, StoreSpec::Sqlite(_)) {
        return Err(usage("--sync sets how a SQLite store syncs; it cannot be used with this --store"));
    }
    let task_store = open_store(store, store_options).await.map_err(|error| Failure {
        code: EXIT_FAILED,
        message: format!("cannot open the task store {}: {error}", store.describe()),
    })?;
    let durability = task_store.durability();
    let runtime = TaskRuntime::new(agent.clone(), task_store, budgets.runtime(workers.runtime_config()));
    let jsonrpc = JsonRpcTasksConfig {
        scopes: [("slow".to_owned(), accord_cli::demo::SLOW_SCOPE.to_owned())].into(),
        ..JsonRpcTasksConfig::default()
    };
    let mut config = ServerConfig::default().tasks(runtime.clone()).jsonrpc_tasks(Some(jsonrpc));
    // The gRPC listener is bound first, so that the card lists the port it got (`--grpc-port 0`).
    let grpc_listener = match grpc {
        GrpcServe::Port(grpc_port) => {
            Some(tokio::net::TcpListener::bind((host, grpc_port)).await.map_err(|error| Failure {
                code: EXIT_FAILED,
                message: format!("cannot listen on {host}:{grpc_port} for --grpc-port: {error}"),
            })?)
        }
        _ => None,
    };
    let grpc_address = match (&grpc_listener, grpc) {
        (_, GrpcServe::Off) => None,
        (Some(listener), _) => Some(accord_server::GrpcAddress::Port(
            listener.local_addr().map_err(|error| Failure { code: EXIT_FAILED, message: error.to_string() })?.port(),
        )),
        (None, _) => Some(accord_server::GrpcAddress::SamePort),
    };
    config.a2a = config.a2a.map(|a2a| A2aConfig { error_mapping: mapping, grpc: grpc_address.clone(), ..a2a });
    if anonymous_list {
        config = config.task_service(ServiceConfig::default().anonymous(AnonymousAccess::ListShared));
    }
    config = config.idempotency(budgets.idempotency()).landing(landing);
    config.task_service = budgets.service(config.task_service);
    config.push = push.settings().map_err(usage)?;
    config.task_service.push_key = push.key(durability == Durability::Durable).map_err(usage)?;
    if kind == AgentKind::Conformance {
        // The conformance kit drives every interface on the card: only the official A2A 1.0 faces.
        config = config.lucid(false).jsonrpc_tasks(None);
        config.a2a = config.a2a.map(|a2a| A2aConfig { v03: false, ..a2a });
    }
    if demo_prices {
        let payments = accord_cli::demo::local_payments();
        payments.check(&agent).map_err(|reason| Failure { code: EXIT_FAILED, message: reason })?;
        config = config.payments(payments);
    }
    if let Some(signed_card) = signed_card {
        config = config.signed_card(signed_card);
    }
    let metrics_at = observe.metrics_at();
    config = config.metrics(metrics_at == serve_observe::MetricsAt::AgentListener);
    if let Some(jws_card) = jws_card {
        config = config.jws_card(jws_card);
    }
    let faces = accord_server::Faces::new(&agent, config.auth(auth).rate_limit(workers.rate_limit()));
    let router = faces.router();
    let base_path = normalize_base_path(base_path);
    // gRPC methods are called at `/lf.a2a.v1.A2AService/…` whatever the base path.
    let app = if base_path.is_empty() {
        router
    } else {
        axum::Router::new().nest(&base_path, router).merge(faces.a2a_grpc())
    };
    // The printed URL ends with `/`, which a nested router does not match: it leads to the page.
    let app = if landing && !base_path.is_empty() {
        let page = base_path.clone();
        let to_page = move || std::future::ready(axum::response::Redirect::permanent(&page));
        app.route(&format!("{base_path}/"), axum::routing::get(to_page))
    } else {
        app
    };
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|error| Failure { code: EXIT_FAILED, message: format!("cannot listen on {host}:{port}: {error}") })?;
    let address: SocketAddr =
        listener.local_addr().map_err(|error| Failure { code: EXIT_FAILED, message: error.to_string() })?;
    let host_part = if address.is_ipv6() { format!("[{}]", address.ip()) } else { address.ip().to_string() };
    let url = format!("http://{host_part}:{}{base_path}/", address.port());
    // Written without panicking: a closed stdout must not stop the server.
    let mut out = std::io::stdout();
    let name = match kind {
        AgentKind::Demo => "demo",
        AgentKind::Conformance => "conformance",
    };
    let _ = writeln!(out, "Accord {name} agent listening on {url}");
    let _ = writeln!(out, "card: {url}.well-known/agent-card.json");
    if kind == AgentKind::Demo {
        let _ = writeln!(
            out,
            "JSON-RPC tasks: {url}a2a/tasks (anonymous for echo, summarize and ticks; slow needs scope {})",
            accord_cli::demo::SLOW_SCOPE
        );
    }
    let edition = match mapping {
        ErrorMapping::V1_0_0 => "v1.0.0",
        _ => "v1.0.1",
    };
    let _ = writeln!(out, "A2A v1.0: {url}a2a/jsonrpc (JSON-RPC), {url}a2a/rest (HTTP+JSON; {edition} error statuses)");
    match grpc_address {
        Some(accord_server::GrpcAddress::Port(grpc_port)) => {
            let _ = writeln!(out, "A2A v1.0 gRPC: {host_part}:{grpc_port} (and on the HTTP port)");
        }
        Some(_) => {
            let _ = writeln!(out, "A2A v1.0 gRPC: {host_part}:{} (HTTP/2 on the same port)", address.port());
        }
        None => {}
    }
    let _ = writeln!(out, "task store: {} ({})", store.describe(), durability.as_str());
    match metrics_at {
        serve_observe::MetricsAt::AgentListener => {
            let _ = writeln!(out, "metrics: {url}metrics");
        }
        serve_observe::MetricsAt::Own(address) => {
            let metrics = accord_server::observe::metrics_router(Some(runtime.clone()));
            let listener = tokio::net::TcpListener::bind(address).await.map_err(|error| Failure {
                code: EXIT_FAILED,
                message: format!("cannot listen on {address} for --metrics-addr: {error}"),
            })?;
            let bound =
                listener.local_addr().map_err(|error| Failure { code: EXIT_FAILED, message: error.to_string() })?;
            let _ = writeln!(out, "metrics: http://{bound}/metrics");
            tokio::spawn(async move { axum::serve(listener, metrics).await });
        }
        serve_observe::MetricsAt::Off => {}
    }
    if demo_prices {
        let _ = writeln!(
            out,
            "payments: local rail (summarize 1000 per invoke and per task, slow 500 per task); pay with --wallet"
        );
    }
    let _ = out.flush();
    // Connection limits, TCP_NODELAY and graceful shutdown: accord_server::serve. The gRPC
    // listener serves the same app (so its card and extended card are right there too) and
    // stops with the HTTP one.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let grpc_server = grpc_listener.map(|listener| {
        let mut stopped = stopped.clone();
        let server = accord_server::serve::Server::new(listener, app.clone())
            .limits(connections.limits())
            .with_graceful_shutdown(async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            });
        tokio::spawn(server.run())
    });
    let served = accord_server::serve::Server::new(listener, app)
        .limits(connections.limits())
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            let _ = stop.send(true);
        })
        .await;
    if let Some(grpc_server) = grpc_server {
        let _ = grpc_server.await;
    }
    served.map_err(|error| Failure { code: EXIT_FAILED, message: error.to_string() })?;
    runtime.close().await;
    telemetry.shutdown();
    Ok(())
}

impl From<RpcClientError> for Failure {
    fn from(error: RpcClientError) -> Self {
        let code = match error {
            RpcClientError::Transport { .. } => EXIT_UNREACHABLE,
            RpcClientError::BadPeerUrl { .. } | RpcClientError::BadSkill | RpcClientError::BadTaskId => EXIT_USAGE,
            _ => EXIT_FAILED,
        };
        let mut message = error.to_string();
        if matches!(error, RpcClientError::BadPeerUrl { .. }) {
            message.push_str(" (use https, or --allow-loopback-http for a local agent)");
        }
        Self { code, message }
    }
}

fn rpc_options(target: &RpcTarget) -> Result<RpcOptions, Failure> {
    let mut options = RpcOptions { allow_loopback_http: target.allow_loopback_http, ..RpcOptions::default() };
    if let Some(token) = &target.bearer {
        let value = format!("Bearer {}", token.trim())
            .parse()
            .map_err(|_| usage("--bearer contains characters a header cannot carry"))?;
        options.headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(options)
}

async fn rpc(command: RpcCommand) -> Result<(), Failure> {
    let client = Client::new();
    let result = match command {
        RpcCommand::Send { target, skill, input } => {
            let input = match parse_input(&input)? {
                Value::Object(input) => input,
                _ => return Err(usage("the input must be a JSON object")),
            };
            let options = rpc_options(&target)?;
            client.tasks_send(&target.url, RpcTask { skill, input: Some(input) }, options).await?
        }
        RpcCommand::Get { target, id } => client.tasks_get(&target.url, &id, rpc_options(&target)?).await?,
        RpcCommand::Cancel { target, id } => client.tasks_cancel(&target.url, &id, rpc_options(&target)?).await?,
    };
    print_json(&result, true);
    Ok(())
}

async fn task(command: TaskCommand) -> Result<(), Failure> {
    let mut client = Client::new();
    match command {
        TaskCommand::Send { url, skill, input, token, context, wait, timeout, wallet } => {
            client = wallet.client()?;
            let input = parse_input(&input)?;
            let card = client.fetch_card(&url).await?;
            let options = SendOptions { access_token: token, context_id: context, ..SendOptions::default() };
            let sent = client.send_message(&card, &skill, input, options).await.map_err(|error| {
                let mut message = error.to_string();
                let unanswered = matches!(error.cause, Some(ClientError::Transport { .. }));
                if error.status.is_none() && unanswered {
                    message.push_str(" (the task may exist: list with the access token before retrying)");
                }
                Failure { code: if unanswered { EXIT_UNREACHABLE } else { EXIT_FAILED }, message }
            })?;
            if !wait {
                let mut printed = json!({"taskId": sent.access.task_id, "accessToken": sent.access.access_token,
                                         "status": sent.status});
                if let Some(settlement) = &sent.settlement {
                    printed["settlement"] = settlement_json(settlement);
                }
                print_json(&printed, true);
                return Ok(());
            }
            eprintln!("task {} (access token: {})", sent.access.task_id, sent.access.access_token);
            let task = wait_with_spinner(&client, &card, &sent.access, Duration::from_secs(timeout)).await?;
            print_task(&task)
        }
        TaskCommand::Get { url, id, token } => {
            let card = client.fetch_card(&url).await?;
            let task = client.get_task(&card, &TaskAccess { task_id: id, access_token: token }).await?;
            print_json(&serde_json::to_value(&task).unwrap_or(Value::Null), true);
            Ok(())
        }
        TaskCommand::Cancel { url, id, token } => {
            let card = client.fetch_card(&url).await?;
            let task = client.cancel_task(&card, &TaskAccess { task_id: id, access_token: token }).await?;
            print_json(&serde_json::to_value(&task).unwrap_or(Value::Null), true);
            Ok(())
        }
        TaskCommand::Watch { url, id, token, after } => {
            let card = client.fetch_card(&url).await?;
            let access = TaskAccess { task_id: id, access_token: token };
            let mut events = client.subscribe_task(&card, &access, after.as_deref()).await?;
            while let Some(event) = events.next().await {
                let event = event?;
                let data = serde_json::to_string(&event.data).unwrap_or_default();
                println!("{} {} {data}", event.id.unwrap_or_default(), event.event);
            }
            Ok(())
        }
        TaskCommand::List { url, token, status, context, limit, offset } => {
            let mut statuses = Vec::new();
            for name in status.iter().map(|name| name.trim()).filter(|name| !name.is_empty()) {
                statuses.push(TaskStatus::parse(name).ok_or_else(|| {
                    usage(format!("unknown status {name:?}: use running, completed, failed or cancelled"))
                })?);
            }
            let card = client.fetch_card(&url).await?;
            let options = ListOptions { context_id: context, status: statuses, limit, offset };
            let list = client.list_tasks(&card, &token, &options).await?;
            print_json(&serde_json::to_value(&list).unwrap_or(Value::Null), true);
            Ok(())
        }
    }
}

/// Polls until the task ends, turning a spinner on standard error when it is a terminal.
async fn wait_with_spinner(
    client: &Client,
    card: &accord_types::card::AgentCard,
    access: &TaskAccess,
    timeout: Duration,
) -> Result<TaskView, Failure> {
    const FRAMES: [char; 4] = ['|', '/', '-', '\\'];
    let spinner = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut frame = 0;
    loop {
        let task = client.get_task(card, access).await?;
        if task.status.is_terminal() {
            if spinner {
                eprint!("\r          \r");
            }
            return Ok(task);
        }
        if started.elapsed() >= timeout {
            return Err(Failure {
                code: EXIT_FAILED,
                message: format!("task {} still running after {}s", access.task_id, timeout.as_secs()),
            });
        }
        if spinner {
            eprint!("\r{} waiting", FRAMES[frame % FRAMES.len()]);
            let _ = std::io::stderr().flush();
            frame += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Prints a finished task; a task that did not complete is a failure of the command.
fn print_task(task: &TaskView) -> Result<(), Failure> {
    print_json(&serde_json::to_value(task).unwrap_or(Value::Null), true);
    match task.status {
        TaskStatus::Completed => Ok(()),
        other => Err(Failure { code: EXIT_FAILED, message: format!("task {} ended {}", task.task_id, other.as_str()) }),
    }
}

async fn card_show(url: &str) -> Result<(), Failure> {
    let card = Client::new().fetch_card(url).await?;
    print_json(&serde_json::to_value(&card).unwrap_or(Value::Null), true);
    Ok(())
}

fn parse_input(input: &str) -> Result<Value, Failure> {
    let text = if input == "-" {
        let mut buffer = String::new();
        std::io::stdin()
            .read_to_string(&mut buffer)
            .map_err(|error| usage(format!("cannot read standard input: {error}")))?;
        buffer
    } else {
        input.to_owned()
    };
    serde_json::from_str(&text).map_err(|error| usage(format!("the input is not valid JSON: {error}")))
}

async fn invoke(
    url: &str,
    skill: &str,
    input: &str,
    idempotency_key: Option<String>,
    json: bool,
    wallet: &WalletArgs,
) -> Result<(), Failure> {
    let input = parse_input(input)?;
    let client = wallet.client()?;
    let card = client.fetch_card(url).await?;
    let options = InvokeOptions { idempotency_key, ..InvokeOptions::default() };
    let (response, settlement) = client.invoke_with_settlement(&card, skill, input, options).await?;
    if let Some(settlement) = &settlement {
        eprintln!("paid: {}", settlement_json(settlement));
    }
    if json {
        print_json(&serde_json::to_value(&response).unwrap_or(Value::Null), false);
    } else {
        print_json(response.output.as_ref().unwrap_or(&Value::Null), true);
    }
    Ok(())
}

/// Settlement evidence as JSON (the header values as received).
fn settlement_json(settlement: &accord_client::Settlement) -> Value {
    let mut evidence = serde_json::Map::new();
    for (name, value) in [
        ("paymentReceipt", &settlement.payment_receipt),
        ("paymentResponse", &settlement.payment_response),
        ("xPaymentResponse", &settlement.x_payment_response),
    ] {
        if let Some(value) = value {
            evidence.insert(name.into(), Value::String(value.clone()));
        }
    }
    Value::Object(evidence)
}

fn wallet(command: WalletCommand) -> Result<(), Failure> {
    use accord_payments::wallet::Wallet;
    match command {
        WalletCommand::New { out, force } => {
            if out.exists() && !force {
                return Err(usage(format!("{} exists (use --force to replace it)", out.display())));
            }
            let wallet =
                Wallet::generate().map_err(|error| Failure { code: EXIT_FAILED, message: error.to_string() })?;
            wallet.save(&out).map_err(|error| Failure { code: EXIT_FAILED, message: error.to_string() })?;
            println!("{}", wallet.payer_id());
            Ok(())
        }
        WalletCommand::Show { path } => {
            let wallet = Wallet::load(&path).map_err(|error| usage(format!("{}: {error}", path.display())))?;
            println!("{}", wallet.payer_id());
            Ok(())
        }
    }
}

async fn stream(url: &str, skill: &str, input: &str, json: bool) -> Result<(), Failure> {
    let input = parse_input(input)?;
    let client = Client::new();
    let card = client.fetch_card(url).await?;
    let mut events = client.stream(&card, skill, input).await?;
    let mut outcome = Err(Failure { code: EXIT_FAILED, message: "the stream ended before run-end".into() });
    while let Some(event) = events.next().await {
        let event = event?;
        if json {
            print_json(&event.data, false);
        } else {
            println!("{}", describe(&event.event, &event.data));
        }
        if event.is_run_end() {
            outcome = match event.data.get("status").and_then(Value::as_str) {
                Some("succeeded") => Ok(()),
                status => Err(Failure {
                    code: EXIT_FAILED,
                    message: format!("the run ended {}", status.unwrap_or("without a status")),
                }),
            };
            break;
        }
    }
    outcome
}

/// One human-readable line for a stream event.
fn describe(kind: &str, data: &Value) -> String {
    let field =
        |name: &str| data.get(name).map(|value| value.as_str().map_or_else(|| value.to_string(), str::to_owned));
    let detail = match kind {
        "delta" => field("delta"),
        "text" => field("text"),
        "error" => Some(format!("{}: {}", field("code").unwrap_or_default(), field("message").unwrap_or_default())),
        "run-end" => Some(match data.get("output") {
            Some(output) => format!("{} {output}", field("status").unwrap_or_default()),
            None => field("status").unwrap_or_default(),
        }),
        _ => None,
    };
    let sequence = data.get("sequence").map_or_else(String::new, |sequence| format!("[{sequence}] "));
    match detail {
        Some(detail) => format!("{sequence}{kind}: {detail}"),
        None => format!("{sequence}{kind}"),
    }
}

fn print_json(value: &Value, pretty: bool) {
    let text = if pretty { serde_json::to_string_pretty(value) } else { serde_json::to_string(value) };
    println!("{}", text.unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_binary_units() {
        assert_eq!(parse_bytes("65536"), Ok(65_536));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("1KiB"), Ok(1024));
        for refused in ["", "0", "0MiB", "64MB", "-1", "1.5GiB", "GiB", "99999999999999999999999GiB"] {
            assert!(parse_bytes(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn store_flags_set_the_store_options() {
        let cli =
            Cli::try_parse_from(["accord", "serve", "--sync", "full", "--memory-tasks", "5", "--memory-bytes", "1MiB"])
                .expect("valid flags");
        let Command::Serve { store_options, .. } = cli.command else { panic!("serve") };
        let options = store_options.options();
        assert_eq!(options.sync, Some(Synchronous::Full));
        assert_eq!((options.memory.max_tasks, options.memory.max_bytes), (5, 1 << 20));
        let cli = Cli::try_parse_from(["accord", "serve"]).expect("defaults");
        let Command::Serve { store_options, .. } = cli.command else { panic!("serve") };
        let options = store_options.options();
        assert_eq!(options.sync, None, "the store's own default (normal) applies");
        assert_eq!(options.memory, MemoryStoreConfig::default());
        assert!(Cli::try_parse_from(["accord", "serve", "--memory-tasks", "0"]).is_err());
        assert!(Cli::try_parse_from(["accord", "serve", "--sync", "off"]).is_err());
    }
}
