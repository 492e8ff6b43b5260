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
//!
//! This file holds the shared types and send, follow-up, get, list, cancel and subscribe; the
//! paid start has a room of its own (`paid`), and so have the push-config rules (`push`).

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value};

use super::memory::json_len;
use super::push::{DeliverFrom, PushConfig, PushKey};
use super::runtime::{Reservation, TaskFailure, TaskRuntime};
use super::store::{ListQuery, TaskPage};
use super::token::OwnerHash;
use crate::error::{Error, ErrorKind, RunError};
use crate::model::{Task, TaskEvent, TaskId};
use crate::run::{Message, Part, TaskState};
use crate::skill::{Skill, ValidInput};

mod paid;
mod push;

pub use paid::{PaidStart, PaymentFlow, PaymentOutcome, SettleFailure};

/// Who calls: the owner its tasks belong to, whether it proved who it is, and the scopes it was
/// granted.
///
/// An anonymous caller still owns what it creates (the server's faces give the anonymous callers
/// of one client address one owner, so the random task id is their capability); what it may do
/// beyond that is [`ServiceConfig::anonymous`]. It holds no scopes, so it runs no skill that
/// needs one ([`Skill::permits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    owner: OwnerHash,
    anonymous: bool,
    scopes: Scopes,
}

/// The scopes a caller was granted. Cheap to clone; empty for anonymous callers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scopes(Option<Arc<[Box<str>]>>);

impl Scopes {
    /// These scopes (empty ones are dropped).
    pub fn new<I, S>(scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let scopes: Vec<Box<str>> =
            scopes.into_iter().filter(|scope| !scope.as_ref().is_empty()).map(|scope| scope.as_ref().into()).collect();
        if scopes.is_empty() { Self(None) } else { Self(Some(scopes.into())) }
    }

    /// Whether `scope` is among them.
    pub fn contains(&self, scope: &str) -> bool {
        self.0.as_deref().is_some_and(|scopes| scopes.iter().any(|granted| &**granted == scope))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl Caller {
    /// A caller that holds a token or an authenticated principal standing for `owner`, with no
    /// scopes (see [`Caller::with_scopes`]).
    pub fn owner(owner: OwnerHash) -> Self {
        Self { owner, anonymous: false, scopes: Scopes::default() }
    }

    /// An anonymous caller, owning tasks as `owner`. It holds no scopes.
    pub fn anonymous(owner: OwnerHash) -> Self {
        Self { owner, anonymous: true, scopes: Scopes::default() }
    }

    /// The same caller holding `scopes` (an anonymous caller keeps none).
    pub fn with_scopes(mut self, scopes: Scopes) -> Self {
        if !self.anonymous {
            self.scopes = scopes;
        }
        self
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

    /// The scopes the caller holds.
    pub fn scopes(&self) -> &Scopes {
        &self.scopes
    }

    /// Whether the caller holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
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
    /// Whether streams are served: streaming sends and subscriptions (default `true`). Off, they
    /// are refused with [`ErrorKind::StreamingOff`] on every face, and blocking sends, reads and
    /// push notifications still work.
    pub streaming: bool,
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
            streaming: true,
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

    /// Sets [`ServiceConfig::streaming`].
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
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
    /// Whether the caller waits in this request for the task to settle (a blocking send): a new
    /// task's handler then runs before the task is first stored, and a handler that ends soon
    /// enough has its task written once ([`TaskRuntime::start_inline`]). [`TaskService::send`]
    /// sets it from its [`Wait`]; a face that starts through [`TaskService::send_paid`] and then
    /// waits sets it with [`SendRequest::awaited`].
    pub awaited: bool,
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
            awaited: false,
        }
    }

    /// Marks the caller as waiting in this request for the task to settle
    /// ([`SendRequest::awaited`]).
    pub fn awaited(mut self) -> Self {
        self.awaited = true;
        self
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

    /// The skill a request of `caller` runs ([`TaskService::skill_for`]), if the caller may run it
    /// ([`Skill::permits`]).
    fn permitted_skill(&self, caller: &Caller, named: Option<&str>) -> Result<&Arc<Skill>, Error> {
        let skill = self.skill_for(named)?;
        skill.permits(caller).map_err(|error| Error::scope_required(&error))?;
        Ok(skill)
    }

    /// Refuses a follow-up to `task` by a caller who may not run its skill (the scope asked of
    /// its first message holds for every later one).
    fn permits_follow_up(&self, caller: &Caller, task: &Task) -> Result<(), Error> {
        match self.runtime.agent().skill(&task.skill) {
            Ok(skill) => skill.permits(caller).map_err(|error| Error::scope_required(&error).about(&task.id)),
            // A task of a skill the agent no longer has: the run itself reports it.
            Err(_) => Ok(()),
        }
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
    ///
    /// A new task whose caller waits for it ([`SendRequest::awaited`]) runs before it is stored
    /// ([`TaskRuntime::start_inline`]), unless it has a push config: that is stored with the task.
    async fn start(&self, mut request: SendRequest) -> Result<Task, Error> {
        self.check_message_size(&request)?;
        let Some(push) = request.push.take() else { return self.start_plain(request).await };
        let push = self.checked_push_config(push)?;
        let caller = request.caller.clone();
        if let Some(id) = request.task_id.clone() {
            self.set_push_config(&caller, &id, push, DeliverFrom::Now).await?;
            return self.start_plain(request).await;
        }
        request.awaited = false;
        let task = self.start_plain(request).await?;
        self.set_push_config(&caller, &task.id, push, DeliverFrom::After(0)).await?;
        Ok(task)
    }

    async fn start_plain(&self, request: SendRequest) -> Result<Task, Error> {
        if let Some(id) = request.task_id.clone() {
            return self.follow_up(request, &id).await;
        }
        let skill = self.permitted_skill(&request.caller, request.skill.as_deref())?;
        let valid = self.input_for(skill, &request)?;
        if skill.pricing().task.is_some() {
            return Err(Error::new(
                ErrorKind::PaymentRequired,
                format!("Skill \"{}\" is priced: its tasks are started with a payment", skill.key()),
            ));
        }
        self.start_new(request, valid).await
    }

    /// Starts the new task `request` asks for, with its validated input: run first when its
    /// caller waits for it ([`SendRequest::awaited`]), else stored first.
    async fn start_new(&self, request: SendRequest, valid: ValidInput) -> Result<Task, Error> {
        let awaited = request.awaited;
        let reservation = self.reservation(request, valid);
        let task = if awaited {
            self.runtime.start_inline(reservation).await?
        } else {
            self.runtime.start(reservation).await?
        };
        Ok(task)
    }

    /// A message for an existing task: it must exist for the caller and share its context; a
    /// task waiting for input or authorization resumes, any other is refused.
    async fn follow_up(&self, request: SendRequest, id: &TaskId) -> Result<Task, Error> {
        let owner = request.caller.owner;
        let task = self.runtime.get(id, &owner).await?;
        self.permits_follow_up(&request.caller, &task)?;
        let message = follow_up_message(request, &task)?;
        if is_settled(task.state) && !task.state.is_terminal() {
            self.check_history_room(&task)?;
        }
        self.runtime.resume(id, &owner, message).await.map_err(|failure| follow_up_error(failure, id))
    }

    /// Sends a message: starts a new task or resumes a waiting one, then answers as `wait` says.
    pub async fn send(&self, mut request: SendRequest, wait: Wait) -> Result<Task, Error> {
        let caller = request.caller.clone();
        request.awaited = matches!(wait, Wait::Settled(_));
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

    /// Refuses when the agent serves no streams ([`ServiceConfig::streaming`]): the streaming
    /// operations check it first, and a face that must refuse before it parses more (or that
    /// builds a stream of its own from a send) asks here.
    pub fn ensure_streaming(&self) -> Result<(), Error> {
        if self.config.streaming {
            Ok(())
        } else {
            Err(Error::new(ErrorKind::StreamingOff, "this agent does not stream"))
        }
    }

    /// Sends a message and streams the task: its snapshot, then its log until it settles (ends,
    /// or waits for the caller).
    pub async fn send_streaming(&self, request: SendRequest) -> Result<TaskUpdates, Error> {
        self.ensure_streaming()?;
        let caller = request.caller.clone();
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
                    let latest = Arc::clone(&run.borrow_and_update());
                    if is_settled(latest.state) {
                        // The run has usually let go of it by now: no copy then.
                        return Some(Arc::unwrap_or_clone(latest));
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
        self.ensure_streaming()?;
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

    #[test]
    fn a_tenant_makes_another_owner() {
        let owner = super::super::token::AccessToken::generate().owner();
        let caller = Caller::owner(owner);
        assert_eq!(caller.clone().within(None), caller);
        assert_eq!(caller.clone().within(Some("")), caller);
        assert_ne!(caller.clone().within(Some("a")).owner_hash(), caller.owner_hash());
        assert!(!caller.within(Some("a")).is_anonymous());
        assert!(Caller::anonymous(owner).within(Some("a")).is_anonymous());
    }
}
