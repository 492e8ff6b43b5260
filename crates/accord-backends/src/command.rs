//! The command backend: a skill whose code is a program. Each run spawns the program directly (no
//! shell), writes the input JSON (or a resumed task's envelope) to its stdin and closes it, and
//! reads its stdout as NDJSON — `{"delta": ...}` lines are stream events, the last line is the
//! answer — or, from a line that starts a JSON value without finishing it, as one JSON document
//! over several lines (what `jq` prints), which is the answer. The contract is `docs/backends.md`.
//!
//! This module owns the child process from spawn to reaping: its environment (cleared, then only
//! what the configuration gives), its bounded reading of stdout and stderr, and its end — on
//! cancellation or timeout SIGTERM to its process group, SIGKILL after the grace period, and
//! always a `wait`, so no zombie is left behind.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use accord_engine::{BoxFuture, Handler, Outcome, Run, SkillError};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::Instant;

use crate::Secret;
use crate::contract::{self, Files, Lines, MAX_REASON_CHARS, bounded, failure, invalid_answer};
use crate::gate::{self, Gate};
use crate::http::seconds;

/// The longest stderr line logged; the rest of a longer line is dropped.
const MAX_STDERR_LINE: usize = 4096;
/// The most stderr bytes logged per run; the rest is read and dropped.
const MAX_STDERR_LOGGED: usize = 64 << 10;

/// How to run a command backend.
///
/// The child's environment is exactly what [`CommandConfig::env`] gives — nothing is inherited,
/// not even `PATH` (the agent file adds `PATH` itself) — so a secret of Accord's own environment
/// reaches a command only when it is named.
#[derive(Clone)]
pub struct CommandConfig {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, Secret)>,
    cwd: Option<PathBuf>,
    timeout: Duration,
    grace: Duration,
    concurrency: Option<usize>,
    max_output_bytes: usize,
}

impl CommandConfig {
    /// The program as an MCP server speaking on stdio (only its program, arguments, working
    /// directory and environment count there).
    pub(crate) fn into_mcp(self) -> crate::mcp::McpTransport {
        crate::mcp::McpTransport::Stdio { program: self.program, args: self.args, cwd: self.cwd, env: self.env }
    }
}

impl std::fmt::Debug for CommandConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("CommandConfig")
            .field("program", &self.program)
            // Arguments may carry expanded `${NAME}`s: only their number shows.
            .field("args", &self.args.len())
            .field("env", &env)
            .field("cwd", &self.cwd)
            .field("timeout", &self.timeout)
            .field("grace", &self.grace)
            .field("concurrency", &self.concurrency)
            .field("max_output_bytes", &self.max_output_bytes)
            .finish()
    }
}

impl CommandConfig {
    /// The default [`CommandConfig::timeout`]: 30 s.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default [`CommandConfig::grace`]: 5 s.
    pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
    /// The default [`CommandConfig::concurrency`]: 16 processes at once.
    pub const DEFAULT_CONCURRENCY: usize = 16;
    /// The default [`CommandConfig::max_output_bytes`]: 16 MiB.
    pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 16 << 20;

    /// Runs `program` (a path; it is not looked up on `PATH`), with the defaults: no arguments, an
    /// empty environment, Accord's working directory, 30 s timeout, 5 s grace, 16 at once, 16 MiB
    /// of stdout.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            timeout: Self::DEFAULT_TIMEOUT,
            grace: Self::DEFAULT_GRACE,
            concurrency: Some(Self::DEFAULT_CONCURRENCY),
            max_output_bytes: Self::DEFAULT_MAX_OUTPUT_BYTES,
        }
    }

    /// Adds arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets a variable of the child's environment (its value never prints).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<Secret>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// The child's working directory (default: Accord's).
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// How long a run may take before it is stopped as on cancellation and fails.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long a child has to exit after SIGTERM before it gets SIGKILL.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// The most children at once (`None`: no limit). Runs beyond it wait (cancellable).
    pub fn concurrency(mut self, limit: Option<usize>) -> Self {
        self.concurrency = gate::at_least_one(limit);
        self
    }

    /// The most bytes a child may write to stdout; more stops it and fails the run.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// The program.
    pub fn program(&self) -> &std::path::Path {
        &self.program
    }

    /// The grace period between SIGTERM and SIGKILL.
    pub fn grace_period(&self) -> Duration {
        self.grace
    }
}

/// A skill handler that runs a command (see [`CommandConfig`] and `docs/backends.md`).
///
/// Cheap to clone; clones share the concurrency limit.
///
/// The engine aborts a cancelled handler after the agent's cancel grace
/// ([`accord_engine::AgentBuilder::cancel_grace`]); keep that longer than this backend's grace, as
/// [`crate::AgentFile::build_agent`] does, so that the child is always reaped here.
#[derive(Clone)]
pub struct CommandBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: CommandConfig,
    gate: Gate,
}

impl std::fmt::Debug for CommandBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandBackend").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

impl CommandBackend {
    /// A handler for `config`.
    pub fn new(config: CommandConfig) -> Self {
        let gate = Gate::new(config.concurrency);
        Self { inner: Arc::new(Inner { config, gate }) }
    }

    /// The configuration.
    pub fn config(&self) -> &CommandConfig {
        &self.inner.config
    }
}

impl Handler for CommandBackend {
    fn call(&self, run: Run) -> BoxFuture<Result<Outcome, SkillError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.run(run).await })
    }
}

/// How the conversation with a child stopped.
enum Stop {
    /// It ran to its end: its exit status and its answer line, if any.
    Exited(ExitStatus, Option<Value>, Option<SkillError>),
    /// It must be stopped, and the run fails with this error.
    Abandon(SkillError),
    Cancelled,
    TimedOut,
}

impl Inner {
    async fn run(&self, run: Run) -> Result<Outcome, SkillError> {
        let _place = self.gate.enter(&run).await?;
        let deadline = Instant::now() + self.config.timeout;
        let mut body = serde_json::to_vec(&contract::request_body(&run))
            .map_err(|_| SkillError::internal("the input does not encode"))?;
        body.push(b'\n');

        let mut child = self.spawn(&run)?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            terminate(&mut child, Duration::ZERO).await;
            return Err(SkillError::internal("the command's pipes were not opened"));
        };
        // The input is written beside the reading of stdout, so that a child that writes before
        // it has read everything cannot deadlock with us. A child that never reads stdin only
        // makes the write fail, which is fine.
        let writer = tokio::spawn(async move {
            let _ = stdin.write_all(&body).await;
            let _ = stdin.shutdown().await;
        });
        let last_stderr = Arc::new(Mutex::new(String::new()));
        let logger = tokio::spawn(log_stderr(stderr, run.skill().to_owned(), Arc::clone(&last_stderr)));

        let mut files = Files::new(&run);
        let stop = {
            let conversation = self.converse(&run, &mut child, stdout, &mut files);
            tokio::select! {
                stop = conversation => stop,
                () = run.cancelled() => Stop::Cancelled,
                () = tokio::time::sleep_until(deadline) => Stop::TimedOut,
            }
        };
        if !matches!(stop, Stop::Exited(..)) {
            terminate(&mut child, self.config.grace).await;
        }
        writer.abort();
        // A grandchild may hold stderr open after the child is gone: wait only a little for it.
        let _ = tokio::time::timeout(Duration::from_millis(500), logger).await;
        let last_stderr = last_stderr.lock().map(|line| line.clone()).unwrap_or_default();

        match stop {
            Stop::Cancelled => Err(contract::cancelled()),
            Stop::TimedOut => {
                tracing::warn!(skill = run.skill(), "the command timed out");
                Err(failure(
                    "backend_timeout",
                    format!("the command did not finish within {}", seconds(self.config.timeout)),
                )
                .retryable(true))
            }
            Stop::Abandon(error) => Err(error),
            Stop::Exited(status, _, _) if !status.success() => {
                tracing::warn!(skill = run.skill(), %status, "the command failed");
                let how = exit_text(status);
                let message = if last_stderr.is_empty() { how } else { format!("{how}: {last_stderr}") };
                Err(failure("backend_error", message))
            }
            Stop::Exited(_, _, Some(error)) => Err(error),
            Stop::Exited(_, None, None) => Err(invalid_answer("the command printed no answer")),
            Stop::Exited(_, Some(answer), None) => contract::outcome_of_answer(answer, &mut files),
        }
    }

    fn spawn(&self, run: &Run) -> Result<Child, SkillError> {
        let config = &self.config;
        let mut command = Command::new(&config.program);
        command
            .args(&config.args)
            .env_clear()
            .envs(config.env.iter().map(|(name, value)| (name, value.expose())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A backstop only: every path below waits for the child itself.
            .kill_on_drop(true);
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        // The run's ids, as the HTTP backend's `Accord-*` headers carry them.
        command.env("ACCORD_SKILL", run.skill()).env("ACCORD_RUN_ID", run.run_id());
        if let Some(task) = run.task() {
            command.env("ACCORD_TASK_ID", task.id.as_str());
            if let Some(context) = &task.context_id {
                command.env("ACCORD_CONTEXT_ID", context);
            }
        }
        if let Some(owner) = run.owner() {
            command.env("ACCORD_OWNER", owner);
        }
        // Its own process group, so that a signal reaches what it started (`sh -c`'s children).
        #[cfg(unix)]
        command.process_group(0);
        command.spawn().map_err(|error| {
            tracing::warn!(skill = run.skill(), program = %config.program.display(), %error, "the command did not start");
            failure("backend_unavailable", format!("the command could not be started ({})", error.kind()))
        })
    }

    /// Reads the child's stdout to its end, forwarding event lines (deltas, files), then waits
    /// for the child.
    ///
    /// stdout is NDJSON until a line is the start of a JSON value that the line does not finish
    /// (`{` alone, as `jq` prints): from that line on, the rest of stdout is one JSON document,
    /// parsed at its end, and is the answer. A line that is not JSON at all fails at once.
    async fn converse(&self, run: &Run, child: &mut Child, mut stdout: ChildStdout, files: &mut Files) -> Stop {
        let mut lines = Lines::new(self.config.max_output_bytes);
        let mut answer: Option<(usize, Value)> = None;
        let mut broken: Option<SkillError> = None;
        // The first line of a document over several lines, and the document so far.
        let mut document: Option<(usize, Vec<u8>)> = None;
        let mut number = 0usize;
        let mut buffer = vec![0u8; 8192];
        loop {
            // A read error ends the output like its end does.
            let read: usize = stdout.read(&mut buffer).await.unwrap_or_default();
            let complete = if read == 0 {
                lines.finish().into_iter().collect()
            } else {
                match lines.feed(&buffer[..read]) {
                    Ok(complete) => complete,
                    Err(_) => {
                        return Stop::Abandon(failure(
                            "backend_answer_too_large",
                            format!("the command wrote more than {} bytes to stdout", self.config.max_output_bytes),
                        ));
                    }
                }
            };
            for line in complete {
                number += 1;
                if let Some((_, text)) = &mut document {
                    text.extend_from_slice(&line);
                    text.push(b'\n');
                    continue;
                }
                if broken.is_some() || line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let value = match serde_json::from_slice::<Value>(&line) {
                    Ok(value) => value,
                    // The line starts a value it does not finish: a document over several lines.
                    Err(error) if error.is_eof() && answer.is_none() => {
                        let mut text = line;
                        text.push(b'\n');
                        document = Some((number, text));
                        continue;
                    }
                    // A document begun after the answer line: output beyond the answer.
                    Err(error) if error.is_eof() => {
                        let at = answer.as_ref().map_or(number, |(at, _)| *at);
                        broken = Some(invalid_answer(format!(
                            "stdout line {at} is not a delta or file event, yet more lines follow it"
                        )));
                        continue;
                    }
                    Err(_) => {
                        broken = Some(invalid_answer(format!("stdout line {number} is not JSON")));
                        continue;
                    }
                };
                if let Some(event) = contract::command_event(&value, files) {
                    match (event, &answer) {
                        (Ok(event), None) => run.emit(event).await,
                        (Err(error), _) => broken = Some(error),
                        (Ok(_), Some((at, _))) => {
                            broken = Some(invalid_answer(format!(
                                "stdout line {at} is not a delta or file event, yet more lines follow it"
                            )));
                        }
                    }
                    continue;
                }
                if let Some((at, _)) = &answer {
                    broken = Some(invalid_answer(format!(
                        "stdout line {at} is not a delta or file event, yet more lines follow it"
                    )));
                    continue;
                }
                answer = Some((number, value));
            }
            if read == 0 {
                break;
            }
        }
        if let Some((first, text)) = document
            && broken.is_none()
        {
            match serde_json::from_slice::<Value>(&text) {
                Ok(value) => answer = Some((first, value)),
                Err(error) => {
                    broken = Some(invalid_answer(format!(
                        "stdout is not JSON: line {first} starts a JSON document over several lines, which is invalid at stdout line {}, column {}",
                        first + error.line().saturating_sub(1),
                        error.column()
                    )));
                }
            }
        }
        match child.wait().await {
            Ok(status) => Stop::Exited(status, answer.map(|(_, value)| value), broken),
            Err(_) => Stop::Abandon(SkillError::internal("the command could not be waited for")),
        }
    }
}

fn exit_text(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("the command exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("the command was killed by signal {signal}");
        }
    }
    "the command failed".to_owned()
}

/// Stops a child: SIGTERM to its process group, SIGKILL once `grace` has passed, then reaps it.
async fn terminate(child: &mut Child, grace: Duration) {
    signal(child, Signal::Term);
    if !grace.is_zero() && tokio::time::timeout(grace, child.wait()).await.is_ok() {
        return;
    }
    signal(child, Signal::Kill);
    let _ = child.start_kill();
    let _ = child.wait().await;
}

#[derive(Debug, Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// Signals the child's process group — while the child is not yet reaped, so that its id (and
/// group id) cannot belong to another process.
#[cfg(unix)]
fn signal(child: &Child, which: Signal) {
    use rustix::process::{Pid, Signal as Sig, kill_process, kill_process_group};
    let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()).and_then(Pid::from_raw) else {
        return;
    };
    let sig = match which {
        Signal::Term => Sig::TERM,
        Signal::Kill => Sig::KILL,
    };
    if kill_process_group(pid, sig).is_err() {
        let _ = kill_process(pid, sig);
    }
}

#[cfg(not(unix))]
fn signal(child: &mut Child, _which: Signal) {
    // No SIGTERM here: the child is killed at once.
    let _ = child.start_kill();
}

/// Logs a child's stderr line by line, within [`MAX_STDERR_LINE`] per line and
/// [`MAX_STDERR_LOGGED`] in all, and keeps its last non-empty line (bounded) for the failure
/// reason.
async fn log_stderr(mut stderr: impl AsyncRead + Unpin, skill: String, last: Arc<Mutex<String>>) {
    let mut buffer = vec![0u8; 4096];
    let mut line: Vec<u8> = Vec::new();
    let mut logged = 0usize;
    let finish_line = |line: &mut Vec<u8>, logged: &mut usize| {
        let text = String::from_utf8_lossy(line).trim_end().to_owned();
        line.clear();
        if text.is_empty() {
            return;
        }
        if *logged < MAX_STDERR_LOGGED {
            tracing::info!(skill = %skill, line = %text, "command stderr");
            *logged += text.len();
            if *logged >= MAX_STDERR_LOGGED {
                tracing::warn!(skill = %skill, "the command's stderr exceeds {MAX_STDERR_LOGGED} bytes; the rest is not logged");
            }
        }
        if let Ok(mut last) = last.lock() {
            *last = bounded(&text, MAX_REASON_CHARS / 2);
        }
    };
    loop {
        let read = match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        for byte in &buffer[..read] {
            if *byte == b'\n' {
                finish_line(&mut line, &mut logged);
            } else if line.len() < MAX_STDERR_LINE {
                line.push(*byte);
            }
        }
    }
    finish_line(&mut line, &mut logged);
}
