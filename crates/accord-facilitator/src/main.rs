//! `accord-facilitator`: serves the loopback x402 facilitator until killed. The first line on
//! standard output is `accord-facilitator listening on http://HOST:PORT`.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// A loopback x402 facilitator for `accord-voucher` payments (tests and demos).
#[derive(Debug, Parser)]
#[command(name = "accord-facilitator", version)]
struct Args {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// A network to accept (CAIP-2; repeat for several).
    #[arg(long = "network", default_values_t = [String::from("accord:local")])]
    networks: Vec<String>,
    /// How long `timeout` faults hold a request, in seconds.
    #[arg(long, default_value_t = accord_facilitator::DEFAULT_HOLD.as_secs())]
    hold_seconds: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let listener = match tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("accord-facilitator: cannot listen on {}:{}: {error}", args.host, args.port);
            return ExitCode::FAILURE;
        }
    };
    let address = match listener.local_addr() {
        Ok(address) => address,
        Err(error) => {
            eprintln!("accord-facilitator: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "accord-facilitator listening on http://{address}");
    let _ = stdout.flush();
    let config = accord_facilitator::Config { networks: args.networks, hold: Duration::from_secs(args.hold_seconds) };
    if let Err(error) = axum::serve(listener, accord_facilitator::app(config)).await {
        eprintln!("accord-facilitator: {error}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
