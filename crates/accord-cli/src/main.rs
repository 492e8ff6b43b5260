//! `accord`: serve a demo agent, show an agent's card, invoke or stream its skills.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use accord::serve::{ServeArgs, ServeError, ServeErrorKind};
use accord_cli::tls_args::TlsArgs;
use accord_client::rpc::{RpcOptions, RpcTask};
use accord_client::{Client, ClientError, InvokeOptions, ListOptions, SendOptions, TaskAccess};
use accord_types::a2a::ErrorMapping;
use accord_types::tasks::{TaskStatus, TaskView};
use clap::{Parser, Subcommand};
use futures_util::StreamExt;
use serde_json::{Value, json};

mod card_cmd;
mod card_jws;

/// The allocator of the `accord` binary (feature `mimalloc`, on by default): per request, the
/// server allocates a few hundred small blocks, and mimalloc serves them for less CPU than the C
/// library's malloc (docs/bench/profiles.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an agent over HTTP: the one an agent file describes (`--config`), the demo agent
    /// (skills: echo, summarize, slow, ticks, confirm) or the conformance agent.
    Serve {
        /// Which agent: `demo`, or `conformance` — the A2A conformance kit's scenarios, chosen by
        /// each message's messageId prefix (see docs/demo.md).
        #[arg(long, value_enum, default_value_t = AgentKind::Demo, env = "ACCORD_AGENT", conflicts_with = "config")]
        agent: AgentKind,
        /// Price the demo agent's skills (summarize: 1000 per invoke, per stream and per task; slow:
        /// 500 each) and collect with the local development rail, which accepts vouchers signed by any
        /// `accord wallet`. Paid tasks need a durable store (the default SQLite file is one).
        #[arg(long, env = "ACCORD_DEMO_PRICES", conflicts_with_all = ["pay_rail", "config"])]
        demo_prices: bool,
        /// With `--agent conformance`: serve the A2A 0.3 dialect too (0.3 JSON-RPC and HTTP+JSON,
        /// and the card's 0.3 members), for the 0.3 conformance kit. Off by default because the
        /// 1.0 kit drives every interface the card lists. The demo agent always serves 0.3.
        #[arg(long = "a2a-03", env = "ACCORD_A2A_03")]
        a2a_03: bool,
        /// With `--agent conformance`: declare an authenticated extended card (the `tck` skill
        /// with every scenario listed), shown to callers that present a configured credential
        /// (`--bearer-token`, `--api-key` or `--jwks`, one of which is required). The demo agent
        /// declares one whenever such a credential is configured.
        #[arg(long, env = "ACCORD_EXTENDED_CARD")]
        extended_card: bool,
        #[command(flatten)]
        args: Box<ServeArgs>,
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
        #[command(flatten)]
        tls: TlsArgs,
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
        #[command(flatten)]
        tls: TlsArgs,
    },
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
    #[command(flatten)]
    tls: TlsArgs,
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
    /// A client with the TLS settings `tls` that pays with the wallet, when one is given.
    fn client(&self, tls: &TlsArgs) -> Result<Client, Failure> {
        let client = tls.client()?;
        let Some(path) = &self.wallet else { return Ok(client) };
        let wallet = accord_payments::wallet::Wallet::load(path)
            .map_err(|error| usage(format!("--wallet {}: {error}", path.display())))?;
        let wallet = match &self.max_amount {
            Some(max) => {
                wallet.with_max_amount(max.clone()).map_err(|error| usage(format!("--max-amount: {error}")))?
            }
            None => wallet,
        };
        Ok(client.with_payments(std::sync::Arc::new(wallet)))
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
        #[command(flatten)]
        tls: TlsArgs,
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
        #[command(flatten)]
        tls: TlsArgs,
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
        #[command(flatten)]
        tls: TlsArgs,
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
        #[command(flatten)]
        tls: TlsArgs,
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
        #[command(flatten)]
        tls: TlsArgs,
    },
}

#[derive(Debug, Subcommand)]
enum CardCommand {
    /// Fetch an agent's card (from the URL, then its well-known paths) and print it.
    Show {
        /// The agent's base URL or card URL.
        url: String,
        #[command(flatten)]
        tls: TlsArgs,
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
            ClientError::CardNotFound { .. } => EXIT_UNREACHABLE,
            _ if error.is_unreachable() => EXIT_UNREACHABLE,
            ClientError::InvalidIdempotencyKey
            | ClientError::InvalidAccessToken
            | ClientError::InvalidUrl { .. }
            | ClientError::InvalidSkill { .. }
            | ClientError::InvalidTaskId { .. }
            | ClientError::TlsConfig { .. } => EXIT_USAGE,
            _ => EXIT_FAILED,
        };
        let mut message = error.to_string();
        // A TLS refusal the command's own flags answer says which.
        if let Some(cause) = error.tls_cause() {
            if cause.contains("(unknown issuer)") {
                message.push_str(" (trust the peer's CA with --ca-file)");
            } else if cause.contains("(certificate required)") {
                message.push_str(" (present one with --client-cert and --client-key)");
            }
        }
        if let ClientError::TaskNotCreated(failure) = &error
            && failure.status.is_none()
            && error.is_unreachable()
        {
            message.push_str(" (the task may exist: list with the access token before retrying)");
        }
        Self { code, message }
    }
}

fn usage(message: impl Into<String>) -> Failure {
    Failure { code: EXIT_USAGE, message: message.into() }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match parse_command_line() {
        Ok(cli) => cli,
        Err(failure) => return report(Err(failure)),
    };
    let result = match cli {
        Parsed::AgentFile(file, args) => serve_file(&file, *args).await,
        Parsed::Cli(cli) => run(cli.command).await,
    };
    report(result)
}

/// The command line, with an agent file's settings under it when `serve --config` names one.
enum Parsed {
    Cli(Box<Cli>),
    AgentFile(Box<accord::backends::AgentFile>, Box<ServeArgs>),
}

/// Parses the command line (printing help, or the mistake, and exiting as clap does). For
/// `serve --config FILE`, the file too, with the flags its `[serve]` and `[payments]` tables stand
/// for under the real ones ([`accord::serve::parse_with_agent_file`]).
fn parse_command_line() -> Result<Parsed, Failure> {
    let (cli, file) = accord::serve::parse_with_agent_file::<Cli>()?;
    match (cli, file) {
        (Cli { command: Command::Serve { args, .. } }, Some(file)) => Ok(Parsed::AgentFile(Box::new(file), args)),
        (cli, _) => Ok(Parsed::Cli(Box::new(cli))),
    }
}

fn report(result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

async fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Serve { agent, demo_prices, a2a_03, extended_card, args, .. } => {
            serve(agent, ConformanceOptions { a2a_03, extended_card }, demo_prices, *args).await
        }
        Command::Rpc { command } => rpc(command).await,
        Command::Card { command: CardCommand::Show { url, tls } } => card_show(&url, &tls).await,
        Command::Card { command: CardCommand::Keygen(args) } => card_cmd::keygen(args),
        Command::Card { command: CardCommand::Sign(args) } => card_cmd::sign(args),
        Command::Card { command: CardCommand::Verify(args) } => card_cmd::verify(args).await,
        Command::Card { command: CardCommand::Lint(args) } => card_cmd::lint(args).await,
        Command::Card { command: CardCommand::Jwks(args) } => card_cmd::jwks(args),
        Command::Invoke { url, skill, input, idempotency_key, json, wallet, tls } => {
            invoke(&url, &skill, &input, idempotency_key, json, &wallet.client(&tls)?).await
        }
        Command::Wallet { command } => wallet(command),
        Command::Stream { url, skill, input, json, tls } => stream(&url, &skill, &input, json, &tls).await,
        Command::Task { command } => task(command).await,
        Command::Push { command } => {
            accord_cli::push_cmd::run(command).await.map_err(|message| Failure { code: EXIT_FAILED, message })
        }
    }
}

/// `accord serve --config FILE`: the agent the file describes, through the same
/// [`accord::Serve`] call.
async fn serve_file(file: &accord::backends::AgentFile, args: ServeArgs) -> Result<(), Failure> {
    accord::Serve::from_agent_file(file, args).await?.run().await.map_err(Failure::from)
}

/// What `accord serve --agent conformance` adds to its 1.0-only default.
#[derive(Debug, Clone, Copy, Default)]
struct ConformanceOptions {
    /// `--a2a-03`: the 0.3 dialect too.
    a2a_03: bool,
    /// `--extended-card`: an authenticated extended card.
    extended_card: bool,
}

/// `accord serve`: the demo or conformance agent through the same [`accord::Serve`] call a
/// user's own agent makes; only what each agent is differs.
async fn serve(
    kind: AgentKind,
    conformance: ConformanceOptions,
    demo_prices: bool,
    args: ServeArgs,
) -> Result<(), Failure> {
    if demo_prices && kind != AgentKind::Demo {
        return Err(usage("--demo-prices prices the demo agent; it cannot be used with --agent conformance"));
    }
    if kind != AgentKind::Conformance && (conformance.a2a_03 || conformance.extended_card) {
        return Err(usage(
            "--a2a-03 and --extended-card shape the conformance agent (the demo agent serves 0.3 and declares \
             an extended card already); use them with --agent conformance",
        ));
    }
    // A client certificate mapped to scopes is a credential too (mutual TLS, or a trusted proxy's
    // X-Forwarded-Client-Cert).
    let credentials = args.auth.bearer_token.is_some()
        || !args.auth.api_keys.is_empty()
        || args.auth.jwks.is_some()
        || !args.tls.tls_client_scopes.is_empty();
    if conformance.extended_card && !credentials {
        return Err(usage(
            "--extended-card is shown to authenticated callers: configure a credential with --bearer-token, \
             --api-key or --jwks",
        ));
    }
    let agent = match kind {
        AgentKind::Demo if demo_prices => accord_cli::demo::priced_agent(),
        AgentKind::Demo => accord_cli::demo::agent(),
        AgentKind::Conformance => accord_cli::conformance::agent(),
    }
    .map_err(|error| Failure { code: EXIT_FAILED, message: error.to_string() })?;
    let serve = accord::Serve::with_args(agent, args);
    let serve = match kind {
        // Every credential the flags admit is the demo's operator: granted `demo:slow`, and shown
        // the extended card (the `slow` skill in detail). `slow` needs that scope on every face
        // only when a credential is configured: without one nobody could hold it, and the
        // tutorials call `slow` anonymously.
        AgentKind::Demo => {
            let serve = serve
                .label("demo")
                .operator_scopes([accord_cli::demo::SLOW_SCOPE])
                .extended_skills(accord_cli::demo::extended_skills());
            let serve = if credentials { serve.skill_scope("slow", accord_cli::demo::SLOW_SCOPE) } else { serve };
            if demo_prices {
                serve.payments(accord_cli::demo::local_payments()).note(
                    "payments: local rail (summarize 1000 per invoke and per task, slow 500 per task); pay with --wallet",
                )
            } else {
                serve
            }
        }
        // The conformance kit drives every interface on the card: only the official A2A faces
        // (1.0, and 0.3 when asked for), v1.0.0 error statuses, and every anonymous caller may
        // list.
        AgentKind::Conformance => {
            let mut serve = serve.label("conformance").default_error_mapping(ErrorMapping::V1_0_0);
            serve.args_mut().anonymous_list = true;
            if conformance.extended_card {
                serve = serve.extended_skills(accord_cli::conformance::extended_skills());
            }
            let v03 = conformance.a2a_03;
            serve.server_config(move |config| {
                let mut config = config.lucid(false).jsonrpc_tasks(None);
                config.a2a = config.a2a.map(|a2a| accord_server::A2aConfig { v03, ..a2a });
                config
            })
        }
    };
    serve.run().await.map_err(Failure::from)
}

impl From<ServeError> for Failure {
    fn from(error: ServeError) -> Self {
        let code = match error.kind() {
            ServeErrorKind::Usage => EXIT_USAGE,
            _ => EXIT_FAILED,
        };
        Self { code, message: error.to_string() }
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
    let target = match &command {
        RpcCommand::Send { target, .. } | RpcCommand::Get { target, .. } | RpcCommand::Cancel { target, .. } => target,
    };
    let client = target.tls.client()?;
    // A refused peer URL says how to reach a local agent.
    let hint = |error: ClientError| {
        let refused_url = matches!(error, ClientError::InvalidUrl { .. });
        let mut failure = Failure::from(error);
        if refused_url {
            failure.message.push_str(" (use https, or --allow-loopback-http for a local agent)");
        }
        failure
    };
    let result = match command {
        RpcCommand::Send { target, skill, input } => {
            let input = match parse_input(&input)? {
                Value::Object(input) => input,
                _ => return Err(usage("the input must be a JSON object")),
            };
            let options = rpc_options(&target)?;
            client.tasks_send(&target.url, RpcTask { skill, input: Some(input) }, options).await.map_err(hint)?
        }
        RpcCommand::Get { target, id } => {
            client.tasks_get(&target.url, &id, rpc_options(&target)?).await.map_err(hint)?
        }
        RpcCommand::Cancel { target, id } => {
            client.tasks_cancel(&target.url, &id, rpc_options(&target)?).await.map_err(hint)?
        }
    };
    print_json(&serde_json::to_value(&result).unwrap_or(Value::Null), true);
    Ok(())
}

async fn task(command: TaskCommand) -> Result<(), Failure> {
    match command {
        TaskCommand::Send { url, skill, input, token, context, wait, timeout, wallet, tls } => {
            let client = wallet.client(&tls)?;
            let input = parse_input(&input)?;
            let card = client.fetch_card(&url).await?;
            let options = SendOptions { access_token: token, context_id: context, ..SendOptions::default() };
            let sent = client.send_message(&card, &skill, input, options).await?;
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
        TaskCommand::Get { url, id, token, tls } => {
            let client = tls.client()?;
            let card = client.fetch_card(&url).await?;
            let task = client.get_task(&card, &TaskAccess { task_id: id, access_token: token }).await?;
            print_json(&serde_json::to_value(&task).unwrap_or(Value::Null), true);
            Ok(())
        }
        TaskCommand::Cancel { url, id, token, tls } => {
            let client = tls.client()?;
            let card = client.fetch_card(&url).await?;
            let task = client.cancel_task(&card, &TaskAccess { task_id: id, access_token: token }).await?;
            print_json(&serde_json::to_value(&task).unwrap_or(Value::Null), true);
            Ok(())
        }
        TaskCommand::Watch { url, id, token, after, tls } => {
            let client = tls.client()?;
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
        TaskCommand::List { url, token, status, context, limit, offset, tls } => {
            let client = tls.client()?;
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

async fn card_show(url: &str, tls: &TlsArgs) -> Result<(), Failure> {
    let card = tls.client()?.fetch_card(url).await?;
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
    client: &Client,
) -> Result<(), Failure> {
    let input = parse_input(input)?;
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

async fn stream(url: &str, skill: &str, input: &str, json: bool, tls: &TlsArgs) -> Result<(), Failure> {
    let input = parse_input(input)?;
    let client = tls.client()?;
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
    fn serve_takes_every_flag_of_the_library_and_its_own() {
        let cli =
            Cli::try_parse_from(["accord", "serve", "--agent", "conformance", "--store", "memory", "--port", "0"])
                .expect("valid flags");
        let Command::Serve { agent, demo_prices, a2a_03, extended_card, args, .. } = cli.command else {
            panic!("serve")
        };
        assert_eq!(
            (agent, demo_prices, a2a_03, extended_card, args.port),
            (AgentKind::Conformance, false, false, false, 0)
        );
        assert_eq!(args.store, accord::StoreSpec::Memory);
        assert!(Cli::try_parse_from(["accord", "serve", "--memory-tasks", "0"]).is_err());
        assert!(Cli::try_parse_from(["accord", "serve", "--sync", "off"]).is_err());
        let cli = Cli::try_parse_from(["accord", "serve", "--demo-token", "a-token-of-twenty-chars"]).expect("alias");
        let Command::Serve { args, .. } = cli.command else { panic!("serve") };
        assert_eq!(args.auth.bearer_token.as_deref(), Some("a-token-of-twenty-chars"));
    }
}
