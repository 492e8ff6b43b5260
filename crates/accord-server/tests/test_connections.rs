//! The serve loop's limits, seen from raw TCP sockets: slow and idle clients are closed, the
//! connection and in-flight caps hold, shutdown lets open requests finish.

use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use accord_server::serve::{ConnectionLimits, Server};
use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;

/// A generous bound for "eventually": far above every configured timeout, so only a server that
/// never acts fails it.
const EVENTUALLY: Duration = Duration::from_secs(10);

/// What the test routes share with the test.
#[derive(Default)]
struct Probes {
    /// Notified when `/hold` starts; it answers once `release` is notified.
    entered: Notify,
    release: Notify,
    /// Set when `/endless`'s body is dropped (its connection was closed).
    endless_dropped: AtomicBool,
    endless_drop: Notify,
    /// Set when `/guarded`'s handler runs.
    guarded_ran: AtomicBool,
}

struct DropFlag(Arc<Probes>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.endless_dropped.store(true, Ordering::SeqCst);
        self.0.endless_drop.notify_waiters();
    }
}

fn app(probes: Arc<Probes>) -> Router {
    let hold = probes.clone();
    let guarded = probes.clone();
    let endless = probes;
    Router::new()
        // Behind the busy refusal, as a route of the user's own beside the faces should be.
        .route(
            "/guarded",
            get(move || async move {
                guarded.guarded_ran.store(true, Ordering::SeqCst);
                "ran"
            })
            .layer(axum::middleware::from_fn(accord_server::serve::refuse_busy)),
        )
        .route("/health", get(|| async { "ok" }))
        .route(
            "/hold",
            get(move || {
                let hold = hold.clone();
                async move {
                    hold.entered.notify_one();
                    hold.release.notified().await;
                    "released"
                }
            }),
        )
        // Answers before reading any of its body, as a face refuses one whose declared length is
        // over its cap.
        .route("/refuse", post(|| async { (http::StatusCode::PAYLOAD_TOO_LARGE, "too large") }))
        .route(
            "/upload",
            post(|body: Body| async move {
                match axum::body::to_bytes(body, 1 << 20).await {
                    Ok(bytes) => format!("{} bytes", bytes.len()),
                    Err(_) => "unreadable".to_owned(),
                }
            }),
        )
        .route(
            "/events",
            get(|| async {
                let first = futures_util::stream::once(async {
                    Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(b"data: first\n\n"))
                });
                let stream = first.chain(futures_util::stream::pending());
                ([(http::header::CONTENT_TYPE, "text/event-stream")], Body::from_stream(stream))
            }),
        )
        .route(
            "/grpc-stream",
            post(|| async {
                let first = futures_util::stream::once(async {
                    Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(b"\0\0\0\0\0"))
                });
                let stream = first.chain(futures_util::stream::pending());
                ([(http::header::CONTENT_TYPE, "application/grpc")], Body::from_stream(stream))
            }),
        )
        .route(
            "/endless",
            get(move || {
                let flag = DropFlag(endless.clone());
                let chunk = bytes::Bytes::from(vec![b'x'; 64 * 1024]);
                let stream = futures_util::stream::repeat(chunk).map(move |chunk| {
                    let _keep = &flag;
                    Ok::<_, std::convert::Infallible>(chunk)
                });
                async move { Body::from_stream(stream) }
            }),
        )
}

struct Running {
    addr: std::net::SocketAddr,
    probes: Arc<Probes>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

async fn start(limits: ConnectionLimits) -> Running {
    let probes = Arc::new(Probes::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel::<()>();
    let server = Server::new(listener, app(probes.clone())).limits(limits).with_graceful_shutdown(async {
        let _ = stopped.await;
    });
    let task = tokio::spawn(server.into_future());
    Running { addr, probes, stop: Some(stop), task }
}

/// Reads until the peer closes; `true` if it did within [`EVENTUALLY`]. Whatever arrives first
/// (a response, an error page) is read and discarded.
async fn closed_by_server(socket: &mut TcpStream) -> bool {
    let mut buf = vec![0; 64 * 1024];
    let read_all = async {
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(EVENTUALLY, read_all).await.is_ok()
}

/// Sends one keep-alive request and reads its whole response head and body (small bodies only).
async fn request(socket: &mut TcpStream, path: &str) -> String {
    let head = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    socket.write_all(head.as_bytes()).await.expect("write");
    read_response(socket).await
}

async fn read_response(socket: &mut TcpStream) -> String {
    let mut response = Vec::new();
    let mut buf = [0; 4096];
    loop {
        let n =
            tokio::time::timeout(EVENTUALLY, socket.read(&mut buf)).await.expect("a response in time").expect("read");
        assert!(n > 0, "closed before a whole response: {}", String::from_utf8_lossy(&response));
        response.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&response).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>())
                })
                .expect("content-length")
                .expect("a number");
            if response.len() >= end + 4 + length {
                return text;
            }
        }
    }
}

#[tokio::test]
async fn a_half_sent_request_line_is_closed_after_the_header_timeout() {
    let server =
        start(ConnectionLimits { header_timeout: Duration::from_millis(300), ..ConnectionLimits::default() }).await;
    let mut socket = TcpStream::connect(server.addr).await.expect("connect");
    socket.write_all(b"GET /health HT").await.expect("write");
    assert!(closed_by_server(&mut socket).await, "a half-sent request head must not hold its connection");
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_idle_timeout_and_the_head_timeout_does_not_cut_it_sooner() {
    let server = start(ConnectionLimits {
        header_timeout: Duration::from_millis(100),
        idle_timeout: Duration::from_secs(3),
        ..ConnectionLimits::default()
    })
    .await;
    let mut kept_alive = TcpStream::connect(server.addr).await.expect("connect");
    assert!(request(&mut kept_alive, "/health").await.starts_with("HTTP/1.1 200"));
    // Idle for several head timeouts, still within the idle timeout: the connection serves again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(request(&mut kept_alive, "/health").await.starts_with("HTTP/1.1 200"));
    assert!(closed_by_server(&mut kept_alive).await, "an idle keep-alive connection must be closed");

    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    assert!(closed_by_server(&mut silent).await, "a connection that never sends must be closed");
}

#[tokio::test]
async fn at_the_connection_cap_busy_connections_make_a_new_one_wait_and_an_idle_one_makes_room() {
    let server = start(ConnectionLimits { max_connections: 2, ..ConnectionLimits::default() }).await;
    let mut holder = TcpStream::connect(server.addr).await.expect("connect");
    holder.write_all(b"GET /hold HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    server.probes.entered.notified().await;
    let mut slow_head = TcpStream::connect(server.addr).await.expect("connect");
    slow_head.write_all(b"GET /hea").await.expect("write");
    tokio::time::sleep(Duration::from_millis(100)).await;

    let mut third = TcpStream::connect(server.addr).await.expect("the kernel still completes the handshake");
    third.write_all(b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    let mut buf = [0; 1];
    let early = tokio::time::timeout(Duration::from_millis(500), third.read(&mut buf)).await;
    assert!(early.is_err(), "a third connection must not be served while two are busy: {early:?}");

    // The held request ends; its connection, kept alive and idle, is closed to make room.
    server.probes.release.notify_one();
    assert!(read_response(&mut holder).await.contains("released"));
    let response = read_response(&mut third).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(closed_by_server(&mut holder).await, "the idle keep-alive connection made room");
    slow_head.write_all(b"lth HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    assert!(read_response(&mut slow_head).await.starts_with("HTTP/1.1 200"), "a busy connection is left alone");
}

#[tokio::test]
async fn silent_connections_at_the_cap_cannot_lock_a_client_out() {
    let server = start(ConnectionLimits { max_connections: 20, ..ConnectionLimits::default() }).await;
    let mut silent = Vec::new();
    for _ in 0..100 {
        silent.push(TcpStream::connect(server.addr).await.expect("connect"));
    }
    // Far less than the first-byte (5 s) and idle (60 s) timeouts: only making room serves it.
    let mut client = TcpStream::connect(server.addr).await.expect("connect");
    client.write_all(b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    let answered = tokio::time::timeout(Duration::from_secs(3), read_response(&mut client)).await;
    assert!(
        answered.is_ok_and(|response| response.starts_with("HTTP/1.1 200")),
        "a client behind 100 silent sockets is served"
    );
    drop(silent);
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_after_the_first_byte_timeout() {
    let server = start(ConnectionLimits {
        first_byte_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_secs(30),
        ..ConnectionLimits::default()
    })
    .await;
    let mut kept_alive = TcpStream::connect(server.addr).await.expect("connect");
    assert!(request(&mut kept_alive, "/health").await.starts_with("HTTP/1.1 200"));
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    assert!(closed_by_server(&mut silent).await, "a connection that never sends is closed");
    // Idle past the first-byte timeout, well within the idle timeout: still served.
    assert!(request(&mut kept_alive, "/health").await.starts_with("HTTP/1.1 200"));
}

/// The HTTP/2 connection preface a client speaking HTTP/2 without an upgrade starts with.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[tokio::test]
async fn the_protocol_is_told_from_first_bytes_that_arrive_in_pieces() {
    let server = start(ConnectionLimits::default()).await;
    // An HTTP/1.1 request whose first byte is also the preface's: told apart at the second.
    let mut http1 = TcpStream::connect(server.addr).await.expect("connect");
    http1.write_all(b"P").await.expect("write");
    tokio::time::sleep(Duration::from_millis(50)).await;
    http1.write_all(b"OST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n\r\nabc").await.expect("write");
    let response = read_response(&mut http1).await;
    assert!(response.starts_with("HTTP/1.1 200") && response.ends_with("3 bytes"), "{response}");

    // An HTTP/2 preface in two pieces, then an empty SETTINGS frame: the server answers with its
    // own SETTINGS frame (an HTTP/1.1 server would answer 400).
    let mut http2 = TcpStream::connect(server.addr).await.expect("connect");
    http2.write_all(&H2_PREFACE[..10]).await.expect("write");
    tokio::time::sleep(Duration::from_millis(50)).await;
    http2.write_all(&H2_PREFACE[10..]).await.expect("write");
    http2.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.expect("write");
    let mut frame = [0; 9];
    tokio::time::timeout(EVENTUALLY, http2.read_exact(&mut frame)).await.expect("in time").expect("read");
    assert_eq!(frame[3], 4, "the server's first frame is SETTINGS: {frame:?}");
}

#[tokio::test]
async fn a_connection_that_stops_within_the_http2_preface_is_closed_after_the_first_byte_timeout() {
    let server = start(ConnectionLimits {
        first_byte_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_secs(30),
        ..ConnectionLimits::default()
    })
    .await;
    let mut stalled = TcpStream::connect(server.addr).await.expect("connect");
    stalled.write_all(&H2_PREFACE[..14]).await.expect("write");
    assert!(closed_by_server(&mut stalled).await, "a part of the preface counts for nothing");
    // The server is still serving.
    let mut client = TcpStream::connect(server.addr).await.expect("connect");
    assert!(request(&mut client, "/health").await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn beyond_the_in_flight_cap_a_request_gets_503_with_retry_after() {
    // A router of the test's own, outside Accord's faces: the busy answer is the plain one, not the
    // route's (the faces' own shapes are in test_a2a_grpc).
    let server = start(ConnectionLimits { max_in_flight: 1, ..ConnectionLimits::default() }).await;
    let mut holder = TcpStream::connect(server.addr).await.expect("connect");
    holder.write_all(b"GET /hold HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    server.probes.entered.notified().await;
    let mut other = TcpStream::connect(server.addr).await.expect("connect");
    let refused = request(&mut other, "/health").await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    let lower = refused.to_ascii_lowercase();
    assert!(lower.contains("\r\nretry-after: 1\r\n"), "{refused}");
    assert!(lower.contains("text/plain") && !refused.contains("\r\n\r\nok"), "{refused}");
    let guarded = request(&mut other, "/guarded").await;
    assert!(guarded.starts_with("HTTP/1.1 503") && guarded.to_ascii_lowercase().contains("\r\nretry-after: 1\r\n"));
    assert!(!server.probes.guarded_ran.load(Ordering::SeqCst), "a route behind refuse_busy does not run when busy");

    server.probes.release.notify_one();
    assert!(read_response(&mut holder).await.contains("released"));
    assert!(request(&mut other, "/health").await.starts_with("HTTP/1.1 200"), "the slot is free again");
}

#[tokio::test]
async fn a_request_body_that_stops_arriving_is_cut_after_the_body_timeout() {
    let server =
        start(ConnectionLimits { body_timeout: Duration::from_millis(300), ..ConnectionLimits::default() }).await;
    let mut socket = TcpStream::connect(server.addr).await.expect("connect");
    socket
        .write_all(b"POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n0123456789")
        .await
        .expect("write");
    // The handler's answer to its broken body still goes out, saying that the connection closes.
    let mut answer = Vec::new();
    let read = tokio::time::timeout(EVENTUALLY, socket.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "a stalled body must not hold its connection");
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.contains("unreadable") && answer.contains("\r\nconnection: close\r\n"), "{answer}");

    let mut prompt = TcpStream::connect(server.addr).await.expect("connect");
    prompt.write_all(b"POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n\r\nabc").await.expect("write");
    assert!(read_response(&mut prompt).await.contains("3 bytes"), "a body sent at once is read");
}

#[tokio::test]
async fn a_client_that_never_reads_its_response_is_dropped_after_the_write_timeout() {
    let server =
        start(ConnectionLimits { write_timeout: Duration::from_millis(300), ..ConnectionLimits::default() }).await;
    let mut socket = TcpStream::connect(server.addr).await.expect("connect");
    socket.write_all(b"GET /endless HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    // Never read: the socket buffers fill, the server's writes stall, and it must give up.
    let dropped = tokio::time::timeout(EVENTUALLY, async {
        while !server.probes.endless_dropped.load(Ordering::SeqCst) {
            let notified = server.probes.endless_drop.notified();
            if server.probes.endless_dropped.load(Ordering::SeqCst) {
                break;
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), notified).await;
        }
    })
    .await;
    assert!(dropped.is_ok(), "the endless response must be abandoned when its client stops reading");
    drop(socket);
}

#[tokio::test]
async fn graceful_shutdown_lets_an_open_request_finish_and_closes_idle_connections() {
    let mut server = start(ConnectionLimits::default()).await;
    let mut idle = TcpStream::connect(server.addr).await.expect("connect");
    assert!(request(&mut idle, "/health").await.starts_with("HTTP/1.1 200"));
    let mut holder = TcpStream::connect(server.addr).await.expect("connect");
    holder.write_all(b"GET /hold HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    server.probes.entered.notified().await;

    let _ = server.stop.take().expect("stop").send(());
    assert!(closed_by_server(&mut idle).await, "an idle connection closes at shutdown");
    assert!(!server.task.is_finished(), "the server waits for the open request");
    server.probes.release.notify_one();
    let response = read_response(&mut holder).await;
    assert!(response.starts_with("HTTP/1.1 200") && response.contains("released"), "{response}");
    let ended = tokio::time::timeout(EVENTUALLY, &mut server.task).await;
    assert!(matches!(ended, Ok(Ok(Ok(())))), "the server ends once the request is done: {ended:?}");
}

/// A server whose stop signal, grace period and forced stop the test controls.
async fn start_stoppable(grace: Option<Duration>) -> (Running, oneshot::Sender<()>) {
    let probes = Arc::new(Probes::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel::<()>();
    let (force, forced) = oneshot::channel::<()>();
    let mut server = Server::new(listener, app(probes.clone()))
        .with_graceful_shutdown(async {
            let _ = stopped.await;
        })
        .with_forced_shutdown(async {
            if forced.await.is_err() {
                std::future::pending::<()>().await;
            }
        });
    if let Some(grace) = grace {
        server = server.shutdown_grace(grace);
    }
    let task = tokio::spawn(server.into_future());
    (Running { addr, probes, stop: Some(stop), task }, force)
}

#[tokio::test]
async fn past_the_grace_period_a_request_still_open_is_cut() {
    let (mut server, _force) = start_stoppable(Some(Duration::from_millis(300))).await;
    let mut holder = TcpStream::connect(server.addr).await.expect("connect");
    holder.write_all(b"GET /hold HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    server.probes.entered.notified().await;
    let _ = server.stop.take().expect("stop").send(());
    assert!(closed_by_server(&mut holder).await, "the open request is cut after the grace period");
    let ended = tokio::time::timeout(EVENTUALLY, &mut server.task).await;
    assert!(matches!(ended, Ok(Ok(Ok(())))), "the server ends: {ended:?}");
}

#[tokio::test]
async fn a_forced_stop_cuts_at_once_what_the_graceful_one_waits_for() {
    let (mut server, force) = start_stoppable(None).await;
    let mut holder = TcpStream::connect(server.addr).await.expect("connect");
    holder.write_all(b"GET /hold HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    server.probes.entered.notified().await;
    let _ = server.stop.take().expect("stop").send(());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!server.task.is_finished(), "without a grace period the graceful stop waits");
    let _ = force.send(());
    assert!(closed_by_server(&mut holder).await, "the forced stop cuts the open request");
    let ended = tokio::time::timeout(EVENTUALLY, &mut server.task).await;
    assert!(matches!(ended, Ok(Ok(Ok(())))), "the server ends: {ended:?}");
}

#[tokio::test]
async fn at_a_stop_an_event_stream_ends_cleanly_and_a_grpc_stream_ends_unavailable() {
    let (mut server, _force) = start_stoppable(None).await;
    // An event stream over HTTP/1.1: one event, then it would wait for ever.
    let mut events = TcpStream::connect(server.addr).await.expect("connect");
    events.write_all(b"GET /events HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("write");
    let mut seen = Vec::new();
    let mut buf = [0; 1024];
    while !String::from_utf8_lossy(&seen).contains("data: first") {
        let n = tokio::time::timeout(EVENTUALLY, events.read(&mut buf)).await.expect("in time").expect("read");
        assert!(n > 0, "closed early");
        seen.extend_from_slice(&buf[..n]);
    }
    // A gRPC server stream over HTTP/2: one message, then it would wait for ever.
    let io = hyper_util::rt::TokioIo::new(TcpStream::connect(server.addr).await.expect("connect"));
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io).await.expect("h2");
    tokio::spawn(connection);
    let request = http::Request::post("http://test/grpc-stream")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .expect("request");
    let response = sender.send_request(request).await.expect("a response");
    let mut body = response.into_body();
    let first = http_body_util::BodyExt::frame(&mut body).await.expect("a frame").expect("data");
    assert!(first.is_data());

    let _ = server.stop.take().expect("stop").send(());
    assert!(closed_by_server(&mut events).await, "the event stream ends and its connection closes");
    let trailers = tokio::time::timeout(EVENTUALLY, async {
        loop {
            match http_body_util::BodyExt::frame(&mut body).await {
                Some(Ok(frame)) if frame.is_trailers() => return frame.into_trailers().ok(),
                Some(Ok(_)) => {}
                _ => return None,
            }
        }
    })
    .await
    .expect("in time")
    .expect("trailers");
    assert_eq!(trailers.get("grpc-status").map(|v| v.as_bytes()), Some(&b"14"[..]), "{trailers:?}");
    let ended = tokio::time::timeout(EVENTUALLY, &mut server.task).await;
    assert!(matches!(ended, Ok(Ok(Ok(())))), "the server ends once the streams have: {ended:?}");
    let tail = String::from_utf8_lossy(&seen);
    assert!(tail.contains("text/event-stream"), "{tail}");
}

#[tokio::test]
async fn unusable_limits_are_refused() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let limits = ConnectionLimits { max_connections: 0, ..ConnectionLimits::default() };
    let error = Server::new(listener, Router::new()).limits(limits).await.expect_err("refused");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
}

/// A request head for `/upload` declaring a body of `length` bytes.
fn upload_head(length: usize) -> String {
    format!("POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: {length}\r\n\r\n")
}

#[tokio::test]
async fn an_answer_given_before_its_body_was_read_says_the_connection_closes_and_a_read_body_keeps_it_open() {
    let server = start(ConnectionLimits::default()).await;
    // Read to its end: the connection stays open for the next request, and says nothing of closing.
    let mut kept = TcpStream::connect(server.addr).await.expect("connect");
    kept.write_all(format!("{}abc", upload_head(3)).as_bytes()).await.expect("write");
    let read = read_response(&mut kept).await;
    assert!(read.contains("3 bytes") && !read.to_ascii_lowercase().contains("connection: close"), "{read}");
    assert!(request(&mut kept, "/health").await.starts_with("HTTP/1.1 200"), "the connection carries another request");

    // Answered before the body is read, so the connection cannot find the next request — and the
    // answer says so, for a keep-alive client to open another.
    let mut refused = TcpStream::connect(server.addr).await.expect("connect");
    let head = format!("POST /refuse HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n\r\n0123456789", 2 << 20);
    refused.write_all(head.as_bytes()).await.expect("write");
    let answer = read_response(&mut refused).await;
    assert!(answer.starts_with("HTTP/1.1 413") && answer.contains("too large"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("\r\nconnection: close\r\n"), "{answer}");
    refused.shutdown().await.expect("shutdown");
    assert!(closed_by_server(&mut refused).await, "the server closes after the answer");
}

#[tokio::test]
async fn the_close_after_an_unread_body_lingers_so_that_a_client_still_sending_reads_its_answer() {
    let server = start(ConnectionLimits::default()).await;
    let socket = TcpStream::connect(server.addr).await.expect("connect");
    let (mut reader, mut writer) = socket.into_split();
    // The client sends its whole body, as a client that does not wait for an early answer does:
    // 16 MiB, more than the socket buffers hold, so the server must read (and drop) it for the
    // writes to go through.
    let body = vec![b'x'; 16 << 20];
    let sent = tokio::spawn(async move {
        writer.write_all(upload_head(body.len()).as_bytes()).await?;
        writer.write_all(&body).await?;
        writer.shutdown().await
    });
    let mut answer = Vec::new();
    let read = tokio::time::timeout(EVENTUALLY, reader.read_to_end(&mut answer)).await.expect("the server closes");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(read.is_ok(), "the connection ended cleanly, not reset: {read:?} after {answer}");
    assert!(answer.contains("unreadable") && answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    let sent = tokio::time::timeout(EVENTUALLY, sent).await.expect("the body goes through").expect("join");
    assert!(sent.is_ok(), "the server read what the client still sent: {sent:?}");
}

#[tokio::test]
async fn a_request_head_over_the_buffer_gets_431_saying_the_connection_closes() {
    let server = start(ConnectionLimits { max_buffer: 16 * 1024, ..ConnectionLimits::default() }).await;
    let mut socket = TcpStream::connect(server.addr).await.expect("connect");
    let head = format!("GET /health HTTP/1.1\r\nHost: test\r\nX-Big: {}\r\n\r\n", "x".repeat(32 * 1024));
    socket.write_all(head.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(EVENTUALLY, socket.read_to_end(&mut answer)).await.expect("closed").expect("read");
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 431"), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
}
