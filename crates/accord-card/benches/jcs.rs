//! RFC 8785 canonicalization throughput over realistic inputs, for JSON text
//! ([`canonicalize`]) and for an already parsed value ([`canonicalize_value`]).
//!
//! Run with: `cargo bench -p accord-card --bench jcs`. Throughput is the length of the input JSON
//! text, for both entry points, so the two figures compare directly.
//!
//! The inputs are written as text with their members in a natural, unsorted order (as a peer would
//! send them), not through `serde_json::to_vec`, which would hand the canonicalizer keys that are
//! already sorted.

use std::fmt::Write as _;
use std::hint::black_box;

use accord_card::{canonicalize, canonicalize_value};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;

/// An A2A agent card of about 2 KB, pretty-printed, members in the order people write them.
const AGENT_CARD: &str = r#"{
  "protocolVersion": "0.3.0",
  "name": "Ops Bot",
  "description": "Answers operational questions about the fleet, searches runbooks and opens tickets. Réponses en français aussi — 日本語も少し.",
  "url": "https://agent.example.com/a2a/v1",
  "preferredTransport": "JSONRPC",
  "additionalInterfaces": [
    {"url": "https://agent.example.com/a2a/v1", "transport": "JSONRPC"},
    {"url": "https://agent.example.com/a2a/rest", "transport": "HTTP+JSON"}
  ],
  "provider": {"organization": "Example Ops", "url": "https://example.com"},
  "iconUrl": "https://agent.example.com/icon.png",
  "version": "1.4.2",
  "documentationUrl": "https://agent.example.com/docs",
  "capabilities": {"streaming": true, "pushNotifications": false, "stateTransitionHistory": true},
  "securitySchemes": {
    "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "OAuth 2.0 access token"}
  },
  "security": [{"bearer": ["agent:invoke"]}],
  "defaultInputModes": ["text/plain", "application/json"],
  "defaultOutputModes": ["text/plain", "application/json", "text/markdown"],
  "skills": [
    {
      "id": "chat.respond",
      "name": "Chat",
      "description": "Free-form answers about services, deploys and incidents.\nKeeps context across a task.",
      "tags": ["chat", "ops", "incident"],
      "examples": ["Why is checkout slow?", "What changed in \"payments\" since Friday?"],
      "inputModes": ["text/plain"],
      "outputModes": ["text/plain", "text/markdown"]
    },
    {
      "id": "tool.search",
      "name": "Runbook search",
      "description": "Full-text search over runbooks; returns the best 10 matches with scores.",
      "tags": ["search", "runbooks"],
      "examples": ["restart the ingest pipeline", "rotate TLS certificates"],
      "inputModes": ["text/plain", "application/json"],
      "outputModes": ["application/json"]
    },
    {
      "id": "ticket.open",
      "name": "Open ticket",
      "description": "Opens a ticket in the tracker with severity, owner and a summary; asks before paging anyone.",
      "tags": ["tickets", "paging"],
      "examples": ["open a sev-2 for the EU cluster, owner: storage"],
      "inputModes": ["application/json"],
      "outputModes": ["application/json"]
    }
  ],
  "supportsAuthenticatedExtendedCard": true,
  "signatures": [
    {
      "protected": "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpPU0UiLCJraWQiOiJrZXktMSJ9",
      "signature": "QFdkNLNszlGj3z3u0YQGt_T9LixY3qtdQpZmsTdDHDe3fXV9y9-B3m2-XgCpzuhiLt8E0tV6HXoZKHv4GtHgKQ"
    }
  ],
  "metadata": {"owner": "ops", "tier": 2, "costPerCall": 0.0025, "rateLimit": {"perMinute": 600, "burst": 50}}
}"#;

/// JSON text of at least `target` bytes: an object of records, each nested a few levels deep,
/// members out of order.
fn nested_document(target: usize) -> String {
    let mut text = String::from(r#"{"version":3,"records":["#);
    let mut i = 0u64;
    while text.len() < target {
        if i > 0 {
            text.push(',');
        }
        write!(
            text,
            r#"{{"type":"event","id":"evt-{i:08}","source":{{"service":"checkout","region":"eu-west-{r}","host":"node-{h}"}},"time":{t},"attributes":{{"status":"ok","retries":{retries},"latency":{{"p99":{p99},"p50":{p50},"unit":"ms"}},"flags":{{"sampled":true,"debug":false,"cached":null}}}},"labels":["checkout","payments","tier-{tier}"],"children":[{{"name":"db.query","took":{took}}},{{"name":"cache.get","took":1}}]}}"#,
            r = i % 3,
            h = i % 97,
            t = 1_700_000_000_000 + i * 1_337,
            retries = i % 4,
            p99 = (i % 1000) as f64 / 8.0 + 0.125,
            p50 = i % 50,
            tier = i % 3,
            took = i % 211,
        )
        .expect("write to String");
        i += 1;
    }
    text.push_str(r#"],"issuer":"agent.example.com"}"#);
    text
}

/// JSON text of at least `target` bytes: long strings with escapes (quotes, backslashes, control
/// characters, `\uXXXX`) and non-ASCII text, including characters outside the BMP.
fn string_document(target: usize) -> String {
    const PIECES: &[&str] = &[
        r#"The quick brown fox jumps over the lazy dog. "#,
        r#"He said \"hello\" and left.\n"#,
        r#"C:\\Program Files\\Accord\\bin\t"#,
        "Grüße aus Köln, ça va? Ελληνικά, русский, 中文, 日本語. ",
        "emoji 😀🚀🎉 and math 𝔸𝔹ℂ ",
        r#"\u00e9\u20ac\ud83d\ude00 escaped \u0001\u001f "#,
        "plain ascii plain ascii plain ascii plain ascii plain ascii ",
    ];
    let mut text = String::from("[");
    let mut i = 0usize;
    while text.len() < target {
        if i > 0 {
            text.push(',');
        }
        text.push('"');
        for j in 0..(8 + i % 24) {
            text.push_str(PIECES[(i + j) % PIECES.len()]);
        }
        text.push('"');
        i += 1;
    }
    text.push(']');
    text
}

/// JSON text of at least `target` bytes: arrays of integers and doubles (in several literal
/// forms: exponents, negative zero, large values, short decimals, full-precision doubles).
fn number_document(target: usize) -> String {
    let mut text = String::from("[");
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut i = 0u64;
    while text.len() < target {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if i > 0 {
            text.push(',');
        }
        match i % 8 {
            0 => write!(text, "{}", state % 1_000_000),
            1 => write!(text, "{}", state as i64),
            2 => write!(text, "{}", state),
            3 => write!(text, "{:.2}", (state % 100_000) as f64 / 100.0),
            4 => write!(text, "{:?}", (f64::from_bits((state >> 12) | 0x3ff0_0000_0000_0000) - 1.0) * 1e-9),
            5 => write!(text, "{:e}", (state % 1_000_000_007) as f64 * 1e15),
            6 => write!(text, "{}", (state % 10_000) as f64 / 3.0),
            _ => write!(text, "{}E-{}", state % 10_000, state % 30),
        }
        .expect("write to String");
        i += 1;
    }
    text.push(']');
    text
}

fn jcs(c: &mut Criterion) {
    let inputs = [
        ("agent-card", AGENT_CARD.to_owned()),
        ("nested-1MB", nested_document(1 << 20)),
        ("strings-1MB", string_document(1 << 20)),
        ("numbers-1MB", number_document(1 << 20)),
    ];
    let mut group = c.benchmark_group("jcs");
    for (name, text) in &inputs {
        let bytes = text.as_bytes();
        let value: Value = serde_json::from_slice(bytes).expect("benchmark input is JSON");
        canonicalize(bytes).expect("benchmark input canonicalizes");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("canonicalize/{name}"), |b| b.iter(|| canonicalize(black_box(bytes))));
        group
            .bench_function(format!("canonicalize_value/{name}"), |b| b.iter(|| canonicalize_value(black_box(&value))));
    }
    group.finish();
}

criterion_group!(benches, jcs);
criterion_main!(benches);
