//! Wire types of Accord.
//!
//! This crate owns the shapes that cross the network — the agent card, the bodies of the Lucid
//! HTTP profile, the A2A types and the JSON-RPC 2.0 envelope ([`jsonrpc`]) — and nothing else:
//! no I/O, no business rules. Every face and the client share these types, so a field renamed
//! here is renamed on the wire everywhere.

pub mod a2a;
pub mod card;
pub mod jsonrpc;
pub mod lucid;
pub mod tasks;
pub mod tasks_rpc;

mod lenient;

pub use card::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill, EntrypointDescriptor};
pub use lucid::{
    BackendHealth, EntrypointItem, EntrypointsResponse, ErrorBody, ErrorDetail, HealthResponse, InvokeResponse,
    RunEndError, RunStatus, StreamEnvelope, StreamPayload,
};
