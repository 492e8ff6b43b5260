//! `accord serve --tls-cert --tls-key` as a real process, with certificates made by the test:
//! the summary and the card say `https://`, the agent answers over HTTPS, `/metrics` shows the
//! certificate's expiry, SIGHUP reloads a new pair (new handshakes see it) and keeps the old one
//! when the new one does not load (one ERROR line saying why), and a certificate that does not
//! load stops the start with exit 2 and a message naming the file.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use accord_test_support::tls::{ServeProcess, presented_certificate};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SerialNumber};
use rustls::pki_types::CertificateDer;
use serde_json::Value;

const EVENTUALLY: Duration = Duration::from_secs(10);

struct Ca(CertifiedIssuer<'static, KeyPair>);

impl Ca {
    fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "Accord test CA");
        Self(CertifiedIssuer::self_signed(params, KeyPair::generate().expect("key")).expect("CA"))
    }

    /// (certificate PEM, key PEM, certificate DER) for 127.0.0.1, valid until 2040-06-15.
    fn server(&self, serial: u64) -> (String, String, Vec<u8>) {
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
        params.serial_number = Some(SerialNumber::from(serial));
        params.not_after = rcgen::date_time_ymd(2040, 6, 15);
        let key = KeyPair::generate().expect("key");
        let certificate = params.signed_by(&key, &self.0).expect("certificate");
        (certificate.pem(), key.serialize_pem(), certificate.der().to_vec())
    }
}

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("accord-serve-tls-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&path).expect("directory");
        Self(path)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `accord serve --tls-cert CERTIFICATE --tls-key KEY EXTRA…`.
fn start(certificate: &Path, key: &Path, extra: &[&str]) -> ServeProcess {
    let mut args: Vec<std::ffi::OsString> = extra.iter().map(Into::into).collect();
    args.extend(["--tls-cert".into(), certificate.into(), "--tls-key".into(), key.into()]);
    ServeProcess::start(env!("CARGO_BIN_EXE_accord"), args)
}

/// The DER of the certificate a new handshake is presented.
async fn presented(port: u16, ca: &Ca) -> Vec<u8> {
    presented_certificate(port, &CertificateDer::from(ca.0.der().to_vec())).await
}

#[tokio::test]
async fn accord_serve_speaks_https_and_reloads_its_certificate_on_sighup() {
    let dir = Dir::new("reload");
    let ca = Ca::new();
    let (first, first_key, first_der) = ca.server(1);
    let certificate = dir.write("cert.pem", &first);
    let key = dir.write("key.pem", &first_key);
    let server = start(&certificate, &key, &[]);
    assert!(server.origin.starts_with("https://127.0.0.1:"), "{:?}", server.banner);
    assert!(server.banner.iter().any(|line| line.starts_with("TLS: ")), "{:?}", server.banner);
    assert!(
        server.banner.iter().any(|line| line.starts_with("A2A v1.0 gRPC: https://")),
        "the gRPC line says TLS: {:?}",
        server.banner
    );

    let root = reqwest::Certificate::from_pem(ca.0.pem().as_bytes()).expect("root");
    let client = reqwest::Client::builder().tls_certs_only([root]).build().expect("client");
    let card: Value = client
        .get(format!("{}/.well-known/agent-card.json", server.origin))
        .send()
        .await
        .expect("the card over HTTPS")
        .json()
        .await
        .expect("JSON");
    let jsonrpc = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .find(|interface| interface["protocolBinding"] == "JSONRPC")
        .expect("the JSON-RPC interface");
    assert_eq!(jsonrpc["url"], format!("{}/a2a/jsonrpc", server.origin));
    let metrics = client.get(format!("{}/metrics", server.origin)).send().await.expect("metrics");
    let metrics = metrics.text().await.expect("text");
    assert!(metrics.contains("accord_tls_certificate_expiry_seconds 2223331200"), "{metrics}");
    assert_eq!(presented(server.port(), &ca).await, first_der);

    // A new pair, then SIGHUP: new handshakes see it.
    let (second, second_key, second_der) = ca.server(2);
    std::fs::write(&certificate, &second).expect("write");
    std::fs::write(&key, &second_key).expect("write");
    server.hangup();
    let deadline = Instant::now() + EVENTUALLY;
    while presented(server.port(), &ca).await != second_der {
        assert!(Instant::now() < deadline, "the new certificate is presented after SIGHUP");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A key that is not the certificate's: the second pair stays, one ERROR line says why.
    let (_, other_key, _) = ca.server(3);
    std::fs::write(&key, &other_key).expect("write");
    server.hangup();
    let deadline = Instant::now() + EVENTUALLY;
    while !server.stderr().contains("TLS certificate not reloaded") {
        assert!(Instant::now() < deadline, "an ERROR line for the refused pair");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stderr = server.stderr();
    assert!(stderr.contains("does not match the certificate"), "{stderr}");
    assert!(!stderr.contains("PRIVATE KEY"), "no key material in the log: {stderr}");
    assert_eq!(presented(server.port(), &ca).await, second_der, "the old pair stays");
    let health = client.get(format!("{}/health", server.origin)).send().await.expect("health");
    assert_eq!(health.status(), 200);
}

#[test]
fn a_certificate_that_does_not_load_stops_the_start_with_exit_2() {
    let dir = Dir::new("bad");
    let ca = Ca::new();
    let (_, key_pem, _) = ca.server(1);
    let certificate = dir.write("cert.pem", "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n");
    let key = dir.write("key.pem", &key_pem);
    let output = Command::new(env!("CARGO_BIN_EXE_accord"))
        .args(["serve", "--port", "0", "--store", "memory", "--tls-cert"])
        .arg(&certificate)
        .arg("--tls-key")
        .arg(&key)
        .output()
        .expect("run accord serve");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("TLS certificate") && stderr.contains("cert.pem"), "names the file: {stderr}");
    assert!(stderr.contains("base64"), "says why: {stderr}");

    let output = Command::new(env!("CARGO_BIN_EXE_accord"))
        .args(["serve", "--port", "0", "--store", "memory", "--tls-cert"])
        .arg(&certificate)
        .output()
        .expect("run accord serve");
    assert_eq!(output.status.code(), Some(2), "--tls-cert alone is a usage error");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--tls-key"));
}

#[tokio::test]
async fn the_grpc_port_speaks_tls_too() {
    let dir = Dir::new("grpc-port");
    let ca = Ca::new();
    let (pem, key_pem, der) = ca.server(1);
    let certificate = dir.write("cert.pem", &pem);
    let key = dir.write("key.pem", &key_pem);
    let server = start(&certificate, &key, &["--grpc-port", "0"]);
    let line = server
        .banner
        .iter()
        .find(|line| line.starts_with("A2A v1.0 gRPC: https://127.0.0.1:"))
        .unwrap_or_else(|| panic!("a gRPC line with https: {:?}", server.banner));
    let port: u16 = line
        .trim_start_matches("A2A v1.0 gRPC: https://127.0.0.1:")
        .split(' ')
        .next()
        .and_then(|port| port.parse().ok())
        .expect("the gRPC port");
    assert_ne!(port, server.port());
    assert_eq!(presented(port, &ca).await, der, "the gRPC listener presents the certificate");
}
