//! An agent with one typed skill, served on a loopback port with [`accord::Serve`], then invoked
//! with the client.
//!
//! Run with: `cargo run -p hello-agent`

use accord::client::{Client, InvokeOptions};
use accord::{Agent, Serve, Skill, SkillError, StoreSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the skill takes.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

/// What the skill returns.
#[derive(Serialize, JsonSchema)]
struct Greeting {
    /// The greeting.
    message: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An agent with one skill whose input and output schemas come from the Rust types.
    let agent = Agent::builder("hello-agent")
        .description("Greets people")
        .skill(Skill::builder("greet").description("Says hello").typed(|input: Greet, _run| async move {
            Ok::<_, SkillError>(Greeting { message: format!("Hello, {}!", input.name) })
        }))
        .build()?;

    // Serve it with every production feature, on a free loopback port and the in-process store.
    let running = Serve::new(agent).port(0).store(StoreSpec::Memory).logging(false).bind().await?;

    // Discover it and call the skill.
    let client = Client::new();
    let card = client.fetch_card(running.url()).await?;
    let answer = client.invoke(&card, "greet", serde_json::json!({"name": "Ada"}), InvokeOptions::default()).await?;
    let output = answer.output.unwrap_or_default();
    println!("{output}");
    assert_eq!(output["message"], "Hello, Ada!");
    running.stop().await?;
    Ok(())
}
