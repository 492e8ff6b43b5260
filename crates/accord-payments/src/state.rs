//! The life of an admission, shared by the rails.

use crate::{Challenge, PaymentError, Receipt};

/// Where an admission stands.
#[derive(Debug, Clone)]
pub(crate) enum Settlement {
    /// Verified, not settled.
    Pending,
    /// Settled: irreversible, with this receipt.
    Settled(Receipt),
    /// `finalize` failed with this error (committed when it is `Uncertain`).
    Failed(PaymentError),
    /// Released without settling.
    Aborted,
}

impl Settlement {
    /// Whether money moved or may have.
    pub(crate) fn is_committed(&self) -> bool {
        matches!(self, Self::Settled(_) | Self::Failed(PaymentError::Uncertain { .. }))
    }

    /// For a second `finalize`: the first outcome again (`None` while pending).
    pub(crate) fn replay(&self, challenge: &Challenge) -> Option<Result<Receipt, PaymentError>> {
        match self {
            Self::Pending => None,
            Self::Settled(receipt) => Some(Ok(receipt.clone())),
            Self::Failed(error) => Some(Err(error.clone())),
            Self::Aborted => {
                Some(Err(PaymentError::Rejected { reason: "admission_aborted".into(), challenge: challenge.clone() }))
            }
        }
    }

    /// `abort`: only a pending admission is released.
    pub(crate) fn abort(&mut self) {
        if matches!(self, Self::Pending) {
            *self = Self::Aborted;
        }
    }

    /// Records a `finalize` outcome and hands it back.
    // The error type is the contract's `PaymentError` (a challenge travels inside it).
    #[allow(clippy::result_large_err)]
    pub(crate) fn record(&mut self, outcome: Result<Receipt, PaymentError>) -> Result<Receipt, PaymentError> {
        *self = match &outcome {
            Ok(receipt) => Self::Settled(receipt.clone()),
            Err(error) => Self::Failed(error.clone()),
        };
        outcome
    }
}
