//! The paid start: [`TaskService::send_paid`] and the [`PaymentFlow`] a face pays through.
//!
//! This room owns the order of a paid start (validate, reserve, prepare, verify, renew, settle,
//! activate) and what every failure along it leaves behind. The rail, the credential and the
//! receipt stay the face's, behind [`PaymentFlow`]; skill choice, input and follow-up rules are
//! the service's own and are only called from here.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{SendRequest, TaskService, follow_up_error, follow_up_message};
use crate::error::{Error, ErrorKind};
use crate::model::{Task, TaskId};
use crate::run::Message;
use crate::skill::{Skill, SkillError};
use crate::task::push::DeliverFrom;
use crate::task::runtime::{PreparedExecution, TaskFailure};
use crate::task::store::Durability;
use crate::task::token::OwnerHash;

/// The face's side of a paid start: it knows the rail, the credential and the receipt; the
/// service decides when each step happens ([`TaskService::send_paid`]).
#[async_trait]
pub trait PaymentFlow: Send {
    /// Evidence of a settled payment, handed back to the face.
    type Receipt: Send;
    /// Why a payment step refused, in the face's terms (a challenge to send, a configuration
    /// error, …). A refusal means nothing was charged.
    type Refusal: Send;

    /// The skill's task is priced at `amount`: whether this flow can collect it. Called after the
    /// input has been validated, before anything is reserved.
    fn accept(&mut self, skill: &Skill, amount: &str) -> Result<(), Self::Refusal>;
    /// Whether the request carries a credential to verify. Without one the service reserves
    /// nothing and answers [`PaidStart::ChallengeNeeded`].
    fn has_credential(&self) -> bool;
    /// How long the reservation may wait for the payment to settle (default: the runtime's
    /// admission TTL).
    fn admission_ttl(&self) -> Option<Duration> {
        None
    }
    /// Verifies the credential. Nothing moves yet.
    async fn verify(&mut self) -> Result<(), Self::Refusal>;
    /// Settles the verified payment: the point of no return.
    async fn settle(&mut self) -> Result<Self::Receipt, SettleFailure<Self::Receipt, Self::Refusal>>;
    /// Releases a verified payment that will not be settled.
    async fn abort(&mut self);

    /// Without a credential: the agent's message a new task waits for its payment with. `None`
    /// (the default) reserves nothing and answers [`PaidStart::ChallengeNeeded`] — the face
    /// challenges on its own wire. `Some` reserves the task durably and leaves it
    /// `input-required` with this status message ([`PaidStart::AwaitingPayment`]); a follow-up
    /// that brings the payment continues it, and an unpaid one is cancelled when its admission
    /// expires.
    fn payment_request(&self) -> Option<Message> {
        None
    }

    /// A follow-up brings the payment `task` waits for. Called first, so the flow can read what
    /// the task's payment request said (the resource it named, say) before anything else.
    fn payment_for(&mut self, _task: &Task) {}

    /// The agent's status message for an outcome of the payment (default: none — a face whose
    /// wire carries payment evidence elsewhere, in headers say). See [`PaymentOutcome`] for where
    /// each one goes.
    fn outcome_message(&self, _outcome: PaymentOutcome<'_, Self::Receipt, Self::Refusal>) -> Option<Message> {
        None
    }
}

/// An outcome of a payment, for [`PaymentFlow::outcome_message`].
#[derive(Debug)]
#[non_exhaustive]
pub enum PaymentOutcome<'a, R, F> {
    /// Settled: the message is the task's `working` status as its run starts, and its metadata
    /// stays on the message the run closes with.
    Settled(&'a R),
    /// The payment for a task that waited for it was refused before anything was charged: the
    /// task ends `failed` with the message.
    Refused(&'a F),
    /// The payment committed (or may have) and the task cannot run: it ends `failed` with the
    /// message; `error` says why (`settlement_uncertain`, `task_execution_failed`).
    Committed {
        /// The settlement's evidence.
        receipt: &'a R,
        /// Why the task cannot run.
        error: &'a SkillError,
    },
}

/// Why a settlement did not succeed.
#[derive(Debug)]
pub enum SettleFailure<R, F> {
    /// Refused before anything moved: nothing was charged.
    Refused(F),
    /// Its outcome is unknown, or money may have moved: the payment counts as committed.
    Uncertain(R),
}

/// How a paid start ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum PaidStart<R, F> {
    /// The task runs; `receipt` is the payment's (none when the skill was free).
    Started {
        /// The running task.
        task: Task,
        /// The settlement's receipt.
        receipt: Option<R>,
    },
    /// The request carries no credential: nothing was reserved; the face answers with its
    /// challenge.
    ChallengeNeeded,
    /// The task waits for its payment (`input-required`, with the flow's
    /// [`PaymentFlow::payment_request`] as its status message): a new task reserved so, or a
    /// follow-up without a credential to one, which leaves it as it was.
    AwaitingPayment {
        /// The waiting task.
        task: Task,
    },
    /// The payment for a task that waited for it was refused before anything was charged: the
    /// task has ended `failed` (with the flow's message for [`PaymentOutcome::Refused`]).
    PaymentFailed {
        /// The ended task.
        task: Task,
        /// The refusal.
        refusal: F,
    },
    /// A payment step refused before anything was charged; the reservation, if any, is released.
    Refused(F),
    /// The payment committed but the task could not start: it has ended (failed, or whatever
    /// terminal state it reached first). The receipt must reach the caller.
    EndedAfterPayment {
        /// The ended task.
        task: Task,
        /// The receipt.
        receipt: R,
    },
    /// The payment committed and not even the task's end could be recorded: the caller keeps
    /// the task id and the receipt, and reads the task again later.
    Unconfirmed {
        /// The task.
        task_id: TaskId,
        /// The receipt.
        receipt: R,
    },
}

impl TaskService {
    /// Starts a task whose skill may be priced, paying through `payment` in the Lucid profile's
    /// order: the input is validated first; a store that is not durable refuses paid work
    /// ([`ErrorKind::DurableStoreRequired`]); a request without a credential reserves nothing
    /// ([`PaidStart::ChallengeNeeded`]); then a durable reservation with an admission expiry and a
    /// prepared, heartbeated claim *before* verification; verify; renew the claim; settle;
    /// activate. Before the payment commits, every failure releases the reservation; after it,
    /// every failure ends the task and keeps the receipt — never a task reported running that is
    /// not. A free skill starts as with [`TaskService::send`] (without waiting).
    ///
    /// A flow that gives a [`PaymentFlow::payment_request`] makes a request without a credential
    /// reserve the task durably instead, waiting for its payment
    /// ([`PaidStart::AwaitingPayment`]). A follow-up to such a task takes the turn as a
    /// resumption does (the payment request and the follow-up join the history, the task turns
    /// `working`), then pays in the same order — prepared claim, verify, renew, settle, activate
    /// — and the run has the task's original input; without a credential it leaves the task
    /// waiting, and a refusal before the payment commits ends the task `failed`
    /// ([`PaidStart::PaymentFailed`]). A follow-up to any other task is an ordinary one.
    ///
    /// A webhook sent with the request ([`SendRequest::push`]) is registered for a follow-up
    /// before it is taken, and for a new task once it exists (whatever its payment's outcome).
    pub async fn send_paid<P: PaymentFlow>(
        &self,
        mut request: SendRequest,
        payment: &mut P,
    ) -> Result<PaidStart<P::Receipt, P::Refusal>, Error> {
        self.check_message_size(&request)?;
        let Some(push) = request.push.take() else { return self.send_paid_plain(request, payment).await };
        let push = self.checked_push_config(push)?;
        let caller = request.caller.clone();
        if let Some(id) = request.task_id.clone() {
            self.set_push_config(&caller, &id, push, DeliverFrom::Now).await?;
            return self.send_paid_plain(request, payment).await;
        }
        request.awaited = false;
        let started = self.send_paid_plain(request, payment).await?;
        let task_id = match &started {
            PaidStart::Started { task, .. }
            | PaidStart::AwaitingPayment { task }
            | PaidStart::PaymentFailed { task, .. }
            | PaidStart::EndedAfterPayment { task, .. } => Some(task.id.clone()),
            PaidStart::Unconfirmed { task_id, .. } => Some(task_id.clone()),
            _ => None,
        };
        if let Some(id) = task_id {
            self.set_push_config(&caller, &id, push, DeliverFrom::After(0)).await?;
        }
        Ok(started)
    }

    async fn send_paid_plain<P: PaymentFlow>(
        &self,
        request: SendRequest,
        payment: &mut P,
    ) -> Result<PaidStart<P::Receipt, P::Refusal>, Error> {
        if let Some(id) = request.task_id.clone() {
            if let Some(task) = self.runtime.awaiting_admission(&id, &request.caller.owner).await? {
                return self.pay_awaited(request, task, payment).await;
            }
            let task = self.start(request).await?;
            return Ok(PaidStart::Started { task, receipt: None });
        }
        let skill = Arc::clone(self.permitted_skill(&request.caller, request.skill.as_deref())?);
        let valid = self.input_for(&skill, &request)?;
        let Some(amount) = skill.pricing().task.clone() else {
            let task = self.start_new(request, valid).await?;
            return Ok(PaidStart::Started { task, receipt: None });
        };
        if let Err(refusal) = payment.accept(&skill, &amount) {
            return Ok(PaidStart::Refused(refusal));
        }
        self.require_durable()?;
        let owner = request.caller.owner;
        let mut reservation = self.reservation(request, valid);
        reservation.admission_ttl = payment.admission_ttl();
        reservation.paid = true;
        if !payment.has_credential() {
            let Some(message) = payment.payment_request() else {
                return Ok(PaidStart::ChallengeNeeded);
            };
            let task = self.runtime.reserve_awaiting(reservation, message).await?;
            return Ok(PaidStart::AwaitingPayment { task });
        }
        let task = self.runtime.reserve(reservation).await?;
        let prepared = match self.runtime.prepare(&task.id).await {
            Ok(prepared) => prepared,
            Err(failure) => {
                self.release(&task.id, &owner).await;
                return Err(failure.into());
            }
        };
        self.settle_and_activate(prepared, payment, false).await
    }

    /// Refused before any challenge: a caller must not pay for what this store cannot keep.
    fn require_durable(&self) -> Result<(), Error> {
        if self.runtime.durability() == Durability::Durable {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::DurableStoreRequired,
            "Paid tasks require a TaskStore with durability=\"durable\" so settlement cannot outlive the task capability.",
        ))
    }

    /// A follow-up to `task`, which waits for its payment (see [`TaskService::send_paid`]).
    async fn pay_awaited<P: PaymentFlow>(
        &self,
        request: SendRequest,
        task: Task,
        payment: &mut P,
    ) -> Result<PaidStart<P::Receipt, P::Refusal>, Error> {
        let id = task.id.clone();
        let owner = request.caller.owner;
        self.permits_follow_up(&request.caller, &task)?;
        let message = follow_up_message(request, &task)?;
        self.check_history_room(&task)?;
        let skill = Arc::clone(self.skill_for(Some(&task.skill))?);
        payment.payment_for(&task);
        let amount = skill.pricing().task.clone();
        if let Some(amount) = &amount {
            if let Err(refusal) = payment.accept(&skill, amount) {
                return Ok(PaidStart::Refused(refusal));
            }
            self.require_durable()?;
            if !payment.has_credential() {
                return Ok(PaidStart::AwaitingPayment { task });
            }
        }
        self.runtime.take_turn(&id, &owner, message).await.map_err(|failure| follow_up_error(failure, &id))?;
        let prepared = match self.runtime.prepare(&id).await {
            Ok(prepared) => prepared,
            Err(failure) => {
                // Nothing was verified or charged: the task's admission expired (or it was
                // cancelled) while the turn was being taken.
                self.release(&id, &owner).await;
                return Err(match failure {
                    TaskFailure::ClaimLost { .. } => Error::new(
                        ErrorKind::TaskEnded,
                        "the task's payment request has expired; send a new message for a new one",
                    )
                    .about(&id),
                    other => other.into(),
                });
            }
        };
        if amount.is_none() {
            // The skill is no longer priced: the task runs as a resumed one would.
            return Ok(PaidStart::Started { task: prepared.activate().await?, receipt: None });
        }
        self.settle_and_activate(prepared, payment, true).await
    }

    /// Verify, renew the claim, settle, activate — for a task this worker has prepared. `awaited`:
    /// the task waited for its payment, so a refusal ends it rather than releasing a reservation
    /// nobody has seen.
    async fn settle_and_activate<P: PaymentFlow>(
        &self,
        prepared: PreparedExecution,
        payment: &mut P,
        awaited: bool,
    ) -> Result<PaidStart<P::Receipt, P::Refusal>, Error> {
        let id = prepared.task_id().clone();
        if let Err(refusal) = payment.verify().await {
            return self.refused(prepared, payment, refusal, awaited).await;
        }
        if let Err(failure) = prepared.renew().await {
            tracing::warn!(task = %id, %failure, "the prepared claim was lost before settlement");
            payment.abort().await;
            prepared.cancel().await;
            return Err(
                Error::new(ErrorKind::StartFailed, "The task could not be started; nothing was charged").about(&id)
            );
        }
        let receipt = match payment.settle().await {
            Ok(receipt) => receipt,
            Err(SettleFailure::Refused(refusal)) => return self.refused(prepared, payment, refusal, awaited).await,
            Err(SettleFailure::Uncertain(receipt)) => {
                tracing::error!(task = %id, "settlement uncertain; the task will not run");
                drop(prepared);
                let error = SkillError::new(
                    "settlement_uncertain",
                    "The payment's settlement could not be confirmed; the task was not started. Reconcile with the payment provider.",
                );
                return Ok(self.end_after_payment(&id, payment, receipt, error).await);
            }
        };
        let status = payment.outcome_message(PaymentOutcome::Settled(&receipt));
        match prepared.activate_with(status).await {
            Ok(task) => Ok(PaidStart::Started { task, receipt: Some(receipt) }),
            Err(failure) => {
                tracing::error!(task = %id, %failure, "a paid task could not be activated after settlement");
                let error = SkillError::new("task_execution_failed", "The task could not be started after payment");
                Ok(self.end_after_payment(&id, payment, receipt, error).await)
            }
        }
    }

    /// A payment step refused before anything was charged: a fresh reservation is released; a
    /// task that waited for its payment ends `failed`.
    async fn refused<P: PaymentFlow>(
        &self,
        prepared: PreparedExecution,
        payment: &P,
        refusal: P::Refusal,
        awaited: bool,
    ) -> Result<PaidStart<P::Receipt, P::Refusal>, Error> {
        if !awaited {
            prepared.cancel().await;
            return Ok(PaidStart::Refused(refusal));
        }
        let id = prepared.task_id().clone();
        let task = match payment.outcome_message(PaymentOutcome::Refused(&refusal)) {
            Some(message) => self.runtime.fail_with_message(&id, message).await?,
            None => {
                let error = SkillError::new("payment_refused", "The payment was refused; nothing was charged");
                self.runtime.fail(&id, error).await?
            }
        };
        // The claim goes with the task's end; should that end not be recorded, the claim lapses
        // and the store cancels the task.
        drop(prepared);
        Ok(PaidStart::PaymentFailed { task, refusal })
    }

    /// Releases a reservation that will not be paid for (best effort: an unreleased one is
    /// reaped when its admission expires).
    async fn release(&self, id: &TaskId, owner: &OwnerHash) {
        if let Err(failure) = self.runtime.cancel(id, owner).await {
            tracing::warn!(task = %id, %failure, "could not release a task reservation; it will be reaped");
        }
    }

    /// After the payment committed and the task could not start: the task ends (with the flow's
    /// message for [`PaymentOutcome::Committed`], when it gives one).
    async fn end_after_payment<P: PaymentFlow>(
        &self,
        id: &TaskId,
        payment: &P,
        receipt: P::Receipt,
        error: SkillError,
    ) -> PaidStart<P::Receipt, P::Refusal> {
        let message = payment.outcome_message(PaymentOutcome::Committed { receipt: &receipt, error: &error });
        let ended = match message {
            Some(message) => self.runtime.fail_with_message(id, message).await,
            None => self.runtime.fail(id, error).await,
        };
        match ended {
            Ok(task) if task.state.is_terminal() => PaidStart::EndedAfterPayment { task, receipt },
            outcome => {
                if let Err(failure) = &outcome {
                    tracing::error!(task = %id, %failure, "the terminal state of a paid task could not be recorded");
                }
                PaidStart::Unconfirmed { task_id: id.clone(), receipt }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::{Map, Value, json};

    use crate::error::ErrorKind;
    use crate::run::{Message, Part, Role, TaskState};
    use crate::task::service::{Caller, SendInput, SendRequest, ServiceConfig, TaskService, Wait};

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[tokio::test]
    async fn a_task_awaiting_payment_runs_only_once_paid_and_its_run_keeps_the_evidence() {
        use crate::task::{AccessToken, MemoryStore, Reservation, RuntimeConfig, TaskRuntime};
        use crate::{Agent, Completion, Outcome, Pricing, Run, Skill, SkillOperation};
        let pricing = Pricing { task: Some("1".into()), free: vec![SkillOperation::Invoke], ..Pricing::default() };
        let skill = Skill::builder("paid").pricing(pricing).invoke(|run: Run| async move {
            let completion = Completion::new(run.input().clone());
            Ok(Outcome::Completed(if run.input()["say"] == json!(true) {
                let metadata = map(json!({"own": true, "shared": "skill"}));
                completion.with_message(Message::agent_text("done").with_metadata(metadata))
            } else {
                completion
            }))
        });
        let agent = Agent::builder("carry").skill(skill).build().expect("agent");
        let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
        let service = TaskService::new(runtime.clone(), ServiceConfig::default());
        let owner = AccessToken::generate().owner();
        let caller = Caller::owner(owner);
        let skill = agent.skill("paid").expect("skill");
        for say in [false, true] {
            let valid = skill.validate_input(json!({"say": say})).expect("input");
            let asked = Message::agent_text("pay").with_metadata(map(json!({"status": "required"})));
            let task = runtime.reserve_awaiting(Reservation::new(owner, valid), asked).await.expect("reserved");
            assert_eq!(task.state, TaskState::InputRequired);
            assert!(runtime.awaiting_admission(&task.id, &owner).await.expect("read").is_some());

            // An ordinary follow-up never runs it for free.
            let follow_up = Message::new(Role::User, vec![Part::Text("go".into())]);
            let request = SendRequest::new(caller.clone(), SendInput::FromMessage)
                .message(follow_up.clone())
                .follow_up(task.id.clone());
            let refused = service.send(request, Wait::Immediately).await.expect_err("refused");
            assert_eq!(refused.kind(), ErrorKind::PaymentRequired);
            assert_eq!(runtime.get(&task.id, &owner).await.expect("task").state, TaskState::InputRequired);

            // Paying: the turn (the request and the follow-up join the history), the claim, then
            // the run, started under the evidence.
            let turned = runtime.take_turn(&task.id, &owner, follow_up).await.expect("turn");
            assert_eq!(turned.state, TaskState::Working);
            assert_eq!(turned.history.len(), 2);
            let prepared = runtime.prepare(&task.id).await.expect("claim");
            assert!(runtime.awaiting_admission(&task.id, &owner).await.expect("read").is_none(), "admitted");
            let evidence = Message::agent_text("paid").with_metadata(map(json!({"status": "done", "shared": "pay"})));
            let running = prepared.activate_with(Some(evidence)).await.expect("running");
            assert_eq!(running.status_message.as_ref().map(Message::text).as_deref(), Some("paid"));
            let done = service.wait_for(&caller, running, Wait::Settled(Duration::from_secs(5))).await.expect("done");
            assert_eq!(done.state, TaskState::Completed);
            let closing = done.status_message.expect("a closing message");
            if say {
                assert_eq!(closing.text(), "done");
                assert_eq!(closing.metadata, Some(map(json!({"status": "done", "shared": "skill", "own": true}))));
            } else {
                assert_eq!(closing.text(), "paid", "the run closes with the message it started under");
                assert_eq!(closing.metadata, Some(map(json!({"status": "done", "shared": "pay"}))));
            }
        }
    }
}
