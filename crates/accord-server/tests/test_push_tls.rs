//! Push delivery to an `https` webhook whose certificate a private CA issued (made by the test):
//! refused with the platform's roots only, delivered once the CA is trusted
//! ([`PushSettings::trust_ca_pem`], what `accord serve --push-ca-file` sets).

use std::sync::{Arc, Mutex};

use accord_server::push::PushSettings;
use accord_server::push::guard::WebhookPolicy;
use accord_server::push::sender::{SendFailure, WebhookSender};
use accord_test_support::tls::{ClientAuth, Pki, TlsServer};
use axum::Router;
use axum::http::HeaderMap;
use axum::routing::post;
use bytes::Bytes;

#[tokio::test]
async fn an_https_webhook_of_a_private_ca_is_reached_once_the_ca_is_trusted() {
    let pki = Pki::new("push");
    let received = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = received.clone();
    let receiver = Router::new().route(
        "/hook",
        post(move |body: String| async move {
            seen.lock().expect("lock").push(body);
            "ok"
        }),
    );
    let server = TlsServer::start(receiver, &pki.server("receiver", &["localhost"]), &pki, ClientAuth::None).await;
    let url = server.url("/hook");
    let policy = WebhookPolicy::new().allow_loopback();

    let untrusting = WebhookSender::builder(policy.clone()).build().expect("a sender");
    match untrusting.send(&url, HeaderMap::new(), Bytes::from_static(b"{\"n\":1}")).await {
        Err(SendFailure::Connect(message)) => assert!(message.contains("UnknownIssuer"), "{message}"),
        other => panic!("expected an unknown issuer, got {other:?}"),
    }
    assert!(received.lock().expect("lock").is_empty());

    let pem = std::fs::read(&pki.ca_file).expect("the CA file");
    let settings = PushSettings::default().trust_ca_pem(&pem).expect("a PEM bundle");
    let trusting = WebhookSender::builder(policy).root_certificates(settings.extra_roots).build().expect("a sender");
    let delivered =
        trusting.send(&url, HeaderMap::new(), Bytes::from_static(b"{\"n\":2}")).await.expect("delivered over TLS");
    assert_eq!(delivered.status, 200);
    assert_eq!(*received.lock().expect("lock"), vec!["{\"n\":2}".to_owned()]);
}

#[test]
fn a_ca_bundle_without_certificates_is_refused() {
    let error = PushSettings::default().trust_ca_pem(b"not a certificate").expect_err("no certificate");
    assert!(error.contains("no PEM certificate"), "{error}");
}
