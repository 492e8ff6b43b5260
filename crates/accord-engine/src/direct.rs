//! Direct runs: invoking or streaming a skill without a task, with the rules every face that
//! does it needs written once — which skill may be invoked or streamed, the input check, and the
//! paid sequence (validate, challenge, verify, run or stream, settle) through the face's
//! [`PaymentFlow`].
//!
//! Idempotency of direct invocations is the face's (it depends on its wire: which request is "the
//! same"); it fits between [`Agent::admit_invoke`] (the payment verified, so the payer is known)
//! and [`Agent::invoke_admitted`] (the run and its settlement).

use std::sync::Arc;

use serde_json::Value;

use crate::agent::Agent;
use crate::error::RunError;
use crate::run::{Invocation, RunStream};
use crate::skill::{Skill, ValidInput};
use crate::task::{Caller, PaymentFlow, SettleFailure};

/// How a paid direct run ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum PaidRun<T, R, F> {
    /// It ran (or, for a stream, started); `receipt` is the payment's, none when it was free.
    Ran {
        /// The invocation's result, or the stream.
        output: T,
        /// The settlement's receipt.
        receipt: Option<R>,
    },
    /// The request carries no credential: nothing ran; the face answers with its challenge.
    ChallengeNeeded,
    /// A payment step refused; nothing was charged and nothing handed out.
    Refused(F),
}

impl Agent {
    /// The skill `key` names, if it can be invoked and `caller` may run it ([`Skill::permits`]).
    pub fn invocable(&self, key: &str, caller: &Caller) -> Result<&Arc<Skill>, RunError> {
        let skill = self.skill(key)?;
        if !skill.is_invocable() {
            return Err(RunError::NotInvocable { key: key.to_owned() });
        }
        skill.permits(caller)?;
        Ok(skill)
    }

    /// The skill `key` names, if it can stream and `caller` may run it ([`Skill::permits`]).
    pub fn streamable(&self, key: &str, caller: &Caller) -> Result<&Arc<Skill>, RunError> {
        let skill = self.skill(key)?;
        if !skill.is_streaming() {
            return Err(RunError::NotStreamable { key: key.to_owned() });
        }
        skill.permits(caller)?;
        Ok(skill)
    }

    /// Checks `input` against the skill's input schema: always before any payment step.
    pub fn check_input(&self, skill: &Arc<Skill>, input: Value) -> Result<ValidInput, RunError> {
        skill.validate_input(input)
    }

    /// Invokes with payment when the skill's invocation is priced: challenge without a
    /// credential, verify, run, then settle — once the output exists, so a failed run is never
    /// charged (its payment is released). An output whose payment is refused at settlement is not
    /// handed out; one whose settlement is uncertain is, with what evidence there is (money may
    /// have moved).
    pub async fn invoke_paid<P: PaymentFlow>(
        &self,
        valid: ValidInput,
        payment: &mut P,
    ) -> Result<PaidRun<Invocation, P::Receipt, P::Refusal>, RunError> {
        if let Some(stop) = self.admit_invoke(&valid, payment).await {
            return Ok(stop);
        }
        self.invoke_admitted(valid, payment).await
    }

    /// The payment steps of [`Agent::invoke_paid`] before the run, for a face that looks at the
    /// verified payment before the skill runs (one that answers a repeated request of the same
    /// payer from its record): the price accepted, a request without a credential challenged, a
    /// credential verified. `None` when the run may go ahead — free, or paid with a verified
    /// credential; then [`Agent::invoke_admitted`] runs it, or the face releases the payment
    /// ([`PaymentFlow::abort`]) and answers without running.
    pub async fn admit_invoke<P: PaymentFlow>(
        &self,
        valid: &ValidInput,
        payment: &mut P,
    ) -> Option<PaidRun<Invocation, P::Receipt, P::Refusal>> {
        let skill = valid.skill();
        let amount = skill.pricing().invoke.clone()?;
        admit(skill, &amount, payment).await
    }

    /// The run and settlement of [`Agent::invoke_paid`], after [`Agent::admit_invoke`] let it go
    /// ahead.
    pub async fn invoke_admitted<P: PaymentFlow>(
        &self,
        valid: ValidInput,
        payment: &mut P,
    ) -> Result<PaidRun<Invocation, P::Receipt, P::Refusal>, RunError> {
        let skill = Arc::clone(valid.skill());
        if skill.pricing().invoke.is_none() {
            return Ok(PaidRun::Ran { output: self.invoke(valid).await?, receipt: None });
        }
        let invocation = match self.invoke(valid).await {
            Ok(invocation) => invocation,
            Err(error) => {
                payment.abort().await;
                return Err(error);
            }
        };
        match payment.settle().await {
            Ok(receipt) => Ok(PaidRun::Ran { output: invocation, receipt: Some(receipt) }),
            Err(SettleFailure::Uncertain(receipt)) => {
                tracing::error!(skill = %skill.key(), "invoke settlement uncertain; answering with the output");
                Ok(PaidRun::Ran { output: invocation, receipt: Some(receipt) })
            }
            Err(SettleFailure::Refused(refusal)) => Ok(PaidRun::Refused(refusal)),
        }
    }

    /// Streams with payment when the skill's stream is priced: challenge without a credential,
    /// verify, settle, then stream — the receipt must precede the events, so the payment settles
    /// before the run starts. An uncertain settlement streams anyway, with what evidence there is.
    /// Must be called within a Tokio runtime.
    pub async fn stream_paid<P: PaymentFlow>(
        &self,
        valid: ValidInput,
        payment: &mut P,
    ) -> Result<PaidRun<RunStream, P::Receipt, P::Refusal>, RunError> {
        let skill = Arc::clone(valid.skill());
        let Some(amount) = skill.pricing().stream.clone() else {
            return Ok(PaidRun::Ran { output: self.stream(valid)?, receipt: None });
        };
        if let Some(stop) = admit(&skill, &amount, payment).await {
            return Ok(stop);
        }
        let receipt = match payment.settle().await {
            Ok(receipt) => receipt,
            Err(SettleFailure::Uncertain(receipt)) => {
                tracing::error!(skill = %skill.key(), "stream settlement uncertain; streaming anyway");
                receipt
            }
            Err(SettleFailure::Refused(refusal)) => return Ok(PaidRun::Refused(refusal)),
        };
        Ok(PaidRun::Ran { output: self.stream(valid)?, receipt: Some(receipt) })
    }
}

/// The payment steps before the work: the flow accepts the price, a request without a credential
/// is challenged, a credential is verified. `None` when the work may go ahead.
async fn admit<T, P: PaymentFlow>(
    skill: &Skill,
    amount: &str,
    payment: &mut P,
) -> Option<PaidRun<T, P::Receipt, P::Refusal>> {
    if let Err(refusal) = payment.accept(skill, amount) {
        return Some(PaidRun::Refused(refusal));
    }
    if !payment.has_credential() {
        return Some(PaidRun::ChallengeNeeded);
    }
    if let Err(refusal) = payment.verify().await {
        return Some(PaidRun::Refused(refusal));
    }
    None
}
