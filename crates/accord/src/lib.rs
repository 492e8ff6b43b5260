#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod serve;

pub use accord_engine::{
    Agent, AgentBuilder, Artifact, BuildError, Completion, Handler, Message, Outcome, Part, Pricing, Role, Run,
    RunEvent, Skill, SkillBuilder, SkillError, SkillOperation, TaskState,
};

pub use crate::serve::{Running, Serve, ServeArgs, ServeError, StoreSpec};

/// The engine: agents, skills, runs, the task runtime and its stores' contract
/// (`accord-engine`).
pub use accord_engine as engine;

/// The HTTP faces: cards, Lucid, JSON-RPC tasks, A2A JSON-RPC, HTTP+JSON and gRPC, auth, limits,
/// push (`accord-server`).
pub use accord_server as server;

/// The wire types of every dialect (`accord-types`).
pub use accord_types as types;

/// Signed cards: RFC 8785, SHAKE256, ML-DSA-87, SLH-DSA, Ed25519, ES256, JWS (`accord-card`).
pub use accord_card as card;

/// Payment rails: x402, MPP and the local development rail (`accord-payments`).
pub use accord_payments as payments;

/// Skills whose code lives outside Rust (an HTTP endpoint, a command) and the TOML agent file
/// that names them (`accord-backends`).
#[cfg(feature = "backends")]
pub use accord_backends as backends;

/// The client: discover agents and call them over every dialect and binding (`accord-client`).
#[cfg(feature = "client")]
pub use accord_client as client;

/// The A2A gRPC binding's proto types and conversions (`accord-grpc`).
#[cfg(feature = "grpc")]
pub use accord_grpc as grpc;

/// The embedded SQLite task store (`accord-store-sqlite`).
#[cfg(feature = "sqlite")]
pub use accord_store_sqlite as sqlite;

/// The PostgreSQL task store (`accord-store-postgres`).
#[cfg(feature = "postgres")]
pub use accord_store_postgres as postgres;
