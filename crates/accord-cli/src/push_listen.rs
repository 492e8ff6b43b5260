//! `accord push listen`: a webhook that prints each push notification it receives.
//!
//! Each new delivery is one line of JSON on stdout — `{"deliveryId", "attempt", "response"}`,
//! the response being the A2A `StreamResponse` as sent — so the output can be piped to other
//! tools. The listening URL and each dropped duplicate are written to stderr.

use std::io::Write;
use std::net::SocketAddr;

use accord_server::push::receiver::{DEFAULT_WEBHOOK_PATH, Notification, PushReceiver};
use serde_json::json;
use tokio::net::TcpListener;

/// The arguments of `accord push listen`.
#[derive(Debug, Clone, clap::Args)]
pub struct ListenArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port to listen on (0 picks a free one; the URL is printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The webhook's path.
    #[arg(long, default_value = DEFAULT_WEBHOOK_PATH)]
    pub path: String,
    /// The token notifications must carry in `X-A2A-Notification-Token` (none: any is accepted).
    #[arg(long, env = "ACCORD_PUSH_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// The receiver `args` describe: its path and token, with each dropped duplicate noted on
/// stderr. Fails on a path that is not a plain route path.
pub fn receiver(args: &ListenArgs) -> Result<PushReceiver, String> {
    if !args.path.starts_with('/') || args.path.contains(['{', '}', '*', ':']) {
        return Err(format!("--path must start with / and hold no {{, }}, * or : (got {:?})", args.path));
    }
    let mut receiver =
        PushReceiver::new().path(args.path.as_str()).on_duplicate(|id| eprintln!("duplicate delivery {id} dropped"));
    if let Some(token) = &args.token {
        receiver = receiver.token(token);
    }
    Ok(receiver)
}

/// One notification as the line `accord push listen` prints (without the newline).
pub fn delivery_line(notification: &Notification) -> String {
    json!({
        "deliveryId": notification.delivery_id,
        "attempt": notification.attempt,
        "response": notification.response,
    })
    .to_string()
}

/// The webhook's URL when it listens on `address`.
pub fn webhook_url(address: SocketAddr, path: &str) -> String {
    let host = if address.is_ipv6() { format!("[{}]", address.ip()) } else { address.ip().to_string() };
    format!("http://{host}:{}{path}", address.port())
}

/// Serves the webhook on `listener` and writes each new notification's line to `out`, until
/// the server fails or `out` cannot be written.
pub async fn serve(listener: TcpListener, args: &ListenArgs, mut out: impl Write) -> Result<(), String> {
    let (router, mut notifications) = receiver(args)?.into_router();
    let server = axum::serve(listener, router).into_future();
    tokio::pin!(server);
    loop {
        tokio::select! {
            result = &mut server => {
                return result.map_err(|error| format!("the webhook server stopped: {error}"));
            }
            Some(notification) = notifications.recv() => {
                writeln!(out, "{}", delivery_line(&notification))
                    .and_then(|()| out.flush())
                    .map_err(|error| format!("cannot write a notification: {error}"))?;
            }
        }
    }
}

/// Runs `accord push listen`: listens on `--host`/`--port`, prints the webhook's URL on stderr,
/// then each notification on stdout, until Ctrl-C.
pub async fn listen(args: ListenArgs) -> Result<(), String> {
    let listener = TcpListener::bind((args.host.as_str(), args.port))
        .await
        .map_err(|error| format!("cannot listen on {}:{}: {error}", args.host, args.port))?;
    let address = listener.local_addr().map_err(|error| error.to_string())?;
    eprintln!("listening for push notifications on {}", webhook_url(address, &args.path));
    tokio::select! {
        result = serve(listener, &args, std::io::stdout()) => result,
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
