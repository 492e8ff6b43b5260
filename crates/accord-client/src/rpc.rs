//! The JSON-RPC tasks client: `tasks/send`, `tasks/get` and `tasks/cancel` to a peer's
//! JSON-RPC tasks endpoint.
//!
//! Every argument is checked before anything is sent: the peer URL must be https (plain http only
//! to a loopback host, and only when [`RpcOptions::allow_loopback_http`] says so), the skill key and
//! the task id must match the protocol's patterns. Responses larger than 8 MiB are refused.
//!
//! The envelope is [`accord_types::jsonrpc`]'s: requests are built with it, and an answer must be a
//! JSON-RPC 2.0 response with exactly one of `result` and `error` that echoes the request's id (an
//! error may carry `null` when the server could not read it). A `result` is read as a
//! [`TaskView`]: `taskId` and `status` are required, any status word is accepted, and members
//! beyond the dialect's are kept in [`TaskView::extra`].

use std::net::IpAddr;
use std::time::Duration;

use accord_types::jsonrpc;
use accord_types::tasks_rpc::{SkillKey, TaskRef, TaskSpec, TaskView};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use serde_json::{Map, Value};

use crate::error::{ClientError, Operation};
use crate::http::read_bounded;
use crate::lucid::{Client, status_error};

/// The largest response accepted: the crate's one cap.
pub use crate::http::MAX_RESPONSE_BYTES;

/// Options of the JSON-RPC tasks calls.
#[derive(Debug, Clone, Default)]
pub struct RpcOptions {
    /// The call's timeout (default: 30 s for send, 15 s for get and cancel).
    pub timeout: Option<Duration>,
    /// Extra request headers (e.g. `Authorization`); they may override the defaults.
    pub headers: HeaderMap,
    /// Allow `http://` to a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`).
    pub allow_loopback_http: bool,
}

/// A task to send: a skill key and its input.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcTask {
    /// The skill key (`^[a-zA-Z][a-zA-Z0-9._-]{0,63}$`).
    pub skill: String,
    /// The input object.
    pub input: Option<Map<String, Value>>,
}

fn is_loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => IpAddr::V4(*ip).is_loopback(),
        url::Host::Ipv6(ip) => IpAddr::V6(*ip).is_loopback(),
    }
}

/// Checks the peer URL before any connection is made.
pub fn check_peer_url(peer_url: &str, allow_loopback_http: bool) -> Result<Url, ClientError> {
    let url = Url::parse(peer_url)
        .map_err(|error| ClientError::InvalidUrl { url: peer_url.to_owned(), reason: error.to_string() })?;
    match url.scheme() {
        "https" => Ok(url),
        "http" => {
            let loopback = url.host().is_some_and(|host| is_loopback(&host));
            match (loopback, allow_loopback_http) {
                (true, true) => Ok(url),
                (true, false) => Err(ClientError::InvalidUrl {
                    url: peer_url.to_owned(),
                    reason: "http:// to a loopback host needs allow_loopback_http".into(),
                }),
                (false, _) => Err(ClientError::InvalidUrl {
                    url: peer_url.to_owned(),
                    reason: "peerUrl must be a valid https URL".into(),
                }),
            }
        }
        other => {
            Err(ClientError::InvalidUrl { url: peer_url.to_owned(), reason: format!("unsupported scheme {other:?}") })
        }
    }
}

impl Client {
    /// `tasks/send`: starts a task on the peer; returns its view (`{taskId, status}`, with the
    /// result or error when the task finished quickly).
    pub async fn tasks_send(
        &self,
        peer_url: &str,
        task: RpcTask,
        options: RpcOptions,
    ) -> Result<TaskView, ClientError> {
        let url = check_peer_url(peer_url, options.allow_loopback_http)?;
        let skill =
            SkillKey::parse(&task.skill).ok_or_else(|| ClientError::InvalidSkill { skill: task.skill.clone() })?;
        let params = TaskSpec { skill, input: task.input.unwrap_or_default() }.to_params();
        self.rpc_call(url, Operation::SendTask, "tasks/send", params, options, Duration::from_secs(30)).await
    }

    /// `tasks/get`: the task's view, `{taskId, status, result?, error?}`.
    pub async fn tasks_get(&self, peer_url: &str, task_id: &str, options: RpcOptions) -> Result<TaskView, ClientError> {
        let url = check_peer_url(peer_url, options.allow_loopback_http)?;
        let task = TaskRef::parse(task_id).ok_or_else(|| ClientError::InvalidTaskId { task_id: task_id.to_owned() })?;
        self.rpc_call(url, Operation::GetTask, "tasks/get", task.to_params(), options, Duration::from_secs(15)).await
    }

    /// `tasks/cancel`: cancels the task on the peer; returns its view after the cancellation.
    pub async fn tasks_cancel(
        &self,
        peer_url: &str,
        task_id: &str,
        options: RpcOptions,
    ) -> Result<TaskView, ClientError> {
        let url = check_peer_url(peer_url, options.allow_loopback_http)?;
        let task = TaskRef::parse(task_id).ok_or_else(|| ClientError::InvalidTaskId { task_id: task_id.to_owned() })?;
        self.rpc_call(url, Operation::CancelTask, "tasks/cancel", task.to_params(), options, Duration::from_secs(15))
            .await
    }

    async fn rpc_call(
        &self,
        url: Url,
        operation: Operation,
        method: &'static str,
        params: Value,
        options: RpcOptions,
        default_timeout: Duration,
    ) -> Result<TaskView, ClientError> {
        let id = Value::String(uuid_like());
        let request = jsonrpc::Request::new(id.clone(), method, params);
        let body = serde_json::to_string(&request)
            .map_err(|error| ClientError::invalid(operation, "", format!("request: {error}")))?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, reqwest::header::HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, reqwest::header::HeaderValue::from_static("application/json"));
        headers.extend(options.headers);
        let sent = self
            .http
            .post(url.clone())
            .headers(headers)
            .body(body)
            .timeout(options.timeout.unwrap_or(default_timeout))
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(source) => return Err(self.unreached(operation, &url, source).await),
        };
        let status = response.status();
        if !status.is_success() {
            return Err(status_error(operation, response).await);
        }
        let bytes = read_bounded(response, MAX_RESPONSE_BYTES)
            .await
            .map_err(|error| ClientError::body(operation, &url, error))?;
        read_answer(operation, &url, &bytes, &id)
    }
}

/// Reads the answer to the request whose id was `id`: the task view of its result, or the error
/// it carries. A result that is not a task view (no `taskId` or `status`) is an invalid response.
fn read_answer(operation: Operation, url: &Url, body: &[u8], id: &Value) -> Result<TaskView, ClientError> {
    let bad = |error: jsonrpc::ResponseError| ClientError::invalid(operation, url, error.to_string());
    let response = jsonrpc::Response::<Value>::parse(body).map_err(bad)?;
    response.check_id(id).map_err(bad)?;
    let result = response.into_result().map_err(|error| ClientError::JsonRpc { operation, error })?;
    serde_json::from_value(result).map_err(|error| ClientError::invalid(operation, url, format!("task view: {error}")))
}

/// A random request id (128 bits, hex).
fn uuid_like() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        return "1".into();
    }
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use accord_types::tasks_rpc::TaskStatus;
    use serde_json::json;

    #[test]
    fn peer_urls_are_https_or_opted_in_loopback_http() {
        assert!(check_peer_url("https://agent.example.com/a2a", false).is_ok());
        assert!(matches!(check_peer_url("http://agent.example.com/a2a", true), Err(ClientError::InvalidUrl { .. })));
        assert!(matches!(check_peer_url("http://127.0.0.1:8787/a2a", false), Err(ClientError::InvalidUrl { .. })));
        assert!(check_peer_url("http://127.0.0.1:8787/a2a", true).is_ok());
        assert!(check_peer_url("http://127.3.4.5/a2a", true).is_ok());
        assert!(check_peer_url("http://localhost:1/a2a", true).is_ok());
        assert!(check_peer_url("http://[::1]:1/a2a", true).is_ok());
        assert!(matches!(check_peer_url("http://localhost.evil/a2a", true), Err(ClientError::InvalidUrl { .. })));
        assert!(matches!(check_peer_url("ftp://x/", true), Err(ClientError::InvalidUrl { .. })));
        assert!(matches!(check_peer_url("not a url", true), Err(ClientError::InvalidUrl { .. })));
    }

    #[test]
    fn answers_are_checked_for_version_id_and_outcome() {
        let id = json!("abc");
        let url = Url::parse("https://peer.example/rpc").expect("url");
        let read = |body: &str| read_answer(Operation::GetTask, &url, body.as_bytes(), &id);
        let view =
            read(r#"{"jsonrpc":"2.0","id":"abc","result":{"taskId":"t","status":"queued","eta":3}}"#).expect("ok");
        assert_eq!((view.task_id.as_str(), &view.status), ("t", &TaskStatus::Other("queued".into())));
        assert_eq!(view.extra.get("eta"), Some(&json!(3)), "a peer's own members are kept");
        let done =
            read(r#"{"jsonrpc":"2.0","id":"abc","result":{"taskId":"t","status":"completed","result":{"output":1}}}"#)
                .expect("ok");
        assert_eq!((done.status, done.result), (TaskStatus::Completed, Some(json!({"output": 1}))));
        match read(r#"{"jsonrpc":"2.0","id":"abc","error":{"code":-32002,"message":"task not found","data":[1]}}"#) {
            Err(ClientError::JsonRpc { operation, error }) => {
                assert_eq!(
                    (operation, error.code, error.message.as_str(), error.data),
                    (Operation::GetTask, -32002, "task not found", Some(json!([1])))
                );
            }
            other => panic!("expected an RPC error, got {other:?}"),
        }
        let unreadable = read(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON body"}}"#);
        assert!(
            matches!(unreadable, Err(ClientError::JsonRpc { ref error, .. }) if error.code == -32700),
            "{unreadable:?}"
        );
        for body in [
            "<html>",
            r#"{"jsonrpc":"2.0","id":"other","result":{}}"#,
            r#"{"jsonrpc":"1.0","id":"abc","result":{}}"#,
            r#"{"id":"abc","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"abc"}"#,
            r#"{"jsonrpc":"2.0","id":"abc","result":{"taskId":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":"abc","result":{"status":"completed"}}"#,
        ] {
            assert!(matches!(read(body), Err(ClientError::InvalidResponse { .. })), "{body}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn skill_and_task_id_are_checked_before_sending() {
        // Port 9 is closed: a call that reached the network would be a transport error.
        let options = || RpcOptions { allow_loopback_http: true, ..RpcOptions::default() };
        let peer = "http://127.0.0.1:9/rpc";
        let client = Client::new();
        let task = RpcTask { skill: "9lives".into(), input: None };
        assert!(matches!(client.tasks_send(peer, task, options()).await, Err(ClientError::InvalidSkill { .. })));
        assert!(matches!(client.tasks_get(peer, "a b", options()).await, Err(ClientError::InvalidTaskId { .. })));
        assert!(matches!(client.tasks_cancel(peer, "../x", options()).await, Err(ClientError::InvalidTaskId { .. })));
        let task = RpcTask { skill: "summarize".into(), input: None };
        assert!(matches!(client.tasks_send(peer, task, options()).await, Err(ClientError::Transport { .. })));
    }
}
