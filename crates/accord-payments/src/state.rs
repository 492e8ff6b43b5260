//! The life of an admission, shared by the rails: each rail writes only how it settles
//! ([`Settle`]); [`Admitted`] runs that at most once, replays its outcome and keeps the state.

use std::fmt;

use async_trait::async_trait;

use crate::{Admission, Challenge, PaymentError, Receipt};

/// A rail's part of an admission: a verified credential and how to settle it.
#[async_trait]
pub(crate) trait Settle: Send + Sync + fmt::Debug {
    /// Settles the payment, once; the outcome as [`Admission::finalize`] describes it.
    // The error type is the contract's `PaymentError` (a challenge travels inside it).
    #[allow(clippy::result_large_err)]
    async fn settle(&self) -> Result<Receipt, PaymentError>;

    /// The challenge a refusal carries: answered to a `finalize` after an abort.
    fn challenge(&self) -> &Challenge;

    /// Who pays, when known.
    fn payer(&self) -> Option<&str>;
}

/// The [`Admission`] every rail hands out: its [`Settle`] and where the admission stands.
#[derive(Debug)]
pub(crate) struct Admitted<S> {
    rail: S,
    state: Settlement,
}

impl<S: Settle> Admitted<S> {
    /// A verified credential, not yet settled.
    pub(crate) fn new(rail: S) -> Self {
        Self { rail, state: Settlement::Pending }
    }
}

#[async_trait]
impl<S: Settle> Admission for Admitted<S> {
    async fn finalize(&mut self) -> Result<Receipt, PaymentError> {
        if let Some(outcome) = self.state.replay(self.rail.challenge()) {
            return outcome;
        }
        let outcome = self.rail.settle().await;
        self.state.record(outcome)
    }

    async fn abort(&mut self) {
        self.state.abort();
    }

    fn is_committed(&self) -> bool {
        self.state.is_committed()
    }

    fn payer(&self) -> Option<&str> {
        self.rail.payer()
    }
}

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
