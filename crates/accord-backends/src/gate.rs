//! The concurrency gate the command and HTTP backends put in front of their runs: at most a
//! configured number of runs at once, the others waiting for a place — and still answering to
//! cancellation while they wait.

use std::sync::Arc;

use accord_engine::{Run, SkillError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::contract;

/// A configured limit as a backend keeps it: `None` (no limit) stays, `Some(0)` is raised to 1.
pub(crate) fn at_least_one(limit: Option<usize>) -> Option<usize> {
    limit.map(|limit| limit.max(1))
}

/// The places of one backend's runs, shared by the backend's clones; without a limit every run
/// enters at once.
pub(crate) struct Gate {
    places: Option<Arc<Semaphore>>,
}

impl Gate {
    /// A gate of `limit` places (`None`: no limit).
    pub(crate) fn new(limit: Option<usize>) -> Self {
        Self { places: limit.map(|limit| Arc::new(Semaphore::new(limit))) }
    }

    /// Waits for a place for `run`, held until the returned value is dropped (`None` without a
    /// limit). A run cancelled while it waits gets [`contract::cancelled`].
    pub(crate) async fn enter(&self, run: &Run) -> Result<Option<OwnedSemaphorePermit>, SkillError> {
        let Some(places) = &self.places else { return Ok(None) };
        tokio::select! {
            permit = Arc::clone(places).acquire_owned() => Ok(permit.ok()),
            () = run.cancelled() => Err(contract::cancelled()),
        }
    }
}
