//! The JSON-RPC tasks client: `tasks/send`, `tasks/get` and `tasks/cancel` to a peer's
//! JSON-RPC tasks endpoint.
//!
//! Every argument is checked before anything is sent: the peer URL must be https (plain http only
//! to a loopback host, and only when [`RpcOptions::allow_loopback_http`] says so), the skill key and
//! the task id must match the protocol's patterns. Responses larger than 8 MiB are refused.
//!
//! The envelope is [`accord_types::jsonrpc`]'s: requests are built with it, and an answer must be a
//! JSON-RPC 2.0 response with exactly one of `result` and `error` that echoes the request's id (an
//! error may carry `null` when the server could not read it).

use std::net::IpAddr;
use std::time::Duration;

use accord_types::jsonrpc;
use accord_types::tasks_rpc::{SkillKey, TaskRef, TaskSpec};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use serde_json::{Map, Value};

use crate::http::{BodyError, read_bounded};
use crate::lucid::Client;

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

/// Why a JSON-RPC tasks call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum RpcClientError {
    /// The peer URL is not usable (not https, or http to a non-loopback host, or unparsable).
    BadPeerUrl {
        /// Why.
        reason: String,
    },
    /// The skill key does not match the protocol's pattern.
    BadSkill,
    /// The task id does not match the protocol's pattern.
    BadTaskId,
    /// The request did not get an answer.
    Transport {
        /// The JSON-RPC method.
        method: &'static str,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The peer answered with a non-2xx status.
    HttpStatus {
        /// The JSON-RPC method.
        method: &'static str,
        /// The status.
        status: u16,
    },
    /// The answer is not a JSON-RPC 2.0 response (or is too large).
    BadResponse {
        /// The JSON-RPC method.
        method: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The peer answered with a JSON-RPC error.
    Rpc {
        /// The JSON-RPC method.
        method: &'static str,
        /// The error code (`-32001` scope required, `-32002` not found, …).
        code: i64,
        /// The message.
        message: String,
        /// The error's data.
        data: Option<Value>,
    },
}

impl std::fmt::Display for RpcClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BadPeerUrl { reason } => write!(f, "peer URL refused: {reason}"),
            Self::BadSkill => f.write_str("task.skill must match /^[a-zA-Z][a-zA-Z0-9._-]{0,63}$/"),
            Self::BadTaskId => f.write_str("taskId must match /^[A-Za-z0-9_-]{1,64}$/"),
            Self::Transport { method, source } => write!(f, "{method}: transport error: {source}"),
            Self::HttpStatus { method, status } => write!(f, "{method}: HTTP {status}"),
            Self::BadResponse { method, reason } => write!(f, "{method}: {reason}"),
            Self::Rpc { method, code, message, .. } => write!(f, "{method}: {message} ({code})"),
        }
    }
}

impl std::error::Error for RpcClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Transport { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn is_loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => IpAddr::V4(*ip).is_loopback(),
        url::Host::Ipv6(ip) => IpAddr::V6(*ip).is_loopback(),
    }
}

/// Checks the peer URL before any connection is made.
pub fn check_peer_url(peer_url: &str, allow_loopback_http: bool) -> Result<Url, RpcClientError> {
    let url = Url::parse(peer_url).map_err(|error| RpcClientError::BadPeerUrl { reason: error.to_string() })?;
    match url.scheme() {
        "https" => Ok(url),
        "http" => {
            let loopback = url.host().is_some_and(|host| is_loopback(&host));
            match (loopback, allow_loopback_http) {
                (true, true) => Ok(url),
                (true, false) => Err(RpcClientError::BadPeerUrl {
                    reason: "http:// to a loopback host needs allow_loopback_http".into(),
                }),
                (false, _) => Err(RpcClientError::BadPeerUrl { reason: "peerUrl must be a valid https URL".into() }),
            }
        }
        other => Err(RpcClientError::BadPeerUrl { reason: format!("unsupported scheme {other:?}") }),
    }
}

impl Client {
    /// `tasks/send`: starts a task on the peer; returns the peer's result (typically
    /// `{taskId, status}`, or the final state when the task finished quickly).
    pub async fn tasks_send(
        &self,
        peer_url: &str,
        task: RpcTask,
        options: RpcOptions,
    ) -> Result<Value, RpcClientError> {
        let url = check_peer_url(peer_url, options.allow_loopback_http)?;
        let skill = SkillKey::parse(&task.skill).ok_or(RpcClientError::BadSkill)?;
        let params = TaskSpec { skill, input: task.input.unwrap_or_default() }.to_params();
        self.rpc_call(url, "tasks/send", params, options, Duration::from_secs(30)).await
    }

    /// `tasks/get`: the peer's `{taskId, status, result?, error?}`.
    pub async fn tasks_get(&self, peer_url: &str, task_id: &str, options: RpcOptions) -> Result<Value, RpcClientError> {
        let url = check_peer_url(peer_url, options.allow_loopback_http)?;
        let task = TaskRef::parse(task_id).ok_or(RpcClientError::BadTaskId)?;
        self.rpc_call(url, "tasks/get", task.to_params(), options, Duration::from_secs(15)).await
    }

    /// `tasks/cancel`: cancels the task on the peer.
    pub async fn tasks_cancel(
        &self,
        peer_url: &str,
        task_id: &str,
        options: RpcOptions,
    ) -> Result<Value, RpcClientError> {
        let url = check_peer_url(peer_url, options.allow_loopback_http)?;
        let task = TaskRef::parse(task_id).ok_or(RpcClientError::BadTaskId)?;
        self.rpc_call(url, "tasks/cancel", task.to_params(), options, Duration::from_secs(15)).await
    }

    async fn rpc_call(
        &self,
        url: Url,
        method: &'static str,
        params: Value,
        options: RpcOptions,
        default_timeout: Duration,
    ) -> Result<Value, RpcClientError> {
        let id = Value::String(uuid_like());
        let request = jsonrpc::Request::new(id.clone(), method, params);
        let body = serde_json::to_string(&request)
            .map_err(|error| RpcClientError::BadResponse { method, reason: format!("request: {error}") })?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, reqwest::header::HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, reqwest::header::HeaderValue::from_static("application/json"));
        headers.extend(options.headers);
        let response = self
            .http
            .post(url)
            .headers(headers)
            .body(body)
            .timeout(options.timeout.unwrap_or(default_timeout))
            .send()
            .await
            .map_err(|source| RpcClientError::Transport { method, source })?;
        let status = response.status();
        if !status.is_success() {
            return Err(RpcClientError::HttpStatus { method, status: status.as_u16() });
        }
        let bytes = read_bounded(response, MAX_RESPONSE_BYTES).await.map_err(|error| match error {
            BodyError::TooLarge(_) => RpcClientError::BadResponse { method, reason: "response exceeds 8 MiB".into() },
            BodyError::Transport(source) => RpcClientError::Transport { method, source },
        })?;
        read_answer(method, &bytes, &id)
    }
}

/// Reads the answer to the request whose id was `id`: its result, or the error it carries.
fn read_answer(method: &'static str, body: &[u8], id: &Value) -> Result<Value, RpcClientError> {
    let bad = |error: jsonrpc::ResponseError| RpcClientError::BadResponse { method, reason: error.to_string() };
    let response = jsonrpc::Response::<Value>::parse(body).map_err(bad)?;
    response.check_id(id).map_err(bad)?;
    response.into_result().map_err(|error| RpcClientError::Rpc {
        method,
        code: error.code,
        message: error.message,
        data: error.data,
    })
}

/// A random request id (128 bits, hex).
fn uuid_like() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        return "1".into();
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn peer_urls_are_https_or_opted_in_loopback_http() {
        assert!(check_peer_url("https://agent.example.com/a2a", false).is_ok());
        assert!(matches!(check_peer_url("http://agent.example.com/a2a", true), Err(RpcClientError::BadPeerUrl { .. })));
        assert!(matches!(check_peer_url("http://127.0.0.1:8787/a2a", false), Err(RpcClientError::BadPeerUrl { .. })));
        assert!(check_peer_url("http://127.0.0.1:8787/a2a", true).is_ok());
        assert!(check_peer_url("http://127.3.4.5/a2a", true).is_ok());
        assert!(check_peer_url("http://localhost:1/a2a", true).is_ok());
        assert!(check_peer_url("http://[::1]:1/a2a", true).is_ok());
        assert!(matches!(check_peer_url("http://localhost.evil/a2a", true), Err(RpcClientError::BadPeerUrl { .. })));
        assert!(matches!(check_peer_url("ftp://x/", true), Err(RpcClientError::BadPeerUrl { .. })));
        assert!(matches!(check_peer_url("not a url", true), Err(RpcClientError::BadPeerUrl { .. })));
    }

    #[test]
    fn answers_are_checked_for_version_id_and_outcome() {
        let id = json!("abc");
        let read = |body: &str| read_answer("tasks/get", body.as_bytes(), &id);
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":"abc","result":{"taskId":"t"}}"#).expect("ok"),
            json!({"taskId": "t"})
        );
        match read(r#"{"jsonrpc":"2.0","id":"abc","error":{"code":-32002,"message":"task not found","data":[1]}}"#) {
            Err(RpcClientError::Rpc { method, code, message, data }) => {
                assert_eq!(
                    (method, code, message.as_str(), data),
                    ("tasks/get", -32002, "task not found", Some(json!([1])))
                );
            }
            other => panic!("expected an RPC error, got {other:?}"),
        }
        let unreadable = read(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON body"}}"#);
        assert!(matches!(unreadable, Err(RpcClientError::Rpc { code: -32700, .. })), "{unreadable:?}");
        for body in [
            "<html>",
            r#"{"jsonrpc":"2.0","id":"other","result":{}}"#,
            r#"{"jsonrpc":"1.0","id":"abc","result":{}}"#,
            r#"{"id":"abc","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"abc"}"#,
        ] {
            assert!(matches!(read(body), Err(RpcClientError::BadResponse { .. })), "{body}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn skill_and_task_id_are_checked_before_sending() {
        // Port 9 is closed: a call that reached the network would be a transport error.
        let options = || RpcOptions { allow_loopback_http: true, ..RpcOptions::default() };
        let peer = "http://127.0.0.1:9/rpc";
        let client = Client::new();
        let task = RpcTask { skill: "9lives".into(), input: None };
        assert!(matches!(client.tasks_send(peer, task, options()).await, Err(RpcClientError::BadSkill)));
        assert!(matches!(client.tasks_get(peer, "a b", options()).await, Err(RpcClientError::BadTaskId)));
        assert!(matches!(client.tasks_cancel(peer, "../x", options()).await, Err(RpcClientError::BadTaskId)));
        let task = RpcTask { skill: "summarize".into(), input: None };
        assert!(matches!(client.tasks_send(peer, task, options()).await, Err(RpcClientError::Transport { .. })));
    }
}
