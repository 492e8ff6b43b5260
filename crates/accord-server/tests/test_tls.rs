//! HTTPS served by the serve loop, on a real loopback port with certificates made by the test:
//! every face over TLS (JSON-RPC, HTTP+JSON, Lucid, the card with `https://` URLs, gRPC over
//! HTTP/2), a reload that new handshakes see while a bad pair keeps the old one, handshakes that
//! never finish closed by the first-byte timeout without starving others, and files that do not
//! load refused with their name and cause.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_grpc::pb;
use accord_grpc::pb::a2a_service_client::A2aServiceClient;
use accord_server::serve::{ConnectionLimits, Server};
use accord_server::tls::{TlsConfig, TlsError, TlsFiles, not_after};
use accord_server::{A2aConfig, AgentRouterExt, GrpcAddress, ServerConfig};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose, SerialNumber,
};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A generous bound for "eventually": far above every configured timeout.
const EVENTUALLY: Duration = Duration::from_secs(10);

/// A test certificate authority.
struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("CA key");
        Self { issuer: CertifiedIssuer::self_signed(params, key).expect("CA certificate") }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `localhost` and 127.0.0.1 with `serial`, signed with a key of
    /// `algorithm`: (certificate PEM, key PEM, certificate DER).
    fn server(&self, serial: u64, algorithm: &'static rcgen::SignatureAlgorithm) -> (String, String, Vec<u8>) {
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).expect("server params");
        params.serial_number = Some(SerialNumber::from(serial));
        params.not_after = rcgen::date_time_ymd(2040, 6, 15);
        let key = if algorithm == &rcgen::PKCS_RSA_SHA256 {
            KeyPair::generate_rsa_for(algorithm, rcgen::RsaKeySize::_2048).expect("RSA key")
        } else {
            KeyPair::generate_for(algorithm).expect("key")
        };
        let certificate = params.signed_by(&key, &self.issuer).expect("server certificate");
        (certificate.pem(), key.serialize_pem(), certificate.der().to_vec())
    }
}

/// Writes a certificate (with the CA after it, as a chain) and its key into `dir`.
fn write_pair(dir: &Path, certificate: &str, ca: &Ca, key: &str) -> TlsFiles {
    let files = TlsFiles { certificate: dir.join("cert.pem"), key: dir.join("key.pem") };
    std::fs::write(&files.certificate, format!("{certificate}{}", ca.pem())).expect("write the certificate");
    std::fs::write(&files.key, key).expect("write the key");
    files
}

/// A fresh directory under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let random: u64 = rand_suffix();
        let path = std::env::temp_dir().join(format!("accord-tls-{name}-{}-{random}", std::process::id()));
        std::fs::create_dir_all(&path).expect("create a temporary directory");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(u64::from(std::process::id()));
    hasher.finish()
}

fn agent() -> Agent {
    Agent::builder("tls-test")
        .skill(
            Skill::builder("echo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent")
}

fn app() -> axum::Router {
    let runtime = TaskRuntime::new(agent(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let config = ServerConfig::default()
        .tasks(runtime)
        .a2a(Some(A2aConfig { grpc: Some(GrpcAddress::SamePort), ..A2aConfig::default() }));
    agent().router_with(config)
}

/// A TLS server on a loopback port, stopped when dropped.
struct TlsServer {
    port: u16,
    _stop: oneshot::Sender<()>,
}

async fn start(tls: TlsConfig, limits: ConnectionLimits) -> TlsServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = Server::new(listener, app()).limits(limits).tls(tls).with_graceful_shutdown(async {
        let _ = stopped.await;
    });
    tokio::spawn(server.run());
    TlsServer { port, _stop: stop }
}

fn https_client(ca: &Ca) -> reqwest::Client {
    let root = reqwest::Certificate::from_pem(ca.pem().as_bytes()).expect("CA certificate");
    reqwest::Client::builder().tls_certs_only([root]).build().expect("client")
}

/// A rustls client trusting `ca`, offering `alpn`.
fn rustls_client(ca: &Ca, alpn: &[&[u8]]) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(ca.issuer.der().to_vec())).expect("CA root");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// The DER of the certificate a new handshake with the server presents.
async fn presented_certificate(port: u16, ca: &Ca) -> Vec<u8> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("name");
    let stream = rustls_client(ca, &[b"http/1.1"]).connect(name, tcp).await.expect("handshake");
    stream.get_ref().1.peer_certificates().expect("a certificate")[0].to_vec()
}

#[tokio::test]
async fn every_face_answers_over_https_and_the_card_says_https() {
    let dir = TempDir::new("faces");
    let ca = Ca::new("Accord test CA");
    let (certificate, key, _) = ca.server(1, &rcgen::PKCS_ECDSA_P256_SHA256);
    let tls = TlsConfig::from_files(write_pair(&dir.0, &certificate, &ca, &key)).expect("the pair loads");
    let server = start(tls, ConnectionLimits::default()).await;
    let origin = format!("https://127.0.0.1:{}", server.port);
    let client = https_client(&ca);

    let card: Value = client
        .get(format!("{origin}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("the card over HTTPS")
        .json()
        .await
        .expect("a JSON card");
    let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
    assert!(interfaces.len() >= 3, "the card lists the bindings: {card}");
    for interface in interfaces {
        let url = interface["url"].as_str().expect("a URL");
        if interface["protocolBinding"] == "GRPC" {
            // A gRPC target is host:port; the port is the TLS one.
            assert_eq!(url, format!("127.0.0.1:{}", server.port));
        } else {
            assert!(url.starts_with(&format!("{origin}/")), "every HTTP interface URL is https://: {url}");
        }
    }

    let rpc: Value = client
        .post(format!("{origin}/a2a/jsonrpc"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
            "messageId": "m1", "role": "ROLE_USER", "parts": [{"data": {"data": {"n": 1}}}],
            "metadata": {"skill": "echo"}}}}))
        .send()
        .await
        .expect("JSON-RPC over HTTPS")
        .json()
        .await
        .expect("a JSON-RPC answer");
    assert_eq!(rpc["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{rpc}");

    let rest = client
        .post(format!("{origin}/a2a/rest/message:send"))
        .header("A2A-Version", "1.0")
        .json(&json!({"message": {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "hi"}],
            "metadata": {"skill": "echo"}}}))
        .send()
        .await
        .expect("HTTP+JSON over HTTPS");
    assert_eq!(rest.status(), 200);
    let rest: Value = rest.json().await.expect("a JSON answer");
    assert_eq!(rest["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{rest}");

    let lucid = client
        .post(format!("{origin}/entrypoints/echo/invoke"))
        .json(&json!({"input": {"n": 2}}))
        .send()
        .await
        .expect("Lucid over HTTPS");
    assert_eq!(lucid.status(), 200);
    let lucid: Value = lucid.json().await.expect("a JSON answer");
    assert_eq!(lucid["output"], json!({"n": 2}), "{lucid}");

    // gRPC: HTTP/2 chosen by ALPN on the same port.
    let connector = rustls_client(&ca, &[b"h2"]);
    let port = server.port;
    let channel = tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_uri| {
            let connector = connector.clone();
            async move {
                let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
                let name = ServerName::try_from("localhost").expect("name");
                let stream = connector.connect(name, tcp).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            }
        }))
        .await
        .expect("an HTTP/2 connection over TLS");
    let mut grpc = A2aServiceClient::new(channel);
    let mut request = tonic::Request::new(pb::GetTaskRequest { id: "missing".into(), ..Default::default() });
    request.metadata_mut().insert("a2a-version", "1.0".parse().expect("metadata"));
    let status = grpc.get_task(request).await.expect_err("no such task");
    assert_eq!(status.code(), tonic::Code::NotFound, "the gRPC binding answered over TLS: {status:?}");
}

#[tokio::test]
async fn plain_http_on_a_tls_port_gets_no_answer() {
    let dir = TempDir::new("plain");
    let ca = Ca::new("Accord test CA");
    let (certificate, key, _) = ca.server(1, &rcgen::PKCS_ED25519);
    let tls = TlsConfig::from_files(write_pair(&dir.0, &certificate, &ca, &key)).expect("the pair loads");
    let server = start(tls, ConnectionLimits::default()).await;
    let mut tcp = TcpStream::connect(("127.0.0.1", server.port)).await.expect("connect");
    tcp.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n").await.expect("write");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(EVENTUALLY, tcp.read_to_end(&mut answer)).await.expect("closed in time");
    assert!(!answer.starts_with(b"HTTP/"), "no HTTP answer on a TLS port: {:?}", String::from_utf8_lossy(&answer));
}

#[tokio::test]
async fn rsa_ecdsa_and_ed25519_keys_are_served() {
    let ca = Ca::new("Accord test CA");
    for (name, algorithm) in
        [("rsa", &rcgen::PKCS_RSA_SHA256), ("ecdsa", &rcgen::PKCS_ECDSA_P384_SHA384), ("ed25519", &rcgen::PKCS_ED25519)]
    {
        let dir = TempDir::new(name);
        let (certificate, key, der) = ca.server(3, algorithm);
        let tls = TlsConfig::from_files(write_pair(&dir.0, &certificate, &ca, &key)).expect("the pair loads");
        let server = start(tls, ConnectionLimits::default()).await;
        assert_eq!(presented_certificate(server.port, &ca).await, der, "{name}");
    }
}

#[tokio::test]
async fn a_reload_reaches_new_handshakes_and_a_bad_pair_keeps_the_old_one() {
    let dir = TempDir::new("reload");
    let ca = Ca::new("Accord test CA");
    let (first, first_key, first_der) = ca.server(1, &rcgen::PKCS_ECDSA_P256_SHA256);
    let files = write_pair(&dir.0, &first, &ca, &first_key);
    let tls = TlsConfig::from_files(files.clone()).expect("the pair loads");
    assert_eq!(tls.expiry(), Some(2_223_331_200), "notAfter 2040-06-15T00:00:00Z");
    let server = start(tls.clone(), ConnectionLimits::default()).await;
    assert_eq!(presented_certificate(server.port, &ca).await, first_der);
    assert!(tls.reload_if_changed().is_none(), "nothing changed yet");

    // An open connection goes on across the reload.
    let client = https_client(&ca);
    let origin = format!("https://localhost:{}", server.port);
    assert_eq!(client.get(format!("{origin}/health")).send().await.expect("health").status(), 200);

    let (second, second_key, second_der) = ca.server(2, &rcgen::PKCS_ED25519);
    // A different modification time even on a coarse clock.
    tokio::time::sleep(Duration::from_millis(20)).await;
    write_pair(&dir.0, &second, &ca, &second_key);
    bump_mtime(&files);
    tls.reload_if_changed().expect("the files changed").expect("the new pair loads");
    assert_eq!(presented_certificate(server.port, &ca).await, second_der, "new handshakes see the new certificate");
    assert_eq!(client.get(format!("{origin}/health")).send().await.expect("health").status(), 200);

    // A key that is not the certificate's: the second pair stays.
    let (_, other_key, _) = ca.server(9, &rcgen::PKCS_ED25519);
    std::fs::write(&files.key, other_key).expect("write");
    bump_mtime(&files);
    let error = tls.reload_if_changed().expect("the key changed").expect_err("a mismatched key is refused");
    assert!(matches!(error, TlsError::Mismatch { .. }), "{error}");
    assert!(error.to_string().contains("key.pem"), "the message names the file: {error}");
    assert!(tls.reload_if_changed().is_none(), "a failed pair is reported once, not at every poll");
    assert_eq!(presented_certificate(server.port, &ca).await, second_der, "the old pair stays");

    // A certificate file that is not PEM: the second pair stays too.
    // Read on SIGHUP (`reload`): the poll does not try the refused files again (one ERROR line).
    std::fs::write(&files.certificate, "not a certificate").expect("write");
    bump_mtime(&files);
    let error = tls.reload().expect_err("garbage is refused");
    assert!(matches!(error, TlsError::Certificate { .. }), "{error}");
    assert!(tls.reload_if_changed().is_none(), "files refused on SIGHUP are not tried again by the poll");
    assert_eq!(presented_certificate(server.port, &ca).await, second_der, "the old pair stays");
}

/// Moves both files' modification times a second forward, so that a poll sees a change even
/// where the clock is coarse.
fn bump_mtime(files: &TlsFiles) {
    for path in [&files.certificate, &files.key] {
        let file = std::fs::OpenOptions::new().write(true).open(path).expect("open");
        let modified = file.metadata().and_then(|metadata| metadata.modified()).expect("modified");
        file.set_modified(modified + Duration::from_secs(1)).expect("set the modification time");
    }
}

#[tokio::test]
async fn files_that_do_not_load_name_the_file_and_the_cause() {
    let dir = TempDir::new("bad");
    let ca = Ca::new("Accord test CA");
    let (certificate, key, _) = ca.server(1, &rcgen::PKCS_ECDSA_P256_SHA256);
    let files = write_pair(&dir.0, &certificate, &ca, &key);

    let missing = TlsFiles { certificate: dir.0.join("absent.pem"), key: files.key.clone() };
    let error = TlsConfig::from_files(missing).expect_err("a missing file");
    assert!(error.to_string().contains("absent.pem") && error.to_string().contains("cannot read"), "{error}");

    let empty = dir.0.join("empty.pem");
    std::fs::write(&empty, "").expect("write");
    let error = TlsConfig::from_files(TlsFiles { certificate: empty.clone(), key: files.key.clone() })
        .expect_err("no certificate");
    assert!(matches!(error, TlsError::Certificate { .. }), "{error}");
    let error =
        TlsConfig::from_files(TlsFiles { certificate: files.certificate.clone(), key: empty }).expect_err("no key");
    assert!(matches!(error, TlsError::Key { .. }), "{error}");

    // The key file given as the certificate, and the other way round: neither is read as the other.
    let error = TlsConfig::from_files(TlsFiles { certificate: files.key.clone(), key: files.certificate.clone() })
        .expect_err("swapped files");
    assert!(error.to_string().contains("key.pem"), "{error}");
    assert!(!error.to_string().contains("PRIVATE KEY-----\n"), "no key material in the message: {error}");

    let (_, other_key, _) = ca.server(2, &rcgen::PKCS_ECDSA_P256_SHA256);
    std::fs::write(&files.key, &other_key).expect("write");
    let error = TlsConfig::from_files(files).expect_err("a key of another certificate");
    assert!(matches!(error, TlsError::Mismatch { .. }), "{error}");
    let text = error.to_string();
    assert!(!text.contains(other_key.lines().nth(1).expect("a base64 line")), "no key material: {text}");
}

#[tokio::test]
async fn a_handshake_that_never_finishes_is_closed_by_the_first_byte_timeout_and_starves_no_one() {
    let dir = TempDir::new("stall");
    let ca = Ca::new("Accord test CA");
    let (certificate, key, der) = ca.server(1, &rcgen::PKCS_ECDSA_P256_SHA256);
    // One handshake at a time: a stalled one holds the only slot until the timeout closes it.
    let tls =
        TlsConfig::from_files(write_pair(&dir.0, &certificate, &ca, &key)).expect("the pair loads").max_handshakes(1);
    let limits = ConnectionLimits { first_byte_timeout: Duration::from_millis(300), ..ConnectionLimits::default() };
    let server = start(tls, limits).await;

    // A client that sends the start of a ClientHello and then nothing.
    let mut stalled = TcpStream::connect(("127.0.0.1", server.port)).await.expect("connect");
    stalled.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).await.expect("write");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = tokio::time::Instant::now();
    // A good client waits for the slot at most until the stalled one is closed.
    let presented = tokio::time::timeout(EVENTUALLY, presented_certificate(server.port, &ca)).await;
    assert_eq!(presented.expect("a handshake once the stalled one is closed"), der);
    assert!(started.elapsed() < Duration::from_secs(5), "served within the first-byte timeout's reach");
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(EVENTUALLY, stalled.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the stalled handshake's connection was closed");
}

#[test]
fn not_after_reads_utc_and_generalized_times() {
    let ca = Ca::new("Accord test CA");
    let key = KeyPair::generate().expect("key");
    for (year, expected) in [(2040, 2_223_331_200_i64), (2051, 2_570_400_000)] {
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
        params.not_after = rcgen::date_time_ymd(year, 6, 15);
        let certificate = params.signed_by(&key, &ca.issuer).expect("certificate");
        // 2040 is written as a UTCTime, 2051 as a GeneralizedTime (RFC 5280 §4.1.2.5).
        assert_eq!(not_after(certificate.der()), Some(expected), "{year}");
    }
}

/// A client certificate for `uri` (a SPIFFE id) issued by `ca`, valid from `from` to `until`:
/// the PEM of the certificate followed by its key, as reqwest's `Identity` takes it.
fn client_identity(ca: &Ca, uri: &str, from: (i32, u8, u8), until: (i32, u8, u8)) -> reqwest::Identity {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.subject_alt_names =
        vec![rcgen::SanType::URI(rcgen::string::Ia5String::try_from(uri.to_owned()).expect("an IA5 URI"))];
    params.distinguished_name.push(DnType::CommonName, "not the subject when a URI is there");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    params.not_before = rcgen::date_time_ymd(from.0, from.1, from.2);
    params.not_after = rcgen::date_time_ymd(until.0, until.1, until.2);
    let key = KeyPair::generate().expect("key");
    let certificate = params.signed_by(&key, &ca.issuer).expect("client certificate");
    reqwest::Identity::from_pem(format!("{}{}", certificate.pem(), key.serialize_pem()).as_bytes()).expect("identity")
}

const CLIENT: &str = "spiffe://example.org/ns/shop/sa/client";
const VALID: ((i32, u8, u8), (i32, u8, u8)) = ((2020, 1, 1), (2040, 1, 1));

/// A server asking for client certificates of `client_ca` (`mode`), whose `pay` skill needs
/// `shop:pay`, with `mapping` as the certificates' scopes.
async fn mtls_server(
    dir: &TempDir,
    server_ca: &Ca,
    client_ca: &Ca,
    mode: accord_server::tls::ClientAuth,
    mapping: accord_server::auth::ClientCertificates,
) -> TlsServer {
    let (certificate, key, _) = server_ca.server(1, &rcgen::PKCS_ECDSA_P256_SHA256);
    let ca_file = dir.0.join("clients.pem");
    std::fs::write(&ca_file, client_ca.pem()).expect("write");
    let tls = TlsConfig::from_files(write_pair(&dir.0, &certificate, server_ca, &key))
        .expect("the pair loads")
        .client_certificates(&ca_file, mode)
        .expect("the client CA loads");
    let agent = Agent::builder("mtls-test")
        .skill(
            Skill::builder("echo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(
            Skill::builder("pay")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent")
        .with_skill_scope("pay", "shop:pay")
        .expect("scope");
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let config = ServerConfig::default()
        .tasks(runtime)
        .a2a(Some(A2aConfig::default()))
        .auth(accord_server::auth::AuthConfig::new().client_certificates(mapping));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = Server::new(listener, agent.router_with(config)).tls(tls).with_graceful_shutdown(async {
        let _ = stopped.await;
    });
    tokio::spawn(server.run());
    TlsServer { port, _stop: stop }
}

fn client_with(ca: &Ca, identity: Option<reqwest::Identity>) -> reqwest::Client {
    let root = reqwest::Certificate::from_pem(ca.pem().as_bytes()).expect("CA certificate");
    let mut builder = reqwest::Client::builder().tls_certs_only([root]);
    if let Some(identity) = identity {
        builder = builder.identity(identity);
    }
    builder.build().expect("client")
}

async fn invoke(client: &reqwest::Client, port: u16, skill: &str) -> reqwest::Result<u16> {
    let response = client
        .post(format!("https://127.0.0.1:{port}/entrypoints/{skill}/invoke"))
        .json(&json!({"input": {"n": 1}}))
        .send()
        .await?;
    Ok(response.status().as_u16())
}

#[tokio::test]
async fn required_client_certificates_refuse_the_handshake_without_a_good_one_and_map_scopes() {
    use accord_server::auth::ClientCertificates;
    use accord_server::tls::ClientAuth;
    let server_ca = Ca::new("Accord server CA");
    let client_ca = Ca::new("Accord client CA");
    let other_ca = Ca::new("Another CA");

    let dir = TempDir::new("mtls-unmapped");
    let server = mtls_server(&dir, &server_ca, &client_ca, ClientAuth::Required, ClientCertificates::new()).await;
    let port = server.port;
    assert!(invoke(&client_with(&server_ca, None), port, "echo").await.is_err(), "no certificate: refused");
    let foreign = client_identity(&other_ca, CLIENT, VALID.0, VALID.1);
    assert!(invoke(&client_with(&server_ca, Some(foreign)), port, "echo").await.is_err(), "another CA: refused");
    let expired = client_identity(&client_ca, CLIENT, (2020, 1, 1), (2021, 1, 1));
    assert!(invoke(&client_with(&server_ca, Some(expired)), port, "echo").await.is_err(), "expired: refused");
    let not_yet = client_identity(&client_ca, CLIENT, (2039, 1, 1), (2040, 1, 1));
    assert!(invoke(&client_with(&server_ca, Some(not_yet)), port, "echo").await.is_err(), "not yet valid: refused");
    let good = client_with(&server_ca, Some(client_identity(&client_ca, CLIENT, VALID.0, VALID.1)));
    assert_eq!(invoke(&good, port, "echo").await.expect("served"), 200, "a good certificate is served");
    assert_eq!(invoke(&good, port, "pay").await.expect("answered"), 403, "no mapping: no shop:pay");

    let card: Value = good
        .get(format!("https://127.0.0.1:{port}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("JSON");
    let schemes = card["securitySchemes"].as_object().expect("schemes");
    assert!(schemes.values().any(|scheme| scheme.get("mtlsSecurityScheme").is_some()), "{card}");

    let dir = TempDir::new("mtls-mapped");
    let mapping = ClientCertificates::new().scopes(CLIENT, ["shop:quote", "shop:pay"]);
    let server = mtls_server(&dir, &server_ca, &client_ca, ClientAuth::Required, mapping).await;
    let good = client_with(&server_ca, Some(client_identity(&client_ca, CLIENT, VALID.0, VALID.1)));
    assert_eq!(invoke(&good, server.port, "pay").await.expect("served"), 200, "the mapping grants shop:pay");
    let stranger = client_with(
        &server_ca,
        Some(client_identity(&client_ca, "spiffe://example.org/ns/shop/sa/other", VALID.0, VALID.1)),
    );
    assert_eq!(invoke(&stranger, server.port, "pay").await.expect("answered"), 403, "another subject holds none");
}

#[tokio::test]
async fn optional_client_certificates_let_anonymous_callers_in() {
    use accord_server::auth::ClientCertificates;
    use accord_server::tls::ClientAuth;
    let server_ca = Ca::new("Accord server CA");
    let client_ca = Ca::new("Accord client CA");
    let dir = TempDir::new("mtls-optional");
    let mapping = ClientCertificates::new().scopes(CLIENT, ["shop:pay"]);
    let server = mtls_server(&dir, &server_ca, &client_ca, ClientAuth::Optional, mapping).await;
    let anonymous = client_with(&server_ca, None);
    assert_eq!(invoke(&anonymous, server.port, "echo").await.expect("served"), 200, "anonymous is served");
    assert_ne!(invoke(&anonymous, server.port, "pay").await.expect("answered"), 200, "but holds no scope");
    let good = client_with(&server_ca, Some(client_identity(&client_ca, CLIENT, VALID.0, VALID.1)));
    assert_eq!(invoke(&good, server.port, "pay").await.expect("served"), 200);
    let other_ca = Ca::new("Another CA");
    let foreign = client_with(&server_ca, Some(client_identity(&other_ca, CLIENT, VALID.0, VALID.1)));
    assert!(invoke(&foreign, server.port, "echo").await.is_err(), "a certificate that does not verify is refused");
}

#[test]
fn the_subject_is_the_uri_san_else_the_dns_san_else_the_common_name() {
    use accord_server::tls::PeerCertificate;
    let ca = Ca::new("Accord test CA");
    let key = KeyPair::generate().expect("key");
    let make = |sans: Vec<rcgen::SanType>, cn: Option<&str>| {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.subject_alt_names = sans;
        if let Some(cn) = cn {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        PeerCertificate::from_der(params.signed_by(&key, &ca.issuer).expect("certificate").der())
    };
    let uri = rcgen::SanType::URI(rcgen::string::Ia5String::try_from(CLIENT).expect("IA5"));
    let dns = rcgen::SanType::DnsName(rcgen::string::Ia5String::try_from("client.example").expect("IA5"));
    assert_eq!(make(vec![dns.clone(), uri], Some("cn")).subject().as_deref(), Some(CLIENT));
    assert_eq!(make(vec![dns], Some("cn")).subject().as_deref(), Some("client.example"));
    assert_eq!(make(Vec::new(), Some("just a name")).subject().as_deref(), Some("just a name"));
    let other = make(Vec::new(), Some("just a name"));
    assert!(other.issuer().is_some_and(|issuer| !issuer.is_empty()));
}

/// A plain-HTTP server (a proxy in front terminates TLS) whose `pay` skill needs `shop:pay`,
/// trusting `trusted` as proxies.
async fn behind_proxy(trusted: &str) -> (u16, oneshot::Sender<()>) {
    use accord_server::auth::{AuthConfig, ClientCertificates};
    let agent = Agent::builder("xfcc-test")
        .skill(
            Skill::builder("pay")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent")
        .with_skill_scope("pay", "shop:pay")
        .expect("scope");
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let config = ServerConfig::default()
        .tasks(runtime)
        .trusted_proxies(vec![trusted.parse().expect("a network")])
        .auth(AuthConfig::new().client_certificates(ClientCertificates::new().scopes(CLIENT, ["shop:pay"])));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = Server::new(listener, agent.router_with(config)).with_graceful_shutdown(async {
        let _ = stopped.await;
    });
    tokio::spawn(server.run());
    (port, stop)
}

async fn pay_through_proxy(port: u16, xfcc: Option<&str>) -> u16 {
    let mut request = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/entrypoints/pay/invoke"))
        .json(&json!({"input": {}}));
    if let Some(xfcc) = xfcc {
        request = request.header("x-forwarded-client-cert", xfcc);
    }
    request.send().await.expect("answered").status().as_u16()
}

#[tokio::test]
async fn x_forwarded_client_cert_is_a_principal_only_from_a_trusted_proxy() {
    let xfcc = format!("By=spiffe://example.org/ns/edge/sa/envoy;Hash=0123abcd;URI={CLIENT}");
    let (port, _stop) = behind_proxy("127.0.0.1/32").await;
    assert_eq!(pay_through_proxy(port, Some(&xfcc)).await, 200, "the proxy's client holds shop:pay");
    assert_ne!(pay_through_proxy(port, None).await, 200, "no header: anonymous");
    let other = "Hash=0123abcd;URI=spiffe://example.org/ns/shop/sa/other";
    assert_eq!(pay_through_proxy(port, Some(other)).await, 403, "another subject holds no scope");

    let (port, _stop) = behind_proxy("10.0.0.0/8").await;
    assert_ne!(pay_through_proxy(port, Some(&xfcc)).await, 200, "from a peer that is not a trusted proxy: ignored");
}

#[tokio::test]
async fn keep_reloaded_picks_up_changed_files_by_itself() {
    let dir = TempDir::new("poll");
    let ca = Ca::new("Accord test CA");
    let (first, first_key, first_der) = ca.server(1, &rcgen::PKCS_ECDSA_P256_SHA256);
    let files = write_pair(&dir.0, &first, &ca, &first_key);
    let tls = TlsConfig::from_files(files.clone()).expect("the pair loads");
    let server = start(tls.clone(), ConnectionLimits::default()).await;
    let reloader = tokio::spawn(tls.keep_reloaded(Duration::from_millis(50), futures_util::stream::pending()));
    assert_eq!(presented_certificate(server.port, &ca).await, first_der);
    let (second, second_key, second_der) = ca.server(2, &rcgen::PKCS_ED25519);
    write_pair(&dir.0, &second, &ca, &second_key);
    bump_mtime(&files);
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    while presented_certificate(server.port, &ca).await != second_der {
        assert!(tokio::time::Instant::now() < deadline, "the poll reloads the changed files");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    reloader.abort();
}
