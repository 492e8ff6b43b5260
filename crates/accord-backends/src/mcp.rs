//! MCP servers as skill backends, through the official Rust MCP SDK (`rmcp`): each tool of a
//! server is a skill, its `inputSchema` the skill's input schema.
//!
//! - A server is reached over stdio (a child process, started once and kept) or over streamable
//!   HTTP. [`McpServer::connect`] initializes the session; [`McpServer::tools`] lists the tools
//!   (every page of `tools/list`).
//! - A run is one `tools/call` with the input as its `arguments` and a progress token: each
//!   `notifications/progress` becomes a text delta (its `message`, else `progress/total`).
//! - The answer: `structuredContent` when the tool gives one, else `{"text": …}` (its text blocks
//!   joined by newlines) when every block is text, else `{"content": [...]}` (the blocks as MCP
//!   wrote them). `isError: true` fails the run (`tool_error`) with the tool's text.
//! - Cancelling the run sends `notifications/cancelled` for the request and stops waiting.
//! - A transport that closes, a timeout or a JSON-RPC error is the skill's failure.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use accord_engine::{BoxFuture, Completion, Handler, Outcome, Run, RunEvent, SkillError};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest,
    ProgressNotificationParam, ProgressToken, ServerResult, Tool,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::contract::{bounded, cancelled, failure};
use crate::{BackendError, Secret};

/// The default time a tool call may take.
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(60);

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

/// Routes progress notifications to the run whose call carries their token.
#[derive(Clone, Default)]
struct Progress {
    routes: Arc<Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<String>>>>,
}

impl Progress {
    fn routes(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, mpsc::UnboundedSender<String>>> {
        self.routes.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ClientHandler for Progress {
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
        if let Some(route) = self.routes().get(&params.progress_token) {
            let _ = route.send(text);
        }
        std::future::ready(())
    }
}

/// A connected MCP server: one session, shared by every run of its tools.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Session>,
}

struct Session {
    peer: Peer<RoleClient>,
    progress: Progress,
    timeout: Duration,
    // Held for the session's life: dropping it closes the session (and stops a child process).
    _service: RunningService<RoleClient, Progress>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").field("timeout", &self.inner.timeout).finish_non_exhaustive()
    }
}

impl McpServer {
    /// Starts (stdio) or reaches (HTTP) the server and initializes the session; each tool call
    /// may then take `timeout`.
    pub async fn connect(transport: McpTransport, timeout: Duration) -> Result<Self, BackendError> {
        let progress = Progress::default();
        let service = match transport {
            McpTransport::Stdio { program, args, cwd, env } => {
                let mut command = tokio::process::Command::new(&program);
                command.args(&args).env_clear().envs(env.iter().map(|(name, value)| (name, value.expose())));
                if let Some(cwd) = &cwd {
                    command.current_dir(cwd);
                }
                let (child, _stderr) =
                    TokioChildProcess::builder(command).stderr(std::process::Stdio::inherit()).spawn().map_err(
                        |error| BackendError::new(format!("the MCP server could not be started ({})", error.kind())),
                    )?;
                progress.clone().serve(child).await.map_err(|error| {
                    BackendError::new(format!(
                        "the MCP server did not initialize: {}",
                        bounded(&error.to_string(), 200)
                    ))
                })?
            }
            McpTransport::Http { url, headers } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                for (name, value) in &headers {
                    let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| BackendError::new(format!("{name:?} is not a header name")))?;
                    let value = reqwest::header::HeaderValue::from_str(value.expose())
                        .map_err(|_| BackendError::new(format!("the value of header {name} is not valid")))?;
                    config.custom_headers.insert(name, value);
                }
                let client = reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(10))
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|_| BackendError::new("could not build the HTTP client"))?;
                let transport = StreamableHttpClientTransport::with_client(client, config);
                // The URL is configuration, not a secret; the error names no header.
                progress.clone().serve(transport).await.map_err(|error| {
                    BackendError::new(format!(
                        "the MCP server at {url} did not initialize: {}",
                        bounded(&error.to_string(), 200)
                    ))
                })?
            }
        };
        let peer = service.peer().clone();
        Ok(Self { inner: Arc::new(Session { peer, progress, timeout, _service: service }) })
    }

    /// Every tool the server offers (`tools/list`, all pages).
    pub async fn tools(&self) -> Result<Vec<Tool>, BackendError> {
        let listed = tokio::time::timeout(self.inner.timeout, self.inner.peer.list_all_tools()).await;
        match listed {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(error)) => {
                Err(BackendError::new(format!("tools/list failed: {}", bounded(&error.to_string(), 200))))
            }
            Err(_) => Err(BackendError::new("tools/list timed out")),
        }
    }

    /// The handler that runs `tool` on this server.
    pub fn tool(&self, tool: impl Into<String>) -> McpTool {
        McpTool { server: self.clone(), tool: Arc::from(tool.into()) }
    }
}

/// One tool of an [`McpServer`] as a skill's handler.
#[derive(Clone, Debug)]
pub struct McpTool {
    server: McpServer,
    tool: Arc<str>,
}

impl Handler for McpTool {
    fn call(&self, run: Run) -> BoxFuture<Result<Outcome, SkillError>> {
        let this = self.clone();
        Box::pin(async move { this.run(run).await })
    }
}

impl McpTool {
    async fn run(&self, run: Run) -> Result<Outcome, SkillError> {
        let session = &self.server.inner;
        let arguments = match run.input() {
            Value::Object(object) => object.clone(),
            _ => return Err(SkillError::new("invalid_input", "an MCP tool takes a JSON object")),
        };
        let mut params = CallToolRequestParams::new(self.tool.to_string());
        params.arguments = Some(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = session
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|_| failure("backend_unavailable", "the MCP server's session is closed"))?;
        let (sender, mut deltas) = mpsc::unbounded_channel();
        let token = handle.progress_token.clone();
        let id = handle.id.clone();
        session.progress.routes().insert(token.clone(), sender);
        let _route = RouteGuard { progress: session.progress.clone(), token };
        let answer = handle.await_response();
        tokio::pin!(answer);
        let deadline = tokio::time::sleep(session.timeout);
        tokio::pin!(deadline);
        let result = loop {
            tokio::select! {
                result = &mut answer => break result,
                Some(delta) = deltas.recv() => {
                    run.emit(RunEvent::Delta { delta, mime: None, is_final: false }).await;
                }
                () = run.cancelled() => {
                    notify_cancelled(&session.peer, id, "the task was cancelled").await;
                    return Err(cancelled());
                }
                () = &mut deadline => {
                    notify_cancelled(&session.peer, id, "timed out").await;
                    return Err(SkillError::new("backend_timeout", format!(
                        "the MCP tool did not answer within {} s", session.timeout.as_secs_f64()
                    )).retryable(true));
                }
            }
        };
        // Progress that arrived with the answer is delivered before the outcome.
        while let Ok(delta) = deltas.try_recv() {
            run.emit(RunEvent::Delta { delta, mime: None, is_final: false }).await;
        }
        match result {
            Ok(ServerResult::CallToolResult(result)) => outcome_of(result),
            Ok(_) => Err(failure("backend_invalid_answer", "the MCP server answered tools/call with another result")),
            Err(rmcp::ServiceError::McpError(error)) => Err(failure(
                "tool_error",
                format!("the MCP server refused the call: {}", bounded(&error.message, 1024)),
            )),
            Err(error) => Err(failure(
                "backend_unavailable",
                format!("the MCP call failed: {}", bounded(&error.to_string(), 200)),
            )),
        }
    }
}

/// Removes a call's progress route when the call ends, however it ends.
struct RouteGuard {
    progress: Progress,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.progress.routes().remove(&self.token);
    }
}

async fn notify_cancelled(peer: &Peer<RoleClient>, id: rmcp::model::RequestId, reason: &str) {
    let params = CancelledNotificationParam::new(Some(id), Some(reason.into()));
    let _ = peer.notify_cancelled(params).await;
}

/// A tool's result as the run's outcome.
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
    let output = match result.structured_content {
        Some(structured) => structured,
        None if texts.len() == blocks.len() => {
            let mut object = Map::new();
            object.insert("text".into(), Value::String(texts.join("\n")));
            Value::Object(object)
        }
        None => {
            let mut object = Map::new();
            object.insert("content".into(), Value::Array(blocks));
            Value::Object(object)
        }
    };
    Ok(Outcome::Completed(Completion::new(output)))
}
