//! `bench-soak`: the load of the soak and fault scripts (`scripts/soak`, `scripts/faults`).
//!
//! ```sh
//! bench-soak mixed --url http://127.0.0.1:8001 --url http://127.0.0.1:8002 --duration 600
//! bench-soak slow-subscriber --url http://127.0.0.1:8001 --rounds 300 --server-pid PID
//! ```
//!
//! `mixed` runs the mixed, checked load of `accord_bench::soak` over the workers (creates,
//! streams, subscriptions, cancels and follow-ups over the A2A and Lucid faces, each task's
//! second step on another worker), printing a progress line every `--progress` seconds, then
//! reads every task it created back until it is terminal and prints one JSON report. Exits 1 when
//! an answer was wrong (unless `--allow-errors`) or a task was lost or ended wrongly, 2 on bad
//! arguments or an unreachable server.
//!
//! `slow-subscriber` holds one subscriber that never reads and `--readers` that do on one task
//! that asks `--rounds` questions, and reports the follow-up latency, the readers' lag and the
//! server's RSS. Exits 1 when a reader missed an event or a step failed.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use accord_bench::load::Target;
use accord_bench::soak::{self, SlowSubscriberConfig, SoakConfig};
use clap::{Parser, Subcommand};
use serde_json::json;

/// Command line of `bench-soak`.
#[derive(Debug, Parser)]
#[command(name = "bench-soak", about = "Soak and fault loads for Accord workers.")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The mixed load over every face, then every created task read back.
    Mixed {
        /// A worker's base URL (repeat for several workers on one store).
        #[arg(long = "url", required = true)]
        urls: Vec<String>,
        /// Operations in flight at once.
        #[arg(long, default_value_t = 8)]
        connections: usize,
        /// Seconds of load.
        #[arg(long, default_value_t = 60.0)]
        duration: f64,
        /// Seconds one operation may take before it counts as an error.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        /// Seconds between two progress lines.
        #[arg(long, default_value_t = 10.0)]
        progress: f64,
        /// Seconds the read-back waits for the tasks to end.
        #[arg(long, default_value_t = 120.0)]
        verify_deadline: f64,
        /// Failed operations do not fail the run (a fault is being injected); lost or wrongly
        /// ended tasks still do.
        #[arg(long)]
        allow_errors: bool,
        /// Write every created task's id here, one per line.
        #[arg(long)]
        tasks_out: Option<std::path::PathBuf>,
    },
    /// One subscriber that never reads, others that do.
    SlowSubscriber {
        /// A worker's base URL (repeat: the readers and follow-ups are spread over them).
        #[arg(long = "url", required = true)]
        urls: Vec<String>,
        /// Questions the task asks.
        #[arg(long, default_value_t = 200)]
        rounds: u32,
        /// Bytes of each question.
        #[arg(long, default_value_t = 65536)]
        question_bytes: usize,
        /// Subscribers that read.
        #[arg(long, default_value_t = 4)]
        readers: usize,
        /// The first worker's process id, for its RSS.
        #[arg(long)]
        server_pid: Option<u32>,
        /// Seconds a reader may take to see an event.
        #[arg(long, default_value_t = 10.0)]
        timeout: f64,
        /// Leave the subscriber that never reads out: the baseline.
        #[arg(long)]
        no_stalled: bool,
    },
}

fn seconds(value: f64, name: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value).map_err(|_| format!("--{name} must be a non-negative number of seconds"))
}

fn print(value: &str) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

async fn targets(urls: &[String]) -> Result<Vec<Target>, String> {
    let mut targets = Vec::new();
    for url in urls {
        let target = Target::discover(url).await?;
        if target.jsonrpc_path.is_none() || target.rest_path.is_none() {
            return Err(format!("{url}: the card lists no JSONRPC or HTTP+JSON interface"));
        }
        targets.push(target);
    }
    Ok(targets)
}

async fn main_async(args: Args) -> Result<bool, String> {
    match args.command {
        Command::Mixed { urls, connections, duration, timeout, progress, verify_deadline, allow_errors, tasks_out } => {
            let config = SoakConfig {
                connections,
                duration: seconds(duration, "duration")?,
                timeout: seconds(timeout, "timeout")?,
            };
            let (progress, verify_deadline) =
                (seconds(progress, "progress")?, seconds(verify_deadline, "verify-deadline")?);
            let tally = soak::run(targets(&urls).await?, &config, progress, |elapsed, tally| {
                print(
                    &json!({"progress_s": elapsed.round(), "ok": tally.ok(), "errors": tally.errors(),
                              "tasks": tally.created.len()})
                    .to_string(),
                );
            })
            .await;
            if let Some(path) = tasks_out {
                let ids: String = tally.created.iter().map(|task| format!("{}\n", task.task_id)).collect();
                std::fs::write(&path, ids).map_err(|error| format!("{}: {error}", path.display()))?;
            }
            let verified = soak::verify(targets(&urls).await?, &tally.created, verify_deadline).await;
            let passed = (allow_errors || tally.errors() == 0)
                && verified.lost.is_empty()
                && verified.wrong.is_empty()
                && verified.as_expected == verified.tasks;
            print(&json!({"load": tally.to_json(), "verified": verified.to_json(), "passed": passed}).to_string());
            Ok(passed)
        }
        Command::SlowSubscriber { urls, rounds, question_bytes, readers, server_pid, timeout, no_stalled } => {
            let config = SlowSubscriberConfig {
                rounds,
                question_bytes,
                readers,
                server_pid,
                timeout: seconds(timeout, "timeout")?,
                stalled: !no_stalled,
            };
            let report = soak::slow_subscriber(targets(&urls).await?, &config).await;
            print(&report.to_json().to_string());
            Ok(report.failure.is_none())
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bench-soak: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(main_async(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("bench-soak: {error}");
            ExitCode::from(2)
        }
    }
}
