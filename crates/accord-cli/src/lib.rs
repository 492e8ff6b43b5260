//! The `accord` command's library half: the demo and conformance agents that `accord serve` runs
//! (through the same `accord::Serve` call as any agent), and the command implementations, so that
//! tests can drive them in-process.

pub mod conformance;
pub mod demo;
pub mod push_cmd;
pub mod push_listen;
pub mod summarize;
pub mod tls_args;
