//! The Accord engine.
//!
//! The engine owns agents, their skills and the runs of those skills. It knows nothing of HTTP,
//! databases or wire formats (the card included): protocol faces (the `accord-server` crate)
//! parse requests, call the engine and project its results and its one event model,
//! [`RunEvent`], onto their own wire.
//!
//! ```
//! use accord_engine::{Agent, Skill, SkillError};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, Serialize, JsonSchema)]
//! struct Echo { text: String }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = Agent::builder("echo-agent")
//!     .description("Says it back")
//!     .skill(Skill::builder("echo").description("Echo").typed(|input: Echo, _run| async move {
//!         Ok::<_, SkillError>(input)
//!     }))
//!     .build()?;
//!
//! let valid = agent.skill("echo")?.validate_input(serde_json::json!({"text": "hi"}))?;
//! let invocation = agent.invoke(valid).await?;
//! assert_eq!(invocation.completion.output, serde_json::json!({"text": "hi"}));
//! # Ok(()) }
//! ```

mod agent;
mod direct;
mod error;
pub mod idempotency;
pub mod model;
pub mod observe;
mod run;
mod schema;
mod skill;
pub mod task;
pub mod time;

pub use agent::{Agent, AgentBuilder};
pub use direct::PaidRun;
pub use error::{BuildError, Error, ErrorKind, RunError};
pub use model::Issue;
pub use run::{
    Artifact, Asset, AssetTransfer, Completion, EndStatus, Invocation, Message, Outcome, Part, Role, Run, RunEnd,
    RunEvent, RunFrame, RunStream, TaskState,
};
pub use skill::{BoxFuture, Handler, Pricing, Skill, SkillBuilder, SkillError, SkillOperation, ValidInput};
