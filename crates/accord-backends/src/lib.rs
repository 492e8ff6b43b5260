//! Skills whose code lives outside Rust, and the agent file that names them.
//!
//! To the engine these are ordinary skills: the same schemas, prices, cancellation and task log.
//! A backend's failure is a skill failure (a failed run), never a server failure; a backend that
//! refuses the request (an HTTP 4xx, a `{"rejected": …}` answer) rejects the run, which is the
//! caller's mistake.
//!
//! - [`HttpBackend`]: sends the input JSON to an endpoint (a POST, or the GET, PUT, PATCH or
//!   DELETE of a REST resource named by a URL path template); a JSON answer, or an NDJSON or
//!   server-sent-event stream of deltas ending in an output.
//! - [`CommandBackend`]: spawns a program per run, the input JSON on stdin, NDJSON (or one JSON
//!   document over several lines) on stdout.
//! - [`McpServer`]: the tools of an MCP server (stdio or streamable HTTP, through `rmcp`), each a
//!   skill ([`McpTool`]).
//! - [`A2aAgent`]: a remote A2A agent (read with Accord's own client, any version and binding),
//!   each of its skills a skill ([`A2aSkill`]) that forwards the caller's message to it.
//! - [`AgentFile`]: the TOML file (`docs/agent-file.md`) that describes an agent and wires each
//!   of its skills to a backend.
//!
//! The backends' wire contract — request body, headers, answers, streams, limits, and what a
//! caller sees on each failure — is `docs/backends.md`.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let file = accord_backends::AgentFile::load("shop.toml")?;
//! let agent = file.build_agent()?;
//! # let _ = agent; Ok(()) }
//! ```

mod a2a;
mod command;
mod contract;
pub mod file;
mod gate;
mod health;
mod http;
mod mcp;
mod secret;

pub use a2a::{A2aAgent, A2aOptions, A2aSkill, DEFAULT_A2A_TIMEOUT};
pub use command::{CommandBackend, CommandConfig};
pub use file::{A2aSpec, AgentFile, Backend, BuiltAgent, FileError, FileErrors, McpSpec, SkillSpec};
pub use health::{BACKEND_CALL_SECONDS, BackendStatus};
pub use http::{HttpBackend, HttpConfig, HttpMethod, RESERVED_HEADERS};
pub use mcp::{
    DEFAULT_MCP_STARTUP_TIMEOUT, DEFAULT_MCP_TIMEOUT, MCP_RECONNECT_FIRST_DELAY, MCP_RECONNECT_MAX_DELAY, McpOptions,
    McpServer, McpTool, McpTransport, ToolHints,
};
pub use secret::Secret;

/// Log filter directives for a process that uses these backends, to add to its default filter
/// (`info,rmcp=warn`): the MCP SDK logs every notification it receives (each progress step) and
/// each session's start at INFO, with its own type names; Accord's own lines say what matters
/// (a server down, back, its tools changed). An explicit filter (`ACCORD_LOG`) still wins.
pub const LOG_DIRECTIVES: &str = "rmcp=warn";

/// A backend that cannot be made from its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendError {
    reason: String,
}

impl BackendError {
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for BackendError {}
