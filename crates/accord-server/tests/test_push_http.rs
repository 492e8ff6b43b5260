//! Push notifications over real HTTP on loopback: the SSRF guard's table, the webhook sender
//! against local servers, and the receiver route.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use accord_server::push::guard::{WebhookPolicy, WebhookRefused};
use accord_server::push::receiver::{
    A2A_CONTENT_TYPE, DELIVERY_ATTEMPT_HEADER, DELIVERY_ID_HEADER, NOTIFICATION_TOKEN_HEADER, Notification,
    PushReceiver,
};
use accord_server::push::sender::{Delivered, SendFailure, WebhookSender};
use accord_types::a2a::{StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::serve::ListenerExt;
use bytes::Bytes;
use tokio::sync::mpsc;

// ---------------------------------------------------------------- guard

/// The reason `url` is refused under the default policy.
fn refused(url: &str) -> &'static str {
    match WebhookPolicy::new().check_url(url) {
        Err(refusal) => refusal.reason(),
        Ok(_) => panic!("{url} was accepted"),
    }
}

fn assert_class(reason: &str, hosts: &[&str]) {
    for host in hosts {
        assert_eq!(refused(&format!("https://{host}/webhook")), reason, "{host}");
    }
}

#[test]
fn unspecified_is_refused() {
    assert_class("unspecified", &["0.0.0.0", "0.1.2.3", "[::]", "[::ffff:0.0.0.0]"]);
}

#[test]
fn loopback_is_refused_in_every_spelling() {
    assert_class(
        "loopback",
        &[
            "127.0.0.1",
            "127.1.2.3",
            "2130706433", // decimal 127.0.0.1
            "0x7f.1",
            "[::1]",
            "[::ffff:127.0.0.1]",     // IPv4-mapped
            "[::127.0.0.1]",          // IPv4-compatible
            "[64:ff9b::127.0.0.1]",   // NAT64
            "[64:ff9b:1::127.0.0.1]", // local-use NAT64
            "[2002:7f00:1::1]",       // 6to4
        ],
    );
}

#[test]
fn private_ranges_are_refused() {
    assert_class(
        "private",
        &[
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "[::ffff:10.0.0.1]",
            "[64:ff9b::10.1.1.1]",
            "[64:ff9b:1::8.8.8.8]",           // local-use NAT64: an operator's own translator
            "[64:ff9b:1:7f00:0:100:808:808]", // 127.0.0.1 in the /48 placement
            "[2002:c0a8:101::1]",             // 6to4 of 192.168.1.1
            "[fc00::1]",                      // unique local
            "[fd12:3456::1]",
            "[fec0::1]", // site-local
        ],
    );
}

#[test]
fn link_local_is_refused() {
    assert_class(
        "link-local",
        &["169.254.0.1", "169.254.10.10", "[fe80::1]", "[::ffff:169.254.1.1]", "[2002:a9fe:101::]"],
    );
}

#[test]
fn cgnat_is_refused() {
    assert_class("cgnat", &["100.64.0.1", "100.127.255.254", "[::ffff:100.64.0.1]", "[64:ff9b::100.64.1.1]"]);
}

#[test]
fn multicast_and_broadcast_are_refused() {
    assert_class("multicast", &["224.0.0.1", "239.255.255.250", "[ff02::1]", "[::ffff:224.0.0.1]"]);
    assert_class("broadcast", &["255.255.255.255", "[::ffff:255.255.255.255]"]);
}

#[test]
fn documentation_benchmark_and_reserved_ranges_are_refused() {
    assert_class(
        "reserved",
        &[
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "240.0.0.1",
            "[2001:db8::1]",
            "[2001:2::1]",
            "[100::1]",             // discard-only
            "[::8.8.8.8]",          // IPv4-compatible, deprecated even for a public address
            "[64:ff9b::192.0.2.1]", // NAT64 of TEST-NET-1
            "[5f00::1]",            // outside global unicast
        ],
    );
}

#[test]
fn metadata_addresses_are_refused_even_when_their_network_is_allowed() {
    assert_class(
        "metadata",
        &[
            "169.254.169.254",
            "100.100.100.200",
            "[fd00:ec2::254]",
            "[::ffff:169.254.169.254]",
            "[64:ff9b::169.254.169.254]",
            "[2002:a9fe:a9fe::]",
        ],
    );
    let policy =
        WebhookPolicy::new().allow_networks(WebhookPolicy::parse_allow("169.254.0.0/16,100.64.0.0/10").unwrap());
    assert_eq!(policy.check_url("http://169.254.169.254/latest").unwrap_err().reason(), "metadata");
    assert_eq!(policy.check_url("http://100.100.100.200/").unwrap_err().reason(), "metadata");
    assert!(policy.check_url("http://169.254.1.1/").is_ok());
}

#[test]
fn teredo_is_refused() {
    assert_class("teredo", &["[2001::1]", "[2001:0:4136:e378:8000:63bf:3fff:fdd2]"]);
}

#[test]
fn public_addresses_and_names_pass_over_https() {
    let policy = WebhookPolicy::new();
    for url in [
        "https://8.8.8.8/webhook",
        "https://1.1.1.1:8443/a?b=c",
        "https://172.32.0.1/",  // just past 172.16/12
        "https://100.128.0.1/", // just past 100.64/10
        "https://198.20.0.1/",  // just past 198.18/15
        "https://[2606:4700:4700::1111]/",
        "https://[::ffff:8.8.8.8]/",
        "https://[64:ff9b::8.8.8.8]/",
        "https://[2002:808:808::1]/",
        "https://agent.example.com/webhook", // a name is checked when it is resolved
    ] {
        assert!(policy.check_url(url).is_ok(), "{url}");
    }
}

#[test]
fn plain_http_needs_an_allowed_network() {
    for url in ["http://8.8.8.8/webhook", "http://agent.example.com/webhook", "ftp://8.8.8.8/"] {
        assert_eq!(refused(url), "scheme", "{url}");
    }
    assert_eq!(refused("http://127.0.0.1:8080/webhook"), "loopback");

    let policy = WebhookPolicy::new().allow_loopback();
    for url in [
        "http://127.0.0.1:8080/webhook",
        "http://localhost:8080/webhook",
        "http://[::1]:8080/webhook",
        "http://[::ffff:127.0.0.1]/webhook",
        "https://127.0.0.1/webhook",
    ] {
        assert!(policy.check_url(url).is_ok(), "{url}");
    }
    assert_eq!(policy.check_url("http://8.8.8.8/").unwrap_err().reason(), "scheme");
    assert_eq!(policy.check_url("http://10.0.0.1/").unwrap_err().reason(), "private");
    assert_eq!(policy.check_url("http://[64:ff9b::127.0.0.1]/").unwrap_err().reason(), "loopback");
}

#[test]
fn credentials_and_malformed_urls_are_refused_without_echoing_them() {
    let refusal = WebhookPolicy::new().check_url("https://user:s3cret@8.8.8.8/webhook").unwrap_err();
    assert_eq!(refusal, WebhookRefused::Userinfo);
    assert!(!refusal.to_string().contains("s3cret"));
    assert_eq!(refused("https://user@8.8.8.8/"), "userinfo");
    assert_eq!(refused("/webhook"), "url");
    assert_eq!(refused("https://8.8.8.8:0/"), "url");
    assert_eq!(refused("mailto:a@example.com"), "scheme");
}

#[test]
fn allow_entries_parse() {
    let networks = |value| WebhookPolicy::parse_allow(value).unwrap();
    assert_eq!(networks("loopback").len(), 2);
    assert_eq!(networks("private").len(), 4);
    assert_eq!(networks("10.1.2.3/16")[0].to_string(), "10.1.0.0/16");
    assert_eq!(networks("192.168.1.7")[0].to_string(), "192.168.1.7/32");
    assert_eq!(networks("fd00::1")[0].to_string(), "fd00::1/128");
    assert_eq!(networks("loopback, 10.0.0.0/8").len(), 3);
    for bad in ["", "lan", "10.0.0.0/33", "loopback,"] {
        assert!(WebhookPolicy::parse_allow(bad).is_err(), "{bad:?}");
    }

    let policy = WebhookPolicy::new().allow_networks(networks("10.1.0.0/16"));
    assert!(policy.check_url("http://10.1.2.3/webhook").is_ok());
    assert_eq!(policy.check_url("http://10.2.0.1/webhook").unwrap_err().reason(), "private");
    let private = WebhookPolicy::new().allow_networks(networks("private"));
    assert!(private.check_url("http://192.168.0.10/").is_ok());
    assert!(private.check_url("http://[fd00::10]/").is_ok());
    assert_eq!(private.check_url("http://127.0.0.1/").unwrap_err().reason(), "loopback");
}

// ---------------------------------------------------------------- sender

/// A server on an ephemeral loopback port; the counter counts accepted connections.
async fn serve(router: Router) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = connections.clone();
    let listener = listener.tap_io(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    (address, connections)
}

fn loopback_sender() -> WebhookSender {
    WebhookSender::builder(WebhookPolicy::new().allow_loopback()).build().unwrap()
}

fn update(state: TaskState) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "task-1".into(),
        context_id: "ctx-1".into(),
        status: TaskStatus::new(state),
        metadata: None,
    })
}

fn body(state: TaskState) -> Bytes {
    Bytes::from(serde_json::to_vec(&update(state)).unwrap())
}

fn delivery_headers(id: &str, attempt: u32) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer s3cret-credential"));
    headers.insert(NOTIFICATION_TOKEN_HEADER, HeaderValue::from_static("notify-token"));
    headers.insert(DELIVERY_ID_HEADER, HeaderValue::from_str(id).unwrap());
    headers.insert(DELIVERY_ATTEMPT_HEADER, HeaderValue::from(attempt));
    headers
}

#[tokio::test]
async fn a_2xx_is_delivered_with_the_headers() {
    let (seen, mut requests) = mpsc::unbounded_channel();
    let router = Router::new().route(
        "/webhook",
        post(move |headers: HeaderMap, body: Bytes| async move {
            seen.send((headers, body)).unwrap();
            StatusCode::NO_CONTENT
        }),
    );
    let (address, _) = serve(router).await;
    let sender = loopback_sender();
    let sent = body(TaskState::Working);

    for (url, id) in [
        (format!("http://127.0.0.1:{}/webhook", address.port()), "d-1"),
        // Through the resolver: `localhost` resolves to loopback, which the policy allows.
        (format!("http://localhost:{}/webhook", address.port()), "d-2"),
    ] {
        let delivered = sender.send(&url, delivery_headers(id, 2), sent.clone()).await.unwrap();
        assert_eq!(delivered, Delivered { status: 204 });
        let (headers, received) = requests.recv().await.unwrap();
        assert_eq!(received, sent);
        assert_eq!(headers[header::AUTHORIZATION], "Bearer s3cret-credential");
        assert_eq!(headers[NOTIFICATION_TOKEN_HEADER], "notify-token");
        assert_eq!(headers[DELIVERY_ID_HEADER], id);
        assert_eq!(headers[DELIVERY_ATTEMPT_HEADER], "2");
        assert_eq!(headers[header::CONTENT_TYPE], A2A_CONTENT_TYPE);
    }
}

#[tokio::test]
async fn error_statuses_fail_and_say_whether_to_retry() {
    let router = Router::new()
        .route("/500", post(|| async { StatusCode::INTERNAL_SERVER_ERROR }))
        .route("/404", post(|| async { StatusCode::NOT_FOUND }))
        .route("/429", post(|| async { StatusCode::TOO_MANY_REQUESTS }));
    let (address, _) = serve(router).await;
    let sender = loopback_sender();
    let send = |path: &str| {
        let url = format!("http://127.0.0.1:{}{path}", address.port());
        let sender = sender.clone();
        async move { sender.send(&url, delivery_headers("d", 1), body(TaskState::Completed)).await }
    };

    let failure = send("/500").await.unwrap_err();
    assert_eq!(failure, SendFailure::Status(500));
    assert!(failure.retryable());
    let failure = send("/404").await.unwrap_err();
    assert_eq!(failure, SendFailure::Status(404));
    assert!(!failure.retryable());
    assert!(send("/429").await.unwrap_err().retryable());
    assert!(SendFailure::Status(408).retryable());
    assert!(!SendFailure::Status(400).retryable());
    assert!(!SendFailure::Status(302).retryable());
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_before_connecting() {
    let router = Router::new().route("/webhook", post(|| async { StatusCode::OK }));
    let (address, connections) = serve(router).await;
    let sender = WebhookSender::builder(WebhookPolicy::new()).build().unwrap();

    // https passes the config-time check (a name is not resolved then); the resolver refuses.
    let url = format!("https://localhost:{}/webhook", address.port());
    let failure = sender.send(&url, delivery_headers("d", 1), body(TaskState::Working)).await.unwrap_err();
    match &failure {
        SendFailure::Refused(refusal) => assert_eq!(refusal.reason(), "loopback"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!failure.retryable());
    assert!(!failure.to_string().contains("s3cret"));
    // Plain http to a name with no allowed network is refused by the scheme rule.
    let url = format!("http://localhost:{}/webhook", address.port());
    let failure = sender.send(&url, delivery_headers("d", 1), body(TaskState::Working)).await.unwrap_err();
    assert_eq!(failure, SendFailure::Refused(WebhookRefused::Scheme));
    let url = format!("https://127.0.0.1:{}/webhook", address.port());
    let failure = sender.send(&url, delivery_headers("d", 1), body(TaskState::Working)).await.unwrap_err();
    assert!(matches!(failure, SendFailure::Refused(WebhookRefused::Address { .. })), "{failure:?}");

    assert_eq!(connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let landed = Arc::new(AtomicUsize::new(0));
    let hits = landed.clone();
    let router = Router::new()
        .route("/to-private", post(|| async { (StatusCode::FOUND, [(header::LOCATION, "http://10.0.0.1/")]) }))
        .route("/to-self", post(|| async { (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, "/landing")]) }))
        .route(
            "/landing",
            post(move || async move {
                hits.fetch_add(1, Ordering::SeqCst);
                StatusCode::OK
            }),
        );
    let (address, _) = serve(router).await;
    let sender = loopback_sender();

    let url = format!("http://127.0.0.1:{}/to-private", address.port());
    let failure = sender.send(&url, delivery_headers("d", 1), body(TaskState::Working)).await.unwrap_err();
    assert_eq!(failure, SendFailure::Status(302));
    assert!(!failure.retryable());
    let url = format!("http://127.0.0.1:{}/to-self", address.port());
    let failure = sender.send(&url, delivery_headers("d", 1), body(TaskState::Working)).await.unwrap_err();
    assert_eq!(failure, SendFailure::Status(307));
    assert_eq!(landed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_slow_webhook_times_out() {
    let router = Router::new().route("/webhook", post(std::future::pending::<StatusCode>));
    let (address, _) = serve(router).await;
    let sender = WebhookSender::builder(WebhookPolicy::new().allow_loopback())
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{}/webhook", address.port());
    let failure = sender.send(&url, delivery_headers("d", 1), body(TaskState::Working)).await.unwrap_err();
    assert_eq!(failure, SendFailure::Timeout);
    assert!(failure.retryable());
}

#[tokio::test]
async fn an_unreachable_webhook_is_a_retryable_connect_failure() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("http://127.0.0.1:{port}/webhook?token=url-secret");
    let failure = loopback_sender().send(&url, delivery_headers("d", 1), body(TaskState::Working)).await.unwrap_err();
    assert!(matches!(failure, SendFailure::Connect(_)), "{failure:?}");
    assert!(failure.retryable());
    let message = failure.to_string();
    assert!(!message.contains("url-secret") && !message.contains("s3cret"), "{message}");
}

#[tokio::test]
async fn an_endless_response_body_is_read_only_up_to_the_cap() {
    let produced = Arc::new(AtomicUsize::new(0));
    let counter = produced.clone();
    let router = Router::new().route(
        "/webhook",
        post(move || async move {
            let chunk = Bytes::from(vec![b'x'; 16 * 1024]);
            let endless = futures_util::stream::repeat_with(move || {
                counter.fetch_add(chunk.len(), Ordering::SeqCst);
                Ok::<_, std::io::Error>(chunk.clone())
            });
            (StatusCode::OK, Body::from_stream(endless)).into_response()
        }),
    );
    let (address, _) = serve(router).await;
    // The attempt's own timeout is far longer than the test's: only the cap can end the read.
    let sender = WebhookSender::builder(WebhookPolicy::new().allow_loopback())
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{}/webhook", address.port());
    let delivered = tokio::time::timeout(
        Duration::from_secs(30),
        sender.send(&url, delivery_headers("d", 1), body(TaskState::Working)),
    )
    .await
    .expect("the read stops at the cap")
    .unwrap();
    assert_eq!(delivered, Delivered { status: 200 });
    // What the server produced is the cap plus socket buffers, not an endless stream.
    assert!(produced.load(Ordering::SeqCst) < 64 * 1024 * 1024);
}

// ---------------------------------------------------------------- receiver

async fn receiver(receiver: PushReceiver) -> (String, mpsc::Receiver<Notification>) {
    let (router, notifications) = receiver.into_router();
    let (address, _) = serve(router).await;
    (format!("http://127.0.0.1:{}", address.port()), notifications)
}

async fn post_notification(url: &str, headers: &[(&str, &str)], body: impl Into<reqwest::Body>) -> StatusCode {
    let mut request = reqwest::Client::new().post(url).header(header::CONTENT_TYPE, A2A_CONTENT_TYPE).body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let status = request.send().await.unwrap().status();
    StatusCode::from_u16(status.as_u16()).unwrap()
}

#[tokio::test]
async fn the_receiver_checks_the_token_and_authorization() {
    let (base, mut notifications) =
        receiver(PushReceiver::new().path("/hooks/a2a").token("tok-123").authorization("Bearer abc")).await;
    let url = format!("{base}/hooks/a2a");
    let good = [(NOTIFICATION_TOKEN_HEADER, "tok-123"), ("authorization", "Bearer abc"), (DELIVERY_ID_HEADER, "d-1")];

    for headers in [
        &[("authorization", "Bearer abc")][..],
        &[(NOTIFICATION_TOKEN_HEADER, "tok-124"), ("authorization", "Bearer abc")],
        &[(NOTIFICATION_TOKEN_HEADER, "tok-123")],
        &[(NOTIFICATION_TOKEN_HEADER, "tok-123"), ("authorization", "Bearer abd")],
        &[(NOTIFICATION_TOKEN_HEADER, "tok-12"), ("authorization", "Bearer abc")],
    ] {
        assert_eq!(post_notification(&url, headers, body(TaskState::Working)).await, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(post_notification(&url, &good, body(TaskState::Working)).await, StatusCode::OK);
    let notification = notifications.recv().await.unwrap();
    assert_eq!(notification.delivery_id.as_deref(), Some("d-1"));
    assert_eq!(notification.response, update(TaskState::Working));
    // Nothing refused reached the channel.
    assert!(notifications.try_recv().is_err());
}

#[tokio::test]
async fn the_receiver_drops_duplicates_by_delivery_id() {
    let duplicates = Arc::new(Mutex::new(Vec::new()));
    let noted = duplicates.clone();
    let (base, mut notifications) = receiver(
        PushReceiver::new().dedup_capacity(2).on_duplicate(move |id| noted.lock().unwrap().push(id.to_owned())),
    )
    .await;
    let url = format!("{base}/webhook");
    let post = |id: &'static str, attempt: &'static str, state| {
        let url = url.clone();
        async move {
            post_notification(&url, &[(DELIVERY_ID_HEADER, id), (DELIVERY_ATTEMPT_HEADER, attempt)], body(state)).await
        }
    };

    assert_eq!(post("a", "1", TaskState::Working).await, StatusCode::OK);
    assert_eq!(post("a", "2", TaskState::Working).await, StatusCode::OK); // a retry: answered, dropped
    assert_eq!(post("b", "1", TaskState::Completed).await, StatusCode::OK);
    let first = notifications.recv().await.unwrap();
    assert_eq!((first.delivery_id.as_deref(), first.attempt), (Some("a"), Some(1)));
    let second = notifications.recv().await.unwrap();
    assert_eq!((second.delivery_id.as_deref(), second.response), (Some("b"), update(TaskState::Completed)));
    assert_eq!(*duplicates.lock().unwrap(), ["a"]);

    // Only the last two ids are remembered: after `c`, `a` is new again.
    assert_eq!(post("c", "1", TaskState::Working).await, StatusCode::OK);
    assert_eq!(post("a", "3", TaskState::Working).await, StatusCode::OK);
    assert_eq!(notifications.recv().await.unwrap().delivery_id.as_deref(), Some("c"));
    let again = notifications.recv().await.unwrap();
    assert_eq!((again.delivery_id.as_deref(), again.attempt), (Some("a"), Some(3)));
}

#[tokio::test]
async fn the_receiver_rejects_bodies_that_are_not_stream_responses() {
    let (base, mut notifications) = receiver(PushReceiver::new()).await;
    let url = format!("{base}/webhook");
    for bad in ["{not json", r#"{"nope":{}}"#, "[]", ""] {
        assert_eq!(post_notification(&url, &[], bad).await, StatusCode::BAD_REQUEST, "{bad:?}");
    }
    assert!(notifications.try_recv().is_err());
}

#[tokio::test]
async fn a_full_channel_answers_503_and_the_retry_gets_through() {
    let (base, mut notifications) = receiver(PushReceiver::new().channel_capacity(1)).await;
    let url = format!("{base}/webhook");
    assert_eq!(post_notification(&url, &[(DELIVERY_ID_HEADER, "x")], body(TaskState::Working)).await, StatusCode::OK);
    assert_eq!(
        post_notification(&url, &[(DELIVERY_ID_HEADER, "y")], body(TaskState::Working)).await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(notifications.recv().await.unwrap().delivery_id.as_deref(), Some("x"));
    assert_eq!(post_notification(&url, &[(DELIVERY_ID_HEADER, "y")], body(TaskState::Working)).await, StatusCode::OK);
    assert_eq!(notifications.recv().await.unwrap().delivery_id.as_deref(), Some("y"));
}

#[tokio::test]
async fn the_sender_delivers_to_the_receiver() {
    let (base, mut notifications) = receiver(PushReceiver::new().token("notify-token")).await;
    let sender = loopback_sender();
    let url = format!("{base}/webhook");
    for attempt in 1..=2 {
        let delivered = sender.send(&url, delivery_headers("same", attempt), body(TaskState::Completed)).await;
        assert_eq!(delivered, Ok(Delivered { status: 200 }));
    }
    let notification = notifications.recv().await.unwrap();
    assert_eq!(notification.attempt, Some(1));
    assert_eq!(notification.response, update(TaskState::Completed));
    assert!(notifications.try_recv().is_err());
}
