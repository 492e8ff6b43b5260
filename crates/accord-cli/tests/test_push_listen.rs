//! `accord push listen` in-process: the webhook served on a loopback port, notifications posted
//! to it over HTTP, and the lines it prints.

#![allow(clippy::unwrap_used)]

use std::io::Write;

use accord_cli::push_listen::{ListenArgs, receiver, serve, webhook_url};
use accord_server::push::guard::WebhookPolicy;
use accord_server::push::receiver::{DELIVERY_ATTEMPT_HEADER, DELIVERY_ID_HEADER, NOTIFICATION_TOKEN_HEADER};
use accord_server::push::sender::{SendFailure, WebhookSender};
use accord_types::a2a::{StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;

/// Stdout stand-in: each complete line written is sent on the channel.
struct LineSink {
    pending: Vec<u8>,
    lines: mpsc::UnboundedSender<String>,
}

impl Write for LineSink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = self.pending.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let _ = self.lines.send(String::from_utf8(line).unwrap().trim_end().to_owned());
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn args(token: Option<&str>) -> ListenArgs {
    ListenArgs { host: "127.0.0.1".into(), port: 0, path: "/hooks/accord".into(), token: token.map(str::to_owned) }
}

fn body(state: TaskState) -> Vec<u8> {
    let update = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "task-7".into(),
        context_id: "ctx-7".into(),
        status: TaskStatus::new(state),
        metadata: None,
    });
    serde_json::to_vec(&update).unwrap()
}

fn headers(token: &'static str, id: &'static str, attempt: u32) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(NOTIFICATION_TOKEN_HEADER, HeaderValue::from_static(token));
    headers.insert(DELIVERY_ID_HEADER, HeaderValue::from_static(id));
    headers.insert(DELIVERY_ATTEMPT_HEADER, HeaderValue::from(attempt));
    headers
}

#[tokio::test]
async fn listen_prints_each_new_delivery_as_one_json_line() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = webhook_url(listener.local_addr().unwrap(), "/hooks/accord");
    let (lines, mut printed) = mpsc::unbounded_channel();
    let server = tokio::spawn(async move {
        serve(listener, &args(Some("listen-token")), LineSink { pending: Vec::new(), lines }).await
    });
    let sender = WebhookSender::builder(WebhookPolicy::new().allow_loopback()).build().unwrap();

    sender.send(&url, headers("listen-token", "d-1", 1), body(TaskState::Working).into()).await.unwrap();
    let line: Value = serde_json::from_str(&printed.recv().await.unwrap()).unwrap();
    assert_eq!(line["deliveryId"], "d-1");
    assert_eq!(line["attempt"], 1);
    assert_eq!(line["response"]["statusUpdate"]["taskId"], "task-7");
    assert_eq!(line["response"]["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");

    // A retry of d-1 is answered but not printed; a wrong token is refused and not printed.
    sender.send(&url, headers("listen-token", "d-1", 2), body(TaskState::Working).into()).await.unwrap();
    let refused = sender.send(&url, headers("other-token", "d-9", 1), body(TaskState::Working).into()).await;
    assert_eq!(refused, Err(SendFailure::Status(401)));
    sender.send(&url, headers("listen-token", "d-2", 1), body(TaskState::Completed).into()).await.unwrap();
    let line: Value = serde_json::from_str(&printed.recv().await.unwrap()).unwrap();
    assert_eq!(line["deliveryId"], "d-2");
    assert_eq!(line["response"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");

    assert!(!server.is_finished());
    server.abort();
}

#[test]
fn listen_refuses_a_path_that_is_not_a_plain_route() {
    for path in ["webhook", "/hooks/{id}", "/hooks/*rest", "/:id"] {
        let mut args = args(None);
        args.path = path.into();
        assert!(receiver(&args).is_err(), "{path}");
    }
    assert!(receiver(&args(None)).is_ok());
    assert_eq!(webhook_url("[::1]:8080".parse().unwrap(), "/webhook"), "http://[::1]:8080/webhook");
}
