//! Accord's A2A client against the official Rust SDK server (`a2a-server-lf`), in-process on
//! loopback: an echo executor served over JSON-RPC and HTTP+JSON, every check of
//! [`accord_a2a_interop::check_peer`] on both bindings.

mod support;

#[tokio::test]
async fn every_check_passes_against_the_official_rust_sdk_on_both_bindings() {
    let base = support::rust_peer::start_peer(std::time::Duration::from_millis(100)).await;
    let mut lines = Vec::new();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let checks = accord_a2a_interop::check_peer(&base, binding).await;
        assert!(checks.len() >= 10, "{checks:?}");
        assert!(checks.iter().all(|check| check.peer == "a2a-rust-peer" && check.binding == binding));
        lines.extend(checks.iter().map(|check| format!("{} ({})", check.line(), check.detail)));
    }
    eprintln!("{}", lines.join("\n"));
    let failures: Vec<&String> = lines.iter().filter(|line| !line.starts_with("PASS")).collect();
    assert!(failures.is_empty(), "{}", lines.join("\n"));
}
