//! The connection limits of `accord serve` hold over TLS, as a real process: thousands of sockets
//! that never start a handshake or stall in the middle of one do not starve a client that
//! completes its own, stalled handshakes are closed by the first-byte timeout, and TLS connections
//! count against the connection cap (at the cap, a new handshake waits until a busy connection
//! ends).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use accord_test_support::tls::Pki;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `accord serve` over TLS, killed on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(certificate: &Path, key: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_accord"))
            .args(["serve", "--port", "0", "--store", "memory", "--host", "127.0.0.1"])
            .args(extra)
            .arg("--tls-cert")
            .arg(certificate)
            .arg("--tls-key")
            .arg(key)
            .env("ACCORD_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start accord serve");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = lines.next().expect("a line").expect("utf-8");
        assert!(first.contains(" listening on https://"), "{first}");
        let port = first.rsplit(':').next().and_then(|port| port.trim_end_matches('/').parse().ok()).expect("a port");
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, port }
    }
}

fn https_client(pki: &Pki) -> reqwest::Client {
    let ca = reqwest::Certificate::from_der(&pki.ca_der).expect("the CA");
    reqwest::Client::builder().tls_certs_only([ca]).timeout(Duration::from_secs(3)).build().expect("a client")
}

/// How many more descriptors this process may open, less a margin.
fn own_descriptor_room() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").expect("/proc/self/limits");
    let line = limits.lines().find(|line| line.starts_with("Max open files")).expect("the line");
    let soft: usize = line.split_whitespace().nth(3).and_then(|soft| soft.parse().ok()).unwrap_or(1024);
    soft.saturating_sub(100)
}

fn send_message(text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": format!("m-{text}"), "role": "ROLE_USER",
                    "parts": [{"data": {"text": text}}], "metadata": {"skillId": "echo"}}}})
}

/// The start of a TLS record that announces a 512-byte ClientHello and never sends it.
const STALLED_HELLO: [u8; 6] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_unfinished_handshakes_do_not_starve_a_client_that_finishes_its_own() {
    let pki = Pki::new("serve-limits");
    let pair = pki.server("server", &["127.0.0.1"]);
    let server = Server::start(&pair.cert_file, &pair.key_file, &[]);

    // 1,000 sockets that never send a byte and 1,000 that start a ClientHello and stall, or as
    // many as this process may open.
    let room = own_descriptor_room();
    let silent_count = 1000.min(room / 2);
    let stalled_count = 1000.min(room - silent_count);
    let mut held = Vec::with_capacity(silent_count + stalled_count);
    for _ in 0..silent_count {
        held.push(TcpStream::connect(("127.0.0.1", server.port)).await.expect("connect"));
    }
    for _ in 0..stalled_count {
        let mut socket = TcpStream::connect(("127.0.0.1", server.port)).await.expect("connect");
        socket.write_all(&STALLED_HELLO).await.expect("write");
        held.push(socket);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // A client that finishes its handshake is served at once: the client's 3 s timeout is below
    // the first-byte timeout (5 s) that frees the held sockets, so only a server with room for
    // its handshake answers within it.
    let client = https_client(&pki);
    let origin = format!("https://127.0.0.1:{}", server.port);
    let health = client.get(format!("{origin}/health")).send().await.expect("/health beside the held sockets");
    assert_eq!(health.status(), 200);
    let sent: Value = client
        .post(format!("{origin}/a2a/jsonrpc"))
        .header("A2A-Version", "1.0")
        .json(&send_message("beside"))
        .send()
        .await
        .expect("SendMessage beside the held sockets")
        .json()
        .await
        .expect("JSON");
    assert_eq!(sent["result"]["task"]["status"]["state"], json!("TASK_STATE_COMPLETED"), "{sent}");

    // A stalled handshake is closed by the server after the first-byte timeout.
    let stalled = held.last_mut().expect("a stalled socket");
    let mut rest = [0; 64];
    let read = tokio::time::timeout(Duration::from_secs(20), stalled.read(&mut rest)).await;
    let closed = match read {
        Ok(Ok(0)) => true,
        Ok(Err(error)) => error.kind() == std::io::ErrorKind::ConnectionReset,
        _ => false,
    };
    assert!(closed, "a stalled handshake is closed by the server");
}

/// A connection that has finished its TLS handshake with the server.
async fn handshake(pki: &Pki, port: u16) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca_der.clone()).expect("the CA");
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("a name");
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)).connect(name, tcp).await
}

/// A TLS connection busy with a stream that ticks for a minute (its answer's head read).
async fn busy_stream(pki: &Pki, port: u16, id: u32) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "SendStreamingMessage", "params": {
        "message": {"messageId": format!("m-ticks-{id}"), "role": "ROLE_USER",
                    "parts": [{"data": {"count": 600, "interval_ms": 100}}], "metadata": {"skillId": "ticks"}}}})
    .to_string();
    let request = format!(
        "POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: text/event-stream\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut connection = handshake(pki, port).await?;
    connection.write_all(request.as_bytes()).await?;
    let mut head = [0; 12];
    connection.read_exact(&mut head).await?;
    assert_eq!(&head, b"HTTP/1.1 200", "a stream is served");
    Ok(connection)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_connections_count_against_the_connection_cap() {
    let pki = Pki::new("serve-cap");
    let pair = pki.server("server", &["127.0.0.1"]);
    let server = Server::start(&pair.cert_file, &pair.key_file, &["--max-connections", "2"]);

    let first = busy_stream(&pki, server.port, 1).await.expect("a busy TLS connection under the cap");
    let second = busy_stream(&pki, server.port, 2).await.expect("a second busy TLS connection at the cap");

    // A third handshake waits: the two TLS connections fill the cap.
    let waiting = tokio::time::timeout(Duration::from_millis(800), handshake(&pki, server.port)).await;
    assert!(waiting.is_err(), "a third handshake must not be served while two TLS connections are busy");

    // One busy connection ends: the next handshake is served.
    drop(second);
    let served = tokio::time::timeout(Duration::from_secs(10), busy_stream(&pki, server.port, 3)).await;
    assert!(served.is_ok_and(|stream| stream.is_ok()), "a connection is served once a busy one ended");
    drop(first);
}
