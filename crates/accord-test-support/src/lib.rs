//! Test helpers: a real server on an ephemeral loopback port.

use std::net::SocketAddr;

use axum::Router;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub mod audit;
pub mod conformance;
pub mod tls;
mod wrapped;

pub use wrapped::{Tap, Wrapped};

/// A task's log as the engine keeps it, one word per entry that sets the state (`Submitted`,
/// `Working`, `InputRequired`, `Result`, `Error(Failed)`, …): what every face must leave alike for
/// the same scenario. Messages and artifacts are left out (what a wire carries of them differs by
/// design). Reading ends at the terminal entry; a log that does not end within 30 s fails.
pub async fn state_log(
    runtime: &accord_engine::task::TaskRuntime,
    owner: &accord_engine::task::OwnerHash,
    id: &str,
) -> Vec<String> {
    use accord_engine::task::{TaskEventKind, TaskId};
    use futures_util::StreamExt;
    let events = runtime.events(&TaskId::new(id), owner, 0).await.expect("the task's events");
    let events = tokio::time::timeout(std::time::Duration::from_secs(30), events.collect::<Vec<_>>())
        .await
        .expect("the task's log ends");
    events
        .into_iter()
        .filter_map(|event| match event.expect("an event").kind {
            TaskEventKind::Status { state, .. } => Some(format!("{state:?}")),
            TaskEventKind::Result { .. } => Some("Result".to_owned()),
            TaskEventKind::Error { state, .. } => Some(format!("Error({state:?})")),
            _ => None,
        })
        .collect()
}

/// A server running on `127.0.0.1:<ephemeral port>` for the duration of a test. Dropping it stops
/// the server.
pub struct TestServer {
    /// The bound address.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub origin: String,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Serves `app` until the returned server is dropped or [`TestServer::stop`]ped.
    pub async fn start(app: Router) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let (shutdown, signal) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = signal.await;
                })
                .await
                .expect("test server");
        });
        Self { addr, origin: format!("http://{addr}"), shutdown: Some(shutdown), task: Some(task) }
    }

    /// Serves an agent's routes at the root.
    pub async fn agent(agent: &accord_engine::Agent) -> Self {
        Self::start(accord_server::router(agent)).await
    }

    /// A URL on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.origin, path)
    }

    /// Stops the server and waits for it to finish.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// A skill handler that records what happened to its runs, for tests that must observe a handler
/// rather than assume what it saw.
pub mod probe {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::Notify;

    /// Counters shared between a test and the handlers it installed.
    #[derive(Debug, Default)]
    pub struct Probe {
        started: AtomicUsize,
        cancelled: AtomicUsize,
        /// Signalled when a run starts.
        pub on_start: Notify,
        /// Signalled when a run observes its cancellation.
        pub on_cancel: Notify,
    }

    impl Probe {
        /// A new probe.
        pub fn new() -> Arc<Self> {
            Arc::new(Self::default())
        }

        /// Records a run start.
        pub fn started(&self) {
            self.started.fetch_add(1, Ordering::SeqCst);
            self.on_start.notify_waiters();
            self.on_start.notify_one();
        }

        /// Records that a run saw its cancellation.
        pub fn cancelled(&self) {
            self.cancelled.fetch_add(1, Ordering::SeqCst);
            self.on_cancel.notify_waiters();
            self.on_cancel.notify_one();
        }

        /// How many runs started.
        pub fn starts(&self) -> usize {
            self.started.load(Ordering::SeqCst)
        }

        /// How many runs saw their cancellation.
        pub fn cancellations(&self) -> usize {
            self.cancelled.load(Ordering::SeqCst)
        }
    }
}
