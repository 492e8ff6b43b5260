//! A server that runs: its signals, its stop, and the handle to it.

use std::net::SocketAddr;
use std::time::Duration;

use accord_engine::task::TaskRuntime;
use accord_server::serve::Readiness;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Serve, ServeError, Telemetry};

impl Serve {
    /// Serves until SIGINT, SIGTERM or the [`Serve::stop_on`] signal, then stops gracefully
    /// ([`Running::stop`]); a second signal stops at once ([`Stopper::stop_now`]). Prints where
    /// it listens first (one line per address on standard output).
    pub async fn run(mut self) -> Result<(), ServeError> {
        let stop_on = self.stop_on.take();
        let running = self.bind().await?;
        running.print_summary();
        let stopper = running.stopper();
        let grace = running.grace;
        tokio::spawn(async move {
            let signalled = stop_signal();
            match stop_on {
                Some(custom) => {
                    tokio::select! {
                        () = signalled => {}
                        () = custom => {}
                    }
                }
                None => signalled.await,
            }
            tracing::info!(
                grace_seconds = grace.as_secs_f64(),
                "stopping: requests in flight may finish; a second signal stops at once"
            );
            stopper.stop();
            stop_signal().await;
            tracing::warn!("a second signal: stopping at once");
            stopper.stop_now();
        });
        running.wait().await
    }
}

/// How far a stop has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum StopLevel {
    Serving,
    /// Requests in flight finish within the grace period.
    Graceful,
    /// Everything still open is cut.
    Now,
}

/// Turns stop requests into what the listeners see: on the first, `/health` answers 503 at once,
/// and the listeners close after `delay` (or at a request to stop now); a request to stop now
/// cuts what is open.
pub(super) async fn coordinate_stop(
    mut requested: watch::Receiver<StopLevel>,
    close: watch::Sender<StopLevel>,
    readiness: Readiness,
    delay: Duration,
) {
    // A dropped sender (the Running handle is gone) stops everything too.
    let level = requested.wait_for(|level| *level >= StopLevel::Graceful).await.map(|level| *level).ok();
    readiness.drain();
    if level == Some(StopLevel::Graceful) && !delay.is_zero() {
        tracing::info!(delay_seconds = delay.as_secs_f64(), "draining: /health answers 503 until the listeners close");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = requested.wait_for(|level| *level == StopLevel::Now) => {}
        }
    }
    let _ = close.send(StopLevel::Graceful);
    let _ = requested.wait_for(|level| *level == StopLevel::Now).await;
    let _ = close.send(StopLevel::Now);
}

/// SIGINT (Ctrl-C) or SIGTERM (what service managers and container runtimes send).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A server that is serving: where it listens, and how to stop it.
#[must_use = "a Running server stops serving when its runtime ends; wait for it or stop it"]
pub struct Running {
    pub(super) url: String,
    pub(super) address: SocketAddr,
    pub(super) grpc_addr: Option<SocketAddr>,
    pub(super) metrics_url: Option<String>,
    pub(super) summary: Vec<String>,
    pub(super) stop: watch::Sender<StopLevel>,
    pub(super) servers: Vec<JoinHandle<std::io::Result<()>>>,
    pub(super) runtime: TaskRuntime,
    pub(super) telemetry: Option<Telemetry>,
    pub(super) grace: Duration,
    /// Keeps the backends' metrics up to date; stopped with the server.
    pub(super) backend_metrics: Option<JoinHandle<()>>,
    /// Reloads the TLS certificate when its files change; stopped with the server.
    pub(super) tls_reload: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").field("url", &self.url).field("grpc", &self.grpc_addr).finish_non_exhaustive()
    }
}

/// Stops a [`Running`] server from elsewhere (a signal handler, a test).
#[derive(Debug, Clone)]
pub struct Stopper(watch::Sender<StopLevel>);

impl Stopper {
    /// Starts the graceful stop: `/health` answers 503, and after `--shutdown-delay` the
    /// listeners close; requests in flight finish within `--shutdown-grace`, streams end
    /// cleanly, then running tasks give up their leases.
    pub fn stop(&self) {
        self.0.send_if_modified(|level| {
            let starts = *level == StopLevel::Serving;
            if starts {
                *level = StopLevel::Graceful;
            }
            starts
        });
    }

    /// Stops at once: whatever is still open is cut (a second Ctrl-C).
    pub fn stop_now(&self) {
        let _ = self.0.send(StopLevel::Now);
    }
}

impl Running {
    /// The agent's base URL, ending with `/` (e.g. `http://127.0.0.1:8787/`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address the HTTP listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The address gRPC is served on (the HTTP listener's, or `--grpc-port`'s), if it is.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc_addr
    }

    /// Where `/metrics` is served, if it is.
    pub fn metrics_url(&self) -> Option<&str> {
        self.metrics_url.as_deref()
    }

    /// The task runtime, for work beside the faces (reading tasks, its metrics).
    pub fn runtime(&self) -> &TaskRuntime {
        &self.runtime
    }

    /// What [`Serve::run`] prints: one line per address, then the store and the notes.
    pub fn summary(&self) -> &[String] {
        &self.summary
    }

    /// Prints the summary on standard output; a closed standard output does not stop the server.
    pub fn print_summary(&self) {
        use std::io::Write as _;
        let mut out = std::io::stdout();
        for line in &self.summary {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
    }

    /// A handle that stops the server.
    pub fn stopper(&self) -> Stopper {
        Stopper(self.stop.clone())
    }

    /// Stops gracefully ([`Stopper::stop`]) and waits until every listener has finished.
    pub async fn stop(self) -> Result<(), ServeError> {
        self.stopper().stop();
        self.wait().await
    }

    /// Waits until the server stops (through a [`Stopper`], or a listener's failure), then
    /// closes the task runtime and flushes the span exporter.
    pub async fn wait(self) -> Result<(), ServeError> {
        let Self { servers, runtime, telemetry, stop, backend_metrics, tls_reload, .. } = self;
        let mut outcome = Ok(());
        for server in servers {
            let result = match server.await {
                Ok(result) => result.map_err(|error| ServeError::failed(error.to_string())),
                Err(error) => Err(ServeError::failed(format!("a listener stopped: {error}"))),
            };
            if let Err(error) = result {
                // One listener failing stops the others too.
                Stopper(stop.clone()).stop();
                if outcome.is_ok() {
                    outcome = Err(error);
                }
            }
        }
        if let Some(task) = backend_metrics {
            task.abort();
        }
        if let Some(task) = tls_reload {
            task.abort();
        }
        runtime.close().await;
        if let Some(telemetry) = telemetry {
            telemetry.shutdown();
        }
        outcome
    }
}
