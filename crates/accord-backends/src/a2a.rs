//! A remote A2A agent whose skills are skills of this agent: [`A2aAgent`] reads the remote card
//! with Accord's own client ([`accord_client::a2a::A2aClient`]: 1.0 or 0.3, JSON-RPC, HTTP+JSON
//! or gRPC, as the card offers and the options prefer), and each remote skill becomes a skill
//! whose handler, [`A2aSkill`], forwards a run's message to the remote agent.
//!
//! This module owns the mapping between a run and a remote task: the message sent (the caller's
//! message as it is, the remote skill's id in `metadata.skillId`), the remote events turned into
//! the run's events and outcome, the follow-up of a task that asked for input, the cancel, and
//! what a caller sees when the remote agent fails. A task's run saves the remote task with the
//! task ([`Run::save_state`]: which turn is being sent, then the remote task once the remote
//! agent names it, before anything of it is forwarded), so that a follow-up reaches it and a run
//! after a restart follows it again instead of sending the message twice. It does not decide what a task is: the engine
//! stores and projects what the handler emits, as for every other skill. The caller's
//! credentials never leave Accord; only the headers the configuration names are sent.
//!
//! `docs/backends.md` ("Remote A2A agents") is the reader's version of this module.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use accord_client::ClientError;
use accord_client::a2a::{A2aClient, A2aClientOptions, A2aEventStream};
use accord_engine::{
    Artifact, BoxFuture, Completion, Handler, Message, Outcome, Part, Role, Run, RunEvent, SkillBuilder, SkillError,
};
use accord_types::a2a::{self, A2aErrorKind, AgentCard, AgentSkill, PartContent, StreamResponse};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::BackendError;
use crate::contract::{MAX_REASON_CHARS, bounded, cancelled, failure, invalid_answer, is_payment_turn};
use crate::health::{BackendStatus, record_call_duration};
use crate::secret::Secret;

/// The default deadline of each request to a remote A2A agent, and the longest a stream of it
/// may stay silent.
pub const DEFAULT_A2A_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a cancelled run still waits for the remote agent to name its task, so that the
/// cancel can reach it, and for the cancel's answer.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The codes of a run that could not reach the remote agent, and of one that it answered with
/// something that is not A2A.
const UNAVAILABLE: &str = "backend_unavailable";
const INVALID_ANSWER: &str = "backend_invalid_answer";

/// The first and the longest wait between two `GetTask` polls of a remote task that is followed
/// without a stream.
const POLL_FIRST: Duration = Duration::from_millis(100);
const POLL_MAX: Duration = Duration::from_secs(2);

/// How a remote A2A agent is reached: its name in logs and errors, the headers sent with every
/// request, the bindings preferred and the deadline of each request.
#[derive(Debug, Clone)]
pub struct A2aOptions {
    name: String,
    headers: Vec<(HeaderName, Secret)>,
    bindings: Option<Vec<String>>,
    timeout: Duration,
}

impl A2aOptions {
    /// Options for the remote agent called `name` in logs and errors.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), headers: Vec::new(), bindings: None, timeout: DEFAULT_A2A_TIMEOUT }
    }

    /// A header sent with every request (the card's too), such as `Authorization`. Its value
    /// never prints.
    pub fn header(mut self, name: HeaderName, value: impl Into<Secret>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The bindings to use, most preferred first (`JSONRPC`, `HTTP+JSON`, `GRPC`); default
    /// [`accord_client::a2a::DEFAULT_BINDINGS`].
    pub fn bindings<I, S>(mut self, bindings: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.bindings = Some(bindings.into_iter().map(Into::into).collect());
        self
    }

    /// The deadline of each request (card, send, get, cancel) and the longest a stream may stay
    /// silent. Default [`DEFAULT_A2A_TIMEOUT`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A remote A2A agent, reached and its card read. Cheap to clone.
#[derive(Clone)]
pub struct A2aAgent {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    client: A2aClient,
    /// Whether the remote card says it streams (`capabilities.streaming`): then a run follows
    /// `SendStreamingMessage`, else `SendMessage` then `GetTask`.
    streaming: bool,
    health: Mutex<Health>,
    /// Runs made, and runs that failed for the remote agent's sake.
    calls: AtomicU64,
    failures: AtomicU64,
}

/// Whether the remote agent is up: it is from the start (its card was read), goes down when a
/// call cannot reach it, and comes back when a call reaches it again.
struct Health {
    up: bool,
    since: SystemTime,
    last_error: Option<String>,
    reconnects: u64,
}

impl Inner {
    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A call could not reach the remote agent, for `cause`.
    fn went_down(&self, cause: String) {
        let mut health = self.health();
        if health.up {
            health.up = false;
            health.since = SystemTime::now();
            tracing::warn!(agent = %self.name, %cause, "remote A2A agent is down");
        }
        health.last_error = Some(cause);
    }

    /// A call reached the remote agent (whatever it answered).
    fn reached(&self) {
        let mut health = self.health();
        if !health.up {
            health.up = true;
            health.since = SystemTime::now();
            health.reconnects += 1;
            tracing::info!(agent = %self.name, "remote A2A agent is back");
        }
    }
}

impl std::fmt::Debug for A2aAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aAgent")
            .field("name", &self.inner.name)
            .field("binding", &self.inner.client.binding())
            .field("version", &self.inner.client.protocol_version())
            .field("streaming", &self.inner.streaming)
            .finish_non_exhaustive()
    }
}

/// A remote task: its id and context id, as the remote agent named them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoteTask {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context_id: Option<String>,
}

/// What a task's run saves with the task ([`Run::save_state`]) before anything of the remote
/// task is forwarded: which of the caller's turns it answers, whether the remote agent received
/// that turn's message (it named its task), and the remote task. The next run — the caller's
/// follow-up, or the same turn again after the worker stopped — goes on from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Saved {
    /// How many messages of the caller's the task had when the message was sent.
    turn: usize,
    /// Whether the remote agent named its task for this turn's message.
    sent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remote_task: Option<RemoteTask>,
}

/// What a run does, from the state the task's previous run saved.
#[derive(Debug, PartialEq)]
enum Plan {
    /// Sends the caller's message: to a new remote task, or to the one it continues.
    Send { continued: Option<RemoteTask> },
    /// Follows the remote task this turn's message was sent to already: the run was interrupted
    /// (its worker stopped) after the send.
    Reattach(RemoteTask),
    /// Fails the run.
    Refuse(SkillError),
}

/// The plan for turn `turn` of a task (`resumed`: a follow-up after the task asked for
/// something), given the state its previous run saved and whether the skill is safe to repeat.
fn plan(saved: Option<Saved>, turn: usize, resumed: bool, safe_to_repeat: bool, name: &str) -> Plan {
    let unknown = || {
        Plan::Refuse(failure(
            "backend_error",
            format!("remote A2A agent '{name}': the remote task this task continues is not known"),
        ))
    };
    match saved {
        None if resumed => unknown(),
        None => Plan::Send { continued: None },
        Some(saved) if saved.turn == turn => match saved.remote_task {
            Some(remote) if saved.sent => Plan::Reattach(remote),
            continued if safe_to_repeat => Plan::Send { continued },
            _ => Plan::Refuse(
                failure(
                    "interrupted",
                    format!(
                        "the task was interrupted while its message was being sent to remote A2A agent '{name}', which may have received it: it was not sent again; send the request again if it should be"
                    ),
                )
                .retryable(true),
            ),
        },
        Some(saved) => match saved.remote_task {
            Some(remote) => Plan::Send { continued: Some(remote) },
            None => unknown(),
        },
    }
}

impl A2aAgent {
    /// Reads the card at `url` (a base URL, under which the card is looked for at its
    /// well-known path, or the card's own URL) and binds to the interface the options prefer.
    /// Fails, naming the agent and the cause (never a header value, nor the URL's userinfo or
    /// query), when the card cannot be read or offers no interface Accord speaks.
    pub async fn connect(url: &str, options: A2aOptions) -> Result<Self, BackendError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &options.headers {
            let mut value = HeaderValue::from_str(value.expose()).map_err(|_| {
                BackendError::new(format!(
                    "remote A2A agent '{}': header {name} has a value a header cannot carry",
                    options.name
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(name.clone(), value);
        }
        let mut client_options = A2aClientOptions {
            headers,
            request_timeout: options.timeout,
            stream_idle_timeout: options.timeout,
            ..A2aClientOptions::default()
        };
        if let Some(bindings) = options.bindings {
            client_options.bindings = bindings;
        }
        let shown = shown_url(url);
        let client = A2aClient::from_card_url(url, client_options).await.map_err(|error| {
            BackendError::new(format!("remote A2A agent '{}' at {shown}: {}", options.name, start_cause(&error)))
        })?;
        let streaming = client.card().capabilities.streaming == Some(true);
        tracing::info!(
            agent = %options.name,
            binding = %client.binding(),
            version = %client.protocol_version(),
            streaming,
            skills = client.card().skills.len(),
            "remote A2A agent reached"
        );
        let health = Health { up: true, since: SystemTime::now(), last_error: None, reconnects: 0 };
        Ok(Self {
            inner: Arc::new(Inner {
                name: options.name,
                client,
                streaming,
                health: Mutex::new(health),
                calls: AtomicU64::new(0),
                failures: AtomicU64::new(0),
            }),
        })
    }

    /// Whether the remote agent is up, since when, its last error and its call counts (for
    /// `/health` and the `accord_backend_*` metrics). A run of one of its skills is a call.
    pub fn status(&self) -> BackendStatus {
        let inner = &self.inner;
        let health = inner.health();
        BackendStatus {
            name: inner.name.clone(),
            up: health.up,
            since: health.since,
            last_error: health.last_error.clone(),
            calls: inner.calls.load(Ordering::Relaxed),
            failures: inner.failures.load(Ordering::Relaxed),
            reconnects: health.reconnects,
        }
    }

    /// The name given in the options.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The remote agent's card, as read at start.
    pub fn card(&self) -> &AgentCard {
        self.inner.client.card()
    }

    /// The remote agent's skills, as its card lists them.
    pub fn skills(&self) -> &[AgentSkill] {
        &self.card().skills
    }

    /// The binding and version in use, as `JSONRPC@1.0`.
    pub fn interface(&self) -> String {
        format!("{}@{}", self.inner.client.binding(), self.inner.client.protocol_version())
    }

    /// The handler that runs the remote skill `id`, or `None` when the card lists no such skill.
    pub fn handler(&self, id: &str) -> Option<A2aSkill> {
        self.skills().iter().any(|skill| skill.id == id).then(|| A2aSkill {
            agent: self.clone(),
            remote_skill: Arc::from(id),
            safe_to_repeat: false,
        })
    }

    /// The local skill `key` for the remote skill `remote`: its description (else its name),
    /// tags, name, examples and media types (else the remote card's default ones), an input schema that takes any JSON (the remote agent reads the message itself),
    /// not safe to repeat (a remote task must not be sent twice), and the handler. Add a price or
    /// a scope before giving it to the agent.
    pub fn skill(&self, remote: &AgentSkill, key: impl Into<String>) -> SkillBuilder {
        self.skill_with(remote, key, false)
    }

    /// As [`A2aAgent::skill`], saying whether the remote skill is safe to repeat: then a message
    /// whose sending was interrupted (Accord stopped before the remote agent named its task) is
    /// sent again, and the skill is marked so ([`SkillBuilder::safe_to_repeat`]). A message the
    /// remote agent received is never sent twice either way: its task is followed again.
    pub fn skill_with(&self, remote: &AgentSkill, key: impl Into<String>, safe_to_repeat: bool) -> SkillBuilder {
        let handler = A2aSkill { agent: self.clone(), remote_skill: Arc::from(remote.id.as_str()), safe_to_repeat };
        let mut skill =
            accord_engine::Skill::builder(key).input_schema(Value::Object(Map::new())).safe_to_repeat(safe_to_repeat);
        let description = if remote.description.trim().is_empty() { &remote.name } else { &remote.description };
        if !description.trim().is_empty() {
            skill = skill.description(description.clone());
        }
        for tag in &remote.tags {
            skill = skill.tag(tag.clone());
        }
        if !remote.name.trim().is_empty() {
            skill = skill.name(remote.name.clone());
        }
        for example in &remote.examples {
            skill = skill.example(example.clone());
        }
        // The skill's own media types, else the remote card's defaults.
        let card = self.card();
        let modes =
            |own: &Vec<String>, default: &Vec<String>| if own.is_empty() { default.clone() } else { own.clone() };
        skill = skill.input_modes(modes(&remote.input_modes, &card.default_input_modes));
        skill.output_modes(modes(&remote.output_modes, &card.default_output_modes)).handler(handler)
    }

    /// Every remote skill as a local skill whose key is `prefix` followed by the remote id (see
    /// [`A2aAgent::skill`]), in the card's order.
    pub fn skills_with_prefix(&self, prefix: &str) -> Vec<SkillBuilder> {
        self.skills().iter().map(|remote| self.skill(remote, format!("{prefix}{}", remote.id))).collect()
    }
}

/// Runs one skill of a remote A2A agent (see the module documentation).
#[derive(Debug, Clone)]
pub struct A2aSkill {
    agent: A2aAgent,
    remote_skill: Arc<str>,
    /// Whether the message may be sent again when a run was interrupted while sending it.
    safe_to_repeat: bool,
}

impl A2aSkill {
    /// The remote skill's id.
    pub fn remote_skill(&self) -> &str {
        &self.remote_skill
    }
}

impl Handler for A2aSkill {
    fn call(&self, run: Run) -> BoxFuture<Result<Outcome, SkillError>> {
        use tracing::Instrument as _;
        let this = self.clone();
        // A span per run, under the task's: which remote agent, which skill, which remote task
        // (recorded once named). DEBUG under `accord::backend`: off unless asked for.
        let span = tracing::debug_span!(
            target: "accord::backend",
            "backend_call",
            backend = %self.inner().name,
            kind = "a2a",
            remote_skill = %self.remote_skill,
            remote_task = tracing::field::Empty,
        );
        Box::pin(async move { this.run(run).await }.instrument(span))
    }

    /// A task cancelled while it waited for its caller (the remote task asked for input or
    /// authorization): its remote task, saved with it, is cancelled too.
    fn waiting_task_cancelled(&self, task: accord_engine::task::Task) -> BoxFuture<()> {
        let this = self.clone();
        Box::pin(async move {
            let saved = task.backend_state.and_then(|state| serde_json::from_value::<Saved>(state).ok());
            let remote = saved.and_then(|saved| saved.remote_task);
            this.cancel_remote(remote.as_ref()).await;
        })
    }
}

impl A2aSkill {
    fn inner(&self) -> &Inner {
        &self.agent.inner
    }

    async fn run(&self, run: Run) -> Result<Outcome, SkillError> {
        let turn = caller_messages(&run).count();
        // A direct invocation or stream is never run again: it has no state to go on from.
        let plan = match run.task() {
            Some(_) => {
                let saved = run.saved_state().and_then(|state| serde_json::from_value::<Saved>(state.clone()).ok());
                plan(saved, turn, resumes(&run), self.safe_to_repeat, &self.inner().name)
            }
            None => Plan::Send { continued: None },
        };
        let (known, reattach) = match plan {
            Plan::Refuse(error) => return Err(error),
            Plan::Reattach(remote) => (Some(remote), true),
            Plan::Send { continued } => {
                // Saved before the send: a run interrupted from here on knows the message may
                // have reached the remote agent, and never sends it again unless that is safe.
                let sending = Saved { turn, sent: false, remote_task: continued.clone() };
                run.save_state(saved_value(&sending)).await?;
                (continued, false)
            }
        };
        if let Some(remote) = &known {
            tracing::Span::current().record("remote_task", remote.id.as_str());
        }
        let (remote_tx, mut remote_rx) = watch::channel(known.clone());
        let inner = self.inner();
        inner.calls.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let troubled = AtomicBool::new(false);
        let mut follow = Follow {
            skill: self,
            run: &run,
            troubled: &troubled,
            remote: remote_tx,
            turn,
            acknowledged: reattach,
            sent: HashMap::new(),
            artifacts: Vec::new(),
            last_status: None,
        };
        let request = (!reattach).then(|| self.request(&run, known.as_ref()));
        let drive = follow.drive(request);
        tokio::pin!(drive);
        let outcome = tokio::select! {
            biased;
            outcome = &mut drive => outcome,
            () = run.cancelled() => {
                // The remote task may not be named yet (the first event is on its way): wait a
                // little for it, so that the cancel reaches the remote agent.
                if remote_rx.borrow().is_none() {
                    let named = async {
                        tokio::select! {
                            _ = &mut drive => {}
                            _ = remote_rx.wait_for(Option::is_some) => {}
                        }
                    };
                    let _ = tokio::time::timeout(CANCEL_GRACE, named).await;
                }
                let remote = remote_rx.borrow().clone();
                self.cancel_remote(remote.as_ref()).await;
                return Err(cancelled());
            }
        };
        record_call_duration(&inner.name, started.elapsed());
        let troubled = troubled.load(Ordering::Relaxed);
        if !troubled {
            // Every call of the run was answered (a call that was not marked it troubled).
            inner.reached();
        }
        if troubled || outcome.as_ref().is_err_and(|error| error.code == INVALID_ANSWER) {
            inner.failures.fetch_add(1, Ordering::Relaxed);
        }
        outcome
    }

    /// The request for `run`: the caller's message as it is (a task's latest message from its
    /// caller), else — a direct invocation or stream — a message made of the input; the remote
    /// skill's id in the metadata; the remote task and context ids when it continues one.
    fn request(&self, run: &Run, continued: Option<&RemoteTask>) -> a2a::SendMessageRequest {
        let caller = caller_messages(run).last();
        let (parts, metadata) = match caller {
            Some(message) => (message.parts.iter().filter_map(a2a_part).collect(), message.metadata.clone()),
            None => (vec![input_part(run.input())], None),
        };
        let mut metadata = metadata.unwrap_or_default();
        metadata.insert("skillId".into(), Value::String(self.remote_skill.to_string()));
        let mut message = a2a::Message::new(accord_client::a2a::new_message_id(), a2a::Role::User, parts);
        message.metadata = Some(metadata.clone());
        match continued {
            Some(remote) => {
                message.task_id = Some(remote.id.clone());
                message.context_id = remote.context_id.clone();
            }
            // A new remote task of a task in a context: the remote context Accord's context
            // stands for, so that the caller's tasks of one conversation are one there too.
            None => message.context_id = remote_context(&self.inner().name, run),
        }
        // The caller's request metadata (a task's), with the skill named there too.
        let mut request_metadata = match run.task().and_then(|task| task.metadata.clone()) {
            Some(Value::Object(object)) => object,
            _ => Map::new(),
        };
        request_metadata.insert("skillId".into(), Value::String(self.remote_skill.to_string()));
        a2a::SendMessageRequest { tenant: None, message, configuration: None, metadata: Some(request_metadata) }
    }

    /// Asks the remote agent to cancel its task; an answer is waited for at most
    /// [`CANCEL_GRACE`], and a refusal is logged, not reported (the run is cancelled anyway).
    async fn cancel_remote(&self, remote: Option<&RemoteTask>) {
        let name = &self.inner().name;
        let Some(remote) = remote else {
            tracing::warn!(agent = %name, "a run was cancelled before the remote A2A agent named its task: nothing to cancel there");
            return;
        };
        match tokio::time::timeout(CANCEL_GRACE, self.inner().client.cancel_task(&remote.id)).await {
            Ok(Ok(task)) => {
                tracing::debug!(agent = %name, task = %remote.id, state = %task.status.state, "remote task cancelled")
            }
            Ok(Err(error)) => {
                tracing::warn!(agent = %name, task = %remote.id, cause = %cause(&error), "the remote A2A agent did not cancel its task")
            }
            Err(_) => {
                tracing::warn!(agent = %name, task = %remote.id, "the remote A2A agent did not answer the cancel in time")
            }
        }
    }
}

/// The remote context id of `run`'s task: derived from the remote agent's name, the task's owner
/// (its pseudonym) and Accord's context id, so that the tasks a caller sends in one context share
/// one remote context, while another caller who names the same context id — or another remote
/// agent — gets another, and neither the owner nor Accord's id can be read from it. Shaped as a
/// UUID (version 8, RFC 9562), which any agent's store takes. `None` for a direct run.
fn remote_context(agent: &str, run: &Run) -> Option<String> {
    Some(context_for(agent, run.owner()?, run.task()?.context_id.as_deref()?))
}

/// See [`remote_context`]: each piece is length-prefixed, so no two triples hash alike.
fn context_for(agent: &str, owner: &str, context: &str) -> String {
    use sha2::Digest as _;
    let mut digest = sha2::Sha256::new();
    for piece in ["accord-a2a-context", agent, owner, context] {
        digest.update((piece.len() as u64).to_be_bytes());
        digest.update(piece.as_bytes());
    }
    uuid_v8(&digest.finalize())
}

/// The first 16 bytes of `hash` as a version-8 UUID (RFC 9562: the version and variant bits set).
fn uuid_v8(hash: &[u8]) -> String {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&hash[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// The caller's messages in the history of `run`'s task, in order (none for a direct run),
/// without the payment exchange, which is the server's.
fn caller_messages(run: &Run) -> impl Iterator<Item = &Message> {
    run.task()
        .into_iter()
        .flat_map(|task| task.history.iter())
        .filter(|message| message.role == Role::User && !is_payment_turn(message))
}

fn saved_value(saved: &Saved) -> Value {
    serde_json::to_value(saved).unwrap_or(Value::Null)
}

/// Whether `run` resumes a task that waited for its caller: the agent spoke in its history.
fn resumes(run: &Run) -> bool {
    run.task()
        .is_some_and(|task| task.history.iter().any(|message| message.role == Role::Agent && !is_payment_turn(message)))
}

/// What one run follows of its remote task: the task's ids, the artifacts forwarded so far.
struct Follow<'a> {
    skill: &'a A2aSkill,
    run: &'a Run,
    /// Set when a call failed for the remote agent's sake (counted in its failures).
    troubled: &'a AtomicBool,
    /// The remote task, once the remote agent named it (read by the cancel).
    remote: watch::Sender<Option<RemoteTask>>,
    /// The caller's turn this run answers.
    turn: usize,
    /// Whether the task's saved state says the remote agent received this turn's message.
    acknowledged: bool,
    /// How many parts of each artifact were forwarded, by artifact id (for the snapshots of
    /// polling, which repeat what was forwarded).
    sent: HashMap<String, usize>,
    /// The artifacts as they stand, for a direct run's output.
    artifacts: Vec<Artifact>,
    /// The id of the last status message forwarded, so that a snapshot does not repeat it.
    last_status: Option<String>,
}

/// What one remote event leaves the run with.
enum Step {
    /// The remote task goes on.
    Going,
    /// The run ends so (boxed: an outcome is large, and most events leave the task going).
    Settled(Box<Result<Outcome, SkillError>>),
}

impl Step {
    fn settled(outcome: Result<Outcome, SkillError>) -> Self {
        Self::Settled(Box::new(outcome))
    }
}

impl Follow<'_> {
    fn name(&self) -> &str {
        &self.skill.inner().name
    }

    fn client(&self) -> &A2aClient {
        &self.skill.inner().client
    }

    fn remote_id(&self) -> Option<String> {
        self.remote.borrow().as_ref().map(|remote| remote.id.clone())
    }

    /// Sends `request` and follows the remote task to its end; without a request, follows the
    /// remote task already named (a run that goes on after its worker stopped).
    async fn drive(&mut self, request: Option<a2a::SendMessageRequest>) -> Result<Outcome, SkillError> {
        let Some(request) = request else { return self.reattach().await };
        if self.skill.inner().streaming {
            let stream = self.client().send_streaming_message(request).await.map_err(|error| self.failed(&error))?;
            if let Some(outcome) = self.follow_stream(stream).await? {
                return Ok(outcome);
            }
        } else {
            let mut request = request;
            request.configuration =
                Some(a2a::SendMessageConfiguration { return_immediately: Some(true), ..Default::default() });
            match self.client().send_message(request).await.map_err(|error| self.failed(&error))? {
                a2a::SendMessageResponse::Message(message) => return Ok(Outcome::Reply(agent_message(&message))),
                a2a::SendMessageResponse::Task(task) => {
                    if let Step::Settled(outcome) = self.task(task).await {
                        return *outcome;
                    }
                }
            }
        }
        self.poll().await
    }

    /// Follows the remote task again: `SubscribeToTask` when the remote agent streams (its first
    /// event is the task as it stands), else — or when the task can no longer be subscribed to,
    /// having ended — `GetTask`.
    async fn reattach(&mut self) -> Result<Outcome, SkillError> {
        let Some(id) = self.remote_id() else {
            return Err(invalid_answer("no remote task to follow"));
        };
        tracing::info!(agent = %self.name(), task = %id, "following a remote task again after an interruption");
        if self.skill.inner().streaming {
            match self.client().subscribe(&id).await {
                Ok(stream) => {
                    if let Some(outcome) = self.follow_stream(stream).await? {
                        return Ok(outcome);
                    }
                }
                Err(ClientError::A2a { .. }) => {}
                Err(error) => return Err(self.failed(&error)),
            }
        }
        self.poll().await
    }

    /// Follows a stream; `None` when it ended before the task settled.
    async fn follow_stream(&mut self, mut stream: A2aEventStream) -> Result<Option<Outcome>, SkillError> {
        while let Some(event) = stream.next().await {
            let event = event.map_err(|error| self.failed(&error))?;
            let step = match event.response {
                StreamResponse::Task(task) => self.task(task).await,
                StreamResponse::Message(message) => self.message(message).await,
                StreamResponse::StatusUpdate(update) => {
                    match self.named(&update.task_id, Some(&update.context_id)).await {
                        Ok(()) => self.status(update.status).await,
                        Err(error) => Step::settled(Err(error)),
                    }
                }
                StreamResponse::ArtifactUpdate(update) => {
                    match self.named(&update.task_id, Some(&update.context_id)).await {
                        Ok(()) => {
                            let append = update.append.unwrap_or(false);
                            let last_chunk = update.last_chunk.unwrap_or(false);
                            self.artifact(update.artifact, append, last_chunk).await;
                            Step::Going
                        }
                        Err(error) => Step::settled(Err(error)),
                    }
                }
            };
            if let Step::Settled(outcome) = step {
                return (*outcome).map(Some);
            }
        }
        Ok(None)
    }

    /// Reads the remote task with `GetTask` until it settles.
    async fn poll(&mut self) -> Result<Outcome, SkillError> {
        let Some(id) = self.remote_id() else {
            return Err(invalid_answer(format!(
                "remote A2A agent '{}' ended its answer before naming a task",
                self.name()
            )));
        };
        let mut wait = POLL_FIRST;
        loop {
            let task = self.client().get_task(&id, Some(0)).await.map_err(|error| self.failed(&error))?;
            if let Step::Settled(outcome) = self.task(task).await {
                return *outcome;
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(POLL_MAX);
        }
    }

    /// Takes the remote task's ids from an event: the first names it, the others must name the
    /// same task. The first event of a turn also saves, with the task, that the remote agent
    /// received the message — before anything of it is forwarded.
    async fn named(&mut self, task_id: &str, context_id: Option<&str>) -> Result<(), SkillError> {
        self.take_name(task_id, context_id)?;
        if !self.acknowledged {
            self.acknowledged = true;
            let remote_task = self.remote.borrow().clone();
            self.run.save_state(saved_value(&Saved { turn: self.turn, sent: true, remote_task })).await?;
        }
        Ok(())
    }

    fn take_name(&self, task_id: &str, context_id: Option<&str>) -> Result<(), SkillError> {
        if task_id.is_empty() {
            return Err(invalid_answer(format!("remote A2A agent '{}' sent an event without a task id", self.name())));
        }
        let known = self.remote.borrow().clone();
        match known {
            Some(remote) if remote.id == task_id => Ok(()),
            Some(_) => Err(invalid_answer(format!(
                "remote A2A agent '{}' sent an event of another task than the one it started",
                self.name()
            ))),
            None => {
                let context_id = context_id.filter(|id| !id.is_empty()).map(str::to_owned);
                tracing::Span::current().record("remote_task", task_id);
                self.remote.send_replace(Some(RemoteTask { id: task_id.to_owned(), context_id }));
                Ok(())
            }
        }
    }

    /// A snapshot of the remote task: its new artifacts (or new parts of one), its status.
    async fn task(&mut self, task: a2a::Task) -> Step {
        if let Err(error) = self.named(&task.id, task.context_id.as_deref()).await {
            return Step::settled(Err(error));
        }
        for artifact in task.artifacts {
            let sent = self.sent.get(&artifact.artifact_id).copied().unwrap_or(0);
            if sent == 0 {
                self.artifact(artifact, false, true).await;
            } else if artifact.parts.len() > sent {
                let tail = a2a::Artifact { parts: artifact.parts[sent..].to_vec(), ..artifact };
                self.artifact(tail, true, true).await;
            }
        }
        self.status(task.status).await
    }

    /// A message event: the answer itself before any task (a direct reply), else a message of
    /// the agent within its task.
    async fn message(&mut self, message: a2a::Message) -> Step {
        if self.remote.borrow().is_none() {
            return Step::settled(Ok(Outcome::Reply(agent_message(&message))));
        }
        self.run.emit(RunEvent::Message(agent_message(&message))).await;
        Step::Going
    }

    /// An artifact or a chunk of one, forwarded at once.
    async fn artifact(&mut self, artifact: a2a::Artifact, append: bool, last_chunk: bool) {
        let parts: Vec<Part> = artifact.parts.iter().map(engine_part).collect();
        let count = parts.len();
        let local = Artifact { artifact_id: artifact.artifact_id.clone(), name: artifact.name.clone(), parts };
        match self.artifacts.iter_mut().find(|known| known.artifact_id == local.artifact_id) {
            Some(known) if append => known.parts.extend(local.parts.iter().cloned()),
            Some(known) => *known = local.clone(),
            None => self.artifacts.push(local.clone()),
        }
        let sent = self.sent.entry(artifact.artifact_id).or_insert(0);
        *sent = if append { *sent + count } else { count };
        self.run.emit(RunEvent::Artifact { artifact: local, append, last_chunk }).await;
    }

    /// A status of the remote task: progress while it works, the run's end once it settles.
    async fn status(&mut self, status: a2a::TaskStatus) -> Step {
        let message = status.message.as_ref().map(agent_message);
        let fresh = status.message.as_ref().is_some_and(|message| {
            self.last_status.as_deref() != Some(message.message_id.as_str()) || message.message_id.is_empty()
        });
        if let Some(said) = &status.message {
            self.last_status = Some(said.message_id.clone());
        }
        let said = |fallback: &str| message.clone().unwrap_or_else(|| Message::agent_text(fallback));
        let name = self.name().to_owned();
        Step::settled(match status.state {
            a2a::TaskState::Submitted | a2a::TaskState::Working => {
                if fresh {
                    self.run.emit(RunEvent::Status { state: accord_engine::TaskState::Working, message }).await;
                }
                return Step::Going;
            }
            a2a::TaskState::Completed => {
                let mut completion = Completion::new(self.output());
                completion.message = message;
                Ok(Outcome::Completed(completion))
            }
            a2a::TaskState::InputRequired => {
                Ok(Outcome::InputRequired(said(&format!("remote A2A agent '{name}' needs more input"))))
            }
            a2a::TaskState::AuthRequired => {
                Ok(Outcome::AuthRequired(said(&format!("remote A2A agent '{name}' needs authorization"))))
            }
            a2a::TaskState::Rejected => {
                Ok(Outcome::Rejected(said(&format!("remote A2A agent '{name}' rejected the request"))))
            }
            a2a::TaskState::Failed => Err(failure(
                "backend_error",
                match message.as_ref().map(Message::text).filter(|text| !text.is_empty()) {
                    Some(text) => {
                        format!("remote A2A agent '{name}' failed the task: {}", bounded(&text, MAX_REASON_CHARS))
                    }
                    None => format!("remote A2A agent '{name}' failed the task"),
                },
            )),
            a2a::TaskState::Canceled => {
                Err(failure("backend_error", format!("remote A2A agent '{name}' canceled the task")))
            }
            a2a::TaskState::Unspecified => {
                Err(invalid_answer(format!("remote A2A agent '{name}' sent a task without a state")))
            }
        })
    }

    /// The output of a completed run. A task's answer is its artifacts, as the remote agent made
    /// them (forwarded as they came): the output is `null`, which adds no `result` artifact. A
    /// direct invocation or stream has no artifacts to show, so its output is what they hold:
    /// their one data part, else their text (each artifact's chunks joined, artifacts on lines
    /// of their own), else their parts as JSON.
    fn output(&self) -> Value {
        if self.run.task().is_some() {
            return Value::Null;
        }
        let mut parts = Vec::new();
        for artifact in &self.artifacts {
            let texts: Vec<&str> = artifact
                .parts
                .iter()
                .filter_map(|part| match part {
                    Part::Text(text) => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            if !texts.is_empty() {
                parts.push(Part::Text(texts.concat()));
            }
            parts.extend(artifact.parts.iter().filter(|part| !matches!(part, Part::Text(_))).cloned());
        }
        Completion::from_reply(Message::new(Role::Agent, parts)).output
    }

    /// The run's failure for a client error, logged with its cause.
    fn failed(&self, error: &ClientError) -> SkillError {
        let name = self.name();
        let failure = run_failure(name, error);
        self.troubled.store(true, Ordering::Relaxed);
        if failure.code == UNAVAILABLE {
            self.skill.inner().went_down(cause(error));
        } else {
            self.skill.inner().reached();
        }
        tracing::warn!(agent = %name, code = %failure.code, cause = %cause(error), "a call to a remote A2A agent failed");
        failure
    }
}

/// The run's failure for a client error: the caller sees the agent's name and the kind of
/// failure, never a URL or a header.
fn run_failure(name: &str, error: &ClientError) -> SkillError {
    match error {
        ClientError::Transport { .. } | ClientError::GrpcTransport { .. } => {
            failure("backend_unavailable", format!("remote A2A agent '{name}' is unreachable: {}", cause(error)))
                .retryable(true)
        }
        ClientError::StreamInterrupted { .. } => failure(
            "backend_unavailable",
            format!("the connection to remote A2A agent '{name}' broke and could not be brought back"),
        )
        .retryable(true),
        ClientError::Timeout { .. } => {
            failure("backend_timeout", format!("remote A2A agent '{name}' did not answer in time")).retryable(true)
        }
        ClientError::InvalidResponse { reason, .. } => invalid_answer(format!(
            "remote A2A agent '{name}' answered something that is not A2A: {}",
            bounded(reason, MAX_REASON_CHARS)
        )),
        ClientError::Status { status: 401 | 403 | 407, .. } => {
            failure("backend_unauthorized", format!("remote A2A agent '{name}' refused Accord's credentials"))
        }
        ClientError::Status { status: status @ (408 | 429), .. } => {
            failure("backend_busy", format!("remote A2A agent '{name}' is busy (HTTP {status})")).retryable(true)
        }
        ClientError::Status { status, .. } => {
            failure("backend_error", format!("remote A2A agent '{name}' answered HTTP {status}"))
                .retryable(matches!(status, 502..=504))
        }
        ClientError::A2a { error, .. } => match error.kind {
            A2aErrorKind::Unauthenticated | A2aErrorKind::PermissionDenied => failure(
                "backend_unauthorized",
                format!("remote A2A agent '{name}' refused Accord's credentials: {}", bounded(&error.message, 256)),
            ),
            A2aErrorKind::InvalidAgentResponse | A2aErrorKind::JsonParse | A2aErrorKind::InvalidRequest => {
                invalid_answer(format!(
                    "remote A2A agent '{name}' answered {:?}: {}",
                    error.kind,
                    bounded(&error.message, MAX_REASON_CHARS)
                ))
            }
            A2aErrorKind::TaskNotFound => failure(
                "backend_task_lost",
                format!(
                    "remote A2A agent '{name}' no longer knows the task (did it restart?): {}",
                    bounded(&error.message, 256)
                ),
            )
            .retryable(true),
            kind => failure(
                "backend_error",
                format!("remote A2A agent '{name}' answered {kind:?}: {}", bounded(&error.message, MAX_REASON_CHARS)),
            ),
        },
        ClientError::JsonRpc { error, .. } => failure(
            "backend_error",
            format!(
                "remote A2A agent '{name}' answered JSON-RPC error {}: {}",
                error.code,
                bounded(&error.message, MAX_REASON_CHARS)
            ),
        ),
        other => failure("backend_error", format!("remote A2A agent '{name}': {}", cause(other))),
    }
}

/// Why a client call failed, without the URL asked (its userinfo or query may be a secret): for
/// a request that got no answer, the innermost cause (`Connection refused (os error 111)`).
fn cause(error: &ClientError) -> String {
    match error {
        ClientError::Transport { source, .. } => innermost(source),
        ClientError::GrpcTransport { status, .. } => match std::error::Error::source(status.as_ref()) {
            Some(source) => innermost(source),
            None => status.message().to_owned(),
        },
        ClientError::Timeout { .. } => "no answer in time".into(),
        ClientError::Status { status, .. } => format!("HTTP {status}"),
        ClientError::InvalidResponse { reason, .. } => bounded(reason, MAX_REASON_CHARS),
        ClientError::CardNotFound { .. } => "no agent card found there".into(),
        ClientError::InvalidCard { reason, .. } => format!("the agent card is invalid: {}", bounded(reason, 512)),
        ClientError::NoCompatibleInterface { wanted, offered } => format!(
            "its card offers no interface Accord speaks among {} (it offers {})",
            wanted.join(", "),
            if offered.is_empty() { "none".to_owned() } else { offered.join(", ") }
        ),
        ClientError::StreamInterrupted { attempts, .. } => {
            format!("the stream broke ({attempts} reconnections tried)")
        }
        ClientError::InvalidUrl { reason, .. } => format!("the URL cannot be used: {reason}"),
        ClientError::A2a { error, .. } => format!("{:?}: {}", error.kind, bounded(&error.message, 256)),
        ClientError::JsonRpc { error, .. } => format!("JSON-RPC error {}", error.code),
        _ => "the call failed".into(),
    }
}

/// What stops the start: the cause, with `unreachable` said when the agent was not reached.
fn start_cause(error: &ClientError) -> String {
    if error.is_unreachable() {
        return format!("unreachable: {}", cause(error));
    }
    cause(error)
}

/// The innermost error of a chain: the one that says what happened, without the URL the outer
/// ones repeat.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

/// `url` as it may be shown: without userinfo, query or fragment.
pub(crate) fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => "(an invalid URL)".into(),
    }
}

/// The part a direct run's input makes: a string as text, anything else as data.
fn input_part(input: &Value) -> a2a::Part {
    match input {
        Value::String(text) => a2a::Part::text(text.clone()),
        other => a2a::Part::data(other.clone()),
    }
}

/// An A2A message of the remote agent as the agent's message of this run: parts converted, its
/// id and metadata kept.
fn agent_message(message: &a2a::Message) -> Message {
    Message {
        message_id: Some(message.message_id.clone()).filter(|id| !id.is_empty()),
        role: Role::Agent,
        parts: message.parts.iter().map(engine_part).collect(),
        metadata: message.metadata.clone(),
    }
}

fn engine_part(part: &a2a::Part) -> Part {
    match &part.content {
        PartContent::Text(text) => Part::Text(text.clone()),
        PartContent::Data(data) => Part::Data(data.clone()),
        PartContent::Raw(bytes) => Part::File {
            name: part.filename.clone(),
            mime: part.media_type.clone(),
            bytes_base64: Some(bytes.clone()),
            uri: None,
        },
        PartContent::Url(url) => Part::File {
            name: part.filename.clone(),
            mime: part.media_type.clone(),
            bytes_base64: None,
            uri: Some(url.clone()),
        },
    }
}

fn a2a_part(part: &Part) -> Option<a2a::Part> {
    Some(match part {
        Part::Text(text) => a2a::Part::text(text.clone()),
        Part::Data(data) => a2a::Part::data(data.clone()),
        Part::File { name, mime, bytes_base64, uri } => {
            let content = match (bytes_base64, uri) {
                (Some(bytes), _) => PartContent::Raw(bytes.clone()),
                (None, Some(uri)) => PartContent::Url(uri.clone()),
                (None, None) => return None,
            };
            a2a::Part { content, metadata: None, filename: name.clone(), media_type: mime.clone() }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(id: &str) -> RemoteTask {
        RemoteTask { id: id.into(), context_id: Some("ctx".into()) }
    }

    #[test]
    fn a_run_goes_on_from_what_the_last_one_saved_and_never_sends_a_received_message_twice() {
        let saved = |turn, sent, task: Option<&str>| Some(Saved { turn, sent, remote_task: task.map(remote) });
        // A first run sends to a new remote task.
        assert_eq!(plan(None, 1, false, false, "p"), Plan::Send { continued: None });
        // The same turn again, after the remote agent named its task: followed, not sent.
        assert_eq!(plan(saved(1, true, Some("r")), 1, false, false, "p"), Plan::Reattach(remote("r")));
        assert_eq!(plan(saved(1, true, Some("r")), 1, false, true, "p"), Plan::Reattach(remote("r")));
        // Interrupted while sending: sent again only when that is safe.
        let Plan::Refuse(error) = plan(saved(1, false, None), 1, false, false, "p") else { panic!("refused") };
        assert_eq!((error.code.as_str(), error.retryable), ("interrupted", Some(true)));
        assert!(error.message.contains("remote A2A agent 'p'"), "{}", error.message);
        assert_eq!(plan(saved(1, false, None), 1, false, true, "p"), Plan::Send { continued: None });
        // A follow-up goes to the remote task of the last turn; interrupted while sending it,
        // the same rule holds.
        assert_eq!(plan(saved(1, true, Some("r")), 2, true, false, "p"), Plan::Send { continued: Some(remote("r")) });
        assert!(matches!(plan(saved(2, false, Some("r")), 2, true, false, "p"), Plan::Refuse(_)));
        assert_eq!(plan(saved(2, false, Some("r")), 2, true, true, "p"), Plan::Send { continued: Some(remote("r")) });
        // A follow-up without a remote task to go to is refused.
        let Plan::Refuse(error) = plan(None, 2, true, true, "p") else { panic!("refused") };
        assert_eq!(error.code, "backend_error");
        assert!(matches!(plan(saved(1, false, None), 2, true, true, "p"), Plan::Refuse(_)));
        // The state reads back as written.
        let state = Saved { turn: 3, sent: true, remote_task: Some(remote("r")) };
        assert_eq!(serde_json::from_value::<Saved>(saved_value(&state)).ok(), Some(state));
    }

    #[test]
    fn a_remote_context_id_is_a_uuid_v8_of_the_hash() {
        let id = uuid_v8(&[0xff; 32]);
        assert_eq!(id, "ffffffff-ffff-8fff-bfff-ffffffffffff");
        let id = uuid_v8(&[0; 32]);
        assert_eq!(id, "00000000-0000-8000-8000-000000000000");
        // One per (agent, owner, context); the pieces cannot run into each other.
        let base = context_for("peer", "owner-a", "ctx");
        assert_eq!(base, context_for("peer", "owner-a", "ctx"));
        for other in [
            context_for("peer", "owner-b", "ctx"),
            context_for("peer", "owner-a", "ctx2"),
            context_for("other", "owner-a", "ctx"),
            context_for("peer", "owner-", "actx"),
        ] {
            assert_ne!(base, other);
        }
        assert!(!base.contains("ctx") && base.len() == 36, "{base}");
    }

    #[test]
    fn a_shown_url_has_no_credentials_nor_query() {
        assert_eq!(shown_url("https://user:pw@peer.example/a?key=s3cret#x"), "https://peer.example/a");
        assert_eq!(shown_url("not a url"), "(an invalid URL)");
    }

    #[test]
    fn parts_go_both_ways_unchanged() {
        let parts = vec![
            Part::Text("hi".into()),
            Part::Data(serde_json::json!({"a": 1})),
            Part::File {
                name: Some("f".into()),
                mime: Some("image/png".into()),
                bytes_base64: Some("AA==".into()),
                uri: None,
            },
            Part::File { name: None, mime: None, bytes_base64: None, uri: Some("https://x/y".into()) },
        ];
        let back: Vec<Part> = parts.iter().filter_map(a2a_part).map(|part| engine_part(&part)).collect();
        assert_eq!(back, parts);
        assert_eq!(input_part(&Value::String("x".into())).as_text(), Some("x"));
        assert!(matches!(input_part(&serde_json::json!({"a": 1})).content, PartContent::Data(_)));
    }
}
