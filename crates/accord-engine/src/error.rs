//! The engine's errors. Faces map them to their wire (status, body, JSON-RPC code); the engine
//! never decides how an error looks on the wire.

use crate::run::EndStatus;
use crate::schema::Issue;
use crate::skill::SkillError;

/// Why an agent or a skill could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// A skill key is empty, too long or uses characters outside `[A-Za-z0-9._-]`.
    InvalidSkillKey {
        /// The key as given.
        key: String,
    },
    /// Two skills share a key.
    DuplicateSkill {
        /// The key.
        key: String,
    },
    /// A skill has neither an invoke nor a stream handler.
    NoHandler {
        /// The key.
        key: String,
    },
    /// A schema given for a skill is not a valid JSON Schema.
    InvalidSchema {
        /// The key.
        key: String,
        /// What the schema compiler said.
        reason: String,
    },
    /// A skill's price is not a decimal integer amount.
    InvalidPrice {
        /// The key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// An agent field is invalid (empty name, …).
    InvalidAgent {
        /// What is wrong.
        reason: String,
    },
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidSkillKey { key } => write!(
                f,
                "skill key {key:?} must be 1 to 128 characters of [A-Za-z0-9._-], starting with a letter or digit"
            ),
            Self::DuplicateSkill { key } => write!(f, "skill key {key:?} is used twice"),
            Self::NoHandler { key } => write!(f, "skill {key:?} has neither an invoke nor a stream handler"),
            Self::InvalidSchema { key, reason } => write!(f, "skill {key:?} has an invalid schema: {reason}"),
            Self::InvalidPrice { key, reason } => write!(f, "skill {key:?} has an invalid price: {reason}"),
            Self::InvalidAgent { reason } => write!(f, "invalid agent: {reason}"),
        }
    }
}

impl std::error::Error for BuildError {}

/// Why a run could not start or did not complete.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunError {
    /// No skill has this key.
    UnknownSkill {
        /// The key asked for.
        key: String,
    },
    /// The skill cannot be invoked directly (it only streams).
    NotInvocable {
        /// The key.
        key: String,
    },
    /// The skill cannot stream.
    NotStreamable {
        /// The key.
        key: String,
    },
    /// The input does not match the skill's input schema.
    InvalidInput {
        /// What is wrong, one issue per violation.
        issues: Vec<Issue>,
    },
    /// The handler's output does not match the skill's output schema.
    InvalidOutput {
        /// What is wrong.
        issues: Vec<Issue>,
    },
    /// The handler failed.
    Failed(SkillError),
    /// The run was cancelled before it finished.
    Cancelled,
    /// The handler ended without an output: it needs input or authorization, or rejected the
    /// request. Faces that can express this (A2A tasks) use the state; others report it as such.
    Incomplete {
        /// How the handler ended.
        status: EndStatus,
        /// What the handler said.
        message: Option<String>,
    },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownSkill { key } => write!(f, "no skill {key:?}"),
            Self::NotInvocable { key } => write!(f, "skill {key:?} has no invoke handler"),
            Self::NotStreamable { key } => write!(f, "skill {key:?} does not stream"),
            Self::InvalidInput { issues } => write!(f, "invalid input ({} issues)", issues.len()),
            Self::InvalidOutput { issues } => write!(f, "invalid output ({} issues)", issues.len()),
            Self::Failed(error) => write!(f, "skill failed: {error}"),
            Self::Cancelled => f.write_str("run cancelled"),
            Self::Incomplete { status, .. } => write!(f, "run ended as {}", status.as_str()),
        }
    }
}

impl std::error::Error for RunError {}
