//! Accord's out-of-process load harness: the load generator behind `bench-load` (checked
//! answers, latency percentiles, the server's CPU time per request) and, in the `sdk-echo`
//! binary, the official Rust A2A SDK echo server it compares Accord with. `scripts/bench` runs
//! both against `accord serve`, each server and the generator pinned to their own core. The
//! `soak` module, behind `bench-soak`, is the long mixed load and the fault cases of
//! `scripts/soak` and `scripts/faults` (docs/soak.md).

pub mod check;
pub mod load;
pub mod soak;
pub mod sse;
pub mod stats;
