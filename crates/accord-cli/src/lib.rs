//! The `accord` command's library half: the demo agent that `accord serve` runs, and the
//! command implementations, so that tests can drive them in-process.

pub mod budgets;
pub mod conformance;
pub mod demo;
pub mod push_cmd;
pub mod push_listen;
pub mod store;
pub mod summarize;
