//! `bench-load`: a checked HTTP load generator for A2A and Lucid servers.
//!
//! ```sh
//! bench-load --url http://127.0.0.1:8787 --scenario a2a-send --connections 16 --duration 10 --warmup 2
//! ```
//!
//! Reads the agent card at `--url`, then keeps `--connections` keep-alive connections busy, one
//! request in flight on each, for `--warmup` and then `--duration` seconds. Every answer is
//! checked; only right answers count as throughput. Prints the rate, p50, p99 and errors (one
//! JSON object with `--json`) and exits 1 when any answer was wrong, 2 on bad arguments or an
//! unreachable server, 3 when the server does not offer the scenario.
//!
//! An `https://` URL is reached over TLS, its certificate verified against `--ca-file` (X25519,
//! no session resumption); `--new-connections` opens a connection for every operation, so that
//! each pays a TCP and (over TLS) a full handshake. The `health` scenario (`GET /health`, HTTP
//! 200) reads no card and so works against any HTTP server.
//!
//! With `--subscribers N --task-id ID` it instead opens N A2A `SubscribeToTask` streams on one
//! task, prints `subscribers ready: …` once all are open, and holds them for `--hold` seconds.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use accord_bench::load::{self, Config, Scenario, Target};
use clap::Parser;
use serde_json::json;

/// Command line of `bench-load`.
#[derive(Debug, Parser)]
#[command(name = "bench-load", about = "Checked HTTP load generator for A2A and Lucid servers.")]
struct Args {
    /// The server's base URL (its card is read from `<url>/.well-known/agent-card.json`):
    /// http://, or https:// with --ca-file.
    #[arg(long)]
    url: String,
    /// For an https:// URL: the PEM file of the authorities its certificate is verified against.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<std::path::PathBuf>,
    /// A new connection for every operation, closed after it (`Connection: close` on `health`):
    /// over TLS, a full handshake each (the client never resumes a session).
    #[arg(long)]
    new_connections: bool,
    /// a2a-send, a2a-stream, lucid-invoke, lucid-task, list, a2a-deltas or health.
    #[arg(long, default_value = "a2a-send")]
    scenario: Scenario,
    /// Connections, each with one request in flight.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of checked but unmeasured load first.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Seconds one operation may take before it counts as an error.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
    /// Stop after this many operations (warm-up included), even before the time is up.
    #[arg(long)]
    requests: Option<u64>,
    /// For `list`: the least `totalSize` a right answer has.
    #[arg(long)]
    list_min_total: Option<u64>,
    /// For `a2a-deltas`: milliseconds between two deltas of a task.
    #[arg(long, default_value_t = accord_bench::load::DEFAULT_DELTA_INTERVAL_MS)]
    delta_interval_ms: u64,
    /// The server's process id: its CPU time over the window is divided among the operations.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Another process (the remote agent behind the server, say): its CPU time over the window is
    /// divided among the operations too, and reported apart (`peer_cpu_us_per_op`).
    #[arg(long)]
    peer_pid: Option<u32>,
    /// The `metadata.skillId` of the a2a-send and a2a-stream messages: another for a server that
    /// fronts a remote echo skill under a prefix (`[[a2a]]` with `prefix = "front."`: `front.echo`).
    #[arg(long, default_value = accord_bench::load::DEFAULT_SKILL_ID)]
    skill_id: String,
    /// Clock ticks per second in /proc/PID/stat (`getconf CLK_TCK`).
    #[arg(long, default_value_t = 100)]
    clock_ticks: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Hold this many `SubscribeToTask` streams open on `--task-id` instead of a load run.
    #[arg(long, requires = "task_id")]
    subscribers: Option<usize>,
    /// The task the subscribers watch.
    #[arg(long)]
    task_id: Option<String>,
    /// Seconds the subscribers are held open once all are open.
    #[arg(long, default_value_t = 5.0)]
    hold: f64,
}

fn seconds(value: f64, name: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value).map_err(|_| format!("--{name} must be a non-negative number of seconds"))
}

fn print(value: &str) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

async fn main_async(args: Args) -> ExitCode {
    let parsed = seconds(args.duration, "duration").and_then(|duration| {
        Ok((duration, seconds(args.warmup, "warmup")?, seconds(args.timeout, "timeout")?, seconds(args.hold, "hold")?))
    });
    let (duration, warmup, timeout, hold) = match parsed {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("bench-load: {error}");
            return ExitCode::from(2);
        }
    };
    let located = if args.scenario == Scenario::Health {
        Target::locate(&args.url, args.ca_file.as_deref()).await
    } else {
        Target::discover_tls(&args.url, args.ca_file.as_deref()).await
    };
    let target = match located {
        Ok(target) => target,
        Err(error) => {
            eprintln!("bench-load: {error}");
            return ExitCode::from(2);
        }
    };
    if let (Some(count), Some(task_id)) = (args.subscribers, args.task_id.as_deref()) {
        if target.jsonrpc_path.is_none() {
            eprintln!("bench-load: the card lists no JSONRPC interface");
            return ExitCode::from(3);
        }
        let held = load::hold_subscribers(target, task_id, count, hold, |held| {
            print(&format!("subscribers ready: {} open, {} failed, {:.1}s", held.open, held.failed, held.open_s));
        })
        .await;
        let report = json!({"subscribers": count, "open": held.open, "failed": held.failed,
                            "open_s": held.open_s, "error_samples": held.samples});
        print(&report.to_string());
        return if held.failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) };
    }
    if !load::supports(&target, args.scenario) {
        eprintln!("bench-load: {} needs a JSONRPC interface, and the card lists none", args.scenario.name());
        return ExitCode::from(3);
    }
    let config = Config {
        scenario: args.scenario,
        connections: args.connections,
        duration,
        warmup,
        timeout,
        list_min_total: args.list_min_total,
        delta_interval_ms: args.delta_interval_ms,
        server_pid: args.server_pid,
        clock_ticks: args.clock_ticks,
        max_operations: args.requests,
        new_connections: args.new_connections,
        skill_id: args.skill_id,
        peer_pid: args.peer_pid,
    };
    let report = load::run(target, &config).await;
    if args.json {
        print(&report.to_json().to_string());
    } else {
        print(&report.human());
    }
    if report.all_errors() == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

fn main() -> ExitCode {
    let args = Args::parse();
    // One thread: the generator is meant to be pinned to one core of its own.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bench-load: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(main_async(args))
}
