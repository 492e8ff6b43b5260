//! The clients against Accord's routes served over TLS on loopback, with certificates made by the
//! test: the test CA trusted through [`TlsOptions`], and each way a handshake fails (an unknown
//! issuer, an expired certificate, a name mismatch, a client certificate missing) named in the
//! error; mutual TLS over the Lucid, A2A JSON-RPC and gRPC clients; TLS files refused before
//! anything is sent.

use std::sync::Arc;
use std::time::Duration;

use accord_client::a2a::{A2aClient, A2aClientOptions, Binding, parse_card, user_text_message};
use accord_client::{Client, ClientError, InvokeOptions, TlsOptions};
use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::tls::{ClientAuth, Issued, Pki, TlsPeer, TlsServer};
use accord_types::a2a::{SendMessageRequest, SendMessageResponse, TaskState};
use axum::extract::ConnectInfo;
use axum::routing::get;
use serde_json::{Value, json};

fn agent() -> Agent {
    Agent::builder("tls-client-test")
        .description("An agent for the TLS client tests")
        .skill(
            Skill::builder("echo")
                .description("Echoes its input")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent")
}

/// Accord's routes (cards, Lucid, A2A JSON-RPC, HTTP+JSON and gRPC on the same port) and
/// `/peer`, which tells whether the connection carried a client certificate and which.
fn app() -> axum::Router {
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let a2a = accord_server::A2aConfig { grpc: Some(accord_server::GrpcAddress::SamePort), ..Default::default() };
    let peer = get(|ConnectInfo(peer): ConnectInfo<TlsPeer>| async move {
        axum::Json(json!({"clientCertificate": peer.client_certificate.map(|cert| cert.len())}))
    });
    agent.router_with(ServerConfig::default().tasks(runtime).a2a(Some(a2a))).route("/peer", peer)
}

async fn serve(pki: &Pki, identity: &Issued, client_auth: ClientAuth) -> TlsServer {
    TlsServer::start(app(), identity, pki, client_auth).await
}

fn trusting(pki: &Pki) -> TlsOptions {
    TlsOptions { ca_file: Some(pki.ca_file.clone()), ..TlsOptions::default() }
}

fn with_client(pki: &Pki, client: &Issued) -> TlsOptions {
    TlsOptions {
        client_cert: Some(client.cert_file.clone()),
        client_key: Some(client.key_file.clone()),
        ..trusting(pki)
    }
}

/// The card's URLs on https: the routes learn their origin from the request, which reached them
/// without the scheme (the TLS is the test's listener, not Accord's).
fn https(card: &Value) -> Value {
    // A gRPC interface stays `host:port`, as Accord's TLS card lists it: the client reads a bare
    // address on a card of https interfaces as gRPC over TLS.
    let text = card.to_string().replace("http://localhost:", "https://localhost:");
    serde_json::from_str(&text).expect("a card")
}

#[tokio::test]
async fn the_test_ca_is_trusted_and_without_it_the_issuer_is_unknown() {
    let pki = Pki::new("trusted");
    let server = serve(&pki, &pki.server("server", &["localhost"]), ClientAuth::None).await;

    let error = Client::new().fetch_card(&server.origin).await.expect_err("the platform's roots do not know the CA");
    let message = error.to_string();
    assert!(error.is_unreachable(), "{message}");
    assert!(message.contains("unknown issuer"), "{message}");

    let client = Client::with_tls(&trusting(&pki).load().expect("the CA file")).expect("a client");
    let card = client.fetch_card(&server.origin).await.expect("the card over TLS");
    assert_eq!(card.name, "tls-client-test");
    let card = serde_json::from_value(https(&serde_json::to_value(&card).expect("json"))).expect("card");
    let answer =
        client.invoke(&card, "echo", json!({"text": "over TLS"}), InvokeOptions::default()).await.expect("invoke");
    assert_eq!(answer.output, Some(json!({"text": "over TLS"})));
}

#[tokio::test]
async fn a_name_mismatch_and_an_expired_certificate_are_named() {
    let pki = Pki::new("names");
    let client = Client::with_tls(&trusting(&pki).load().expect("the CA file")).expect("a client");

    let elsewhere = serve(&pki, &pki.server("elsewhere", &["agent.example"]), ClientAuth::None).await;
    let message = client.fetch_card(&elsewhere.origin).await.expect_err("issued for another name").to_string();
    assert!(message.contains("not valid for name"), "{message}");

    let expired = serve(&pki, &pki.expired_server("expired", &["localhost"]), ClientAuth::None).await;
    let message = client.fetch_card(&expired.origin).await.expect_err("expired in 2021").to_string();
    assert!(message.contains("expired"), "{message}");
    assert!(!message.contains("Expired") && !message.contains("rustls"), "no Rust names: {message}");
}

#[tokio::test]
async fn mutual_tls_presents_the_client_certificate_and_its_absence_is_named() {
    let pki = Pki::new("mutual");
    let server = serve(&pki, &pki.server("server", &["localhost"]), ClientAuth::Required).await;
    let client_cert = pki.client("client", "agent-a");

    let tls = with_client(&pki, &client_cert).load().expect("the client certificate");
    assert!(tls.has_client_certificate());
    let seen: Value = tls
        .http_client()
        .expect("a client")
        .get(server.url("/peer"))
        .send()
        .await
        .expect("the server accepts the certificate")
        .json()
        .await
        .expect("json");
    assert_eq!(seen["clientCertificate"], json!(client_cert.cert_der.len()), "the server saw the certificate");
    let card = Client::with_tls(&tls).expect("a client").fetch_card(&server.origin).await.expect("the card");
    assert_eq!(card.name, "tls-client-test");

    let without = Client::with_tls(&trusting(&pki).load().expect("the CA file")).expect("a client");
    let error = without.fetch_card(&server.origin).await.expect_err("the server requires a certificate");
    let message = error.to_string();
    assert!(message.contains("requires a client certificate"), "{message}");
}

async fn a2a_client(server: &TlsServer, tls: &TlsOptions, binding: Binding) -> A2aClient {
    let tls = tls.load().expect("TLS files");
    let http = tls.http_client().expect("a client");
    let card = accord_client::a2a::fetch_card(&http, &server.origin, &Default::default()).await.expect("the card");
    let card = parse_card(https(&serde_json::to_value(&card).expect("json"))).expect("card");
    let options = A2aClientOptions {
        tls: Some(tls),
        request_timeout: Duration::from_secs(20),
        ..A2aClientOptions::with_bindings([binding.as_str()])
    };
    A2aClient::from_card(card, options).expect("a client")
}

fn echo() -> SendMessageRequest {
    let mut message = user_text_message(r#"{"n": 1}"#);
    message.metadata = json!({"skillId": "echo"}).as_object().cloned();
    SendMessageRequest { tenant: None, message, configuration: None, metadata: None }
}

#[tokio::test]
async fn the_a2a_client_speaks_mutual_tls_over_json_rpc_and_grpc() {
    let pki = Pki::new("a2a");
    let server = serve(&pki, &pki.server("server", &["localhost"]), ClientAuth::Required).await;
    let tls = with_client(&pki, &pki.client("client", "agent-a"));
    for binding in [Binding::JsonRpc, Binding::Grpc] {
        let client = a2a_client(&server, &tls, binding).await;
        assert_eq!(client.binding(), binding);
        match client.send_message(echo()).await.expect("send over mutual TLS") {
            SendMessageResponse::Task(task) => assert_eq!(task.status.state, TaskState::Completed, "{binding:?}"),
            SendMessageResponse::Message(message) => panic!("expected a task, got {message:?}"),
        }
    }

    // gRPC without the client certificate: the channel's handshake is refused, and said so.
    let card_client = a2a_client(&server, &tls, Binding::Grpc).await;
    let options = A2aClientOptions {
        tls: Some(trusting(&pki).load().expect("the CA file")),
        request_timeout: Duration::from_secs(20),
        ..A2aClientOptions::with_bindings(["GRPC"])
    };
    let client = A2aClient::from_card(card_client.card().clone(), options).expect("a client");
    let error = client.send_message(echo()).await.expect_err("no client certificate");
    assert!(error.is_unreachable(), "{error:?}");
    assert!(error.to_string().contains("requires a client certificate"), "{error:?}");

    // gRPC with the platform's roots only: the server's issuer is unknown, and said so.
    let options =
        A2aClientOptions { request_timeout: Duration::from_secs(20), ..A2aClientOptions::with_bindings(["GRPC"]) };
    let client = A2aClient::from_card(card_client.card().clone(), options).expect("a client");
    let error = client.send_message(echo()).await.expect_err("an unknown issuer");
    assert!(error.to_string().contains("unknown issuer"), "{error:?}");
}

#[test]
fn unusable_tls_files_are_refused_naming_the_file_and_the_cause() {
    let pki = Pki::new("files");
    let client = pki.client("client", "agent-a");
    let other = pki.client("other", "agent-b");
    let not_pem = pki.path("not-pem.txt");
    std::fs::write(&not_pem, "not a certificate").expect("write");
    let missing = pki.path("missing.pem");

    let refused = |options: TlsOptions| match options.load() {
        Err(error @ ClientError::TlsConfig { .. }) => error.to_string(),
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("{options:?} was accepted"),
    };
    let message = refused(TlsOptions { ca_file: Some(missing.clone()), ..TlsOptions::default() });
    assert!(message.contains("missing.pem") && message.contains("cannot be read"), "{message}");
    let message = refused(TlsOptions { ca_file: Some(not_pem.clone()), ..TlsOptions::default() });
    assert!(message.contains("no PEM certificate"), "{message}");
    let message = refused(TlsOptions {
        client_cert: Some(client.cert_file.clone()),
        client_key: Some(other.key_file.clone()),
        ..TlsOptions::default()
    });
    assert!(message.contains("does not match the certificate"), "{message}");
    let key_text = std::fs::read_to_string(&other.key_file).expect("key");
    let secret_line = key_text.lines().nth(1).expect("a base64 line");
    assert!(!message.contains(secret_line), "no key material in {message}");
    let message = refused(TlsOptions {
        client_cert: Some(client.cert_file.clone()),
        client_key: Some(client.cert_file.clone()),
        ..TlsOptions::default()
    });
    assert!(message.contains("no PEM private key"), "{message}");
    let message = refused(TlsOptions { client_cert: Some(client.cert_file.clone()), ..TlsOptions::default() });
    assert!(message.contains("without its private key"), "{message}");

    let loaded = with_client(&pki, &client).load().expect("the right files load");
    assert_eq!((loaded.extra_roots(), loaded.has_client_certificate()), (1, true));
    assert!(!format!("{loaded:?}").contains(secret_line));
}

/// A TLS 1.3 server refuses a client certificate only after the client's side of the handshake
/// is done, so a request can fail as a closed connection that names no cause: the client then
/// tries the handshake again ([`TlsConfig::refusal`]) and reads the server's alert. Here the probe
/// on its own: each refusal named, none where the handshake is accepted or nothing listens.
#[tokio::test]
async fn a_second_handshake_names_why_the_server_refuses_the_client() {
    let pki = Pki::new("probe");
    let server = serve(&pki, &pki.server("server", &["localhost"]), ClientAuth::Required).await;
    let url = reqwest::Url::parse(&server.origin).expect("the origin");

    let without = trusting(&pki).load().expect("the CA file").refusal(&url).await;
    assert!(without.as_deref().is_some_and(|cause| cause.contains("(certificate required)")), "{without:?}");

    let other = Pki::new("probe-other");
    let stranger = TlsOptions { ca_file: None, ..with_client(&other, &other.client("stranger", "stranger")) };
    let stranger = TlsOptions { ca_file: Some(pki.ca_file.clone()), ..stranger };
    let refused = stranger.load().expect("the other CA's client").refusal(&url).await;
    assert!(refused.as_deref().is_some_and(|cause| cause.contains("the server")), "{refused:?}");

    let accepted = with_client(&pki, &pki.client("client", "client")).load().expect("the client").refusal(&url).await;
    assert_eq!(accepted, None, "a handshake the server accepts is no refusal");

    let untrusted = TlsOptions::default().load().expect("defaults").refusal(&url).await;
    assert!(untrusted.as_deref().is_some_and(|cause| cause.contains("(unknown issuer)")), "{untrusted:?}");

    let plain = reqwest::Url::parse(&server.origin.replace("https://", "http://")).expect("a URL");
    assert_eq!(trusting(&pki).load().expect("the CA file").refusal(&plain).await, None, "http is not probed");
    let closed = reqwest::Url::parse("https://localhost:1/").expect("a URL");
    assert_eq!(trusting(&pki).load().expect("the CA file").refusal(&closed).await, None, "nothing listens");
}

/// A port whose first connection is closed at once and whose later ones reach `target`: the
/// first request fails with no TLS cause of its own, as when the HTTP client loses a TLS 1.3
/// server's alert, and the client's second handshake reaches the server.
async fn first_connection_dropped(target: u16) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("an address").port();
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((mut inbound, _)) = listener.accept().await {
            if std::mem::take(&mut first) {
                drop(inbound);
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    port
}

#[tokio::test]
async fn a_request_that_lost_the_refusal_is_named_by_a_second_handshake() {
    let pki = Pki::new("lost");
    let server = serve(&pki, &pki.server("server", &["localhost"]), ClientAuth::Required).await;
    let target: u16 =
        server.origin.rsplit(':').next().and_then(|port| port.trim_end_matches('/').parse().ok()).expect("a port");
    let tls = trusting(&pki).load().expect("the CA file");

    let origin = format!("https://localhost:{}", first_connection_dropped(target).await);
    let error = Client::with_tls(&tls).expect("a client").fetch_card(&origin).await.expect_err("no certificate");
    assert!(error.is_unreachable(), "{error}");
    assert!(error.tls_cause().is_some_and(|cause| cause.contains("(certificate required)")), "{error}");
    assert!(error.to_string().contains("TLS: the server requires a client certificate"), "{error}");

    let origin = format!("https://localhost:{}", first_connection_dropped(target).await);
    let options = A2aClientOptions { tls: Some(tls.clone()), ..A2aClientOptions::default() };
    let error = A2aClient::from_card_url(&origin, options).await.expect_err("no certificate");
    assert!(error.tls_cause().is_some_and(|cause| cause.contains("(certificate required)")), "{error}");

    // Where the server accepts the second handshake, the first failure stays as it was.
    let open = serve(&pki, &pki.server("open", &["localhost"]), ClientAuth::None).await;
    let target: u16 =
        open.origin.rsplit(':').next().and_then(|port| port.trim_end_matches('/').parse().ok()).expect("a port");
    let origin = format!("https://localhost:{}", first_connection_dropped(target).await);
    let error = Client::with_tls(&tls).expect("a client").fetch_card(&origin).await.expect_err("dropped");
    assert_eq!(error.tls_cause(), None, "{error}");
}
