//! The soak driver behind `bench-soak`: a long, mixed, checked load over every face of one or
//! more workers that share a store, and an account of every task it created.
//!
//! Each connection slot runs the operations of [`Op::ALL`] in turn, on the workers in turn: an
//! operation starts a task on one worker and, where it has a second step (subscribe, cancel,
//! follow-up), takes it on the next worker, so a task crosses workers through the shared store.
//! Every answer is checked. Every task created is remembered with the state it must end in; at
//! the end [`verify`] reads each one back until it is terminal (or a deadline passes) and counts
//! the lost and the wrong ones.
//!
//! [`slow_subscriber`] is the fault case of one subscriber that never reads.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::check::{self, CheckError};
use crate::load::{Conn, OpError, Target, read_events};

/// One kind of operation of the mixed load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// A2A JSON-RPC `SendMessage` to `echo`, blocking: a completed task.
    A2aSend,
    /// A2A JSON-RPC `SendStreamingMessage` to `echo`, read to its end.
    A2aStream,
    /// Lucid `POST /tasks` (`echo`) on one worker, its `/subscribe` on the next until it ends,
    /// `GET /tasks/{id}` on the first.
    LucidTask,
    /// A2A HTTP+JSON `message:send` (`slow`, 0.3 s, `returnImmediately`) on one worker,
    /// `tasks/{id}:subscribe` on the next until it completes.
    RestSubscribe,
    /// A2A JSON-RPC `SendMessage` (`slow`, 60 s, `returnImmediately`) on one worker,
    /// `CancelTask` on the next: a canceled task.
    A2aCancel,
    /// Lucid `POST /tasks` (`slow`, 60 s) on one worker, `POST /tasks/{id}/cancel` on the next.
    LucidCancel,
    /// A2A HTTP+JSON `message:send` (`confirm`, blocking) on one worker: input required; the
    /// follow-up (JSON-RPC `SendMessage` with the task id) on the next completes it.
    FollowUp,
    /// Lucid `POST /entrypoints/ticks/stream`: a direct stream, no task.
    LucidStream,
    /// Lucid `POST /entrypoints/echo/invoke`: a direct run, no task.
    LucidInvoke,
}

impl Op {
    /// Every operation, in the order each slot runs them.
    pub const ALL: [Self; 9] = [
        Self::A2aSend,
        Self::LucidTask,
        Self::A2aCancel,
        Self::RestSubscribe,
        Self::LucidInvoke,
        Self::FollowUp,
        Self::A2aStream,
        Self::LucidCancel,
        Self::LucidStream,
    ];

    /// The operation's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::A2aSend => "a2a-send",
            Self::A2aStream => "a2a-stream",
            Self::LucidTask => "lucid-task",
            Self::RestSubscribe => "rest-subscribe",
            Self::A2aCancel => "a2a-cancel",
            Self::LucidCancel => "lucid-cancel",
            Self::FollowUp => "follow-up",
            Self::LucidStream => "lucid-stream",
            Self::LucidInvoke => "lucid-invoke",
        }
    }
}

/// The state a created task must end in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Completed.
    Completed,
    /// Canceled.
    Canceled,
}

/// A task the load created, and how to read it back.
#[derive(Debug, Clone)]
pub struct Created {
    /// Its id.
    pub task_id: String,
    /// The Lucid access token it was created with; `None` for an A2A task (anonymous owner).
    pub lucid_token: Option<String>,
    /// The state it must end in.
    pub expect: Expect,
}

/// How a soak run is driven.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// Operations in flight at once (each on its own connections).
    pub connections: usize,
    /// How long the load lasts.
    pub duration: Duration,
    /// The longest one operation may take.
    pub timeout: Duration,
}

/// Counts by operation: right answers and errors.
#[derive(Debug, Default, Clone)]
pub struct OpCount {
    /// Right answers.
    pub ok: u64,
    /// Wrong or failed answers.
    pub errors: u64,
}

/// What a soak run did.
#[derive(Debug, Default)]
pub struct SoakTally {
    /// Counts per operation.
    pub ops: BTreeMap<Op, OpCount>,
    /// Errors by kind.
    pub kinds: BTreeMap<String, u64>,
    /// The first few errors, in full.
    pub samples: Vec<String>,
    /// Every task created.
    pub created: Vec<Created>,
}

impl SoakTally {
    fn record(&mut self, op: Op, outcome: &Result<Vec<Created>, OpError>) {
        let count = self.ops.entry(op).or_default();
        match outcome {
            Ok(created) => {
                count.ok += 1;
                self.created.extend(created.iter().cloned());
            }
            Err(error) => {
                count.errors += 1;
                *self.kinds.entry(format!("{}: {}", op.name(), error.error.kind)).or_default() += 1;
                if self.samples.len() < 20 {
                    self.samples.push(format!("{}: {}", op.name(), error.error));
                }
            }
        }
    }

    /// Right answers over every operation.
    pub fn ok(&self) -> u64 {
        self.ops.values().map(|count| count.ok).sum()
    }

    /// Errors over every operation.
    pub fn errors(&self) -> u64 {
        self.ops.values().map(|count| count.errors).sum()
    }

    /// The tally as JSON (without the created tasks).
    pub fn to_json(&self) -> Value {
        let ops: serde_json::Map<String, Value> = self
            .ops
            .iter()
            .map(|(op, count)| (op.name().to_owned(), json!({"ok": count.ok, "errors": count.errors})))
            .collect();
        json!({"ok": self.ok(), "errors": self.errors(), "ops": ops, "error_kinds": self.kinds,
               "error_samples": self.samples, "tasks_created": self.created.len()})
    }
}

/// A connection to each worker, opened when first needed and again after a transport failure.
struct Conns {
    targets: Arc<Vec<Target>>,
    open: Vec<Option<Conn>>,
}

impl Conns {
    fn new(targets: Arc<Vec<Target>>) -> Self {
        let open = targets.iter().map(|_| None).collect();
        Self { targets, open }
    }

    fn target(&self, worker: usize) -> &Target {
        &self.targets[worker % self.targets.len()]
    }

    /// Sends on worker `worker`'s connection; reads the whole answer.
    async fn exchange(
        &mut self,
        worker: usize,
        method: Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Result<(StatusCode, Value, bytes::Bytes), OpError> {
        let worker = worker % self.targets.len();
        let request = self.targets[worker].request(method, path, body.map(|body| body.to_string()), headers)?;
        let mut conn = match self.open[worker].take() {
            Some(conn) => conn,
            None => Conn::open(self.targets[worker].addr).await?,
        };
        let (status, bytes) = conn.exchange(request).await?;
        self.open[worker] = Some(conn);
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok((status, value, bytes))
    }

    /// Sends on worker `worker`'s connection and reads the SSE answer to its end.
    async fn events(
        &mut self,
        worker: usize,
        method: Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
        mut on_event: impl FnMut(&Value) -> Result<(), CheckError>,
    ) -> Result<(), OpError> {
        let worker = worker % self.targets.len();
        let request = self.targets[worker].request(method, path, body.map(|body| body.to_string()), headers)?;
        let mut conn = match self.open[worker].take() {
            Some(conn) => conn,
            None => Conn::open(self.targets[worker].addr).await?,
        };
        let response = conn.send(request).await?;
        read_events(response, |event| {
            let value: Value = serde_json::from_str(&event.data)
                .map_err(|_| CheckError::new("event not JSON", check::excerpt(event.data.as_bytes())))?;
            on_event(&value)
        })
        .await?;
        self.open[worker] = Some(conn);
        Ok(())
    }
}

const A2A: (&str, &str) = ("a2a-version", "1.0");
const SSE: (&str, &str) = ("accept", "text/event-stream");

fn a2a_message(token: &str, skill: &str, input: &Value, task_id: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": format!("m-{token}"),
        "role": "ROLE_USER",
        "parts": [{"data": input}],
        "metadata": {"skillId": skill},
    });
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
        message["parts"] = json!([{"text": token}]);
    }
    message
}

fn jsonrpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The `result` of a JSON-RPC answer read whole.
fn rpc_result(status: StatusCode, answer: &Value, bytes: &[u8]) -> Result<Value, OpError> {
    if status != StatusCode::OK {
        return Err(OpError::answer(CheckError::new(format!("HTTP {}", status.as_u16()), check::excerpt(bytes))));
    }
    check::jsonrpc_result(answer).cloned().map_err(OpError::answer)
}

fn http_ok(status: StatusCode, bytes: &[u8]) -> Result<(), OpError> {
    if status.is_success() {
        Ok(())
    } else {
        Err(OpError::answer(CheckError::new(format!("HTTP {}", status.as_u16()), check::excerpt(bytes))))
    }
}

fn field<'a>(value: &'a Value, pointer: &str, bytes: &[u8]) -> Result<&'a str, OpError> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .ok_or_else(|| OpError::answer(CheckError::new(format!("no {pointer}"), check::excerpt(bytes))))
}

fn want_state(task: &Value, state: &str) -> Result<(), OpError> {
    let got = task.pointer("/status/state").and_then(Value::as_str).unwrap_or("no state");
    if got == state {
        Ok(())
    } else {
        let text = task.to_string();
        Err(OpError::answer(CheckError::new(format!("task {got}, not {state}"), check::excerpt(text.as_bytes()))))
    }
}

/// The state an A2A stream event carries: the task's, or a status update's.
fn event_state(event: &Value) -> Option<&str> {
    let result = event.get("result").unwrap_or(event);
    result
        .pointer("/task/status/state")
        .or_else(|| result.pointer("/statusUpdate/status/state"))
        .and_then(Value::as_str)
}

fn a2a_terminal(state: &str) -> bool {
    matches!(state, "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED" | "TASK_STATE_CANCELED" | "TASK_STATE_REJECTED")
}

/// A fresh Lucid access token (the harness's nonce and a sequence: unique, 20+ characters).
fn lucid_token(token: &str) -> String {
    format!("soak-token-{token}-0123456789")
}

/// One operation: `home` is where it starts, `home + 1` where its second step goes.
async fn operation(conns: &mut Conns, op: Op, home: usize, id: u64, token: &str) -> Result<Vec<Created>, OpError> {
    let other = home + 1;
    let rpc = conns.target(home).jsonrpc_path.clone().unwrap_or_else(|| "/".to_owned());
    let rpc_other = conns.target(other).jsonrpc_path.clone().unwrap_or_else(|| "/".to_owned());
    let rest_other = conns.target(other).rest_path.clone().unwrap_or_default();
    let rest = conns.target(home).rest_path.clone().unwrap_or_default();
    let base = conns.target(home).base_path.clone();
    let base_other = conns.target(other).base_path.clone();
    let a2a_created = |task_id: &str, expect| vec![Created { task_id: task_id.to_owned(), lucid_token: None, expect }];
    match op {
        Op::A2aSend => {
            let params = json!({"message": a2a_message(token, "echo", &json!({"text": token}), None)});
            let (status, answer, bytes) =
                conns.exchange(home, Method::POST, &rpc, Some(jsonrpc(id, "SendMessage", params)), &[A2A]).await?;
            check::a2a_send(status.as_u16(), &bytes, token).map_err(OpError::answer)?;
            Ok(a2a_created(field(&answer, "/result/task/id", &bytes)?, Expect::Completed))
        }
        Op::A2aStream => {
            let params = json!({"message": a2a_message(token, "echo", &json!({"text": token}), None)});
            let mut stream = check::StreamCheck::default();
            let mut task_id = None;
            conns
                .events(
                    home,
                    Method::POST,
                    &rpc,
                    Some(jsonrpc(id, "SendStreamingMessage", params)),
                    &[A2A, SSE],
                    |event| {
                        if task_id.is_none() {
                            task_id = event.pointer("/result/task/id").and_then(Value::as_str).map(str::to_owned);
                        }
                        stream.event(&event.to_string(), token)
                    },
                )
                .await?;
            stream.finish().map_err(OpError::answer)?;
            let task_id = task_id.ok_or_else(|| OpError::answer(CheckError::new("stream without a task", token)))?;
            Ok(a2a_created(&task_id, Expect::Completed))
        }
        Op::LucidTask | Op::LucidCancel => {
            let access = lucid_token(token);
            let (skill, input) =
                if op == Op::LucidTask { ("echo", json!({"text": token})) } else { ("slow", json!({"seconds": 60})) };
            let body = json!({"skillId": skill, "message": {"role": "user", "content": {"text": input.to_string()}}});
            let headers = [("task-access-token", access.as_str())];
            let (status, _, bytes) =
                conns.exchange(home, Method::POST, &format!("{base}/tasks"), Some(body), &headers).await?;
            let capability = check::lucid_created(status.as_u16(), &bytes).map_err(OpError::answer)?;
            let id = capability.task_id.clone();
            if op == Op::LucidCancel {
                let path = format!("{base_other}/tasks/{id}/cancel");
                let (status, answer, bytes) = conns.exchange(other, Method::POST, &path, None, &headers).await?;
                http_ok(status, &bytes)?;
                let got = answer.get("status").and_then(Value::as_str).unwrap_or("no status");
                if got != "cancelled" {
                    return Err(OpError::answer(CheckError::new(
                        format!("cancel answered {got}"),
                        check::excerpt(&bytes),
                    )));
                }
                return Ok(vec![Created { task_id: id, lucid_token: Some(access), expect: Expect::Canceled }]);
            }
            let mut ended = check::lucid_terminal(&capability.status);
            if !ended {
                let path = format!("{base_other}/tasks/{id}/subscribe");
                conns
                    .events(other, Method::GET, &path, None, &[headers[0], SSE], |update| {
                        let status = update.get("status").and_then(Value::as_str).unwrap_or("");
                        ended |= check::lucid_terminal(status);
                        Ok(())
                    })
                    .await?;
            }
            if !ended {
                return Err(OpError::answer(CheckError::new("task stream ended early", id)));
            }
            let (status, _, bytes) =
                conns.exchange(home, Method::GET, &format!("{base}/tasks/{id}"), None, &headers).await?;
            check::lucid_task(status.as_u16(), &bytes, &id, token).map_err(OpError::answer)?;
            Ok(vec![Created { task_id: id, lucid_token: Some(access), expect: Expect::Completed }])
        }
        Op::RestSubscribe => {
            let body = json!({"message": a2a_message(token, "slow", &json!({"seconds": 0.3}), None),
                              "configuration": {"returnImmediately": true}});
            let (status, answer, bytes) =
                conns.exchange(home, Method::POST, &format!("{rest}/message:send"), Some(body), &[A2A]).await?;
            http_ok(status, &bytes)?;
            let task_id = field(&answer, "/task/id", &bytes)?.to_owned();
            let mut last = String::new();
            let path = format!("{rest_other}/tasks/{task_id}:subscribe");
            conns
                .events(other, Method::GET, &path, None, &[A2A, SSE], |event| {
                    if let Some(state) = event_state(event) {
                        last = state.to_owned();
                    }
                    Ok(())
                })
                .await
                .or_else(|error| {
                    // The task may end between the send and the subscription: subscribing to an
                    // ended task is refused, and the task is read back instead.
                    if error.error.kind.starts_with("HTTP 400") { Ok(()) } else { Err(error) }
                })?;
            if last.is_empty() {
                let (status, task, bytes) =
                    conns.exchange(other, Method::GET, &format!("{rest_other}/tasks/{task_id}"), None, &[A2A]).await?;
                http_ok(status, &bytes)?;
                last = task.pointer("/status/state").and_then(Value::as_str).unwrap_or("").to_owned();
            }
            if last != "TASK_STATE_COMPLETED" {
                return Err(OpError::answer(CheckError::new(format!("subscription ended at {last:?}"), task_id)));
            }
            Ok(a2a_created(&task_id, Expect::Completed))
        }
        Op::A2aCancel => {
            let params = json!({"message": a2a_message(token, "slow", &json!({"seconds": 60}), None),
                                "configuration": {"returnImmediately": true}});
            let (status, answer, bytes) =
                conns.exchange(home, Method::POST, &rpc, Some(jsonrpc(id, "SendMessage", params)), &[A2A]).await?;
            let result = rpc_result(status, &answer, &bytes)?;
            let task_id = field(&result, "/task/id", &bytes)?.to_owned();
            let cancel = jsonrpc(id, "CancelTask", json!({"id": task_id}));
            let (status, answer, bytes) = conns.exchange(other, Method::POST, &rpc_other, Some(cancel), &[A2A]).await?;
            want_state(&rpc_result(status, &answer, &bytes)?, "TASK_STATE_CANCELED")?;
            Ok(a2a_created(&task_id, Expect::Canceled))
        }
        Op::FollowUp => {
            let body = json!({"message": a2a_message(token, "confirm", &json!({"question": format!("sure, {token}?")}), None)});
            let (status, answer, bytes) =
                conns.exchange(home, Method::POST, &format!("{rest}/message:send"), Some(body), &[A2A]).await?;
            http_ok(status, &bytes)?;
            let task = answer.get("task").cloned().unwrap_or(Value::Null);
            want_state(&task, "TASK_STATE_INPUT_REQUIRED")?;
            let task_id = field(&task, "/id", &bytes)?.to_owned();
            let params =
                json!({"message": a2a_message(&format!("{token}-yes"), "confirm", &Value::Null, Some(&task_id))});
            let (status, answer, bytes) = conns
                .exchange(other, Method::POST, &rpc_other, Some(jsonrpc(id, "SendMessage", params)), &[A2A])
                .await?;
            let result = rpc_result(status, &answer, &bytes)?;
            let task = result.get("task").cloned().unwrap_or(Value::Null);
            want_state(&task, "TASK_STATE_COMPLETED")?;
            let answered = task.to_string().contains(&format!("\"answers\":[\"{token}-yes\"]"));
            if !answered {
                return Err(OpError::answer(CheckError::new("wrong answers", check::excerpt(&bytes))));
            }
            Ok(a2a_created(&task_id, Expect::Completed))
        }
        Op::LucidStream => {
            let body = json!({"input": {"count": 3}});
            let mut deltas = 0;
            let mut ended = false;
            conns
                .events(home, Method::POST, &format!("{base}/entrypoints/ticks/stream"), Some(body), &[SSE], |event| {
                    match event.get("kind").and_then(Value::as_str) {
                        Some("delta") => deltas += 1,
                        Some("run-end") => ended = event.get("status").and_then(Value::as_str) == Some("succeeded"),
                        _ => {}
                    }
                    Ok(())
                })
                .await?;
            if deltas != 3 || !ended {
                return Err(OpError::answer(CheckError::new("ticks", format!("{deltas} deltas, ended {ended}"))));
            }
            Ok(Vec::new())
        }
        Op::LucidInvoke => {
            let body = json!({"input": {"text": token}});
            let (status, _, bytes) =
                conns.exchange(home, Method::POST, &format!("{base}/entrypoints/echo/invoke"), Some(body), &[]).await?;
            check::lucid_invoke(status.as_u16(), &bytes, token).map_err(OpError::answer)?;
            Ok(Vec::new())
        }
    }
}

/// Runs the mixed load for `config.duration`; calls `progress` with the tally so far about every
/// `progress_every`.
pub async fn run(
    targets: Vec<Target>,
    config: &SoakConfig,
    progress_every: Duration,
    mut progress: impl FnMut(f64, &SoakTally),
) -> SoakTally {
    let started = Instant::now();
    let until = started + config.duration;
    let targets = Arc::new(targets);
    let tally = Arc::new(Mutex::new(SoakTally::default()));
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_nanos());
    let nonce = format!("s{:x}{:x}", std::process::id(), nanos % 0x1_0000_0000);
    let sequence = Arc::new(AtomicU64::new(0));
    let mut slots = Vec::new();
    for slot in 0..config.connections.max(1) {
        let (targets, tally, nonce, sequence) =
            (Arc::clone(&targets), Arc::clone(&tally), nonce.clone(), Arc::clone(&sequence));
        let timeout = config.timeout;
        slots.push(tokio::spawn(async move {
            let mut conns = Conns::new(Arc::clone(&targets));
            let mut turn = slot;
            while Instant::now() < until {
                let op = Op::ALL[turn % Op::ALL.len()];
                let home = turn / Op::ALL.len() + slot;
                turn += 1;
                let id = sequence.fetch_add(1, Ordering::Relaxed);
                let token = format!("{nonce}-{id}");
                let outcome = match tokio::time::timeout(timeout, operation(&mut conns, op, home, id, &token)).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(OpError {
                        error: CheckError::new("timeout", format!("no answer within {timeout:?}")),
                        broken: true,
                    }),
                };
                if let Err(error) = &outcome
                    && error.broken
                {
                    conns.open.iter_mut().for_each(|conn| *conn = None);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                if let Ok(mut tally) = tally.lock() {
                    tally.record(op, &outcome);
                }
            }
        }));
    }
    let mut next = started + progress_every;
    while Instant::now() < until {
        tokio::time::sleep_until(next.min(until).into()).await;
        if Instant::now() >= next {
            if let Ok(tally) = tally.lock() {
                progress(started.elapsed().as_secs_f64(), &tally);
            }
            next += progress_every;
        }
    }
    for slot in slots {
        let _ = slot.await;
    }
    Arc::try_unwrap(tally).map(|tally| tally.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// What reading every created task back found.
#[derive(Debug, Default)]
pub struct Verified {
    /// Tasks read back.
    pub tasks: usize,
    /// Tasks in the state they had to end in.
    pub as_expected: usize,
    /// Tasks in another terminal state.
    pub wrong: Vec<String>,
    /// Tasks not terminal by the deadline, or not found.
    pub lost: Vec<String>,
}

impl Verified {
    /// As JSON (at most 20 ids of each kind).
    pub fn to_json(&self) -> Value {
        let first = |ids: &[String]| ids.iter().take(20).cloned().collect::<Vec<_>>();
        json!({"tasks": self.tasks, "as_expected": self.as_expected, "wrong": self.wrong.len(),
               "lost": self.lost.len(), "wrong_samples": first(&self.wrong), "lost_samples": first(&self.lost)})
    }
}

/// Reads every created task back (A2A tasks over HTTP+JSON, Lucid tasks with their token) from
/// the workers in turn until each one is terminal or `deadline` passes.
pub async fn verify(targets: Vec<Target>, created: &[Created], deadline: Duration) -> Verified {
    let until = Instant::now() + deadline;
    let mut conns = Conns::new(Arc::new(targets));
    let mut verified = Verified { tasks: created.len(), ..Verified::default() };
    for (index, task) in created.iter().enumerate() {
        loop {
            let state = read_state(&mut conns, index, task).await;
            let terminal = match state.as_deref() {
                Some("completed" | "TASK_STATE_COMPLETED") => Some(Expect::Completed),
                Some("cancelled" | "TASK_STATE_CANCELED") => Some(Expect::Canceled),
                Some(state) if a2a_terminal(state) || check::lucid_terminal(state) => None,
                _ => {
                    if Instant::now() < until {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                    verified.lost.push(format!("{} ({})", task.task_id, state.unwrap_or_else(|| "unreadable".into())));
                    break;
                }
            };
            if terminal == Some(task.expect) {
                verified.as_expected += 1;
            } else {
                verified.wrong.push(format!(
                    "{} ({}, wanted {:?})",
                    task.task_id,
                    state.unwrap_or_default(),
                    task.expect
                ));
            }
            break;
        }
    }
    verified
}

async fn read_state(conns: &mut Conns, worker: usize, task: &Created) -> Option<String> {
    let answer = match &task.lucid_token {
        Some(token) => {
            let path = format!("{}/tasks/{}", conns.target(worker).base_path, task.task_id);
            conns.exchange(worker, Method::GET, &path, None, &[("task-access-token", token)]).await
        }
        None => {
            let path = format!("{}/tasks/{}?historyLength=0", conns.target(worker).rest_path.clone()?, task.task_id);
            conns.exchange(worker, Method::GET, &path, None, &[A2A]).await
        }
    };
    let (status, value, _) = answer.ok()?;
    if status != StatusCode::OK {
        return None;
    }
    value.pointer("/status/state").or_else(|| value.get("status")).and_then(Value::as_str).map(str::to_owned)
}

/// How [`slow_subscriber`] is driven.
#[derive(Debug, Clone)]
pub struct SlowSubscriberConfig {
    /// Questions the task asks (each follow-up answers one and the task asks again).
    pub rounds: u32,
    /// The length of the question: every status event the subscribers get carries it.
    pub question_bytes: usize,
    /// Subscribers that read, spread over the workers.
    pub readers: usize,
    /// The server process whose RSS is sampled after every round (the first worker's).
    pub server_pid: Option<u32>,
    /// The longest a reader may take to see a round's event.
    pub timeout: Duration,
    /// Whether the subscriber that never reads is there (`false`: the baseline to compare with).
    pub stalled: bool,
}

/// What [`slow_subscriber`] measured.
#[derive(Debug, Default)]
pub struct SlowSubscriberReport {
    /// Rounds run.
    pub rounds: u32,
    /// Bytes of events the stalled subscriber was sent and did not read (about).
    pub unread_bytes: u64,
    /// Follow-up latencies (the send until the task asks again), microseconds, in round order.
    pub follow_up_us: Vec<u64>,
    /// For every round, the longest a reader took to see the round's event after the
    /// follow-up was answered, microseconds.
    pub reader_lag_us: Vec<u64>,
    /// The server's RSS in KiB: before the stalled subscriber, then after every round.
    pub rss_kib: Vec<u64>,
    /// What went wrong, if anything.
    pub failure: Option<String>,
}

impl SlowSubscriberReport {
    /// As JSON: the figures summarized, RSS every tenth of the run.
    pub fn to_json(&self) -> Value {
        let summary = |samples: &[u64]| {
            let summary = crate::stats::summarize(samples.to_vec());
            json!({"p50_us": summary.p50_us, "p99_us": summary.p99_us, "max_us": summary.max_us})
        };
        let tenth = |samples: &[u64], last: bool| {
            let count = (samples.len() / 10).max(1).min(samples.len());
            let part = if last { &samples[samples.len() - count..] } else { &samples[..count] };
            if part.is_empty() { 0.0 } else { part.iter().sum::<u64>() as f64 / part.len() as f64 }
        };
        let step = (self.rss_kib.len() / 10).max(1);
        let rss: Vec<u64> = self.rss_kib.iter().step_by(step).copied().chain(self.rss_kib.last().copied()).collect();
        json!({
            "rounds": self.rounds,
            "unread_bytes": self.unread_bytes,
            "follow_up": summary(&self.follow_up_us),
            "follow_up_first_tenth_mean_us": tenth(&self.follow_up_us, false),
            "follow_up_last_tenth_mean_us": tenth(&self.follow_up_us, true),
            "reader_lag": summary(&self.reader_lag_us),
            "rss_kib_samples": rss,
            "rss_kib_max": self.rss_kib.iter().max(),
            "failure": self.failure,
        })
    }
}

/// VmRSS of a process, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// One subscriber that never reads and `readers` that do, on a `confirm` task that asks
/// `rounds` questions of `question_bytes` each: after every follow-up, measures how long the
/// follow-up took and how long each reader took to see the new question, and samples the
/// server's RSS. The stalled subscriber is a bare TCP connection that sends its request and
/// never reads a byte.
pub async fn slow_subscriber(targets: Vec<Target>, config: &SlowSubscriberConfig) -> SlowSubscriberReport {
    let mut report = SlowSubscriberReport::default();
    if let Err(error) = slow_subscriber_inner(targets, config, &mut report).await {
        report.failure = Some(error.to_string());
    }
    report
}

async fn slow_subscriber_inner(
    targets: Vec<Target>,
    config: &SlowSubscriberConfig,
    report: &mut SlowSubscriberReport,
) -> Result<(), CheckError> {
    use tokio::io::AsyncWriteExt;

    let targets = Arc::new(targets);
    let mut conns = Conns::new(Arc::clone(&targets));
    let rpc = |worker: usize| targets[worker % targets.len()].jsonrpc_path.clone().unwrap_or_else(|| "/".to_owned());
    let question = "q".repeat(config.question_bytes.max(1));
    let input = json!({"question": question, "rounds": config.rounds.max(1)});
    let params = json!({"message": a2a_message("slow-subscriber", "confirm", &input, None)});
    let (status, answer, bytes) = conns
        .exchange(0, Method::POST, &rpc(0), Some(jsonrpc(1, "SendMessage", params)), &[A2A])
        .await
        .map_err(|error| error.error)?;
    let result = rpc_result(status, &answer, &bytes).map_err(|error| error.error)?;
    let task_id = field(&result, "/task/id", &bytes).map_err(|error| error.error)?.to_owned();
    let sample = |report: &mut SlowSubscriberReport| {
        if let Some(kib) = config.server_pid.and_then(rss_kib) {
            report.rss_kib.push(kib);
        }
    };
    sample(report);

    // The stalled subscriber: its request, then nothing read, ever (until it is dropped).
    let body = jsonrpc(2, "SubscribeToTask", json!({"id": task_id})).to_string();
    let target = &targets[0];
    let request = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\na2a-version: 1.0\r\naccept: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        rpc(0),
        target.authority,
        body.len()
    );
    let mut stalled = None;
    if config.stalled {
        let mut stream = tokio::net::TcpStream::connect(target.addr)
            .await
            .map_err(|error| CheckError::new("transport", error.to_string()))?;
        stream.write_all(request.as_bytes()).await.map_err(|error| CheckError::new("transport", error.to_string()))?;
        stalled = Some(stream);
    }

    // The readers: each counts the events that leave the task waiting or end it.
    let seen: Arc<Vec<AtomicU64>> = Arc::new((0..config.readers).map(|_| AtomicU64::new(0)).collect());
    let changed = Arc::new(tokio::sync::Notify::new());
    let mut readers = Vec::new();
    for reader in 0..config.readers {
        let (targets, seen, changed, task_id) =
            (Arc::clone(&targets), Arc::clone(&seen), Arc::clone(&changed), task_id.clone());
        readers.push(tokio::spawn(async move {
            let mut conns = Conns::new(Arc::clone(&targets));
            let path = targets[reader % targets.len()].jsonrpc_path.clone().unwrap_or_else(|| "/".to_owned());
            let subscribe = jsonrpc(3, "SubscribeToTask", json!({"id": task_id}));
            conns
                .events(reader, Method::POST, &path, Some(subscribe), &[A2A, SSE], |event| {
                    check::jsonrpc_result(event)?;
                    if let Some("TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_COMPLETED") = event_state(event) {
                        seen[reader].fetch_add(1, Ordering::Relaxed);
                        changed.notify_waiters();
                    }
                    Ok(())
                })
                .await
                .map_err(|error| error.error)
        }));
    }
    // Every reader has the task as it is (waiting for the first answer) before the rounds start.
    wait_for_readers(&seen, &changed, 1, config.timeout).await?;

    for round in 1..=config.rounds.max(1) {
        let params =
            json!({"message": a2a_message(&format!("answer-{round}"), "confirm", &Value::Null, Some(&task_id))});
        let worker = round as usize;
        let sent = Instant::now();
        let (status, answer, bytes) = conns
            .exchange(
                worker,
                Method::POST,
                &rpc(worker),
                Some(jsonrpc(u64::from(round) + 10, "SendMessage", params)),
                &[A2A],
            )
            .await
            .map_err(|error| error.error)?;
        let result = rpc_result(status, &answer, &bytes).map_err(|error| error.error)?;
        let want = if round == config.rounds.max(1) { "TASK_STATE_COMPLETED" } else { "TASK_STATE_INPUT_REQUIRED" };
        want_state(result.get("task").unwrap_or(&Value::Null), want).map_err(|error| error.error)?;
        let answered = Instant::now();
        report.follow_up_us.push(u64::try_from(answered.duration_since(sent).as_micros()).unwrap_or(u64::MAX));
        wait_for_readers(&seen, &changed, u64::from(round) + 1, config.timeout).await?;
        report.reader_lag_us.push(u64::try_from(answered.elapsed().as_micros()).unwrap_or(u64::MAX));
        report.rounds = round;
        // Each round adds a working update and the question again to what the stalled
        // subscriber is sent.
        if stalled.is_some() {
            report.unread_bytes += config.question_bytes as u64 + 200;
        }
        sample(report);
    }
    for reader in readers {
        reader.await.map_err(|error| CheckError::new("reader panicked", error.to_string()))??;
    }
    drop(stalled);
    Ok(())
}

async fn wait_for_readers(
    seen: &[AtomicU64],
    changed: &tokio::sync::Notify,
    count: u64,
    timeout: Duration,
) -> Result<(), CheckError> {
    let until = Instant::now() + timeout;
    loop {
        let notified = changed.notified();
        if seen.iter().all(|seen| seen.load(Ordering::Relaxed) >= count) {
            return Ok(());
        }
        let behind = seen.iter().filter(|seen| seen.load(Ordering::Relaxed) < count).count();
        if tokio::time::timeout_at(until.into(), notified).await.is_err() {
            return Err(CheckError::new(
                "readers late",
                format!("{behind} readers had not seen event {count} after {timeout:?}"),
            ));
        }
    }
}
