//! The `accord` binary end to end: `accord serve` in a child process, the other commands against it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

const ACCORD: &str = env!("CARGO_BIN_EXE_accord");

/// `accord serve --port 0` in a child process, killed on drop.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(extra: &[&str]) -> Self {
        let mut child = Command::new(ACCORD)
            .args(["serve", "--port", "0", "--store", "memory"])
            .args(extra)
            .env("ACCORD_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start accord serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().expect("a line").expect("utf-8");
        let url = first.rsplit(' ').next().expect("url").to_owned();
        let card_line = lines.next().expect("a line").expect("utf-8");
        assert_eq!(card_line, format!("card: {url}.well-known/agent-card.json"));
        let rpc_line = lines.next().expect("a line").expect("utf-8");
        assert!(rpc_line.starts_with(&format!("JSON-RPC tasks: {url}a2a/tasks")), "{rpc_line}");
        // Keep reading whatever else the server prints, so its stdout never closes under it.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn accord(args: &[&str]) -> Output {
    Command::new(ACCORD).args(args).output().expect("run accord")
}

fn stdout_json(output: &Output) -> Value {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout).lines().map(|line| serde_json::from_str(line).expect("JSON line")).collect()
}

#[test]
fn serve_answers_card_invoke_and_stream() {
    let served = Served::start(&[]);
    assert!(served.url.starts_with("http://127.0.0.1:") && served.url.ends_with('/'), "{}", served.url);

    let card = stdout_json(&accord(&["card", "show", &served.url]));
    let legacy = stdout_json(&accord(&["card", "show", &format!("{}.well-known/agent.json", served.url)]));
    assert_eq!(card, legacy, "both card paths serve the same card");
    assert_eq!(card["name"], "accord-demo");
    let skills: Vec<&str> =
        card["skills"].as_array().expect("skills").iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(skills, ["echo", "summarize", "slow", "ticks", "confirm"]);

    let echoed = stdout_json(&accord(&["invoke", &served.url, "echo", r#"{"text":"hi"}"#]));
    assert_eq!(echoed, json!({"text": "hi"}));

    let key = "cli-test-key-000000000001";
    let first = stdout_json(&accord(&[
        "invoke",
        &served.url,
        "echo",
        r#"{"text":"once"}"#,
        "--json",
        "--idempotency-key",
        key,
    ]));
    assert_eq!(first["status"], "succeeded");
    assert_eq!(first["output"], json!({"text": "once"}));
    let again = stdout_json(&accord(&[
        "invoke",
        &served.url,
        "echo",
        r#"{"text":"once"}"#,
        "--json",
        "--idempotency-key",
        key,
    ]));
    assert_eq!(again["run_id"], first["run_id"], "a replay returns the same run");

    let summary = stdout_json(&accord(&[
        "invoke",
        &served.url,
        "summarize",
        r#"{"text":"Rust is fast. Cats sleep a lot. Rust is safe and Rust is fast.","sentences":1}"#,
    ]));
    assert_eq!(summary, json!({"summary": "Rust is safe and Rust is fast."}));

    let streamed = accord(&["stream", &served.url, "ticks", r#"{"count":3}"#, "--json"]);
    assert!(streamed.status.success());
    let events = json_lines(&streamed);
    let kinds: Vec<&str> = events.iter().filter_map(|event| event["kind"].as_str()).collect();
    assert_eq!(kinds, ["run-start", "delta", "delta", "delta", "run-end"]);
    let sequences: Vec<u64> = events.iter().filter_map(|event| event["sequence"].as_u64()).collect();
    assert_eq!(sequences, [0, 1, 2, 3, 4]);
    assert_eq!(events[4]["output"], json!({"count": 3}));

    let human = accord(&["stream", &served.url, "ticks", r#"{"count":2}"#]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        ["[0] run-start", "[1] delta: tick 1", "[2] delta: tick 2", r#"[3] run-end: succeeded {"count":2}"#]
    );
}

#[test]
fn errors_are_clear_and_exit_non_zero() {
    let served = Served::start(&[]);

    let invalid = accord(&["invoke", &served.url, "echo", r#"{"text":5}"#]);
    assert_eq!(invalid.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&invalid.stderr);
    assert!(stderr.contains("400") && stderr.contains("invalid_input"), "{stderr}");

    let unknown = accord(&["invoke", &served.url, "nope", "{}"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("\"nope\" not found"));

    let not_streaming = accord(&["stream", &served.url, "echo", r#"{"text":"x"}"#]);
    assert_eq!(not_streaming.status.code(), Some(0), "echo streams too");
    let invoked = accord(&["invoke", &served.url, "ticks", r#"{"count":2}"#]);
    assert_eq!(invoked.status.code(), Some(0), "ticks is invoked too: {}", String::from_utf8_lossy(&invoked.stderr));
    assert!(String::from_utf8_lossy(&invoked.stdout).contains("\"count\""));

    let bad_json = accord(&["invoke", &served.url, "echo", "{text"]);
    assert_eq!(bad_json.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_json.stderr).contains("not valid JSON"));

    let bad_key = accord(&["invoke", &served.url, "echo", r#"{"text":"x"}"#, "--idempotency-key", "short"]);
    assert_eq!(bad_key.status.code(), Some(2));
}

#[test]
fn an_unreachable_agent_exits_3() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    drop(listener);
    let output = accord(&["card", "show", &url]);
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("error: fetch card"));
}

#[test]
fn a_base_path_is_kept_in_the_card_and_the_calls() {
    let served = Served::start(&["--base-path", "/agents/demo/"]);
    assert!(served.url.ends_with("/agents/demo/"), "{}", served.url);
    let card = stdout_json(&accord(&["card", "show", &served.url]));
    assert_eq!(card["supportedInterfaces"][0]["url"], served.url, "the Lucid profile, under the base path");
    let echoed = stdout_json(&accord(&["invoke", &served.url, "echo", r#"{"text":"nested"}"#]));
    assert_eq!(echoed, json!({"text": "nested"}));
}

#[test]
fn every_command_explains_itself() {
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["card", "--help"],
        vec!["card", "show", "--help"],
        vec!["invoke", "--help"],
        vec!["stream", "--help"],
        vec!["task", "--help"],
        vec!["task", "send", "--help"],
        vec!["task", "get", "--help"],
        vec!["task", "cancel", "--help"],
        vec!["task", "watch", "--help"],
        vec!["task", "list", "--help"],
        vec!["rpc", "--help"],
        vec!["rpc", "send", "--help"],
        vec!["rpc", "get", "--help"],
        vec!["rpc", "cancel", "--help"],
    ] {
        let output = accord(&args);
        assert!(output.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("Usage:"), "{args:?}: {text}");
    }
    let serve = String::from_utf8_lossy(&accord(&["serve", "--help"]).stdout).into_owned();
    for flag in ["--host", "--port", "--base-path"] {
        assert!(serve.contains(flag), "{flag}");
    }
    assert_eq!(accord(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn task_send_wait_prints_the_completed_summary() {
    let served = Served::start(&[]);
    let text = r#"{"text":"Rust is fast. Cats sleep a lot. Rust is safe and Rust is fast.","sentences":1}"#;
    let output = accord(&["task", "send", &served.url, "summarize", text, "--wait"]);
    let task = stdout_json(&output);
    assert_eq!(task["status"], "completed");
    assert_eq!(task["result"]["output"], json!({"summary": "Rust is safe and Rust is fast."}));

    let token = "cli-task-token-0123456789";
    let sent = stdout_json(&accord(&["task", "send", &served.url, "slow", r#"{"seconds":30}"#, "--token", token]));
    assert_eq!(sent["status"], "running");
    assert_eq!(sent["accessToken"], token);
    let id = sent["taskId"].as_str().expect("taskId");
    let cancelled = stdout_json(&accord(&["task", "cancel", &served.url, id, "--token", token]));
    assert_eq!(cancelled["status"], "cancelled");
    let read = stdout_json(&accord(&["task", "get", &served.url, id, "--token", token]));
    assert_eq!(read["status"], "cancelled");
    let listed = stdout_json(&accord(&["task", "list", &served.url, "--token", token, "--status", "cancelled"]));
    assert_eq!(listed["total"], 1);
    let watched = accord(&["task", "watch", &served.url, id, "--token", token]);
    let lines = String::from_utf8_lossy(&watched.stdout).into_owned();
    assert!(lines.lines().last().is_some_and(|line| line.contains("\"cancelled\"")), "{lines}");

    let wrong = accord(&["task", "get", &served.url, id, "--token", "someone-else-0123456789"]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("task_not_found"));
    let failed = accord(&["task", "send", &served.url, "summarize", r#"{"text":5}"#]);
    assert_eq!(failed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&failed.stderr).contains("invalid_input"));
}

#[test]
fn rpc_commands_talk_to_the_json_rpc_tasks_face() {
    let token = "demo-bearer-token-0123456789";
    let served = Served::start(&["--demo-token", token]);
    let endpoint = format!("{}a2a/tasks", served.url);

    let sent = stdout_json(&accord(&["rpc", "send", &endpoint, "echo", r#"{"text":"rpc"}"#, "--allow-loopback-http"]));
    assert_eq!(sent["status"], "completed");
    assert_eq!(sent["result"]["output"], json!({"text": "rpc"}));
    let id = sent["taskId"].as_str().expect("taskId");
    let read = stdout_json(&accord(&["rpc", "get", &endpoint, id, "--allow-loopback-http"]));
    assert_eq!(read, sent);
    let late = accord(&["rpc", "cancel", &endpoint, id, "--allow-loopback-http"]);
    assert_eq!(late.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&late.stderr).contains("-32003"));

    let gated = accord(&["rpc", "send", &endpoint, "slow", r#"{"seconds":0}"#, "--allow-loopback-http"]);
    assert_eq!(gated.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gated.stderr).contains("scope 'demo:slow' required for skill 'slow'"));
    let granted = stdout_json(&accord(&[
        "rpc",
        "send",
        &endpoint,
        "slow",
        r#"{"seconds":0}"#,
        "--allow-loopback-http",
        "--bearer",
        token,
    ]));
    assert_eq!(granted["status"], "completed");

    let plain = accord(&["rpc", "send", &endpoint, "echo", r#"{"text":"x"}"#]);
    assert_eq!(plain.status.code(), Some(2), "http needs an explicit opt-in");
    assert!(String::from_utf8_lossy(&plain.stderr).contains("--allow-loopback-http"));
    let not_object = accord(&["rpc", "send", &endpoint, "echo", "[1]", "--allow-loopback-http"]);
    assert_eq!(not_object.status.code(), Some(2));
}

/// A fresh directory under the system temp dir, removed on drop.
struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos();
        let dir = std::env::temp_dir().join(format!("accord-cli-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn stdout_text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn card_keygen_sign_verify_lint_and_serve_a_signed_card() {
    let dir = ScratchDir::new("card");
    let keys = dir.path("keys");

    // keygen: ML-DSA-87 by default, the private key 0600, never printed; no silent overwrite.
    let made = accord(&["card", "keygen", "--out", &keys]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    assert!(!stdout_text(&made).contains("PRIVATE KEY"), "the key material is not printed");
    let private = dir.path("keys/ml-dsa-87.private.pem");
    let public = dir.path("keys/ml-dsa-87.public.pem");
    assert!(std::fs::read_to_string(&private).expect("private pem").starts_with("-----BEGIN PRIVATE KEY-----"));
    assert!(std::fs::read_to_string(&public).expect("public pem").starts_with("-----BEGIN PUBLIC KEY-----"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&private).expect("metadata").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let before = std::fs::read(&private).expect("private pem");
    let again = accord(&["card", "keygen", "--alg", "ml-dsa-87", "--out", &keys]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert_eq!(std::fs::read(&private).expect("private pem"), before, "left untouched");
    let forced = accord(&["card", "keygen", "--alg", "ml-dsa-87", "--out", &keys, "--force"]);
    assert!(forced.status.success());
    assert_ne!(std::fs::read(&private).expect("private pem"), before, "replaced with --force");
    for alg in ["ed25519", "slh-dsa-shake-256f"] {
        assert!(accord(&["card", "keygen", "--alg", alg, "--out", &keys]).status.success(), "{alg}");
    }

    // sign → verify.
    let card = dir.path("card.json");
    std::fs::write(
        &card,
        r#"{"issuer":"agent.example.com","agentId":"ops-bot-1","capabilities":["chat.respond"],"version":"1.0.0",
            "endpoints":[{"url":"https://agent.example.com/a2a"}]}"#,
    )
    .expect("write card");
    let envelope = stdout_json(&accord(&["card", "sign", "--key", &private, &card]));
    assert_eq!(envelope["card"]["agentId"], "ops-bot-1");
    let life = envelope["expiresAt"].as_u64().expect("ms") - envelope["signedAt"].as_u64().expect("ms");
    assert_eq!(life, 86_400_000, "a day by default");
    let signed = dir.path("signed.json");
    std::fs::write(&signed, serde_json::to_vec(&envelope).expect("json")).expect("write envelope");
    let valid = accord(&["card", "verify", &signed, "--pub", &public, "--issuer", "agent.example.com"]);
    assert_eq!(valid.status.code(), Some(0), "{}", String::from_utf8_lossy(&valid.stderr));
    let text = stdout_text(&valid);
    assert!(text.starts_with("valid\n") && text.contains("signing input: shake256-digest"), "{text}");
    assert!(text.contains("algorithm: ml-dsa-87"), "{text}");

    let raw = dir.path("raw.json");
    let written = accord(&["card", "sign", "--key", &private, &card, "--raw", "--ttl", "60", "--out", &raw]);
    assert!(written.status.success() && written.stdout.is_empty(), "{}", String::from_utf8_lossy(&written.stderr));
    let outcome = stdout_json(&accord(&["card", "verify", &raw, "--pub", &public, "--json"]));
    assert_eq!(outcome["valid"], true);
    assert_eq!(outcome["signingInput"], "raw-canonical");
    let raw_envelope: Value = serde_json::from_slice(&std::fs::read(&raw).expect("raw")).expect("json");
    assert_eq!(
        raw_envelope["expiresAt"].as_u64().expect("ms") - raw_envelope["signedAt"].as_u64().expect("ms"),
        60_000
    );

    // The one SLH-DSA signature of the suite: 49856 bytes, through a file.
    let slh = dir.path("slh.json");
    let slh_key = dir.path("keys/slh-dsa-shake-256f.private.pem");
    assert!(accord(&["card", "sign", "--key", &slh_key, &card, "--out", &slh]).status.success());
    let slh_public = dir.path("keys/slh-dsa-shake-256f.public.pem");
    let slh_valid = accord(&["card", "verify", &slh, "--pub", &slh_public]);
    assert!(stdout_text(&slh_valid).contains("algorithm: slh-dsa-shake-256f"), "{}", stdout_text(&slh_valid));
    let crossed = accord(&["card", "verify", &slh, "--pub", &public]);
    assert_eq!(crossed.status.code(), Some(1));
    assert_eq!(stdout_text(&crossed), "invalid: signature-mismatch\n");

    // Refusals: exit 1 with the reason.
    let mut tampered = envelope.clone();
    tampered["card"]["capabilities"].as_array_mut().expect("array").push("admin".into());
    let tampered_path = dir.path("tampered.json");
    std::fs::write(&tampered_path, serde_json::to_vec(&tampered).expect("json")).expect("write");
    let refused = accord(&["card", "verify", &tampered_path, "--pub", &public]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(stdout_text(&refused), "invalid: signature-mismatch\n");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("signature-mismatch"));
    let other_issuer = accord(&["card", "verify", &signed, "--pub", &public, "--issuer", "impostor.example.com"]);
    assert_eq!(other_issuer.status.code(), Some(1));
    assert_eq!(stdout_text(&other_issuer), "invalid: issuer-mismatch\n");
    let ed_public = dir.path("keys/ed25519.public.pem");
    assert_eq!(accord(&["card", "verify", &signed, "--pub", &ed_public]).status.code(), Some(1));
    let missing_key = accord(&["card", "verify", &signed, "--pub", &dir.path("nope.pem")]);
    assert_eq!(missing_key.status.code(), Some(2));
    let public_as_private = accord(&["card", "sign", "--key", &public, &card]);
    assert_eq!(public_as_private.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&public_as_private.stderr).contains("BEGIN"), "no key text in errors");

    // lint: every problem, not just the first.
    let bad = dir.path("bad.json");
    std::fs::write(
        &bad,
        r#"{"issuer":"has space","capabilities":["ok",""],"version":"1.0.0+build",
            "endpoints":[{"url":"http://localhost.evil/"}]}"#,
    )
    .expect("write");
    let linted = accord(&["card", "lint", &bad]);
    assert_eq!(linted.status.code(), Some(1));
    let lines: Vec<String> = stdout_text(&linted).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 5, "{lines:?}");
    for expected in [
        "a2a/missing-field: card.agentId",
        "a2a/bad-field: card.issuer",
        "a2a/bad-field: card.version",
        "a2a/bad-field: card.capabilities[1]",
        "a2a/insecure-endpoint: card.endpoints[0]",
    ] {
        assert!(lines.iter().any(|line| line.starts_with(expected)), "{expected}: {lines:?}");
    }
    assert!(String::from_utf8_lossy(&linted.stderr).contains("5 problems"));
    assert_eq!(accord(&["card", "lint", &card]).status.code(), Some(0));
    assert_eq!(accord(&["card", "lint", &signed]).status.code(), Some(0), "an envelope's card");
    let unsigned = accord(&["card", "sign", "--key", &private, &bad]);
    assert_eq!(unsigned.status.code(), Some(1), "a bad card is not signed");
    assert!(unsigned.stdout.is_empty());

    // serve --signing-key: the served envelope verifies with the public key; the plain card stays.
    let ed_private = dir.path("keys/ed25519.private.pem");
    let served = Served::start(&["--signing-key", &ed_private]);
    let fetched = accord(&["card", "verify", &served.url, "--pub", &ed_public, "--issuer", "127.0.0.1"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", String::from_utf8_lossy(&fetched.stderr));
    let text = stdout_text(&fetched);
    assert!(
        text.contains("agent id: accord-demo") && text.contains("capabilities: echo, summarize, slow, ticks, confirm")
    );
    let plain = stdout_json(&accord(&["card", "show", &format!("{}.well-known/agent.json", served.url)]));
    assert_eq!(plain["name"], "accord-demo", "the legacy path keeps the plain card by default");
    assert_eq!(accord(&["card", "lint", &served.url]).status.code(), Some(0));
    let wrong_key = accord(&["card", "verify", &served.url, "--pub", &public]);
    assert_eq!(wrong_key.status.code(), Some(1));
    drop(served);

    let served = Served::start(&[
        "--signing-key",
        &ed_private,
        "--card-issuer",
        "agent.example.com",
        "--card-agent-id",
        "demo-1",
        "--signed-card-at-legacy-path",
    ]);
    let legacy = format!("{}.well-known/agent.json", served.url);
    let outcome = stdout_json(&accord(&[
        "card",
        "verify",
        &legacy,
        "--pub",
        &ed_public,
        "--issuer",
        "agent.example.com",
        "--json",
    ]));
    assert_eq!(outcome["valid"], true);
    assert_eq!(outcome["claims"]["agentId"], "demo-1");
    assert_eq!(stdout_json(&accord(&["card", "show", &served.url]))["name"], "accord-demo");
    drop(served);

    // Bad signed-card settings stop serve before it listens.
    let bad_issuer = accord(&["serve", "--port", "0", "--signing-key", &ed_private, "--card-issuer", "not valid"]);
    assert_eq!(bad_issuer.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_issuer.stderr).contains("--card-issuer"));
    let not_a_key = accord(&["serve", "--port", "0", "--signing-key", &card]);
    assert_eq!(not_a_key.status.code(), Some(2));
    let no_key = accord(&["serve", "--port", "0", "--card-issuer", "agent.example.com"]);
    assert_eq!(no_key.status.code(), Some(2), "--card-issuer needs --signing-key");
}

#[test]
fn the_card_commands_explain_themselves() {
    for (args, flags) in [
        (
            vec!["card", "keygen", "--help"],
            vec!["--alg", "--out", "--force", "ml-dsa-87", "slh-dsa-shake-256f", "ed25519"],
        ),
        (
            vec!["card", "sign", "--help"],
            vec!["--key", "--out", "--ttl", "--raw", "--jws", "--kid", "--jku", "CARD.json"],
        ),
        (
            vec!["card", "verify", "--help"],
            vec!["--pub", "--jwks", "--jws", "--algorithms", "--issuer", "--json", "CARD.json"],
        ),
        (vec!["card", "lint", "--help"], vec!["FILE|URL"]),
        (
            vec!["serve", "--help"],
            vec!["--signing-key", "--card-issuer", "--card-agent-id", "--signed-card-at-legacy-path"],
        ),
    ] {
        let output = accord(&args);
        assert!(output.status.success(), "{args:?}");
        let text = stdout_text(&output);
        assert!(text.contains("Usage:"), "{args:?}: {text}");
        for flag in flags {
            assert!(text.contains(flag), "{args:?} mentions {flag}: {text}");
        }
    }
    let card = stdout_text(&accord(&["card", "--help"]));
    for command in ["show", "keygen", "sign", "verify", "lint"] {
        assert!(card.contains(command), "{command}");
    }
    assert_eq!(accord(&["card", "keygen", "--alg", "rsa", "--out", "x"]).status.code(), Some(2));
    assert_eq!(accord(&["card", "sign", "--key", "k.pem", "card.json", "--ttl", "0"]).status.code(), Some(2));
}

/// `accord serve` on a store given by URL, in a child process, killed on drop.
fn serve_on(store: &str) -> Served {
    let mut child = Command::new(ACCORD)
        .args(["serve", "--port", "0", "--store", store])
        .env("ACCORD_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start accord serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().expect("a line").expect("utf-8");
    let url = first.rsplit(' ').next().expect("url").to_owned();
    std::thread::spawn(move || lines.for_each(drop));
    Served { child, url }
}

#[test]
fn tasks_survive_a_restart_on_the_default_sqlite_store() {
    let dir = std::env::temp_dir().join(format!("accord-cli-sqlite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let store = format!("sqlite://{}", dir.join("tasks.db").display());
    let token = "restart-token-0123456789";
    let id = {
        let served = serve_on(&store);
        let task = stdout_json(&accord(&[
            "task",
            "send",
            &served.url,
            "echo",
            r#"{"text":"kept"}"#,
            "--token",
            token,
            "--wait",
        ]));
        assert_eq!(task["status"], "completed");
        task["taskId"].as_str().expect("taskId").to_owned()
    };
    // A new process on the same file still has the task, its result and its owner.
    let served = serve_on(&store);
    let task = stdout_json(&accord(&["task", "get", &served.url, &id, "--token", token]));
    assert_eq!(task["result"]["output"], json!({"text": "kept"}));
    let wrong = accord(&["task", "get", &served.url, &id, "--token", "another-token-0123456789"]);
    assert_eq!(wrong.status.code(), Some(1));
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn several_servers_on_one_postgres_database_share_the_tasks() {
    let url = std::env::var("ACCORD_PG_URL")
        .expect("ACCORD_PG_URL is not set: run the tests through scripts/with-postgres (scripts/test does)");
    let a = serve_on(&url);
    let b = serve_on(&url);
    let token = "pool-token-0123456789-abc";
    let sent = stdout_json(&accord(&["task", "send", &a.url, "slow", r#"{"seconds":1}"#, "--token", token]));
    let id = sent["taskId"].as_str().expect("taskId").to_owned();
    // Worker b sees the task worker a runs, follows it live, and reads its result.
    let watched = accord(&["task", "watch", &b.url, &id, "--token", token]);
    let lines = String::from_utf8_lossy(&watched.stdout).into_owned();
    assert!(lines.lines().last().is_some_and(|line| line.contains("resultUpdate")), "{lines}");
    let read = stdout_json(&accord(&["task", "get", &b.url, &id, "--token", token]));
    assert_eq!(read["status"], "completed");
    assert!(read["result"]["output"]["slept"].as_f64().is_some_and(|slept| slept >= 1.0));
    let listed = stdout_json(&accord(&["task", "list", &b.url, "--token", token]));
    assert!(listed["tasks"].as_array().is_some_and(|tasks| tasks.iter().any(|task| task["taskId"] == json!(id))));
}

#[test]
fn demo_prices_are_paid_with_a_wallet() {
    let dir = ScratchDir::new("wallet");
    let wallet = dir.path("wallet.json");
    let made = accord(&["wallet", "new", "--out", &wallet]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let payer = String::from_utf8_lossy(&made.stdout).trim().to_owned();
    assert!(payer.len() >= 40, "{payer}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&wallet).expect("wallet file").permissions().mode();
        assert_eq!(mode & 0o077, 0, "the wallet is readable by its owner only: {mode:o}");
    }
    assert_eq!(String::from_utf8_lossy(&accord(&["wallet", "show", &wallet]).stdout).trim(), payer);
    assert_eq!(accord(&["wallet", "new", "--out", &wallet]).status.code(), Some(2), "no silent overwrite");

    let store = format!("sqlite://{}", dir.path("tasks.db"));
    let mut child = Command::new(ACCORD)
        .args(["serve", "--port", "0", "--demo-prices", "--store", &store])
        .env("ACCORD_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start accord serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let url = lines.next().expect("a line").expect("utf-8").rsplit(' ').next().expect("url").to_owned();
    std::thread::spawn(move || lines.for_each(drop));
    let served = Served { child, url };
    let input = r#"{"text":"Cats purr. Dogs bark. Cats nap."}"#;

    let unpaid = accord(&["invoke", &served.url, "summarize", input]);
    assert_eq!(unpaid.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unpaid.stderr).contains("402"), "{}", String::from_utf8_lossy(&unpaid.stderr));
    let paid = accord(&["invoke", &served.url, "summarize", input, "--wallet", &wallet]);
    assert!(stdout_json(&paid)["summary"].is_string());
    assert!(String::from_utf8_lossy(&paid.stderr).contains("paymentResponse"), "the receipt is shown");
    let capped = accord(&["invoke", &served.url, "summarize", input, "--wallet", &wallet, "--max-amount", "10"]);
    assert_eq!(capped.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&capped.stderr).contains("payment declined"));
    // Free skills stay free.
    assert!(stdout_json(&accord(&["invoke", &served.url, "echo", r#"{"text":"hi"}"#]))["text"] == "hi");

    let token = "wallet-owner-token-0123456789";
    let task = accord(&[
        "task",
        "send",
        &served.url,
        "slow",
        r#"{"seconds":0}"#,
        "--token",
        token,
        "--wallet",
        &wallet,
        "--wait",
    ]);
    let done = stdout_json(&task);
    assert_eq!(done["status"], "completed");
    let unpaid_task = accord(&["task", "send", &served.url, "slow", r#"{"seconds":0}"#, "--token", token]);
    assert_eq!(unpaid_task.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unpaid_task.stderr).contains("402"));
}

#[test]
fn serve_with_api_keys_lists_the_scheme_and_opens_the_extended_card() {
    let key = "cli-api-key-0123456789abcdef";
    let served = Served::start(&["--api-key", key, "--api-key", "another-cli-key-0123456789"]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let card: Value = client
            .get(format!("{}.well-known/agent-card.json", served.url))
            .send()
            .await
            .expect("card")
            .json()
            .await
            .expect("json");
        assert_eq!(card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"], "x-api-key", "{card}");
        assert_eq!(card["capabilities"]["extendedAgentCard"], true, "{card}");
        let extended = |key: Option<&str>| {
            let mut request =
                client.get(format!("{}a2a/rest/extendedAgentCard", served.url)).header("a2a-version", "1.0");
            if let Some(key) = key {
                request = request.header("x-api-key", key);
            }
            async move {
                let response = request.send().await.expect("response");
                (response.status().as_u16(), response.json::<Value>().await.expect("json"))
            }
        };
        let (status, body) = extended(Some(key)).await;
        assert_eq!(status, 200, "{body}");
        let slow = body["skills"].as_array().expect("skills").iter().find(|skill| skill["id"] == "slow").cloned();
        assert!(slow.expect("slow")["description"].as_str().expect("text").contains("demo:slow"));
        let (status, body) = extended(None).await;
        assert_eq!((status, body["error"]["status"].clone()), (401, json!("UNAUTHENTICATED")), "{body}");
        let (status, _) = extended(Some("a-key-nobody-configured-000")).await;
        assert_eq!(status, 401);
    });
}

#[test]
fn the_demo_confirm_skill_waits_for_each_answer_and_completes_with_them() {
    let served = Served::start(&[]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let send = |body: Value| {
            let request = client.post(format!("{}a2a/rest/message:send", served.url)).header("a2a-version", "1.0");
            async move {
                let response = request.json(&body).send().await.expect("response");
                assert_eq!(response.status().as_u16(), 200);
                response.json::<Value>().await.expect("json")["task"].clone()
            }
        };
        let asked = send(json!({"message": {"messageId": "c1", "role": "ROLE_USER",
            "parts": [{"data": {"question": "sure?", "rounds": 2}}], "metadata": {"skillId": "confirm"}}}))
        .await;
        assert_eq!(asked["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
        assert_eq!(asked["status"]["message"]["parts"][0]["text"], "sure?", "{asked}");
        let id = asked["id"].as_str().expect("id").to_owned();
        let follow_up = |text: &str| {
            json!({"message": {"messageId": format!("c-{text}"), "role": "ROLE_USER", "taskId": id, "parts": [{"text": text}]}})
        };
        let again = send(follow_up("yes")).await;
        assert_eq!(again["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{again}");
        let done = send(follow_up("really")).await;
        assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
        let result = done["artifacts"].as_array().expect("artifacts").last().expect("result").clone();
        assert_eq!(result["parts"][0]["data"], json!({"question": "sure?", "answers": ["yes", "really"]}), "{done}");
    });
}
