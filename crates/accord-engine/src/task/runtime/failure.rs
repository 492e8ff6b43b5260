//! Why a task operation failed ([`TaskFailure`]), how a run's error is stored on a failed task,
//! and how both map onto the crate's [`Error`].

#[cfg(doc)]
use super::RuntimeConfig;
use crate::error::{Error, ErrorKind, RunError};
use crate::model::TaskId;
use crate::run::TaskState;
use crate::skill::SkillError;
use crate::task::store::StoreError;

/// Why a task operation failed. Faces map these to their wire.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskFailure {
    /// No such task for this owner (a task owned by someone else reads the same).
    NotFound {
        /// The id asked for.
        id: TaskId,
    },
    /// The task has already ended and cannot be cancelled.
    NotCancellable {
        /// The id.
        id: TaskId,
        /// Its state.
        state: TaskState,
    },
    /// The task ended while the cancellation was being made.
    CancelRace {
        /// The id.
        id: TaskId,
    },
    /// The caller already has as many unfinished tasks as one owner may
    /// ([`RuntimeConfig::max_active_per_owner`]).
    OwnerShareExhausted {
        /// The share.
        limit: usize,
    },
    /// The store holds only unfinished tasks and cannot take another.
    CapacityExhausted {
        /// The store's capacity.
        capacity: usize,
    },
    /// The in-process store's byte budget is taken by unfinished tasks.
    BytesExhausted {
        /// The budget, in bytes.
        budget: usize,
    },
    /// The execution claim could not be taken or was lost.
    ClaimLost {
        /// The id.
        id: TaskId,
    },
    /// A follow-up message reached a task that is not waiting for one (it is running, or it
    /// has ended).
    NotWaiting {
        /// The id.
        id: TaskId,
        /// Its state.
        state: TaskState,
    },
    /// A follow-up message reached a task that waits for its admission (a paid task waiting for
    /// its payment): only the message that pays for it continues it.
    NotAdmitted {
        /// The id.
        id: TaskId,
    },
    /// The runtime is closed.
    Closed,
    /// The store failed.
    Store(StoreError),
}

impl std::fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotFound { id } => write!(f, "Task \"{id}\" not found"),
            Self::NotCancellable { id, .. } => write!(f, "Task \"{id}\" has ended and cannot be canceled"),
            Self::CancelRace { id } => write!(f, "Task \"{id}\" ended while it was being canceled"),
            Self::OwnerShareExhausted { limit } => {
                write!(
                    f,
                    "This caller already has {limit} unfinished tasks, as many as one caller may; retry when one ends"
                )
            }
            Self::CapacityExhausted { capacity } => {
                write!(f, "Task capacity ({capacity}) is exhausted by active tasks")
            }
            Self::BytesExhausted { budget } => {
                write!(f, "Task memory ({budget} bytes) is exhausted by active tasks")
            }
            Self::ClaimLost { id } => write!(f, "the execution claim on task {id} was lost"),
            Self::NotWaiting { id, state } if state.is_terminal() => {
                write!(f, "Task \"{id}\" has ended and takes no more messages")
            }
            Self::NotWaiting { id, .. } => write!(f, "Task \"{id}\" is not waiting for a message"),
            Self::NotAdmitted { id } => write!(f, "Task \"{id}\" waits for its payment"),
            Self::Closed => f.write_str("the task runtime is closed"),
            Self::Store(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for TaskFailure {}

impl From<StoreError> for TaskFailure {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::CapacityExhausted { capacity } => Self::CapacityExhausted { capacity },
            StoreError::OwnerShareExhausted { limit } => Self::OwnerShareExhausted { limit },
            StoreError::BytesExhausted { budget } => Self::BytesExhausted { budget },
            StoreError::Closed => Self::Closed,
            other => Self::Store(other),
        }
    }
}

/// The code of a task that recovery found interrupted and did not run again (its skill is not
/// safe to repeat, [`crate::Skill::is_safe_to_repeat`]).
pub const INTERRUPTED: &str = "interrupted";

/// How a run error is stored on a failed task.
pub(super) fn task_error(error: RunError) -> SkillError {
    match error {
        RunError::Failed(error) => error,
        RunError::InvalidInput { issues } => SkillError {
            code: "invalid_input".into(),
            message: "Invalid input".into(),
            retryable: None,
            details: serde_json::to_value(issues).ok(),
        },
        RunError::InvalidOutput { issues } => SkillError {
            code: "invalid_output".into(),
            message: "Invalid output".into(),
            retryable: None,
            details: serde_json::to_value(issues).ok(),
        },
        other => SkillError::internal(other.to_string()),
    }
}

impl From<TaskFailure> for Error {
    fn from(failure: TaskFailure) -> Self {
        let message = failure.to_string();
        let task = match &failure {
            TaskFailure::NotFound { id }
            | TaskFailure::NotCancellable { id, .. }
            | TaskFailure::CancelRace { id }
            | TaskFailure::ClaimLost { id }
            | TaskFailure::NotWaiting { id, .. }
            | TaskFailure::NotAdmitted { id } => Some(id.clone()),
            _ => None,
        };
        let kind = match failure {
            TaskFailure::NotFound { .. } => ErrorKind::TaskNotFound,
            TaskFailure::NotCancellable { .. } => ErrorKind::NotCancelable,
            TaskFailure::CancelRace { .. } => ErrorKind::CancelConflict,
            TaskFailure::CapacityExhausted { .. } | TaskFailure::BytesExhausted { .. } => ErrorKind::CapacityExhausted,
            TaskFailure::OwnerShareExhausted { .. } => ErrorKind::OwnerShareExhausted,
            TaskFailure::ClaimLost { .. } => ErrorKind::StartFailed,
            TaskFailure::NotWaiting { state, .. } if state.is_terminal() => ErrorKind::TaskEnded,
            TaskFailure::NotWaiting { .. } => ErrorKind::TaskRunning,
            TaskFailure::NotAdmitted { .. } => ErrorKind::PaymentRequired,
            TaskFailure::Closed => ErrorKind::ShuttingDown,
            TaskFailure::Store(_) => ErrorKind::Unavailable,
        };
        let error = Error::new(kind, message);
        match task {
            Some(task) => error.about(&task),
            None => error,
        }
    }
}

impl From<StoreError> for Error {
    fn from(error: StoreError) -> Self {
        TaskFailure::from(error).into()
    }
}
