//! An agent with one typed skill, served on a loopback port, then invoked with the client.
//!
//! Run with: `cargo run -p hello-agent`

use accord_client::{Client, InvokeOptions};
use accord_engine::{Agent, Skill, SkillError};
use accord_server::AgentRouterExt;
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

    // Serve it on a free loopback port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, agent.router()).await });

    // Discover it and call the skill.
    let client = Client::new();
    let card = client.fetch_card(&base).await?;
    let answer = client.invoke(&card, "greet", serde_json::json!({"name": "Ada"}), InvokeOptions::default()).await?;
    let output = answer.output.unwrap_or_default();
    println!("{output}");
    assert_eq!(output["message"], "Hello, Ada!");
    Ok(())
}
