//! [`TaskService`]: the one task API every protocol face calls.
//!
//! A face parses its wire into a [`SendRequest`] (or an id, or a [`ListQuery`]), calls the
//! service, and projects the answer onto its wire. Everything in between lives here, once:
//! which skill a request runs, how its input is built and validated, follow-ups to waiting tasks,
//! how long a blocking send waits, where a stream ends, owner and tenant scoping, what anonymous
//! callers may do, the paid start in the Lucid profile's order, and the classification of every
//! failure as one [`Error`] with an [`ErrorKind`].
//!
//! The service holds no wire types and knows nothing of HTTP: a payment credential, a challenge
//! or a receipt is the face's business, reached through [`PaymentFlow`].

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value};

use super::memory::json_len;
use super::push::{
    DeliverFrom, MAX_PUSH_CONFIG_ID_LEN, MAX_PUSH_CONFIGS_PER_TASK, MAX_PUSH_URL_LEN, PushConfig, PushDelivery,
    PushKey, PushPut, PushSettle, StoredPushConfig,
};
use super::runtime::{PreparedExecution, Reservation, TaskFailure, TaskRuntime};
use super::store::{Durability, ListQuery, TaskPage};
use super::token::OwnerHash;
use crate::error::{Error, ErrorKind, RunError};
use crate::model::{Task, TaskEvent, TaskEventKind, TaskId, now_ms};
use crate::run::{Message, Part, TaskState};
use crate::skill::{Skill, SkillError, ValidInput};

/// Who calls: the owner its tasks belong to, and whether it proved who it is.
///
/// An anonymous caller still owns what it creates (the server's faces give the anonymous callers
/// of one client address one owner, so the random task id is their capability); what it may do
/// beyond that is
/// [`ServiceConfig::anonymous`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    owner: OwnerHash,
    anonymous: bool,
}

impl Caller {
    /// A caller that holds a token or an authenticated principal standing for `owner`.
    pub fn owner(owner: OwnerHash) -> Self {
        Self { owner, anonymous: false }
    }

    /// An anonymous caller, owning tasks as `owner`.
    pub fn anonymous(owner: OwnerHash) -> Self {
        Self { owner, anonymous: true }
    }

    /// The same caller inside `tenant` (an A2A tenant, say): another owner, so that the tasks of
    /// one tenant are invisible from another. No tenant, or an empty one, changes nothing.
    pub fn within(self, tenant: Option<&str>) -> Self {
        match tenant.filter(|tenant| !tenant.is_empty()) {
            Some(tenant) => Self { owner: self.owner.within(tenant), ..self },
            None => self,
        }
    }

    /// The owner of the caller's tasks.
    pub fn owner_hash(&self) -> &OwnerHash {
        &self.owner
    }

    /// Whether the caller is anonymous.
    pub fn is_anonymous(&self) -> bool {
        self.anonymous
    }
}

/// What anonymous callers may do besides creating tasks and using the ids they were given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AnonymousAccess {
    /// They may not list tasks: anonymous callers behind one address (a NAT, a proxy) share one
    /// owner, so a list would show each of them the task ids — the capabilities — of the others.
    /// The default.
    #[default]
    NoListing,
    /// They may list the tasks of their anonymous owner. Only for agents whose tasks are not
    /// secret from each other (test and conformance agents).
    ListShared,
}

/// Settings of a [`TaskService`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServiceConfig {
    /// The skill a request runs when it names none (default: the agent's first skill with an
    /// invoke handler).
    pub default_skill: Option<String>,
    /// The longest a blocking send waits for its task to settle before answering with the task
    /// as it is (default 5 min). A face may ask for less, never more.
    pub max_wait: Duration,
    /// What anonymous callers may do (default: no listing).
    pub anonymous: AnonymousAccess,
    /// The key push configs are sealed with at rest (default: a fresh random key, so configs kept
    /// by a durable store do not open after a restart: give a saved key for those).
    pub push_key: PushKey,
    /// How large what a send stores may be (an input, a message, a task's history).
    pub limits: TaskLimits,
    /// How large a list's answer may be.
    pub lists: ListLimits,
}

/// Size limits a send is held to before anything is stored: a request beyond one is refused with
/// [`ErrorKind::TooLarge`], and nothing of it is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskLimits {
    /// The largest input a task may run with, as the length of its JSON (default 1 MiB, the
    /// faces' default body limit).
    pub max_input_bytes: usize,
    /// The largest message a send may bring, with its metadata and the task's metadata, as the
    /// length of their JSON (default 1 MiB).
    pub max_message_bytes: usize,
    /// The most messages a task's history may hold (default 100): a follow-up that would take it
    /// beyond is refused — with the agent's question it waited with, a follow-up adds two.
    pub max_history: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self { max_input_bytes: 1 << 20, max_message_bytes: 1 << 20, max_history: 100 }
    }
}

impl TaskLimits {
    /// Sets [`TaskLimits::max_input_bytes`].
    pub fn max_input_bytes(mut self, bytes: usize) -> Self {
        self.max_input_bytes = bytes;
        self
    }

    /// Sets [`TaskLimits::max_message_bytes`].
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Sets [`TaskLimits::max_history`].
    pub fn max_history(mut self, messages: usize) -> Self {
        self.max_history = messages;
        self
    }
}

/// Limits of a list's answer ([`TaskService::list`]), so that a small request cannot ask for a
/// large answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListLimits {
    /// How many of each task's latest history messages a list carries when the caller asks for
    /// no number (default 0: a list is for finding tasks; a read gives the history).
    pub default_history_length: usize,
    /// The most history messages per task a list carries, whatever the caller asks (default 20).
    pub max_history_length: usize,
    /// The most bytes of tasks one page carries, as the length of their JSON (default 4 MiB): a
    /// page stops before the task that would go beyond, and says where the next one starts. A
    /// page always carries at least one task, so one task larger than this is still listed.
    pub max_page_bytes: usize,
}

impl Default for ListLimits {
    fn default() -> Self {
        Self { default_history_length: 0, max_history_length: 20, max_page_bytes: 4 << 20 }
    }
}

impl ListLimits {
    /// Sets [`ListLimits::default_history_length`].
    pub fn default_history_length(mut self, messages: usize) -> Self {
        self.default_history_length = messages;
        self
    }

    /// Sets [`ListLimits::max_history_length`].
    pub fn max_history_length(mut self, messages: usize) -> Self {
        self.max_history_length = messages;
        self
    }

    /// Sets [`ListLimits::max_page_bytes`].
    pub fn max_page_bytes(mut self, bytes: usize) -> Self {
        self.max_page_bytes = bytes;
        self
    }
}

/// What of each task a list answers with ([`TaskService::list_shaped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListShape {
    /// How many of each task's latest history messages the caller asks for (`None`: the server's
    /// [`ListLimits::default_history_length`]); at most [`ListLimits::max_history_length`].
    pub history_length: Option<usize>,
    /// Whether the tasks' artifacts are carried (default `true`).
    pub artifacts: bool,
    /// Whether the tasks' results are carried (default `true`; a face that shows a result only
    /// as an artifact leaves it out with them).
    pub result: bool,
}

impl Default for ListShape {
    fn default() -> Self {
        Self { history_length: None, artifacts: true, result: true }
    }
}

impl ListShape {
    /// Asks for this many history messages per task (`None`: the server's default).
    pub fn history_length(mut self, messages: Option<usize>) -> Self {
        self.history_length = messages;
        self
    }

    /// Carries the artifacts or leaves them out.
    pub fn artifacts(mut self, artifacts: bool) -> Self {
        self.artifacts = artifacts;
        self
    }

    /// Carries the results or leaves them out.
    pub fn result(mut self, result: bool) -> Self {
        self.result = result;
        self
    }
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            default_skill: None,
            max_wait: Duration::from_secs(300),
            anonymous: AnonymousAccess::default(),
            push_key: PushKey::generate(),
            limits: TaskLimits::default(),
            lists: ListLimits::default(),
        }
    }
}

impl ServiceConfig {
    /// Sets [`ServiceConfig::default_skill`].
    pub fn default_skill(mut self, skill: Option<String>) -> Self {
        self.default_skill = skill;
        self
    }

    /// Sets [`ServiceConfig::max_wait`].
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// Sets [`ServiceConfig::anonymous`].
    pub fn anonymous(mut self, access: AnonymousAccess) -> Self {
        self.anonymous = access;
        self
    }

    /// Sets [`ServiceConfig::push_key`].
    pub fn push_key(mut self, key: PushKey) -> Self {
        self.push_key = key;
        self
    }

    /// Sets [`ServiceConfig::limits`].
    pub fn limits(mut self, limits: TaskLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets [`ServiceConfig::lists`].
    pub fn lists(mut self, lists: ListLimits) -> Self {
        self.lists = lists;
        self
    }
}

/// Where a send's skill input comes from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SendInput {
    /// These candidates, in order: the first that the skill's input schema accepts runs; when
    /// none does, the first one's issues are the error. A face whose wire carries the input as a
    /// value sends one candidate.
    Candidates(Vec<Value>),
    /// Read from the message's parts: a single data part is the input itself; otherwise the
    /// text parts, joined with newlines, are tried as JSON, then as `{"text": …}`, then as the
    /// plain string; a message with neither is `{}`. The first the schema accepts wins.
    FromMessage,
}

/// A message for the agent: a new task, or a follow-up to a task that waits for input or
/// authorization.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SendRequest {
    /// Who sends it.
    pub caller: Caller,
    /// The skill it names (`None`: the default skill).
    pub skill: Option<String>,
    /// Where the input comes from.
    pub input: SendInput,
    /// The caller's message, kept as the first entry of the task's history (required for
    /// [`SendInput::FromMessage`] and for follow-ups).
    pub message: Option<Message>,
    /// The task it follows up (`None`: a new task).
    pub task_id: Option<TaskId>,
    /// The conversation it belongs to. A new task without one gets a fresh context id when
    /// [`SendRequest::new_context`] is set; a follow-up must name the task's own context or none.
    pub context_id: Option<String>,
    /// Whether a new task without a context id gets a fresh one (A2A always has a context).
    pub new_context: bool,
    /// The caller's metadata, kept with the task.
    pub metadata: Option<Value>,
    /// A webhook for the task's updates, registered with the send: a new task's from its
    /// creation on, a follow-up's from the follow-up on.
    pub push: Option<PushConfig>,
}

impl SendRequest {
    /// A new task for `caller` with input from `input`.
    pub fn new(caller: Caller, input: SendInput) -> Self {
        Self {
            caller,
            skill: None,
            input,
            message: None,
            task_id: None,
            context_id: None,
            new_context: false,
            metadata: None,
            push: None,
        }
    }

    /// Registers a webhook for the task's updates with the send.
    pub fn push(mut self, config: PushConfig) -> Self {
        self.push = Some(config);
        self
    }

    /// Names the skill.
    pub fn skill(mut self, skill: impl Into<String>) -> Self {
        self.skill = Some(skill.into());
        self
    }

    /// Sets the caller's message.
    pub fn message(mut self, message: Message) -> Self {
        self.message = Some(message);
        self
    }

    /// Makes it a follow-up to `task_id`.
    pub fn follow_up(mut self, task_id: TaskId) -> Self {
        self.task_id = Some(task_id);
        self
    }

    /// Sets the context id.
    pub fn context_id(mut self, context_id: Option<String>) -> Self {
        self.context_id = context_id.filter(|context| !context.is_empty());
        self
    }

    /// Gives a new task without a context id a fresh one.
    pub fn new_context(mut self) -> Self {
        self.new_context = true;
        self
    }

    /// Sets the metadata.
    pub fn metadata(mut self, metadata: Option<Value>) -> Self {
        self.metadata = metadata;
        self
    }
}

/// How long a send waits before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Until the task settles — it ends, or waits for input or authorization — or at most this
    /// long (capped at [`ServiceConfig::max_wait`]); then the task as it is.
    Settled(Duration),
    /// Not at all: the task as soon as it is running.
    Immediately,
}

/// Where a subscription starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscribeFrom {
    /// The task as it is now, then what happens next. A task that has ended is refused
    /// ([`ErrorKind::TaskEnded`]).
    Snapshot,
    /// The whole log, from the creation event.
    Start,
    /// The log after this sequence number (a reconnecting client's last event).
    After(u64),
}

/// The events of a task, lossless and in log order.
pub type TaskEvents = Pin<Box<dyn Stream<Item = Result<TaskEvent, Error>> + Send>>;

/// What a stream of a task carries: optionally the task as it was when the stream began, and the
/// log entries after it.
pub struct TaskUpdates {
    /// The task when the stream began (`None` when the stream resumes after a sequence number or
    /// replays the log from the start).
    pub snapshot: Option<Task>,
    /// The log entries after the snapshot (or after the requested sequence). A send's stream ends
    /// after the entry that settles the task; a subscription's after the terminal entry.
    pub events: TaskEvents,
}

impl std::fmt::Debug for TaskUpdates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskUpdates").field("snapshot", &self.snapshot).finish_non_exhaustive()
    }
}

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

/// The task service. Cheap to clone; clones share everything.
#[derive(Debug, Clone)]
pub struct TaskService {
    runtime: TaskRuntime,
    config: Arc<ServiceConfig>,
}

/// The states in which a send has its answer: ended, or waiting for the caller.
pub fn is_settled(state: TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

impl TaskService {
    /// A service over `runtime`.
    pub fn new(runtime: TaskRuntime, config: ServiceConfig) -> Self {
        Self { runtime, config: Arc::new(config) }
    }

    /// The runtime underneath.
    pub fn runtime(&self) -> &TaskRuntime {
        &self.runtime
    }

    /// The agent whose skills run here.
    pub fn agent(&self) -> &crate::agent::Agent {
        self.runtime.agent()
    }

    /// The settings.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// The skill a request runs: the one it names, else the default (configured, or the agent's
    /// first invocable skill). It must be able to run as a task.
    pub fn skill_for(&self, named: Option<&str>) -> Result<&Arc<Skill>, Error> {
        let agent = self.runtime.agent();
        let key = match named {
            Some(key) => key,
            None => match &self.config.default_skill {
                Some(key) => key.as_str(),
                None => {
                    return agent.skills().iter().find(|skill| skill.is_invocable()).ok_or_else(|| {
                        Error::new(ErrorKind::NoSkill, "the request names no skill and the agent has no default")
                    });
                }
            },
        };
        let skill =
            agent.skill(key).map_err(|_| Error::new(ErrorKind::UnknownSkill, format!("Skill \"{key}\" not found")))?;
        if !skill.is_invocable() {
            return Err(Error::new(ErrorKind::NotInvocable, format!("Skill \"{key}\" has no handler")));
        }
        Ok(skill)
    }

    /// The validated input of a new task.
    fn input_for(&self, skill: &Arc<Skill>, request: &SendRequest) -> Result<ValidInput, Error> {
        let candidates = match &request.input {
            SendInput::Candidates(candidates) => candidates.clone(),
            SendInput::FromMessage => request.message.as_ref().map(input_candidates).unwrap_or_default(),
        };
        let candidates = if candidates.is_empty() { vec![Value::Object(Map::new())] } else { candidates };
        let mut first_issues = None;
        for candidate in candidates {
            match skill.validate_input(candidate) {
                Ok(valid) => return self.checked_input(valid),
                Err(RunError::InvalidInput { issues }) => {
                    first_issues.get_or_insert(issues);
                }
                Err(other) => return Err(Error::new(ErrorKind::InvalidInput, other.to_string())),
            }
        }
        let issues = first_issues.unwrap_or_default();
        let detail = issues.iter().map(|issue| issue.message.as_str()).collect::<Vec<_>>().join("; ");
        Err(Error::invalid_input(format!("the input is not valid for skill \"{}\": {detail}", skill.key()), issues))
    }

    /// `valid` when its JSON fits [`TaskLimits::max_input_bytes`].
    fn checked_input(&self, valid: ValidInput) -> Result<ValidInput, Error> {
        let limit = self.config.limits.max_input_bytes;
        let size = json_len(valid.input());
        if size > limit {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("the input is {size} bytes as JSON; this agent takes at most {limit}"),
            ));
        }
        Ok(valid)
    }

    /// Refuses a request whose message (with its metadata and the task's) is larger than
    /// [`TaskLimits::max_message_bytes`], before anything else is looked at.
    fn check_message_size(&self, request: &SendRequest) -> Result<(), Error> {
        let limit = self.config.limits.max_message_bytes;
        let size = request.message.as_ref().map_or(0, json_len) + request.metadata.as_ref().map_or(0, json_len);
        if size > limit {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("the message is {size} bytes as JSON; this agent takes at most {limit}"),
            ));
        }
        Ok(())
    }

    /// Refuses a follow-up that would take `task`'s history beyond [`TaskLimits::max_history`]
    /// (the agent's question it waits with joins the history with the follow-up).
    fn check_history_room(&self, task: &Task) -> Result<(), Error> {
        let limit = self.config.limits.max_history;
        let after = task.history.len() + usize::from(task.status_message.is_some()) + 1;
        if after > limit {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!(
                    "the task's history would hold {after} messages; a task holds at most {limit}: send a new message in the same context"
                ),
            )
            .about(&task.id));
        }
        Ok(())
    }

    fn reservation(&self, request: SendRequest, valid: ValidInput) -> Reservation {
        let context_id = request.context_id.or_else(|| request.new_context.then(|| TaskId::generate().to_string()));
        let mut reservation = Reservation::new(request.caller.owner, valid);
        reservation.context_id = context_id;
        reservation.metadata = request.metadata;
        reservation.message = request.message;
        reservation
    }

    /// Starts the task a new message asks for, or resumes the one it follows up. A priced skill
    /// is refused ([`ErrorKind::PaymentRequired`]): paid tasks start through
    /// [`TaskService::send_paid`].
    async fn start(&self, mut request: SendRequest) -> Result<Task, Error> {
        self.check_message_size(&request)?;
        let Some(push) = request.push.take() else { return self.start_plain(request).await };
        let push = self.checked_push_config(push)?;
        let caller = request.caller;
        if let Some(id) = request.task_id.clone() {
            self.set_push_config(&caller, &id, push, DeliverFrom::Now).await?;
            return self.start_plain(request).await;
        }
        let task = self.start_plain(request).await?;
        self.set_push_config(&caller, &task.id, push, DeliverFrom::After(0)).await?;
        Ok(task)
    }

    async fn start_plain(&self, request: SendRequest) -> Result<Task, Error> {
        if let Some(id) = request.task_id.clone() {
            return self.follow_up(request, &id).await;
        }
        let skill = self.skill_for(request.skill.as_deref())?;
        let valid = self.input_for(skill, &request)?;
        if skill.pricing().task.is_some() {
            return Err(Error::new(
                ErrorKind::PaymentRequired,
                format!("Skill \"{}\" is priced: its tasks are started with a payment", skill.key()),
            ));
        }
        let reservation = self.reservation(request, valid);
        Ok(self.runtime.start(reservation).await?)
    }

    /// A message for an existing task: it must exist for the caller and share its context; a
    /// task waiting for input or authorization resumes, any other is refused.
    async fn follow_up(&self, request: SendRequest, id: &TaskId) -> Result<Task, Error> {
        let owner = request.caller.owner;
        let task = self.runtime.get(id, &owner).await?;
        let message = follow_up_message(request, &task)?;
        if is_settled(task.state) && !task.state.is_terminal() {
            self.check_history_room(&task)?;
        }
        self.runtime.resume(id, &owner, message).await.map_err(|failure| follow_up_error(failure, id))
    }

    /// Sends a message: starts a new task or resumes a waiting one, then answers as `wait` says.
    pub async fn send(&self, request: SendRequest, wait: Wait) -> Result<Task, Error> {
        let caller = request.caller;
        let task = self.start(request).await?;
        self.wait_for(&caller, task, wait).await
    }

    /// Answers as `wait` says with `task`, which `caller` has just started or resumed (through
    /// [`TaskService::send_paid`], say): at once, or once it settles.
    pub async fn wait_for(&self, caller: &Caller, task: Task, wait: Wait) -> Result<Task, Error> {
        match wait {
            Wait::Immediately => Ok(task),
            Wait::Settled(limit) => self.until_settled(task, &caller.owner, limit.min(self.config.max_wait)).await,
        }
    }

    /// Sends a message and streams the task: its snapshot, then its log until it settles (ends,
    /// or waits for the caller).
    pub async fn send_streaming(&self, request: SendRequest) -> Result<TaskUpdates, Error> {
        let caller = request.caller;
        let task = self.start(request).await?;
        self.follow(&caller, task).await
    }

    /// Streams `task`, which `caller` has just started or resumed: its snapshot, then its log
    /// until it settles.
    pub async fn follow(&self, caller: &Caller, task: Task) -> Result<TaskUpdates, Error> {
        let owner = caller.owner;
        let settled = is_settled(task.state);
        let events = self.runtime.events(&task.id, &owner, after_snapshot(&task)).await?;
        let events: TaskEvents = if settled {
            Box::pin(futures_util::stream::empty())
        } else {
            Box::pin(until_settled_inclusive(events.map(|event| event.map_err(Error::from))))
        };
        Ok(TaskUpdates { snapshot: Some(task), events })
    }

    /// Waits until `task` settles or `limit` passes: through the run on this worker when the task
    /// runs here (no store read), else by watching the log after the snapshot.
    async fn until_settled(&self, task: Task, owner: &OwnerHash, limit: Duration) -> Result<Task, Error> {
        if is_settled(task.state) {
            return Ok(task);
        }
        let id = task.id.clone();
        let deadline = tokio::time::Instant::now() + limit;
        if let Some(mut run) = self.runtime.watch_local_run(&id) {
            let settled = async {
                loop {
                    let latest = run.borrow_and_update().clone();
                    if is_settled(latest.state) {
                        return Some(latest);
                    }
                    // Closed: the run ended without writing its end (it was cancelled).
                    run.changed().await.ok()?;
                }
            };
            match tokio::time::timeout_at(deadline, settled).await {
                Ok(Some(task)) => return Ok(task),
                Err(_elapsed) => return Ok(self.runtime.get(&id, owner).await?),
                Ok(None) => {}
            }
        }
        let limit = deadline.saturating_duration_since(tokio::time::Instant::now());
        let mut events = self.runtime.events(&id, owner, after_snapshot(&task)).await?;
        let settle = async {
            while let Some(Ok(event)) = events.next().await {
                if event.kind.state().is_some_and(is_settled) {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(limit, settle).await;
        Ok(self.runtime.get(&id, owner).await?)
    }

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
        let caller = request.caller;
        if let Some(id) = request.task_id.clone() {
            self.set_push_config(&caller, &id, push, DeliverFrom::Now).await?;
            return self.send_paid_plain(request, payment).await;
        }
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
        let skill = Arc::clone(self.skill_for(request.skill.as_deref())?);
        let valid = self.input_for(&skill, &request)?;
        let Some(amount) = skill.pricing().task.clone() else {
            let task = self.runtime.start(self.reservation(request, valid)).await?;
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

    /// The caller's task, with at most the last `history_length` messages of its history.
    pub async fn get(&self, caller: &Caller, id: &TaskId, history_length: Option<usize>) -> Result<Task, Error> {
        let mut task = self.runtime.get(id, &caller.owner).await?;
        if let Some(keep) = history_length {
            let skip = task.history.len().saturating_sub(keep);
            task.history.drain(..skip);
        }
        Ok(task)
    }

    /// The caller's tasks matching `query`, newest first. Anonymous callers may list only when
    /// [`ServiceConfig::anonymous`] allows it.
    ///
    /// The page is bounded as [`ServiceConfig::lists`] says, in the default [`ListShape`]: each
    /// task with the server's default number of history messages, and the page stopped early
    /// (with [`TaskPage::next`] where the next one starts) before it would carry more than
    /// [`ListLimits::max_page_bytes`].
    pub async fn list(&self, caller: &Caller, query: &ListQuery) -> Result<TaskPage, Error> {
        self.list_shaped(caller, query, ListShape::default()).await
    }

    /// [`TaskService::list`] for a face that answers with each task shaped as `shape` asks:
    /// its latest [`TaskService::list_history_length`] history messages, its artifacts or none.
    /// The tasks come back whole — the face trims them, so that what it derives from a message's
    /// place in the history stays as a read shows it — but the page is measured as shaped: it
    /// stops before the first task that would take it beyond [`ListLimits::max_page_bytes`] (as
    /// the length of the shaped tasks' JSON), never before its first task, and then has
    /// [`TaskPage::has_more`] set and [`TaskPage::next`] at its last task, so a cursor still
    /// visits every task exactly once.
    pub async fn list_shaped(&self, caller: &Caller, query: &ListQuery, shape: ListShape) -> Result<TaskPage, Error> {
        if caller.anonymous && self.config.anonymous == AnonymousAccess::NoListing {
            return Err(Error::new(
                ErrorKind::AnonymousNotAllowed,
                "listing tasks needs an authenticated caller: anonymous callers share an owner per address",
            ));
        }
        let budget = self.config.lists.max_page_bytes;
        let keep = self.list_history_length(&shape);
        let mut page = self.runtime.list(&caller.owner, query).await?;
        let mut bytes = 0usize;
        let mut fits = page.tasks.len();
        for (index, task) in page.tasks.iter_mut().enumerate() {
            bytes = bytes.saturating_add(shaped_len(task, keep, &shape));
            if bytes > budget && index > 0 {
                fits = index;
                break;
            }
        }
        if fits < page.tasks.len() {
            // Stopped early: the page ends at its last task, and the next one starts right after.
            page.tasks.truncate(fits);
            page.has_more = true;
            page.next = page.tasks.last().map(super::store::ListCursor::of);
        }
        Ok(page)
    }

    /// How many of each task's latest history messages a list in `shape` carries: what the
    /// caller asks, or the server's default, never more than the server's maximum
    /// ([`ServiceConfig::lists`]).
    pub fn list_history_length(&self, shape: &ListShape) -> usize {
        let limits = self.config.lists;
        shape.history_length.unwrap_or(limits.default_history_length).min(limits.max_history_length)
    }

    /// Cancels the caller's task.
    pub async fn cancel(&self, caller: &Caller, id: &TaskId) -> Result<Task, Error> {
        Ok(self.runtime.cancel(id, &caller.owner).await?)
    }

    /// The caller's task's updates, from `from`, open through states that wait for the caller
    /// and ending after the terminal event.
    pub async fn subscribe(&self, caller: &Caller, id: &TaskId, from: SubscribeFrom) -> Result<TaskUpdates, Error> {
        let owner = caller.owner;
        let (snapshot, after) = match from {
            SubscribeFrom::Snapshot => {
                let task = self.runtime.get(id, &owner).await?;
                if task.state.is_terminal() {
                    return Err(Error::new(ErrorKind::TaskEnded, "the task has ended; read it instead").about(id));
                }
                let after = after_snapshot(&task);
                (Some(task), after)
            }
            SubscribeFrom::Start => (None, 0),
            SubscribeFrom::After(sequence) => (None, sequence),
        };
        let events = self.runtime.events(id, &owner, after).await?;
        Ok(TaskUpdates { snapshot, events: Box::pin(events.map(|event| event.map_err(Error::from))) })
    }
}

impl TaskService {
    /// `config` as it will be kept: an id of at most [`MAX_PUSH_CONFIG_ID_LEN`] bytes (a fresh
    /// one when empty), a URL of at most [`MAX_PUSH_URL_LEN`] bytes. The URL's target is the
    /// face's to check (its SSRF policy), before it calls the service.
    fn checked_push_config(&self, mut config: PushConfig) -> Result<PushConfig, Error> {
        if config.id.is_empty() {
            config.id = TaskId::generate().to_string();
        }
        if config.id.len() > MAX_PUSH_CONFIG_ID_LEN {
            return Err(Error::new(
                ErrorKind::InvalidRequest,
                format!("a push config id has at most {MAX_PUSH_CONFIG_ID_LEN} bytes"),
            ));
        }
        if config.url.is_empty() || config.url.len() > MAX_PUSH_URL_LEN {
            return Err(Error::new(
                ErrorKind::InvalidRequest,
                format!("a push config needs a url of at most {MAX_PUSH_URL_LEN} bytes"),
            ));
        }
        Ok(config)
    }

    fn push_not_found(id: &TaskId, config_id: &str) -> Error {
        Error::new(ErrorKind::TaskNotFound, format!("the task has no push config \"{config_id}\"")).about(id)
    }

    fn open_push(&self, stored: &StoredPushConfig) -> Result<PushConfig, Error> {
        self.config.push_key.open(stored).map_err(|unsealable| {
            tracing::error!(task = %stored.task_id, config = %stored.id, "{unsealable}");
            Error::new(ErrorKind::Unavailable, "a push config could not be read with this server's push key")
        })
    }

    /// Registers (or replaces, by id) a webhook for the caller's task; its deliveries start as
    /// `from` says for a new config, and where they stood for a replaced one. Returns the config
    /// as kept (with its id, generated when it had none).
    pub async fn set_push_config(
        &self,
        caller: &Caller,
        id: &TaskId,
        config: PushConfig,
        from: DeliverFrom,
    ) -> Result<PushConfig, Error> {
        let config = self.checked_push_config(config)?;
        let stored = self.config.push_key.stored(id, &config, now_ms());
        match self.runtime.store().put_push_config(&caller.owner, stored, from).await.map_err(TaskFailure::from)? {
            PushPut::Stored => Ok(config),
            PushPut::TaskNotFound => Err(TaskFailure::NotFound { id: id.clone() }.into()),
            PushPut::TooMany => Err(Error::new(
                ErrorKind::InvalidRequest,
                format!("a task has at most {MAX_PUSH_CONFIGS_PER_TASK} push configs; delete one first"),
            )
            .about(id)),
        }
    }

    /// The caller's task's webhooks, by id.
    pub async fn push_configs(&self, caller: &Caller, id: &TaskId) -> Result<Vec<PushConfig>, Error> {
        let stored = self.runtime.store().push_configs(id, &caller.owner).await.map_err(TaskFailure::from)?;
        let stored = stored.ok_or_else(|| Error::from(TaskFailure::NotFound { id: id.clone() }))?;
        stored.iter().map(|config| self.open_push(config)).collect()
    }

    /// One of the caller's task's webhooks ([`ErrorKind::TaskNotFound`] when the task has none
    /// with this id).
    pub async fn push_config(&self, caller: &Caller, id: &TaskId, config_id: &str) -> Result<PushConfig, Error> {
        let configs = self.push_configs(caller, id).await?;
        configs.into_iter().find(|config| config.id == config_id).ok_or_else(|| Self::push_not_found(id, config_id))
    }

    /// Deletes one of the caller's task's webhooks. Idempotent: deleting a config that is not
    /// there succeeds.
    pub async fn delete_push_config(&self, caller: &Caller, id: &TaskId, config_id: &str) -> Result<(), Error> {
        match self.runtime.store().delete_push_config(id, &caller.owner, config_id).await.map_err(TaskFailure::from)? {
            Some(_) => Ok(()),
            None => Err(TaskFailure::NotFound { id: id.clone() }.into()),
        }
    }

    /// Takes up to `limit` webhooks with updates to deliver, for `worker`, until `lease`
    /// passes (see [`TaskStore::claim_push_deliveries`](super::TaskStore::claim_push_deliveries)), each opened, with at most `events`
    /// log entries. A config this server's key cannot open is given up on: its pending updates
    /// are passed with a dead letter in the task's log.
    pub async fn claim_push_deliveries(
        &self,
        worker: &str,
        lease: Duration,
        limit: usize,
        events: usize,
    ) -> Result<Vec<(PushConfig, PushDelivery)>, Error> {
        let now = now_ms();
        let lease_until = now.saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX));
        let store = self.runtime.store();
        let claimed =
            store.claim_push_deliveries(worker, now, lease_until, limit, events).await.map_err(TaskFailure::from)?;
        let mut deliveries = Vec::with_capacity(claimed.len());
        for delivery in claimed {
            match self.config.push_key.open(&delivery.config) {
                Ok(config) => deliveries.push((config, delivery)),
                Err(unsealable) => {
                    let Some(last) = delivery.events.last() else { continue };
                    tracing::error!(task = %delivery.config.task_id, config = %delivery.config.id, "{unsealable}");
                    let dead_letter = TaskEventKind::PushDeadLetter {
                        config_id: delivery.config.id.clone(),
                        sequence: last.sequence,
                        attempts: 0,
                        reason: unsealable.to_string(),
                    };
                    let settle = PushSettle {
                        delivered_through: last.sequence,
                        attempts: 0,
                        next_attempt_at: now,
                        dead_letter: Some(dead_letter),
                    };
                    let config = &delivery.config;
                    store
                        .settle_push_delivery(&config.task_id, &config.id, worker, settle, now)
                        .await
                        .map_err(TaskFailure::from)?;
                }
            }
        }
        Ok(deliveries)
    }

    /// Ends `worker`'s delivery of a webhook (see [`TaskStore::settle_push_delivery`](super::TaskStore::settle_push_delivery)): `false`
    /// when another worker took it over meanwhile, or it was deleted.
    pub async fn settle_push_delivery(
        &self,
        delivery: &PushDelivery,
        worker: &str,
        settle: PushSettle,
    ) -> Result<bool, Error> {
        let config = &delivery.config;
        Ok(self
            .runtime
            .store()
            .settle_push_delivery(&config.task_id, &config.id, worker, settle, now_ms())
            .await
            .map_err(TaskFailure::from)?)
    }
}

/// The log sequence a task record reflects: every logged event is applied to the record but the
/// creation event, so a record of version `v` reflects the log up to sequence `v + 1`.
pub fn after_snapshot(task: &Task) -> u64 {
    task.version + 1
}

/// The length of `task`'s JSON with only its latest `keep` history messages, and its artifacts
/// and result only as `shape` says, measured without copying it.
fn shaped_len(task: &mut Task, keep: usize, shape: &ListShape) -> usize {
    let history = std::mem::take(&mut task.history);
    let artifacts = if shape.artifacts { Vec::new() } else { std::mem::take(&mut task.artifacts) };
    let result = if shape.result { None } else { task.result.take() };
    let kept = &history[history.len().saturating_sub(keep)..];
    let size = json_len(task) + json_len(&kept);
    task.history = history;
    if !shape.artifacts {
        task.artifacts = artifacts;
    }
    if !shape.result {
        task.result = result;
    }
    size
}

/// The message of a follow-up to `task`: it must share the task's context, if it names one.
fn follow_up_message(request: SendRequest, task: &Task) -> Result<Message, Error> {
    if let Some(context) = request.context_id.as_deref()
        && task.context_id.as_deref() != Some(context)
    {
        return Err(
            Error::new(ErrorKind::InvalidRequest, "the message's contextId differs from the task's").about(&task.id)
        );
    }
    request.message.ok_or_else(|| Error::new(ErrorKind::InvalidRequest, "a follow-up needs a message").about(&task.id))
}

/// The error for a follow-up the runtime refused.
fn follow_up_error(failure: TaskFailure, id: &TaskId) -> Error {
    match failure {
        TaskFailure::NotWaiting { state, .. } if state.is_terminal() => Error::new(
            ErrorKind::TaskEnded,
            "the task has ended and takes no more messages; send a new message in the same context",
        )
        .about(id),
        TaskFailure::NotWaiting { .. } => Error::new(
            ErrorKind::TaskRunning,
            "the task is running; it takes a message only while it waits for input or authorization",
        )
        .about(id),
        TaskFailure::NotAdmitted { .. } => Error::new(
            ErrorKind::PaymentRequired,
            "the task waits for its payment; only a message that pays for it continues it",
        )
        .about(id),
        other => other.into(),
    }
}

/// Passes events through up to and including the first one that settles the task.
fn until_settled_inclusive(
    events: impl Stream<Item = Result<TaskEvent, Error>> + Send + 'static,
) -> impl Stream<Item = Result<TaskEvent, Error>> + Send + 'static {
    futures_util::stream::unfold((Box::pin(events), false), |(mut events, done)| async move {
        if done {
            return None;
        }
        let item = events.next().await?;
        let settles = match &item {
            Ok(event) => event.kind.state().is_some_and(is_settled),
            Err(_) => true,
        };
        Some((item, (events, settles)))
    })
}

/// The input candidates a message carries (see [`SendInput::FromMessage`]).
fn input_candidates(message: &Message) -> Vec<Value> {
    let data = message.data_parts();
    let text: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let mut candidates = Vec::new();
    if let [only] = data.as_slice() {
        candidates.push((*only).clone());
    }
    if !text.is_empty() {
        let text = text.join("\n");
        if let Ok(parsed) = serde_json::from_str::<Value>(&text) {
            candidates.push(parsed);
        }
        candidates.push(Value::Object(Map::from_iter([("text".to_owned(), Value::String(text.clone()))])));
        candidates.push(Value::String(text));
    }
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Role;
    use serde_json::json;

    #[test]
    fn a_message_offers_its_data_then_its_text_as_json_object_and_string() {
        let message = Message::new(Role::User, vec![Part::Text("{\"a\":1}".into())]);
        assert_eq!(input_candidates(&message), vec![json!({"a": 1}), json!({"text": "{\"a\":1}"}), json!("{\"a\":1}")]);
        let data = Message::new(Role::User, vec![Part::Data(json!({"n": 2})), Part::Text("hi".into())]);
        assert_eq!(input_candidates(&data), vec![json!({"n": 2}), json!({"text": "hi"}), json!("hi")]);
        assert!(input_candidates(&Message::new(Role::User, Vec::new())).is_empty());
    }

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[tokio::test]
    async fn a_task_awaiting_payment_runs_only_once_paid_and_its_run_keeps_the_evidence() {
        use super::super::memory::MemoryStore;
        use super::super::runtime::RuntimeConfig;
        use super::super::token::AccessToken;
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
            let request =
                SendRequest::new(caller, SendInput::FromMessage).message(follow_up.clone()).follow_up(task.id.clone());
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

    #[test]
    fn a_tenant_makes_another_owner() {
        let owner = super::super::token::AccessToken::generate().owner();
        let caller = Caller::owner(owner);
        assert_eq!(caller.within(None), caller);
        assert_eq!(caller.within(Some("")), caller);
        assert_ne!(caller.within(Some("a")).owner_hash(), caller.owner_hash());
        assert!(!caller.within(Some("a")).is_anonymous());
        assert!(Caller::anonymous(owner).within(Some("a")).is_anonymous());
    }
}
