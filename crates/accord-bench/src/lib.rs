//! Accord's out-of-process load harness: the load generator behind `bench-load` (checked
//! answers, latency percentiles, the server's CPU time per request) and, in the `sdk-echo`
//! binary, the official Rust A2A SDK echo server it compares Accord with (and, in `axum-floor`, the
//! bare axum floor beside both). `scripts/bench` runs them against `accord serve`, each server
//! and the generator pinned to their own core. The
//! `soak` module, behind `bench-soak`, is the long mixed load and the fault cases of
//! `scripts/soak` and `scripts/faults` (docs/soak.md).

pub mod check;
pub mod load;
pub mod soak;
pub mod sse;
pub mod stats;

/// Binds a comparison server's listener on `host:port` and returns it with its base URL
/// (`http://<address>`); on failure says why on standard error, as `name`, and returns the exit
/// code to end with.
pub async fn listen(
    name: &str,
    host: &str,
    port: u16,
) -> Result<(tokio::net::TcpListener, String), std::process::ExitCode> {
    let fail = |error: String| {
        eprintln!("{name}: {error}");
        std::process::ExitCode::FAILURE
    };
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|error| fail(format!("cannot listen on {host}:{port}: {error}")))?;
    let address = listener.local_addr().map_err(|error| fail(error.to_string()))?;
    Ok((listener, format!("http://{address}")))
}
