//! MCP servers as skill backends, through the official Rust MCP SDK (`rmcp`): each tool of a
//! server is a skill, its `inputSchema` the skill's input schema.
//!
//! - A server is reached over stdio (a child process) or over streamable HTTP.
//!   [`McpServer::connect`] initializes the session within the start-up timeout;
//!   [`McpServer::tools`] lists the tools (every page of `tools/list`).
//! - Accord introduces itself as `accord` with its version.
//! - A server that goes away (a child process that exits, an HTTP endpoint that stops answering
//!   or forgets the session) is brought back in the background: restarted (stdio) or
//!   re-initialized (HTTP), after 0.5 s, then after twice the previous wait, up to 30 s. Calls
//!   in flight when it goes fail at once (`backend_unavailable`, retryable); a call made while
//!   it is down first tries one reconnect. [`McpServer::status`] tells whether it is up.
//! - A run is one `tools/call` with the input as its `arguments` and a progress token: each
//!   `notifications/progress` becomes a `working` status update of the run with its words (its
//!   `message`, else `progress/total`), which the engine stores as the task's progress.
//! - The answer: `structuredContent` when the tool gives one, else `{"text": …}` (its text
//!   blocks joined by newlines). Images, audio, embedded resources and resource links become
//!   file parts of an artifact named `content`. `isError: true` fails the run (`tool_error`)
//!   with the tool's text.
//! - Cancelling the run sends `notifications/cancelled` for the request and stops waiting. Its
//!   reason is "the task was cancelled", or "the server is stopping" when the run is cancelled
//!   because Accord shuts down ([`accord_engine::Run::is_stopping`]).

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use accord_engine::{Artifact, BoxFuture, Completion, Handler, Outcome, Part, Run, RunEvent, SkillError};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, ProgressNotificationParam, ProgressToken, ServerResult, Tool,
};
use rmcp::service::{ClientInitializeError, NotificationContext, Peer, PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot, watch};

use crate::contract::{bounded, cancelled, failure};
use crate::health::{BackendStatus, record_call_duration};
use crate::{BackendError, Secret};

/// A progress notification's words as the run's progress: a `working` status update with them as
/// the agent's message (the engine stores it in the task's log; every face shows it).
fn progress_update(words: String) -> RunEvent {
    RunEvent::Status {
        state: accord_engine::TaskState::Working,
        message: Some(accord_engine::Message::agent_text(words)),
    }
}

/// The default time a tool call may take.
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(60);

/// The default time a server has to answer `initialize` (and then `tools/list`).
pub const DEFAULT_MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The first wait before bringing back a server that went away; each failed attempt doubles
/// it, up to [`MCP_RECONNECT_MAX_DELAY`].
pub const MCP_RECONNECT_FIRST_DELAY: Duration = Duration::from_millis(500);

/// The longest wait between two attempts to bring back a server.
pub const MCP_RECONNECT_MAX_DELAY: Duration = Duration::from_secs(30);

/// How to reach an MCP server.
#[derive(Clone)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin and stdout (stderr goes to the logs).
    Stdio {
        /// The program (resolved, not looked up again).
        program: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
        /// Its whole environment (it inherits nothing).
        env: Vec<(String, Secret)>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request (values never print).
        headers: Vec<(String, Secret)>,
    },
}

impl std::fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio { program, .. } => f.debug_struct("Stdio").field("program", program).finish_non_exhaustive(),
            Self::Http { url, .. } => f.debug_struct("Http").field("url", url).finish_non_exhaustive(),
        }
    }
}

/// How Accord treats one MCP server: its name in messages and its timeouts.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct McpOptions {
    /// The server's name in logs, errors and [`BackendStatus`].
    pub name: String,
    /// The time `initialize` (at start-up and at each reconnect) and `tools/list` may take.
    pub startup_timeout: Duration,
    /// The time one tool call may take.
    pub call_timeout: Duration,
}

impl McpOptions {
    /// Options for the server called `name`, with the default timeouts.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), startup_timeout: DEFAULT_MCP_STARTUP_TIMEOUT, call_timeout: DEFAULT_MCP_TIMEOUT }
    }

    /// Sets the time `initialize` and `tools/list` may take.
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Sets the time one tool call may take.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }
}

/// What an MCP tool says of itself (its `annotations`): hints, not guarantees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolHints {
    /// `readOnlyHint`: the tool does not change its environment (MCP default: false).
    pub read_only: Option<bool>,
    /// `idempotentHint`: calling it again with the same arguments has no further effect
    /// (MCP default: false).
    pub idempotent: Option<bool>,
    /// `destructiveHint`: the tool may destroy or overwrite (MCP default: true).
    pub destructive: Option<bool>,
}

impl ToolHints {
    /// The hints of `tool`.
    pub fn of(tool: &Tool) -> Self {
        match &tool.annotations {
            Some(annotations) => Self {
                read_only: annotations.read_only_hint,
                idempotent: annotations.idempotent_hint,
                destructive: annotations.destructive_hint,
            },
            None => Self::default(),
        }
    }

    /// Whether the server says a second call with the same arguments is harmless: read-only, or
    /// idempotent. Absent hints take MCP's defaults (not safe).
    pub fn safe_to_repeat(&self) -> bool {
        self.read_only == Some(true) || self.idempotent == Some(true)
    }
}

/// The client side of one session: routes progress to runs, and notes a changed tool list.
#[derive(Clone)]
struct Client {
    routes: Arc<Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<String>>>>,
    name: Arc<str>,
}

impl Client {
    fn routes(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, mpsc::UnboundedSender<String>>> {
        self.routes.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ClientHandler for Client {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let text = match (&params.message, params.total) {
            (Some(message), _) => message.clone(),
            (None, Some(total)) => format!("{}/{total}", params.progress),
            (None, None) => params.progress.to_string(),
        };
        tracing::debug!(server = %self.name, progress = %text, "MCP progress");
        if let Some(route) = self.routes().get(&params.progress_token) {
            let _ = route.send(text);
        }
        std::future::ready(())
    }

    fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) -> impl Future<Output = ()> + Send + '_ {
        // The agent's skills are fixed once it is built: the new list is published at the next start.
        tracing::info!(
            server = %self.name,
            "MCP server '{}' says its tools changed; restart Accord to publish the new list",
            self.name
        );
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("accord", env!("CARGO_PKG_VERSION")))
    }
}

/// A connected MCP server, shared by every run of its tools; brought back when it goes away.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Shared>,
}

struct Shared {
    transport: McpTransport,
    options: McpOptions,
    /// The live session, if any. Held while connecting, so one reconnect runs at a time.
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
    health: Mutex<Health>,
    calls: AtomicU64,
    failures: AtomicU64,
    reconnecting: AtomicBool,
    generation: AtomicU64,
    /// Tools the server listed as requiring MCP tasks (read from the raw `tools/list` answers).
    task_tools: Arc<Mutex<BTreeSet<String>>>,
}

struct Health {
    up: bool,
    since: SystemTime,
    last_error: Option<String>,
    reconnects: u64,
    /// The wait before the next attempt to bring the server back: it keeps doubling while the
    /// server dies soon after each return (a crash loop), and starts again at 0.5 s once it has
    /// stayed up for [`MCP_STABLE_UPTIME`].
    next_delay: Duration,
}

/// How long a server must stay up for its next outage to be waited out from 0.5 s again.
const MCP_STABLE_UPTIME: Duration = Duration::from_secs(10);

/// One initialized session. Dropping the last handle closes it (and stops a child process).
struct Session {
    peer: Peer<RoleClient>,
    client: Client,
    generation: u64,
    pid: Option<u32>,
    /// `Some(cause)` once the session has ended.
    closed: watch::Receiver<Option<String>>,
    _stop: oneshot::Sender<()>,
}

impl Session {
    fn is_closed(&self) -> bool {
        self.closed.borrow().is_some() || self.peer.is_transport_closed()
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").field("options", &self.inner.options).finish_non_exhaustive()
    }
}

impl McpServer {
    /// Starts (stdio) or reaches (HTTP) the server and initializes the session within
    /// `options.startup_timeout`. The error names the server and says why
    /// (`mcp server 'files' did not answer initialize within 5 s`).
    pub async fn connect(transport: McpTransport, options: McpOptions) -> Result<Self, BackendError> {
        let now = SystemTime::now();
        let inner = Arc::new(Shared {
            transport,
            options,
            session: tokio::sync::Mutex::new(None),
            health: Mutex::new(Health {
                up: false,
                since: now,
                last_error: None,
                reconnects: 0,
                next_delay: MCP_RECONNECT_FIRST_DELAY,
            }),
            calls: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            reconnecting: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            task_tools: Arc::default(),
        });
        let session = open(&inner).await.map_err(BackendError::new)?;
        *inner.session.lock().await = Some(session);
        inner.health().up = true;
        Ok(Self { inner })
    }

    /// The server's name, as in its options.
    pub fn name(&self) -> &str {
        &self.inner.options.name
    }

    /// Whether the server is up, since when, its last error and its call counts.
    pub fn status(&self) -> BackendStatus {
        let health = self.inner.health();
        BackendStatus {
            name: self.inner.options.name.clone(),
            up: health.up,
            since: health.since,
            last_error: health.last_error.clone(),
            calls: self.inner.calls.load(Ordering::Relaxed),
            failures: self.inner.failures.load(Ordering::Relaxed),
            reconnects: health.reconnects,
        }
    }

    /// The process id of a stdio server's current process (none over HTTP, or while it is down).
    pub async fn pid(&self) -> Option<u32> {
        let session = self.inner.session.lock().await;
        session.as_ref().filter(|session| !session.is_closed()).and_then(|session| session.pid)
    }

    /// Every tool the server offers (`tools/list`, all pages), within the start-up timeout.
    pub async fn tools(&self) -> Result<Vec<Tool>, BackendError> {
        let name = &self.inner.options.name;
        let session = self.inner.live_session().await.map_err(BackendError::new)?;
        let timeout = self.inner.options.startup_timeout;
        match tokio::time::timeout(timeout, session.peer.list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(error)) => Err(BackendError::new(format!(
                "mcp server '{name}' failed tools/list: {}",
                describe_service_error(&error)
            ))),
            Err(_) => Err(BackendError::new(format!(
                "mcp server '{name}' did not answer tools/list within {}",
                seconds(timeout)
            ))),
        }
    }

    /// The tools the server listed as requiring MCP task augmentation
    /// (`execution.taskSupport: "required"`), which Accord cannot call: the MCP SDK it uses
    /// speaks a later tasks extension, not the 2025-11-25 one. Known once [`McpServer::tools`]
    /// has listed them, over stdio and streamable HTTP alike (read from the raw answers: the SDK
    /// drops the field).
    pub fn tools_requiring_tasks(&self) -> Vec<String> {
        self.inner.task_tools.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().cloned().collect()
    }

    /// The handler that runs `tool` on this server.
    pub fn tool(&self, tool: impl Into<String>) -> McpTool {
        McpTool { server: self.clone(), tool: Arc::from(tool.into()), hints: ToolHints::default() }
    }

    /// The handler that runs `tool` on this server, with the tool's hints.
    pub fn tool_of(&self, tool: &Tool) -> McpTool {
        McpTool { server: self.clone(), tool: Arc::from(tool.name.as_ref()), hints: ToolHints::of(tool) }
    }
}

impl Shared {
    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The live session, or one new attempt to open it.
    async fn live_session(self: &Arc<Self>) -> Result<Arc<Session>, String> {
        let mut current = self.session.lock().await;
        if let Some(session) = current.as_ref().filter(|session| !session.is_closed()) {
            return Ok(session.clone());
        }
        if let Some(session) = current.take() {
            let cause = session.closed.borrow().clone().unwrap_or_else(|| "the connection closed".into());
            self.went_down(session.generation, &cause);
        }
        match open(self).await {
            Ok(session) => {
                *current = Some(session.clone());
                self.came_back();
                Ok(session)
            }
            Err(reason) => {
                let mut health = self.health();
                health.last_error = Some(reason.clone());
                Err(reason)
            }
        }
    }

    /// Notes that the session `generation` ended, once, and starts bringing the server back.
    fn went_down(self: &Arc<Self>, generation: u64, cause: &str) {
        if generation != self.generation.load(Ordering::SeqCst) {
            return;
        }
        let delay = {
            let mut health = self.health();
            if !health.up {
                return;
            }
            let uptime = health.since.elapsed().unwrap_or_default();
            let delay = if uptime < MCP_STABLE_UPTIME && health.reconnects > 0 {
                (health.next_delay * 2).min(MCP_RECONNECT_MAX_DELAY)
            } else {
                MCP_RECONNECT_FIRST_DELAY
            };
            health.next_delay = delay;
            health.up = false;
            health.since = SystemTime::now();
            health.last_error = Some(cause.to_owned());
            delay
        };
        tracing::warn!(
            server = %self.options.name,
            "MCP server '{}' is down: {cause}; bringing it back in {}",
            self.options.name,
            seconds(delay)
        );
        if !self.reconnecting.swap(true, Ordering::SeqCst) {
            tokio::spawn(bring_back(Arc::downgrade(self), delay));
        }
    }

    fn came_back(&self) {
        let mut health = self.health();
        if health.up {
            return;
        }
        health.up = true;
        health.since = SystemTime::now();
        health.reconnects += 1;
        drop(health);
        tracing::info!(server = %self.options.name, "MCP server '{}' is back", self.options.name);
    }

    /// A session that failed a call: closed, and the server marked down.
    async fn failed(self: &Arc<Self>, session: &Arc<Session>, cause: &str) {
        let mut current = self.session.lock().await;
        if current.as_ref().is_some_and(|live| Arc::ptr_eq(live, session)) {
            *current = None;
        }
        drop(current);
        self.went_down(session.generation, cause);
    }
}

/// Tries to bring the server back, waiting `delay`, then twice as long after each failure (up to
/// 30 s), until it is back or nobody holds the server any more.
async fn bring_back(shared: Weak<Shared>, mut delay: Duration) {
    loop {
        tokio::time::sleep(delay).await;
        let Some(shared) = shared.upgrade() else { return };
        if shared.health().up {
            shared.reconnecting.store(false, Ordering::SeqCst);
            return;
        }
        match shared.live_session().await {
            Ok(_) => {
                shared.reconnecting.store(false, Ordering::SeqCst);
                return;
            }
            Err(reason) => {
                delay = (delay * 2).min(MCP_RECONNECT_MAX_DELAY);
                shared.health().next_delay = delay;
                tracing::warn!(
                    server = %shared.options.name,
                    "MCP server '{}' is still down: {reason}; next attempt in {}",
                    shared.options.name,
                    seconds(delay)
                );
            }
        }
    }
}

/// Starts or reaches the server and initializes a session within the start-up timeout; watches
/// it so that its end is noticed at once.
async fn open(shared: &Arc<Shared>) -> Result<Arc<Session>, String> {
    let name = shared.options.name.clone();
    let client = Client { routes: Arc::default(), name: Arc::from(name.as_str()) };
    let timeout = shared.options.startup_timeout;
    let (service, pid, child) = match &shared.transport {
        McpTransport::Stdio { program, args, cwd, env } => {
            let mut command = tokio::process::Command::new(program);
            command.args(args).env_clear().envs(env.iter().map(|(name, value)| (name, value.expose())));
            if let Some(cwd) = cwd {
                command.current_dir(cwd);
            }
            command
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit())
                .kill_on_drop(true);
            let mut child = command
                .spawn()
                .map_err(|error| format!("mcp server '{name}' could not be started: {}", io_cause(&error)))?;
            let pid = child.id();
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(format!("mcp server '{name}' could not be started: no pipes to it"));
            };
            let stdout = TaskToolTap::new(stdout, shared.task_tools.clone());
            match tokio::time::timeout(timeout, client.clone().serve((stdout, stdin))).await {
                Ok(Ok(service)) => (service, pid, Some(child)),
                Ok(Err(error)) => {
                    return Err(format!("mcp server '{name}' did not initialize: {}", describe_init_error(&error)));
                }
                Err(_) => {
                    return Err(format!("mcp server '{name}' did not answer initialize within {}", seconds(timeout)));
                }
            }
        }
        McpTransport::Http { url, headers } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            for (header, value) in headers {
                let header = reqwest::header::HeaderName::from_bytes(header.as_bytes())
                    .map_err(|_| format!("mcp server '{name}': {header:?} is not a header name"))?;
                let value = reqwest::header::HeaderValue::from_str(value.expose())
                    .map_err(|_| format!("mcp server '{name}': the value of header {header} is not valid"))?;
                config.custom_headers.insert(header, value);
            }
            let client_http = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|_| format!("mcp server '{name}': could not build the HTTP client"))?;
            let session_client = SessionClient {
                http: client_http,
                name: Arc::from(name.as_str()),
                task_tools: shared.task_tools.clone(),
            };
            let transport = StreamableHttpClientTransport::with_client(session_client, config);
            // The URL is configuration, not a secret; the error names no header value.
            match tokio::time::timeout(timeout, client.clone().serve(transport)).await {
                Ok(Ok(service)) => (service, None, None),
                Ok(Err(error)) => {
                    return Err(format!(
                        "mcp server '{name}' at {url} did not initialize: {}",
                        describe_init_error(&error)
                    ));
                }
                Err(_) => {
                    return Err(format!(
                        "mcp server '{name}' at {url} did not answer initialize within {}",
                        seconds(timeout)
                    ));
                }
            }
        }
    };
    let generation = shared.generation.fetch_add(1, Ordering::SeqCst) + 1;
    let (closed_tx, closed) = watch::channel(None);
    let (stop, stopped) = oneshot::channel();
    let peer = service.peer().clone();
    tokio::spawn(watch_session(service, child, Arc::downgrade(shared), generation, closed_tx, stopped));
    Ok(Arc::new(Session { peer, client, generation, pid, closed, _stop: stop }))
}

/// Waits for a session's end: the server went away (noted at once), or the session's last
/// handle was dropped (the session is closed).
async fn watch_session(
    service: RunningService<RoleClient, Client>,
    mut child: Option<tokio::process::Child>,
    shared: Weak<Shared>,
    generation: u64,
    closed: watch::Sender<Option<String>>,
    stopped: oneshot::Receiver<()>,
) {
    let token = service.cancellation_token();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        _ = &mut waiting => {
            let cause = match &mut child {
                Some(child) => exited(child).await,
                None => "the connection to the server closed".to_owned(),
            };
            let _ = closed.send(Some(cause.clone()));
            if let Some(shared) = shared.upgrade() {
                let mut current = shared.session.lock().await;
                if current.as_ref().is_some_and(|session| session.generation == generation) {
                    *current = None;
                }
                drop(current);
                shared.went_down(generation, &cause);
            }
        }
        _ = stopped => {
            token.cancel();
            let _ = closed.send(Some("the session was closed".to_owned()));
            let _ = waiting.await;
            // Its input is closed: a server has a moment to exit by itself, then it is killed.
            if let Some(child) = &mut child
                && tokio::time::timeout(Duration::from_secs(2), child.wait()).await.is_err()
            {
                let _ = child.kill().await;
            }
        }
    }
}

/// How a server's process ended, in words (it is killed if it only closed its output).
async fn exited(child: &mut tokio::process::Child) -> String {
    let status = match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
        Ok(Ok(status)) => status,
        _ => {
            let _ = child.kill().await;
            return "the server closed its output (it was stopped)".to_owned();
        }
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("the server process exited (killed by signal {signal})");
        }
    }
    match status.code() {
        Some(code) => format!("the server process exited (exit code {code})"),
        None => "the server process exited".to_owned(),
    }
}

/// A stdio server's output on its way to the MCP SDK, watched for the tools that need MCP tasks
/// (`execution.taskSupport: "required"` in a `tools/list` answer): the SDK drops that field.
struct TaskToolTap<R> {
    inner: R,
    line: Vec<u8>,
    found: Arc<Mutex<BTreeSet<String>>>,
}

/// The longest line the tap looks into; a longer one is passed on unread.
const TAP_MAX_LINE: usize = 16 << 20;

impl<R> TaskToolTap<R> {
    fn new(inner: R, found: Arc<Mutex<BTreeSet<String>>>) -> Self {
        Self { inner, line: Vec::new(), found }
    }

    fn saw(&mut self, bytes: &[u8]) {
        for chunk in bytes.split_inclusive(|byte| *byte == b'\n') {
            if self.line.len() + chunk.len() <= TAP_MAX_LINE {
                self.line.extend_from_slice(chunk);
            } else {
                self.line.clear();
            }
            if chunk.ends_with(b"\n") {
                let line = std::mem::take(&mut self.line);
                if line.windows(11).any(|window| window == b"taskSupport")
                    && let Ok(message) = serde_json::from_slice::<Value>(&line)
                {
                    note_task_tools(&self.found, &message);
                }
            }
        }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for TaskToolTap<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = &polled {
            let read = buf.filled()[before..].to_vec();
            self.saw(&read);
        }
        polled
    }
}

/// The names of the tools of a `tools/list` result that require MCP task augmentation.
fn tools_requiring_tasks(result: &Value) -> Vec<String> {
    let Some(tools) = result.get("tools").and_then(Value::as_array) else { return Vec::new() };
    tools
        .iter()
        .filter(|tool| tool["execution"]["taskSupport"] == "required")
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// One tool of an [`McpServer`] as a skill's handler.
#[derive(Clone, Debug)]
pub struct McpTool {
    server: McpServer,
    tool: Arc<str>,
    hints: ToolHints,
}

impl Handler for McpTool {
    fn call(&self, run: Run) -> BoxFuture<Result<Outcome, SkillError>> {
        let this = self.clone();
        Box::pin(async move { this.run(run).await })
    }
}

impl McpTool {
    /// The tool's name on its server.
    pub fn name(&self) -> &str {
        &self.tool
    }

    /// What the tool says of itself: read-only, idempotent, destructive.
    pub fn hints(&self) -> ToolHints {
        self.hints
    }

    /// The server the tool runs on.
    pub fn server(&self) -> &McpServer {
        &self.server
    }

    async fn run(&self, run: Run) -> Result<Outcome, SkillError> {
        let shared = &self.server.inner;
        shared.calls.fetch_add(1, Ordering::Relaxed);
        let started = std::time::Instant::now();
        let result = self.call(run).await;
        if let Err(error) = &result
            && matches!(error.code.as_str(), "backend_unavailable" | "backend_timeout" | "backend_invalid_answer")
        {
            shared.failures.fetch_add(1, Ordering::Relaxed);
        }
        // A cancelled run did not finish: its time says nothing of the server.
        if !matches!(&result, Err(error) if error.code == "cancelled") {
            record_call_duration(&shared.options.name, started.elapsed());
        }
        result
    }

    async fn call(&self, run: Run) -> Result<Outcome, SkillError> {
        let shared = &self.server.inner;
        let name = &shared.options.name;
        let arguments = match run.input() {
            Value::Object(object) => object.clone(),
            _ => return Err(SkillError::new("invalid_input", "an MCP tool takes a JSON object")),
        };
        let session = shared.live_session().await.map_err(|reason| unavailable(&reason))?;
        let mut params = CallToolRequestParams::new(self.tool.to_string());
        params.arguments = Some(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match session.peer.send_request_with_option(request, PeerRequestOptions::no_options()).await {
            Ok(handle) => handle,
            Err(error) => {
                let cause = describe_service_error(&error);
                shared.failed(&session, &cause).await;
                return Err(unavailable(&format!("mcp server '{name}' is unavailable: {cause}")));
            }
        };
        let (sender, mut deltas) = mpsc::unbounded_channel();
        let token = handle.progress_token.clone();
        let id = handle.id.clone();
        session.client.routes().insert(token.clone(), sender);
        let _route = RouteGuard { client: session.client.clone(), token };
        let answer = handle.await_response();
        tokio::pin!(answer);
        let deadline = tokio::time::sleep(shared.options.call_timeout);
        tokio::pin!(deadline);
        let mut closed = session.closed.clone();
        let went_away = async move { closed.wait_for(Option::is_some).await.ok().and_then(|cause| cause.clone()) };
        tokio::pin!(went_away);
        let result = loop {
            tokio::select! {
                result = &mut answer => break result,
                Some(delta) = deltas.recv() => {
                    run.emit(progress_update(delta)).await;
                }
                () = run.cancelled() => {
                    // The server tells its tool why: the caller's cancel, or our own shutdown.
                    let reason = if run.is_stopping() { "the server is stopping" } else { "the task was cancelled" };
                    notify_cancelled(&session.peer, id, reason).await;
                    return Err(cancelled());
                }
                cause = &mut went_away => {
                    let cause = cause.unwrap_or_else(|| "the session ended".into());
                    return Err(unavailable(&format!("mcp server '{name}' went away during the call: {cause}")));
                }
                () = &mut deadline => {
                    notify_cancelled(&session.peer, id, "timed out").await;
                    return Err(SkillError::new("backend_timeout", format!(
                        "mcp server '{name}' did not answer the tool call within {}", seconds(shared.options.call_timeout)
                    )).retryable(true));
                }
            }
        };
        // Progress that arrived with the answer is delivered before the outcome.
        while let Ok(delta) = deltas.try_recv() {
            run.emit(progress_update(delta)).await;
        }
        match result {
            Ok(ServerResult::CallToolResult(result)) => outcome_of(result),
            Ok(_) => Err(failure(
                "backend_invalid_answer",
                format!("mcp server '{name}' answered tools/call with another kind of result"),
            )),
            Err(rmcp::ServiceError::McpError(error)) => Err(failure(
                "tool_error",
                format!("the MCP server refused the call: {}", bounded(&error.message, 1024)),
            )),
            Err(error) => {
                let mut cause = describe_service_error(&error);
                // A stdio server's end is about to be known (how its process ended): say that.
                if session.pid.is_some() {
                    let mut closed = session.closed.clone();
                    let ended = tokio::time::timeout(Duration::from_secs(1), async move {
                        closed.wait_for(Option::is_some).await.ok().and_then(|cause| cause.clone())
                    });
                    if let Ok(Some(ended)) = ended.await {
                        cause = ended;
                    }
                }
                shared.failed(&session, &cause).await;
                Err(unavailable(&format!("mcp server '{name}' failed the call: {cause}")))
            }
        }
    }
}

fn unavailable(reason: &str) -> SkillError {
    SkillError::new("backend_unavailable", bounded(reason, 1024)).retryable(true)
}

/// Removes a call's progress route when the call ends, however it ends.
struct RouteGuard {
    client: Client,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.client.routes().remove(&self.token);
    }
}

async fn notify_cancelled(peer: &Peer<RoleClient>, id: rmcp::model::RequestId, reason: &str) {
    let params = CancelledNotificationParam::new(Some(id), Some(reason.into()));
    let _ = peer.notify_cancelled(params).await;
}

/// `5 s`, `0.5 s`.
fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// An I/O error's cause in words ("no such file or directory"), without the OS error number.
fn io_cause(error: &std::io::Error) -> String {
    let text = error.to_string();
    let text = match text.find(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    };
    lowercase_first(&text)
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) if chars.clone().next().is_some_and(char::is_lowercase) => {
            first.to_lowercase().chain(chars).collect()
        }
        Some(first) => std::iter::once(first).chain(chars).collect(),
        None => String::new(),
    }
}

/// The innermost cause of an error, in words: what a user can act on ("connection refused",
/// "HTTP 404 …"), never a Rust type's name.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    // The SDK's HTTP error holds the HTTP client's error without naming it as its source.
    fn next<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a (dyn std::error::Error + 'static)> {
        use rmcp::transport::streamable_http_client::StreamableHttpError;
        match error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(inner)) => Some(inner),
            _ => error.source(),
        }
    }
    let mut deepest = error;
    let mut texts = vec![error.to_string()];
    while let Some(source) = next(deepest) {
        deepest = source;
        texts.push(source.to_string());
    }
    if let Some(io) = deepest.downcast_ref::<std::io::Error>() {
        return io_cause(io);
    }
    // Take the deepest text that says something (an empty or generic one says nothing).
    let text = texts.iter().rev().find(|text| !text.trim().is_empty()).cloned().unwrap_or_default();
    let text = match text.find(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    };
    bounded(&lowercase_first(&plain(&text)), 300)
}

/// Rewords rmcp's and the HTTP stack's messages that show Rust names.
fn plain(text: &str) -> String {
    if text.contains("JsonRpcMessage") {
        return "the endpoint answered with something that is not an MCP (JSON-RPC) message".into();
    }
    let mut text = text.to_owned();
    for (from, to) in [
        ("Transport send error: ", ""),
        ("Send message error ", ""),
        ("Client error: ", ""),
        ("Deserialize error: ", "the answer is not MCP: "),
        ("Unexpected content type: ", "the answer is not MCP (content type "),
        ("unexpected server response: ", "unexpected answer: "),
        ("Session expired (HTTP 404)", "HTTP 404 from the MCP endpoint (the session is gone)"),
        ("Transport closed", "the connection closed"),
        ("Transport channel closed", "the connection closed"),
    ] {
        if let Some(rest) = text.strip_prefix(from) {
            text = format!("{to}{rest}");
            if to.ends_with('(') {
                text.push(')');
            }
        }
    }
    text.replace("Some(\"", "").replace("\")", "")
}

/// Why `initialize` failed, in words.
fn describe_init_error(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ExpectedInitResponse(None) => {
            "the server closed the connection before answering initialize (did it exit?)".into()
        }
        ClientInitializeError::ExpectedInitResponse(Some(_)) | ClientInitializeError::ExpectedInitResult(_) => {
            "the server answered initialize with something else than its result".into()
        }
        ClientInitializeError::ConnectionClosed(context) => {
            format!("the connection closed ({})", plain(context))
        }
        ClientInitializeError::JsonRpcError(error) => {
            format!("the server refused initialize: {}", bounded(&error.message, 300))
        }
        ClientInitializeError::TransportError { error, .. } => root_cause(error),
        other => root_cause(other),
    }
}

/// Why a request of a session failed, in words.
fn describe_service_error(error: &rmcp::ServiceError) -> String {
    match error {
        rmcp::ServiceError::McpError(error) => bounded(&error.message, 300),
        rmcp::ServiceError::TransportSend(error) => root_cause(error),
        rmcp::ServiceError::TransportClosed => "the connection to the server closed".into(),
        rmcp::ServiceError::UnexpectedResponse => "the server answered with another kind of result".into(),
        rmcp::ServiceError::Timeout { timeout } => format!("no answer within {}", seconds(*timeout)),
        other => root_cause(other),
    }
}

/// The name of the artifact holding a tool's non-text content.
const CONTENT_ARTIFACT: &str = "content";

/// A tool's result as the run's outcome: the output (structured content, else the text), and
/// every image, audio clip, embedded resource and resource link as a file part of the artifact
/// `content`, in the order the tool gave them.
fn outcome_of(result: CallToolResult) -> Result<Outcome, SkillError> {
    let blocks: Vec<Value> =
        result.content.iter().map(|block| serde_json::to_value(block).unwrap_or(Value::Null)).collect();
    let texts: Vec<&str> =
        blocks.iter().filter(|block| block["type"] == "text").filter_map(|block| block["text"].as_str()).collect();
    if result.is_error == Some(true) {
        let text = texts.join("\n");
        let reason = if text.is_empty() { "the tool reported an error".to_owned() } else { bounded(&text, 1024) };
        return Err(failure("tool_error", reason));
    }
    let files: Vec<Part> = blocks.iter().filter_map(file_part).collect();
    let output = match result.structured_content {
        Some(structured) => structured,
        None => {
            let mut object = Map::new();
            object.insert("text".into(), Value::String(texts.join("\n")));
            Value::Object(object)
        }
    };
    let mut completion = Completion::new(output);
    if !files.is_empty() {
        completion.artifacts.push(Artifact {
            artifact_id: CONTENT_ARTIFACT.into(),
            name: Some(CONTENT_ARTIFACT.into()),
            parts: files,
        });
    }
    Ok(Outcome::Completed(completion))
}

/// An MCP content block other than text as a file part (`None` for text and unknown blocks).
fn file_part(block: &Value) -> Option<Part> {
    let text = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_owned);
    match block["type"].as_str()? {
        "image" | "audio" => {
            Some(Part::File { name: None, mime: text("mimeType"), bytes_base64: text("data"), uri: None })
        }
        "resource" => {
            let resource = &block["resource"];
            let field = |key: &str| resource.get(key).and_then(Value::as_str).map(str::to_owned);
            let uri = field("uri");
            let name = uri.as_deref().and_then(|uri| uri.rsplit('/').next()).filter(|name| !name.is_empty());
            let bytes = match (field("blob"), field("text")) {
                (Some(blob), _) => Some(blob),
                (None, Some(text)) => Some(base64(text.as_bytes())),
                (None, None) => None,
            };
            Some(Part::File { name: name.map(str::to_owned), mime: field("mimeType"), bytes_base64: bytes, uri })
        }
        "resource_link" => {
            Some(Part::File { name: text("name"), mime: text("mimeType"), bytes_base64: None, uri: text("uri") })
        }
        _ => None,
    }
}

/// Standard base64 with padding (an embedded text resource's bytes).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * index)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The streamable-HTTP client of an MCP session: reqwest, with two additions.
///
/// A server that no longer knows a session (it restarted) must answer 404, and the MCP SDK then
/// starts a new session and sends the request again; some servers answer 400 instead ("no valid
/// session ID"), which the SDK took for an answer, so the call waited out its whole timeout, and
/// every later one too. An error answer of HTTP 400 to a request that carried a session id, or a
/// JSON-RPC error that says the session is not valid, is taken as the end of the session, as a
/// 404 is.
///
/// The SDK drops a tool's `execution` field when it reads a `tools/list` answer, so the tools that
/// require MCP tasks are noted here, from the raw answer: an SSE answer's events are read as they
/// pass to the SDK; a plain JSON answer, already read, is asked for once more, raw, in the same
/// session (a `tools/list` changes nothing on the server).
#[derive(Clone)]
struct SessionClient {
    http: reqwest::Client,
    /// The server's name, for the log.
    name: Arc<str>,
    /// Where the names of the tools that require MCP tasks go.
    task_tools: Arc<Mutex<BTreeSet<String>>>,
}

/// `result`, an answer to a request that carried a session id when `attached`, with a refusal of
/// the session turned into the SDK's "session expired".
fn session_refused(
    attached: bool,
    result: Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>,
) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
    if !attached {
        return result;
    }
    let refused = match &result {
        Err(StreamableHttpError::UnexpectedServerResponse(text)) => text.starts_with("HTTP 400"),
        Ok(StreamableHttpPostResponse::Json(rmcp::model::JsonRpcMessage::Error(error), _)) => {
            error.error.message.to_ascii_lowercase().contains("session")
        }
        _ => false,
    };
    if refused {
        tracing::debug!("the MCP endpoint refused the session: starting a new one");
        return Err(StreamableHttpError::SessionExpired);
    }
    result
}

/// Whether `message` is a `tools/list` request.
fn is_tools_list(message: &rmcp::model::ClientJsonRpcMessage) -> bool {
    matches!(message, rmcp::model::JsonRpcMessage::Request(request)
        if matches!(request.request, ClientRequest::ListToolsRequest(_)))
}

/// Notes in `found` the tools of a raw JSON-RPC message (a `tools/list` answer) that require
/// MCP tasks.
fn note_task_tools(found: &Mutex<BTreeSet<String>>, message: &Value) {
    let names = tools_requiring_tasks(&message["result"]);
    if !names.is_empty() {
        found.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(names);
    }
}

/// The JSON-RPC messages of an SSE body: each event's `data` lines, joined by newlines.
fn sse_messages(body: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    let mut data: Vec<&str> = Vec::new();
    for line in body.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty()
                && let Ok(message) = serde_json::from_str(&data.join("\n"))
            {
                messages.push(message);
            }
            data.clear();
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    messages
}

/// How long the raw `tools/list` of a JSON answer may take.
const RAW_TOOLS_LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// What the raw second `tools/list` sends: the request the SDK sent, and where.
struct ToolsListRequest {
    uri: Arc<str>,
    message: Value,
    session_id: Option<Arc<str>>,
    auth_header: Option<String>,
    custom_headers: Headers,
    max_body: usize,
}

impl SessionClient {
    /// The SDK's answer to a request, with a refused session turned into an expired one and
    /// the tools that require MCP tasks noted when it answers `tools/list`.
    async fn answered(
        &self,
        attached: bool,
        listing: Option<ToolsListRequest>,
        answer: Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let answer = session_refused(attached, answer)?;
        let Some(listing) = listing else { return Ok(answer) };
        match answer {
            StreamableHttpPostResponse::Sse(events, session) => {
                use futures_util::StreamExt as _;
                let found = self.task_tools.clone();
                let events = events
                    .inspect(move |event| {
                        if let Ok(sse_stream::Sse { data: Some(data), .. }) = event
                            && data.contains("taskSupport")
                            && let Ok(message) = serde_json::from_str::<Value>(data)
                        {
                            note_task_tools(&found, &message);
                        }
                    })
                    .boxed();
                Ok(StreamableHttpPostResponse::Sse(events, session))
            }
            json @ StreamableHttpPostResponse::Json(rmcp::model::JsonRpcMessage::Response(_), _) => {
                if let Err(cause) = self.list_tools_raw(listing).await {
                    tracing::warn!(
                        server = %self.name,
                        "could not tell which tools of MCP server '{}' require MCP tasks: {cause}",
                        self.name
                    );
                }
                Ok(json)
            }
            other => Ok(other),
        }
    }

    /// Sends `listing` again and notes, from the raw answer (JSON or SSE), the tools that
    /// require MCP tasks.
    async fn list_tools_raw(&self, listing: ToolsListRequest) -> Result<(), String> {
        let ToolsListRequest { uri, mut message, session_id, auth_header, custom_headers, max_body } = listing;
        // Its own id: the server never takes it for the SDK's request.
        message["id"] = Value::String("accord-task-support".into());
        let mut request = self
            .http
            .post(uri.as_ref())
            .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
            .timeout(RAW_TOOLS_LIST_TIMEOUT)
            .json(&message);
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(session_id) = session_id {
            request = request.header("mcp-session-id", session_id.as_ref());
        }
        let mut response = request.send().await.map_err(|error| root_cause(&error))?;
        if !response.status().is_success() {
            return Err(format!("HTTP {} to tools/list", response.status()));
        }
        let sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|error| root_cause(&error))? {
            if body.len() + chunk.len() > max_body {
                return Err(format!("the answer to tools/list is larger than {max_body} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        let messages = if sse {
            sse_messages(&String::from_utf8_lossy(&body))
        } else {
            vec![serde_json::from_slice(&body).map_err(|_| "the answer to tools/list is not JSON".to_owned())?]
        };
        let answer = messages
            .iter()
            .find(|message| message["id"] == "accord-task-support" && message.get("result").is_some())
            .ok_or_else(|| "no answer to tools/list".to_owned())?;
        note_task_tools(&self.task_tools, answer);
        Ok(())
    }

    /// What a raw second `tools/list` would send, when `message` is one.
    fn listing(
        message: &rmcp::model::ClientJsonRpcMessage,
        uri: &Arc<str>,
        session_id: &Option<Arc<str>>,
        auth_header: &Option<String>,
        custom_headers: &Headers,
        max_body: usize,
    ) -> Option<ToolsListRequest> {
        if !is_tools_list(message) {
            return None;
        }
        Some(ToolsListRequest {
            uri: uri.clone(),
            message: serde_json::to_value(message).ok()?,
            session_id: session_id.clone(),
            auth_header: auth_header.clone(),
            custom_headers: custom_headers.clone(),
            max_body,
        })
    }
}

type Headers = HashMap<http::HeaderName, http::HeaderValue>;
type SseResult = Result<
    futures_util::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
    StreamableHttpError<reqwest::Error>,
>;

impl StreamableHttpClient for SessionClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: rmcp::model::ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let attached = session_id.is_some();
        let max_body = StreamableHttpResponseLimits::default().max_json_response_size;
        let listing = Self::listing(&message, &uri, &session_id, &auth_header, &custom_headers, max_body);
        let answer = self.http.post_message(uri, message, session_id, auth_header, custom_headers).await;
        self.answered(attached, listing, answer).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: rmcp::model::ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let attached = session_id.is_some();
        let max_body = StreamableHttpResponseLimits::default().max_json_response_size;
        let listing = Self::listing(&message, &uri, &session_id, &auth_header, &custom_headers, max_body);
        let answer = self
            .http
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.answered(attached, listing, answer).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: rmcp::model::ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let attached = session_id.is_some();
        let listing =
            Self::listing(&message, &uri, &session_id, &auth_header, &custom_headers, limits.max_json_response_size);
        let answer = self
            .http
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await;
        self.answered(attached, listing, answer).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), StreamableHttpError<reqwest::Error>> {
        self.http.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> SseResult {
        self.http.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> SseResult {
        self.http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refused_session_is_taken_as_expired_and_other_answers_pass() {
        let bad_request = || {
            Err(StreamableHttpError::UnexpectedServerResponse(
                "HTTP 400 Bad Request: {\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Bad Request: No valid session ID provided\"},\"id\":null}".into(),
            ))
        };
        assert!(matches!(session_refused(true, bad_request()), Err(StreamableHttpError::SessionExpired)));
        // Without a session, a 400 is the server's answer to the request itself.
        assert!(matches!(session_refused(false, bad_request()), Err(StreamableHttpError::UnexpectedServerResponse(_))));
        let refusal: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(json!({
            "jsonrpc": "2.0", "id": 3, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}
        }))
        .expect("a JSON-RPC error");
        let answer = session_refused(true, Ok(StreamableHttpPostResponse::Json(refusal, None)));
        assert!(matches!(answer, Err(StreamableHttpError::SessionExpired)));
        let tool_error: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(json!({
            "jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "no tool add2"}
        }))
        .expect("a JSON-RPC error");
        let answer = session_refused(true, Ok(StreamableHttpPostResponse::Json(tool_error, None)));
        assert!(matches!(answer, Ok(StreamableHttpPostResponse::Json(..))), "an ordinary error is the answer");
        let server_error =
            Err(StreamableHttpError::UnexpectedServerResponse("HTTP 500 Internal Server Error: boom".into()));
        assert!(matches!(session_refused(true, server_error), Err(StreamableHttpError::UnexpectedServerResponse(_))));
    }

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).expect("a tool result")
    }

    fn completion(value: Value) -> Completion {
        match outcome_of(result(value)) {
            Ok(Outcome::Completed(completion)) => completion,
            other => panic!("expected a completion, got {other:?}"),
        }
    }

    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"hello world"), "aGVsbG8gd29ybGQ=");
    }

    #[test]
    fn text_only_results_keep_the_text_output_and_no_artifact() {
        let done = completion(json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}));
        assert_eq!(done.output, json!({"text": "a\nb"}));
        assert!(done.artifacts.is_empty());
    }

    #[test]
    fn images_audio_and_resources_become_file_parts_in_order() {
        let done = completion(json!({"content": [
            {"type": "text", "text": "here"},
            {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///tmp/notes.txt", "mimeType": "text/plain", "text": "hi"}},
            {"type": "resource", "resource": {"uri": "mem://blob", "blob": "AAEC"}},
            {"type": "resource_link", "uri": "https://example.com/r.pdf", "name": "r.pdf", "mimeType": "application/pdf"},
        ]}));
        assert_eq!(done.output, json!({"text": "here"}));
        assert_eq!(done.artifacts.len(), 1);
        let file = |name: Option<&str>, mime: Option<&str>, bytes: Option<&str>, uri: Option<&str>| Part::File {
            name: name.map(Into::into),
            mime: mime.map(Into::into),
            bytes_base64: bytes.map(Into::into),
            uri: uri.map(Into::into),
        };
        assert_eq!(
            done.artifacts[0].parts,
            [
                file(None, Some("image/png"), Some("iVBORw0K"), None),
                file(None, Some("audio/wav"), Some("UklGRg=="), None),
                file(Some("notes.txt"), Some("text/plain"), Some("aGk="), Some("file:///tmp/notes.txt")),
                file(Some("blob"), None, Some("AAEC"), Some("mem://blob")),
                file(Some("r.pdf"), Some("application/pdf"), None, Some("https://example.com/r.pdf")),
            ]
        );
    }

    #[test]
    fn structured_content_is_the_output_beside_the_files() {
        let done = completion(json!({
            "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
            "structuredContent": {"width": 1}
        }));
        assert_eq!(done.output, json!({"width": 1}));
        assert_eq!(done.artifacts[0].artifact_id, "content");
    }

    #[test]
    fn hints_come_from_the_annotations() {
        let tool: Tool = serde_json::from_value(json!({
            "name": "t", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "destructiveHint": false}
        }))
        .expect("tool");
        let hints = ToolHints::of(&tool);
        assert_eq!((hints.read_only, hints.idempotent, hints.destructive), (Some(true), None, Some(false)));
        assert!(hints.safe_to_repeat());
        let bare: Tool = serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}})).expect("tool");
        assert!(!ToolHints::of(&bare).safe_to_repeat());
    }

    #[test]
    fn the_tap_finds_task_tools_in_lines_split_across_reads() {
        let found = Arc::new(Mutex::new(BTreeSet::new()));
        let mut tap = TaskToolTap::new((), found.clone());
        let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "plain", "inputSchema": {"type": "object"}},
            {"name": "maybe", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
            {"name": "render", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
        ]}})
        .to_string();
        let bytes = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\n{answer}\n");
        for chunk in bytes.as_bytes().chunks(7) {
            tap.saw(chunk);
        }
        assert_eq!(found.lock().expect("lock").iter().collect::<Vec<_>>(), ["render"]);
        assert!(tap.line.is_empty());
    }

    #[test]
    fn an_sse_body_is_read_as_its_events_messages() {
        let body = "event: message\r\nid: 1\r\ndata: {\"id\": 1,\r\ndata: \"result\": {}}\r\n\r\n: a comment\n\ndata:{\"id\":2}";
        assert_eq!(sse_messages(body), [json!({"id": 1, "result": {}}), json!({"id": 2})]);
        let found = Mutex::new(BTreeSet::new());
        note_task_tools(
            &found,
            &json!({"result": {"tools": [
                {"name": "later", "execution": {"taskSupport": "required"}},
                {"name": "now", "execution": {"taskSupport": "forbidden"}},
            ]}}),
        );
        assert_eq!(found.lock().expect("lock").iter().collect::<Vec<_>>(), ["later"]);
    }

    #[test]
    fn causes_are_words_not_type_names() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(io_cause(&refused), "connection refused");
        assert_eq!(
            describe_init_error(&ClientInitializeError::ExpectedInitResponse(None)),
            "the server closed the connection before answering initialize (did it exit?)"
        );
    }
}
