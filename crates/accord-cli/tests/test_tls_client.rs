//! `accord card show`, `accord rpc get` and `accord push list` as processes against an agent served
//! over mutual TLS on loopback (certificates made by the test): `--ca-file`, `--client-cert` and
//! `--client-key` (or their `ACCORD_*` variables) reach it; without them the command exits naming
//! the cause, with no Rust type name and no key material. And `accord serve --push-ca-file`
//! delivering to an HTTPS webhook of the test's CA.

use std::path::Path;
use std::process::{Command, Output};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use accord_test_support::tls::{ClientAuth, Pki, TlsServer};
use serde_json::{Value, json};

mod support;

const ACCORD: &str = env!("CARGO_BIN_EXE_accord");

/// Runs `accord` with `args` and `env`, none of the TLS variables of the caller's environment.
async fn accord(args: Vec<String>, env: Vec<(&'static str, String)>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut command = Command::new(ACCORD);
        for name in ["ACCORD_CA_FILE", "ACCORD_CLIENT_CERT", "ACCORD_CLIENT_KEY", "ACCORD_BEARER"] {
            command.env_remove(name);
        }
        command.args(args).envs(env).output().expect("run accord")
    })
    .await
    .expect("the command ran")
}

fn args(words: &[&str], files: &[(&str, &Path)]) -> Vec<String> {
    let mut args: Vec<String> = words.iter().map(|word| (*word).to_owned()).collect();
    for (flag, path) in files {
        args.push((*flag).to_owned());
        args.push(path.display().to_string());
    }
    args
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A message a person can act on: no Rust type or module names, no debug structs.
fn assert_plain(message: &str) {
    for rust in ["rustls", "reqwest::", "hyper", "Error {", "Custom {", "InvalidCertificate", "AlertReceived"] {
        assert!(!message.contains(rust), "{rust:?} in {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn card_show_reaches_an_agent_over_mutual_tls_and_names_what_is_missing() {
    let pki = Pki::new("cli");
    let agent = accord_cli::demo::agent().expect("the demo agent");
    let server = TlsServer::start(
        accord_server::router(&agent),
        &pki.server("server", &["localhost"]),
        &pki,
        ClientAuth::Required,
    )
    .await;
    let client = pki.client("client", "caller");
    let ca = ("--ca-file", pki.ca_file.as_path());
    let cert = ("--client-cert", client.cert_file.as_path());
    let key = ("--client-key", client.key_file.as_path());

    let output = accord(args(&["card", "show", &server.origin], &[ca, cert, key]), vec![]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let card: Value = serde_json::from_slice(&output.stdout).expect("the card as JSON");
    assert_eq!(card["name"], agent.name());

    // The same through the environment.
    let env = vec![
        ("ACCORD_CA_FILE", pki.ca_file.display().to_string()),
        ("ACCORD_CLIENT_CERT", client.cert_file.display().to_string()),
        ("ACCORD_CLIENT_KEY", client.key_file.display().to_string()),
    ];
    let output = accord(args(&["card", "show", &server.origin], &[]), env).await;
    assert!(output.status.success(), "{}", stderr(&output));

    // No client certificate: the server's refusal, named.
    let output = accord(args(&["card", "show", &server.origin], &[ca]), vec![]).await;
    assert_eq!(output.status.code(), Some(3), "unreachable: {}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("requires a client certificate"), "{message}");
    assert!(message.contains("--client-cert and --client-key"), "the flags that answer it: {message}");
    assert_plain(&message);

    // No CA: the issuer is unknown.
    let output = accord(args(&["card", "show", &server.origin], &[cert, key]), vec![]).await;
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{message}");
    assert!(message.contains("unknown issuer"), "{message}");
    assert!(message.contains("--ca-file"), "the flag that answers it: {message}");
    assert_plain(&message);

    // A certificate without its key is a usage error, before any connection.
    let output = accord(args(&["card", "show", &server.origin], &[ca, cert]), vec![]).await;
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("without its private key"), "{message}");

    // Another key than the certificate's: refused, and the key is not printed.
    let other = pki.client("other", "someone-else");
    let output =
        accord(args(&["card", "show", &server.origin], &[ca, cert, ("--client-key", &other.key_file)]), vec![]).await;
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("does not match the certificate"), "{message}");
    let key_text = std::fs::read_to_string(&other.key_file).expect("the key");
    assert!(key_text.lines().skip(1).take(2).all(|line| !message.contains(line)), "key material in {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_peer_command_takes_the_tls_flags() {
    let pki = Pki::new("cli-flags");
    let agent = accord_cli::demo::agent().expect("the demo agent");
    let server = TlsServer::start(
        accord_server::router(&agent),
        &pki.server("server", &["localhost"]),
        &pki,
        ClientAuth::Required,
    )
    .await;
    let client = pki.client("client", "caller");
    let tls = [
        ("--ca-file", pki.ca_file.as_path()),
        ("--client-cert", client.cert_file.as_path()),
        ("--client-key", client.key_file.as_path()),
    ];
    // Each reaches the server over mutual TLS: whatever the agent answers, it is not a TLS failure.
    let missing_jwks = pki.path("none.jwks.json").display().to_string();
    let commands: [&[&str]; 8] = [
        &["invoke", &server.origin, "echo", "{}"],
        &["stream", &server.origin, "ticks", "{}"],
        &["rpc", "get", &server.url("/a2a/tasks"), "task-1"],
        &["push", "list", &server.origin, "task-1"],
        &["card", "lint", &server.origin],
        &["card", "verify", &server.origin, "--jws", "--jwks", &missing_jwks],
        &["task", "get", &server.origin, "task-1", "--token", "an-access-token-of-20-chars"],
        &["task", "list", &server.origin, "--token", "an-access-token-of-20-chars"],
    ];
    for words in commands {
        let output = accord(args(words, &tls), vec![]).await;
        let message = stderr(&output);
        assert!(!message.contains("TLS:"), "{words:?}: {message}");
        assert!(!message.contains("unexpected argument"), "{words:?}: {message}");
        let without = accord(args(words, &tls[..1]), vec![]).await;
        let message = stderr(&without);
        assert!(message.contains("requires a client certificate"), "{words:?} without a certificate: {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_delivery_reaches_an_https_webhook_of_the_push_ca() {
    let pki = Pki::new("push-cli");
    let received = Arc::new(Mutex::new(Vec::<Value>::new()));
    let seen = received.clone();
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| async move {
            seen.lock().expect("lock").push(body);
            "ok"
        }),
    );
    let hook = TlsServer::start(receiver, &pki.server("receiver", &["localhost"]), &pki, ClientAuth::None).await;
    let ca = pki.ca_file.display().to_string();
    let served = tokio::task::spawn_blocking(move || {
        support::Served::start(&["--store", "memory", "--webhook-allow", "loopback", "--push-ca-file", &ca])
    })
    .await
    .expect("accord serve");
    let agent = format!("{}/", served.url);

    // A task that runs for a second, then a webhook for it at the HTTPS receiver.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "tls-1", "role": "ROLE_USER", "parts": [{"data": {"seconds": 1.0}}],
            "metadata": {"skillId": "slow"}},
        "configuration": {"returnImmediately": true},
    }});
    let answer: Value = reqwest::Client::new()
        .post(format!("{agent}a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let task = answer["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("a task: {answer}")).to_owned();
    let set = accord(args(&["push", "set", &agent, &task, &hook.url("/hook")], &[]), vec![]).await;
    assert!(set.status.success(), "{}", stderr(&set));

    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let completed = received.lock().expect("lock").iter().any(|delivery| {
            delivery["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
                || delivery["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        });
        if completed {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no completed update over TLS: {:?}", received.lock());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
