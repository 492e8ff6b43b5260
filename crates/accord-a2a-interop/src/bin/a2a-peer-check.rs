//! Runs Accord's A2A v1.0 client against a peer and prints one line per check.
//!
//! Run with: `cargo run -p accord-a2a-interop --bin a2a-peer-check -- CARD_URL BINDING [PEER]`
//!
//! `CARD_URL` is the agent's base URL or its card's URL, `BINDING` `JSONRPC`, `HTTP+JSON` or `GRPC`, and
//! `PEER` the name printed for the peer (default: the card's `name`). Prints
//! `PASS accord-client <peer> <binding> <check>` or `FAIL …: <why>` per check (with
//! `A2A_PEER_CHECK_VERBOSE` set, each line is followed by an indented note of what was seen);
//! exits 1 when any check failed, 2 on bad arguments.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (card_url, binding) = match args.as_slice() {
        [card_url, binding] | [card_url, binding, _] => (card_url, binding),
        _ => {
            eprintln!("usage: a2a-peer-check CARD_URL BINDING [PEER]");
            return ExitCode::from(2);
        }
    };
    let mut checks = accord_a2a_interop::check_peer(card_url, binding).await;
    if let Some(peer) = args.get(2) {
        for check in &mut checks {
            check.peer.clone_from(peer);
        }
    }
    let verbose = std::env::var_os("A2A_PEER_CHECK_VERBOSE").is_some();
    let mut failed = false;
    for check in &checks {
        println!("{}", check.line());
        if verbose && check.passed {
            println!("    {}", check.detail);
        }
        failed |= !check.passed;
    }
    if failed || checks.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
