//! The engine's errors. Faces map them to their wire (status, body, JSON-RPC code); the engine
//! never decides how an error looks on the wire.

use crate::model::{EndStatus, Issue, Message, SkillError, TaskId};

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
    /// A skill's price is not a decimal integer amount, or a priced skill can be called some way
    /// that is neither priced nor free on purpose.
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
    /// The skill needs a scope the caller does not hold ([`crate::Skill::permits`]).
    ScopeRequired {
        /// The skill's key.
        key: String,
        /// The scope it needs.
        scope: String,
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
        /// What the handler said: the whole message (every part, its id), never flattened.
        message: Option<Message>,
    },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownSkill { key } => write!(f, "no skill {key:?}"),
            Self::NotInvocable { key } => write!(f, "skill {key:?} has no invoke handler"),
            Self::NotStreamable { key } => write!(f, "skill {key:?} does not stream"),
            Self::InvalidInput { issues } => write!(f, "invalid input ({} issues)", issues.len()),
            Self::ScopeRequired { key, scope } => write!(f, "scope '{scope}' required for skill '{key}'"),
            Self::InvalidOutput { issues } => write!(f, "invalid output ({} issues)", issues.len()),
            Self::Failed(error) => write!(f, "skill failed: {error}"),
            Self::Cancelled => f.write_str("run cancelled"),
            Self::Incomplete { status, .. } => write!(f, "run ended as {}", status.as_str()),
        }
    }
}

impl std::error::Error for RunError {}

/// What kind of failure an [`Error`] is: the one classification every face maps to its own wire
/// (an HTTP status and code for the Lucid profile, a JSON-RPC code for the tasks face, an A2A
/// error for the official bindings). Faces match on the kind; they never read the message to
/// decide anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request names no skill and the agent has no default one.
    NoSkill,
    /// No skill has the key the request names.
    UnknownSkill,
    /// The skill cannot run as a task (it has no invoke handler).
    NotInvocable,
    /// The input does not match the skill's input schema ([`Error::issues`] says where).
    InvalidInput,
    /// The request is malformed in a way only the engine can see (a context that differs from
    /// the task's, a page token this agent did not issue, …).
    InvalidRequest,
    /// No such task for this caller (another owner's task reads the same).
    TaskNotFound,
    /// The caller's task has no push config with the id asked for (the task itself exists).
    PushConfigNotFound,
    /// The task has ended and cannot be cancelled.
    NotCancelable,
    /// The task ended while the cancellation was being made.
    CancelConflict,
    /// A follow-up message reached a task that is running: it takes one only while it waits.
    TaskRunning,
    /// A follow-up message, or a subscription, reached a task that has ended.
    TaskEnded,
    /// The skill is priced and the request brings no way to pay.
    PaymentRequired,
    /// Paid work needs a durable task store and this one is not.
    DurableStoreRequired,
    /// Anonymous callers may not do this (list tasks, by default).
    AnonymousNotAllowed,
    /// The skill needs a scope the caller does not hold ([`crate::Skill::permits`]): not
    /// retryable without other credentials. Nothing was stored or run.
    ScopeRequired,
    /// The agent serves no streams ([`crate::task::ServiceConfig::streaming`] is off): a
    /// streaming send or a subscription is refused before anything starts.
    StreamingOff,
    /// The request is larger than a limit of the task service allows (an input, a message, a
    /// task's history): not retryable as it is.
    TooLarge,
    /// The store holds as many unfinished tasks as it may: retry later.
    CapacityExhausted,
    /// The caller holds as many unfinished tasks as one caller may (its share of the store):
    /// retry when one of them ends. Other callers still get through.
    OwnerShareExhausted,
    /// The task could not be started (its execution claim was lost).
    StartFailed,
    /// The engine is shutting down.
    ShuttingDown,
    /// The store failed; the message is for operators and says nothing secret.
    Unavailable,
    /// Anything else; never a caller's mistake.
    Internal,
}

/// The engine's one error for task operations: a [`ErrorKind`], a message for people, and the
/// schema issues of an invalid input.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    issues: Vec<Issue>,
    task: Option<TaskId>,
}

impl Error {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), issues: Vec::new(), task: None }
    }

    /// The same error, about `task`.
    pub fn about(mut self, task: &TaskId) -> Self {
        self.task = Some(task.clone());
        self
    }

    /// The task the error is about, when there is one (faces whose wire fixes the message of an
    /// error, such as the Lucid profile's `Task "<id>" is not running`, build it from this).
    pub fn task_id(&self) -> Option<&TaskId> {
        self.task.as_ref()
    }

    /// An invalid input with its issues.
    pub fn invalid_input(message: impl Into<String>, issues: Vec<Issue>) -> Self {
        Self { kind: ErrorKind::InvalidInput, message: message.into(), issues, task: None }
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What went wrong, in words safe to show the caller.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The schema issues of an [`ErrorKind::InvalidInput`].
    pub fn issues(&self) -> &[Issue] {
        &self.issues
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl Error {
    /// The service's error for a [`RunError::ScopeRequired`]: [`ErrorKind::ScopeRequired`] with
    /// the same words.
    pub(crate) fn scope_required(error: &RunError) -> Self {
        Self::new(ErrorKind::ScopeRequired, error.to_string())
    }
}
