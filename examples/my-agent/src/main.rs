//! An agent of your own, served with every production feature of `accord serve`: the durable
//! store, leases and recovery, limits, metrics, push, gRPC, auth, signed cards, graceful stop.
//!
//! Run with: `cargo run -p my-agent -- --port 8788 --store sqlite://my-agent.db` (`--help` lists
//! every flag).

// The allocator `accord serve` runs on: the binary chooses it, not the library (docs/serving.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use accord::{Agent, Serve, ServeArgs, Skill, SkillError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `reverse` takes.
#[derive(Deserialize, JsonSchema)]
struct Text {
    /// The text to reverse.
    text: String,
}

/// What `reverse` answers.
#[derive(Serialize, JsonSchema)]
struct Reversed {
    /// The text, last character first.
    reversed: String,
    /// How many characters it has.
    characters: usize,
}

#[tokio::main]
async fn main() -> Result<(), accord::ServeError> {
    let reverse = Skill::builder("reverse").description("Reverses a text").typed(|input: Text, _run| async move {
        let reversed: String = input.text.chars().rev().collect();
        Ok::<_, SkillError>(Reversed { characters: reversed.chars().count(), reversed })
    });
    let agent = Agent::builder("my-agent").description("Reverses texts").skill(reverse).build();
    let agent = agent.map_err(|error| accord::ServeError::usage(error.to_string()))?;
    // Every flag and ACCORD_* variable of `accord serve`: --store, --grpc-port, --metrics-addr, …
    Serve::with_args(agent, ServeArgs::parse()).run().await
}
