//! The serve loop: accepting connections and serving a [`Router`] on them within limits.
//!
//! [`Server`] replaces `axum::serve` where a server faces the open network. It bounds what one
//! client, or many, can hold: connections (at the cap, new ones wait in the kernel's accept
//! backlog), requests in flight (beyond the cap, `503` with `Retry-After`, in the shape of the
//! face the request is for: see [`ConnectionLimits::max_in_flight`]), the time to send a
//! request head, to stay idle between requests, to send a request body and to read a response.
//! A connection that sends nothing is closed after a short first-byte timeout, and at the
//! connection cap idle connections (kept alive between requests, or silent since they opened)
//! are closed to make room before a new connection has to wait.
//! Accept errors such as running out of file descriptors back off instead of spinning, and are
//! logged at most once per [`ACCEPT_ERROR_LOG_PERIOD`]. TCP_NODELAY is set on every connection.
//!
//! A graceful shutdown stops accepting, closes idle connections, lets requests in flight finish,
//! and ends streamed responses between two events (an event stream closes cleanly; a gRPC stream
//! ends with `UNAVAILABLE`), within [`Server::shutdown_grace`]; past it, or on
//! [`Server::with_forced_shutdown`]'s signal, what is still open is cut.
//!
//! ```no_run
//! use accord_server::serve::{ConnectionLimits, Server};
//! use std::time::Duration;
//!
//! # async fn run(app: axum::Router) -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! let limits = ConnectionLimits { max_connections: 256, idle_timeout: Duration::from_secs(30), ..ConnectionLimits::default() };
//! Server::new(listener, app)
//!     .limits(limits)
//!     .with_graceful_shutdown(async {
//!         let _ = tokio::signal::ctrl_c().await;
//!     })
//!     .await
//! # }
//! ```
//!
//! With [`Server::tls`] every connection is TLS (1.2 or 1.3, ALPN `h2` or `http/1.1`): the
//! handshake runs in the connection's own task, under the first-byte timeout and the connection
//! cap, and at most [`TlsConfig::max_handshakes`] run at once. A refused handshake is logged with
//! its cause at INFO at most once per [`HANDSHAKE_LOG_PERIOD`] (at DEBUG otherwise), so that a
//! scanner cannot flood the log. Requests of a TLS connection carry the `https` scheme in their
//! URI (HTTP/1.1 requests are given it from their `Host`), so that the faces write `https://`
//! URLs.
//!
//! What this module must not do: look inside requests. Which request is too big or malformed is
//! the faces' business.

mod watch;

pub use crate::refusal::refuse_busy;

use std::future::{Future, IntoFuture};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, Version, header};
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch as signal};
use tokio::time::Instant;
use tower::ServiceExt;

use self::watch::{DeadlineBody, EndOnStop, GuardedBody, IdleCount, Overstep, StreamEnd, Watch, WatchedIo};
use crate::refusal::{Busy, BusyAnswered, Refusal, RefusalKind};
use crate::tls::{PeerCertificate, TlsConfig};

/// How often, at most, a refused TLS handshake is logged at INFO; the others in the period are
/// logged at DEBUG and counted in the next INFO line.
pub const HANDSHAKE_LOG_PERIOD: Duration = Duration::from_secs(10);

/// How often, at most, a run of accept errors is logged.
pub const ACCEPT_ERROR_LOG_PERIOD: Duration = Duration::from_secs(30);

/// The first wait after an accept error; it doubles on each further error up to
/// [`ACCEPT_BACKOFF_MAX`].
pub const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);

/// The longest wait between accept attempts after errors.
pub const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What one server lets its clients hold. The defaults suit a server under a 1,024 file
/// descriptor limit; `docs/limits.md` lists each with its `accord serve` flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served at once. At the cap the server stops accepting: new connections wait
    /// in the kernel's accept backlog until one closes. Default 512.
    pub max_connections: usize,
    /// Requests being handled at once, from their head until their response head (a stream's
    /// body does not count: streams are bounded by connections and `max_streams_per_connection`).
    /// Beyond the cap a request is refused at once with `Retry-After: 1`, without running a
    /// handler: the serve loop marks it busy and the face it is for answers in its own shape (Lucid
    /// `503 server_busy`, A2A JSON-RPC and REST `503` with their `UnavailableError`, gRPC
    /// `UNAVAILABLE`, JSON-RPC tasks `503` with `-32096`); a route no face renders (the card,
    /// `/health`, the landing page, `/metrics`, `/openapi.json`) answers a bare `503`. A route of
    /// the user's own must be mounted behind [`refuse_busy`] (`.layer(axum::middleware::from_fn(
    /// refuse_busy))`) for the same: otherwise its handler runs, though its answer is replaced
    /// by the bare `503`. Default 256.
    pub max_in_flight: usize,
    /// Time from accepting a connection to its first byte; past it a connection that has sent
    /// nothing is closed. Default 5 s.
    pub first_byte_timeout: Duration,
    /// Time from the first byte of a request head to its last; past it the connection is
    /// closed. Default 10 s.
    pub header_timeout: Duration,
    /// Time a connection may wait with no request open (fresh, or kept alive between requests);
    /// past it the connection is closed. Default 60 s.
    pub idle_timeout: Duration,
    /// Time from a request head to the end of its body; past it the body read fails and the
    /// connection is closed. Default 30 s.
    pub body_timeout: Duration,
    /// Time a response write may wait for the client to read; past it the connection is
    /// closed. Default 30 s.
    pub write_timeout: Duration,
    /// Bytes HTTP/1.1 buffers per connection, the request head included (a larger head is
    /// refused with `431`). At least 8,192. Default 64 KiB.
    pub max_buffer: usize,
    /// Concurrent HTTP/2 streams per connection. Default 100.
    pub max_streams_per_connection: u32,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 512,
            max_in_flight: 256,
            first_byte_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_buffer: 64 * 1024,
            max_streams_per_connection: 100,
        }
    }
}

impl ConnectionLimits {
    /// The period of the per-connection check: a quarter of the shortest timeout, between 10 ms
    /// and 1 s, so a limit is enforced at most a quarter late.
    fn tick(&self) -> Duration {
        let shortest = [self.first_byte_timeout, self.header_timeout, self.idle_timeout, self.write_timeout]
            .into_iter()
            .min()
            .unwrap_or_default();
        (shortest / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }

    /// The period of the check while every open request is being answered without waiting on
    /// the client (a long stream, say): only a write that starts to wait can overstep then. Each
    /// check polls the connection's response body too, so ten thousand idle streams checked
    /// every second cost a few percent of a core. The connection's task sets the period again
    /// after each poll of the connection, so on HTTP/1.1 a write that starts to wait, or a
    /// request that ends, brings back [`ConnectionLimits::tick`] at once; on HTTP/2 a request
    /// ends on a task of its own, and the short period comes back at the next check.
    fn quiet_tick(&self) -> Duration {
        self.tick() * QUIET_TICKS
    }
}

/// How many times longer the check's period is while the connection is quiet
/// ([`ConnectionLimits::quiet_tick`]).
const QUIET_TICKS: u32 = 8;

type ShutdownSignal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Whether a server takes new work, shared by the one that stops it and `GET /health`
/// ([`crate::ServerConfig::readiness`]). Cheap to clone; clones share the state.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<std::sync::atomic::AtomicBool>);

impl Readiness {
    /// From now on `/health` answers `503`: the server is about to stop.
    pub fn drain(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether [`Readiness::drain`] was called.
    pub fn is_draining(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Serves a [`Router`] on a listener within [`ConnectionLimits`]; `.await` it to run.
#[must_use = "a server does nothing until awaited"]
pub struct Server {
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: Option<ShutdownSignal>,
    forced: Option<ShutdownSignal>,
    grace: Option<Duration>,
    tls: Option<TlsConfig>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("listener", &self.listener)
            .field("limits", &self.limits)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server for `router` on `listener`, with the default limits and no shutdown signal.
    pub fn new(listener: TcpListener, router: Router) -> Self {
        Self {
            listener,
            router,
            limits: ConnectionLimits::default(),
            shutdown: None,
            forced: None,
            grace: None,
            tls: None,
        }
    }

    /// Serves every connection over TLS with `tls`'s certificate (reloaded through any clone of
    /// it, for new handshakes).
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: ConnectionLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Stops accepting when `signal` completes, lets open requests finish (idle connections
    /// close at once, streamed responses end between two events), then returns.
    pub fn with_graceful_shutdown(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(Box::pin(signal));
        self
    }

    /// How long a graceful shutdown waits for requests in flight; past it they are cut and
    /// [`Server::run`] returns. Default: no limit.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Cuts every connection when `signal` completes during a graceful shutdown (a second
    /// Ctrl-C, say), instead of waiting for the grace period. Completing before the graceful
    /// signal starts the shutdown too.
    pub fn with_forced_shutdown(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.forced = Some(Box::pin(signal));
        self
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until the shutdown signal, if any, completes and every connection has finished.
    /// Errors only if the limits are unusable (a zero cap, or a buffer under 8,192 bytes).
    pub async fn run(self) -> io::Result<()> {
        let Self { listener, router, limits, shutdown, forced, grace, tls } = self;
        if limits.max_connections == 0 || limits.max_in_flight == 0 || limits.max_buffer < 8192 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "max_connections and max_in_flight must be at least 1, max_buffer at least 8192",
            ));
        }
        let max_connections = u32::try_from(limits.max_connections)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "max_connections is too large"))?;
        let shutdown = shutdown.unwrap_or_else(|| Box::pin(std::future::pending()));
        let mut forced = forced.unwrap_or_else(|| Box::pin(std::future::pending()));
        let mut shutdown = Box::pin(async move {
            tokio::select! {
                () = shutdown => {}
                () = &mut forced => return (true, forced),
            }
            (false, forced)
        });
        let connections = Arc::new(Semaphore::new(limits.max_connections));
        let idle = IdleCount::default();
        let (make_room, room_wanted) = signal::channel(0u64);
        let (stop, stopping) = signal::channel(false);
        let (cut, cutting) = signal::channel(false);
        let shared = Arc::new(Shared {
            router,
            in_flight: Arc::new(Semaphore::new(limits.max_in_flight)),
            http1: http1_builder(&limits),
            http2: http2_builder(&limits),
            limits,
            idle: idle.clone(),
            stopping,
            tls: tls.map(|tls| Tls {
                acceptor: tokio_rustls::TlsAcceptor::from(tls.server_config()),
                handshakes: Arc::new(Semaphore::new(tls.handshake_cap())),
                refusals: std::sync::Mutex::new(HandshakeLog::default()),
            }),
        });
        let mut backoff = AcceptBackoff::default();
        let (already_forced, mut forced) = 'accepting: loop {
            // Accept, then take a connection slot: at the cap, idle connections are asked to close
            // for the connection that waits (never before one does), and the connections behind
            // it wait in the backlog.
            let stream = tokio::select! {
                stream = accept(&listener, &mut backoff) => stream,
                outcome = &mut shutdown => break 'accepting outcome,
            };
            let permit = match connections.clone().try_acquire_owned() {
                Ok(permit) => Ok(permit),
                Err(_) => loop {
                    if idle.get() > 0 {
                        make_room.send_modify(|round| *round = round.wrapping_add(1));
                    }
                    tokio::select! {
                        permit = connections.clone().acquire_owned() => break permit,
                        // A busy connection became idle: it can make room now.
                        () = idle.became_idle() => {}
                        outcome = &mut shutdown => break 'accepting outcome,
                    }
                },
            };
            let Ok(permit) = permit else {
                let never: ShutdownSignal = Box::pin(std::future::pending());
                break 'accepting (false, never);
            };
            let shared = shared.clone();
            let room_wanted = room_wanted.clone();
            let cutting = cutting.clone();
            tokio::spawn(async move {
                serve_connection(stream, shared, room_wanted, cutting).await;
                drop(permit);
            });
        };
        drop(listener);
        let _ = stop.send(true);
        // Every connection holds a slot until it ends: holding them all means all have ended.
        let all_ended = connections.acquire_many(max_connections);
        tokio::pin!(all_ended);
        let grace = async {
            match grace {
                Some(grace) => tokio::time::sleep(grace).await,
                None => std::future::pending().await,
            }
        };
        if !already_forced {
            tokio::select! {
                _ = &mut all_ended => return Ok(()),
                () = grace => tracing::warn!("the shutdown grace period is over: cutting the requests still open"),
                () = &mut forced => tracing::warn!("stopping at once: cutting the requests still open"),
            }
        }
        let _ = cut.send(true);
        let _ = all_ended.await;
        Ok(())
    }
}

impl IntoFuture for Server {
    type Output = io::Result<()>;
    type IntoFuture = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

struct Shared {
    router: Router,
    in_flight: Arc<Semaphore>,
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
    limits: ConnectionLimits,
    idle: IdleCount,
    /// Set when the graceful shutdown starts.
    stopping: signal::Receiver<bool>,
    tls: Option<Tls>,
}

/// The TLS side of a server: the acceptor, the cap on handshakes in progress and the log of
/// refused ones.
struct Tls {
    acceptor: tokio_rustls::TlsAcceptor,
    handshakes: Arc<Semaphore>,
    refusals: std::sync::Mutex<HandshakeLog>,
}

/// When a refused handshake was last logged at INFO, and how many were logged at DEBUG since.
#[derive(Debug, Default)]
struct HandshakeLog {
    last_logged: Option<Instant>,
    since: u64,
}

impl HandshakeLog {
    /// Logs a refused handshake: at INFO if none was in the last [`HANDSHAKE_LOG_PERIOD`], else
    /// at DEBUG. The cause is rustls's (an alert, a certificate check), never key material.
    fn refused(&mut self, error: &io::Error, now: Instant) {
        let due = self.last_logged.is_none_or(|last| now.duration_since(last) >= HANDSHAKE_LOG_PERIOD);
        if due {
            tracing::info!(
                cause = %error,
                refused_since = self.since,
                "TLS handshake refused (logged at most every {} s)",
                HANDSHAKE_LOG_PERIOD.as_secs()
            );
            self.last_logged = Some(now);
            self.since = 0;
        } else {
            self.since += 1;
            tracing::debug!(cause = %error, "TLS handshake refused");
        }
    }
}

fn http1_builder(limits: &ConnectionLimits) -> http1::Builder {
    let mut builder = http1::Builder::new();
    // The watch enforces the head timeout: hyper's own would also cut idle keep-alive connections.
    builder.header_read_timeout(None).max_buf_size(limits.max_buffer);
    builder
}

fn http2_builder(limits: &ConnectionLimits) -> http2::Builder<TokioExecutor> {
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder.max_concurrent_streams(limits.max_streams_per_connection);
    builder
}

/// The HTTP/2 connection preface (RFC 9113 §3.4): a client that speaks HTTP/2 without an upgrade
/// (gRPC over cleartext) starts with it; no HTTP/1.1 request does.
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Which protocol a new connection speaks, told by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// Tells the protocol from the first bytes of `stream` without consuming them: hyper then reads
/// the request from the start into its own buffer. (Reading them here and handing them back,
/// as a rewinding reader does, made hyper's first read return only these bytes, and its read
/// buffer grow from 8 to 16 KiB on every connection for the second read.) An HTTP/1.1 request
/// differs from the preface within its first three bytes; only a client that sends a part of the
/// preface and pauses is peeked at again, after a short sleep (a peek that found bytes would
/// find them again at once). End of stream counts as HTTP/1.1: hyper then closes the connection.
async fn sniff(stream: &TcpStream) -> io::Result<Protocol> {
    let mut first = [0u8; H2_PREFACE.len()];
    loop {
        let read = stream.peek(&mut first).await?;
        if read == 0 || first[..read] != H2_PREFACE[..read] {
            return Ok(Protocol::Http1);
        }
        if read == H2_PREFACE.len() {
            return Ok(Protocol::Http2);
        }
        tokio::time::sleep(PREFACE_PAUSE).await;
    }
}

/// How long [`sniff`] waits before it peeks again at a connection that sent part of the HTTP/2
/// preface.
const PREFACE_PAUSE: Duration = Duration::from_millis(10);

/// A hyper connection of either protocol, as the serve loop drives it.
trait HttpConnection: Future<Output = Result<(), hyper::Error>> {
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<I, S, B> HttpConnection for http1::Connection<I, S>
where
    S: hyper::service::HttpService<Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        http1::Connection::graceful_shutdown(self);
    }
}

impl<I, S, B> HttpConnection for http2::Connection<I, S, TokioExecutor>
where
    S: hyper::service::HttpService<Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::Future: Send + 'static,
    TokioExecutor: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        http2::Connection::graceful_shutdown(self);
    }
}

async fn serve_connection(
    stream: TcpStream,
    shared: Arc<Shared>,
    mut room_wanted: signal::Receiver<u64>,
    mut cutting: signal::Receiver<bool>,
) {
    let watch = Watch::new(shared.idle.clone());
    serve_watched(stream, &shared, &watch, &mut room_wanted, &mut cutting).await;
    watch.closed();
}

async fn serve_watched(
    stream: TcpStream,
    shared: &Arc<Shared>,
    watch: &Watch,
    room_wanted: &mut signal::Receiver<u64>,
    cutting: &mut signal::Receiver<bool>,
) {
    let mut stopping = shared.stopping.clone();
    room_wanted.borrow_and_update();
    // Streams write many small frames: without TCP_NODELAY, Nagle's algorithm holds each one until
    // the last is acknowledged, and a client's delayed ACK makes that up to 40 ms per frame.
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "could not set TCP_NODELAY on a connection");
    }
    let mut ticks = tokio::time::interval(shared.limits.tick());
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Handlers and layers see the client's address as axum's `ConnectInfo` (the rate limit counts
    // anonymous callers by it).
    let peer = stream.peer_addr().ok();
    let Some(tls) = &shared.tls else {
        // The first bytes tell the protocol, under the same limits as any connection that has
        // sent nothing yet.
        let protocol = {
            let sniffing = sniff(&stream);
            let mut watching =
                Watching { shared, watch, stopping: &mut stopping, room_wanted, cutting, ticks: &mut ticks };
            match watching.until(sniffing).await {
                Some(Ok(protocol)) => protocol,
                Some(Err(error)) => {
                    tracing::debug!(%error, "connection ended before its first request");
                    return;
                }
                None => return,
            }
        };
        drop(ticks);
        let io = TokioIo::new(WatchedIo::new(stream, watch.clone()));
        let loops = Loops { shared, watch, stopping, room_wanted, cutting };
        return serve_http(io, protocol, Connection { peer, https: false, certificate: None }, loops).await;
    };
    let mut watching = Watching { shared, watch, stopping: &mut stopping, room_wanted, cutting, ticks: &mut ticks };
    // Until its first byte a TLS connection is as idle as a silent clear-text one: closed after
    // the first-byte timeout, and at the connection cap to make room.
    let mut first = [0u8; 1];
    match watching.until(stream.peek(&mut first)).await {
        Some(Ok(read)) if read > 0 => {}
        _ => return,
    }
    // Then the handshake is the client's work in progress, like a request head that is still
    // arriving: not closed to make room, but still due within the first-byte timeout. The
    // ClientHello is read without a slot, so that handshakes stalled in it hold none; the slot is
    // taken for the part that costs the server (the key exchange and the signature).
    let handshake = async {
        let mut hello = tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream);
        let start = match (&mut hello).await {
            Ok(start) => start,
            Err(error) => return Err((error, hello.take_io())),
        };
        let _slot = tls.handshakes.acquire().await;
        // Fallible: a refused handshake gives the socket back, for a close the client can read.
        match start.into_stream(tls.acceptor.config().clone()).into_fallible().await {
            Ok(stream) => Ok(stream),
            Err((error, stream)) => Err((error, Some(stream))),
        }
    };
    let stream = match watching.until_busy(handshake).await {
        Some(Ok(stream)) => stream,
        Some(Err((error, stream))) => {
            tls.refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner).refused(&error, Instant::now());
            if let Some(stream) = stream {
                watch::linger_after_refusal(stream).await;
            }
            return;
        }
        None => return,
    };
    drop(ticks);
    let session = stream.get_ref().1;
    let protocol = match session.alpn_protocol() {
        Some(b"h2") => Protocol::Http2,
        _ => Protocol::Http1,
    };
    // Present only when the handshake verified it against the configured authorities.
    let certificate =
        session.peer_certificates().and_then(|chain| chain.first()).map(|end| PeerCertificate::from_der(end));
    let io = TokioIo::new(WatchedIo::new(stream, watch.clone()));
    let loops = Loops { shared, watch, stopping, room_wanted, cutting };
    serve_http(io, protocol, Connection { peer, https: true, certificate }, loops).await;
}

/// What a connection's task watches before its first request: the shutdown, the connection cap
/// and the first-byte timeout.
struct Watching<'a> {
    shared: &'a Arc<Shared>,
    watch: &'a Watch,
    stopping: &'a mut signal::Receiver<bool>,
    room_wanted: &'a mut signal::Receiver<u64>,
    cutting: &'a mut signal::Receiver<bool>,
    ticks: &'a mut tokio::time::Interval,
}

impl Watching<'_> {
    /// Runs `work` until it ends (`Some`), or until the connection is to close (`None`): nothing
    /// was sent yet, so it closes at once, as an idle connection does.
    async fn until<T>(&mut self, work: impl Future<Output = T>) -> Option<T> {
        self.watch_over(work, true).await
    }

    /// As [`Self::until`], for work the client has started (a TLS handshake): it is not closed
    /// to make room at the connection cap.
    async fn until_busy<T>(&mut self, work: impl Future<Output = T>) -> Option<T> {
        self.watch_over(work, false).await
    }

    async fn watch_over<T>(&mut self, work: impl Future<Output = T>, evictable: bool) -> Option<T> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return Some(done),
                _ = self.stopping.wait_for(|stop| *stop) => return None,
                _ = self.cutting.wait_for(|cut| *cut) => return None,
                changed = self.room_wanted.changed() => {
                    if changed.is_ok() && evictable && self.watch.is_idle() {
                        tracing::debug!(reason = Overstep::Evicted.as_str(), "closing a connection");
                        return None;
                    }
                }
                _ = self.ticks.tick() => {
                    if let Some(overstep) = self.watch.overstep(&self.shared.limits, Instant::now()) {
                        tracing::debug!(reason = overstep.as_str(), "closing a connection");
                        return None;
                    }
                }
            }
        }
    }
}

/// What every request of a connection learns about it.
struct Connection {
    /// The client's address, as axum's `ConnectInfo`.
    peer: Option<SocketAddr>,
    /// Whether the connection is TLS: requests get the `https` scheme.
    https: bool,
    /// The client's verified certificate, as a [`PeerCertificate`] extension.
    certificate: Option<PeerCertificate>,
}

/// Serves HTTP on a connection whose protocol is known, until it ends.
async fn serve_http<I>(io: TokioIo<I>, protocol: Protocol, connection: Connection, mut loops: Loops<'_>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (shared, watch) = (loops.shared, loops.watch);
    let service = {
        let shared = shared.clone();
        let watch = watch.clone();
        hyper::service::service_fn(move |mut request: Request<Incoming>| {
            let shared = shared.clone();
            let watch = watch.clone();
            if let Some(peer) = connection.peer {
                request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            }
            if connection.https {
                with_https_scheme(&mut request);
            }
            if let Some(certificate) = &connection.certificate {
                request.extensions_mut().insert(certificate.clone());
            }
            async move { Ok::<_, std::convert::Infallible>(handle(request, &shared, &watch).await) }
        })
    };
    // Pinned here and lent to `drive`: moved into it, the connection (which holds the request
    // handler's future) would take room in this task twice.
    match protocol {
        Protocol::Http1 => loops.drive(std::pin::pin!(shared.http1.serve_connection(io, service))).await,
        Protocol::Http2 => loops.drive(std::pin::pin!(shared.http2.serve_connection(io, service))).await,
    }
}

/// Gives a request that came over TLS the `https` scheme in its URI: an HTTP/2 request has it
/// already (its `:scheme`), an HTTP/1.1 request in origin form is given it with its `Host` as
/// the authority. A request without a usable `Host` is left as it is.
fn with_https_scheme<B>(request: &mut Request<B>) {
    if request.uri().scheme().is_some() {
        return;
    }
    let Some(authority) = request
        .headers()
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .and_then(|host| host.parse::<axum::http::uri::Authority>().ok())
    else {
        return;
    };
    let mut parts = request.uri().clone().into_parts();
    parts.scheme = Some(axum::http::uri::Scheme::HTTPS);
    parts.authority = Some(authority);
    if parts.path_and_query.is_none() {
        parts.path_and_query = Some(axum::http::uri::PathAndQuery::from_static("/"));
    }
    if let Ok(uri) = axum::http::Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
}

/// What a connection's task watches beside its hyper connection.
struct Loops<'a> {
    shared: &'a Arc<Shared>,
    watch: &'a Watch,
    stopping: signal::Receiver<bool>,
    room_wanted: &'a mut signal::Receiver<u64>,
    cutting: &'a mut signal::Receiver<bool>,
}

impl Loops<'_> {
    /// Serves `connection` until it ends, the shutdown cuts it or a limit closes it.
    async fn drive(&mut self, mut connection: Pin<&mut impl HttpConnection>) {
        let (shared, watch) = (self.shared, self.watch);
        let period_now = || if watch.is_quiet() { shared.limits.quiet_tick() } else { shared.limits.tick() };
        let mut period = period_now();
        let check = tokio::time::sleep(period);
        tokio::pin!(check);
        let mut shutting_down = *self.stopping.borrow();
        if shutting_down {
            connection.as_mut().graceful_shutdown();
        }
        loop {
            // Biased, the connection first: the check then sees the state this very poll of the
            // connection left (a request that opened or ended, a write that started to wait) and
            // sets its period from it.
            let due = std::future::poll_fn(|cx| {
                let wanted = period_now();
                if wanted != period {
                    period = wanted;
                    check.as_mut().reset(Instant::now() + period);
                }
                std::task::ready!(check.as_mut().poll(cx));
                check.as_mut().reset(Instant::now() + period);
                std::task::Poll::Ready(())
            });
            tokio::select! {
                biased;
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "connection ended with an error");
                    }
                    return;
                }
                _ = self.stopping.changed(), if !shutting_down => {
                    shutting_down = true;
                    connection.as_mut().graceful_shutdown();
                }
                _ = self.cutting.wait_for(|cut| *cut) => {
                    tracing::debug!("cutting a connection at the end of the shutdown");
                    return;
                }
                changed = self.room_wanted.changed() => {
                    if changed.is_ok() && watch.is_idle() {
                        tracing::debug!(reason = Overstep::Evicted.as_str(), "closing a connection");
                        return;
                    }
                }
                () = due => {
                    if let Some(overstep) = watch.overstep(&shared.limits, Instant::now()) {
                        tracing::debug!(reason = overstep.as_str(), "closing a connection");
                        return;
                    }
                }
            }
        }
    }
}

async fn handle(request: Request<Incoming>, shared: &Shared, watch: &Watch) -> Response<Body> {
    let open = watch.request_opened();
    let Ok(permit) = shared.in_flight.clone().try_acquire_owned() else {
        return busy(request, shared, watch, open).await;
    };
    // One HTTP/1.x request at a time shares the connection's watch; an HTTP/2 stream's body is
    // its own, and leaving it unread costs the connection nothing.
    let http1 = request.version() <= Version::HTTP_11;
    let request = request.map(|body| {
        if http_body::Body::is_end_stream(&body) {
            Body::new(body)
        } else {
            if http1 {
                watch.body_started();
            }
            Body::new(DeadlineBody::new(body, shared.limits.body_timeout, watch.clone()))
        }
    });
    let mut response = match shared.router.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    drop(permit);
    // A request answered before its body was read to the end (a body over the cap, one that broke
    // off or ran late) leaves the connection unable to find the next request: the answer says
    // that it closes, and the close lingers (`WatchedIo`) so that the client reads it.
    if http1 && watch.closes_after_answer() {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    let end = StreamEnd::of(response.headers().get(header::CONTENT_TYPE));
    response.map(|body| {
        let body = match end {
            Some(end) => Body::new(EndOnStop::new(body, end, shared.stopping.clone())),
            None => body,
        };
        Body::new(GuardedBody::new(body, open))
    })
}

/// A request beyond the cap of requests in flight: marked with the neutral busy refusal
/// ([`crate::refusal::Busy`]) and routed, so that the face it is for answers it in its own shape
/// (a face's admission answers before any handler runs; a route no face renders answers a plain
/// `503`). Its body is left unread: on HTTP/1.1 the answer then closes the connection.
async fn busy(
    request: Request<Incoming>,
    shared: &Shared,
    watch: &Watch,
    open: self::watch::OpenRequest,
) -> Response<Body> {
    let refusal = Refusal::new(RefusalKind::Busy, BUSY_MESSAGE).retry_after(BUSY_RETRY_AFTER_SECS);
    let unread = request.version() <= Version::HTTP_11 && !http_body::Body::is_end_stream(request.body());
    if unread {
        watch.body_started();
    }
    let mut request = request.map(Body::new);
    request.extensions_mut().insert(Busy(refusal.clone()));
    let mut response = match shared.router.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    if response.extensions().get::<BusyAnswered>().is_none() {
        // A route of the user's own, not behind `refuse_busy`: its handler ran (no layer of ours
        // was in front of it), but its answer is not sent; the plain refusal is.
        tracing::debug!("a busy request reached a route that does not refuse it");
        response = crate::refusal::plain(&refusal);
    }
    if unread && watch.closes_after_answer() {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response.map(|body| Body::new(GuardedBody::new(body, open)))
}

/// The message of the busy refusal.
const BUSY_MESSAGE: &str = "The server is handling as many requests as it allows; retry shortly";

/// The `Retry-After` (seconds) of the busy refusal: a request in flight usually ends within it.
const BUSY_RETRY_AFTER_SECS: u64 = 1;

async fn accept(listener: &TcpListener, backoff: &mut AcceptBackoff) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                backoff.recovered();
                return stream;
            }
            // The peer gave up before we accepted: nothing to wait for.
            Err(error) if is_connection_error(&error) => {}
            Err(error) => tokio::time::sleep(backoff.failed(&error, Instant::now())).await,
        }
    }
}

fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// Waits after accept errors (10 ms doubling to 1 s) and logs them at most once per period.
#[derive(Debug, Default)]
struct AcceptBackoff {
    delay: Option<Duration>,
    last_logged: Option<Instant>,
    unlogged: u64,
}

impl AcceptBackoff {
    /// Records an error; returns how long to wait before accepting again.
    fn failed(&mut self, error: &io::Error, now: Instant) -> Duration {
        let delay = self.delay.map_or(ACCEPT_BACKOFF_MIN, |delay| (delay * 2).min(ACCEPT_BACKOFF_MAX));
        self.delay = Some(delay);
        let due = self.last_logged.is_none_or(|last| now.duration_since(last) >= ACCEPT_ERROR_LOG_PERIOD);
        if due {
            tracing::error!(
                %error,
                suppressed = self.unlogged,
                "accept error; backing off (logged at most every {} s)",
                ACCEPT_ERROR_LOG_PERIOD.as_secs()
            );
            self.last_logged = Some(now);
            self.unlogged = 0;
        } else {
            self.unlogged += 1;
        }
        delay
    }

    fn recovered(&mut self) {
        self.delay = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_backoff_doubles_to_a_second_and_logs_once_per_period() {
        let mut backoff = AcceptBackoff::default();
        let error = io::Error::from_raw_os_error(24);
        let start = Instant::now();
        let delays: Vec<_> = (0..10).map(|_| backoff.failed(&error, start)).collect();
        assert_eq!(delays[0], Duration::from_millis(10));
        assert_eq!(delays[1], Duration::from_millis(20));
        assert_eq!(delays[9], Duration::from_secs(1));
        assert_eq!(backoff.unlogged, 9, "only the first error of the period is logged");
        backoff.failed(&error, start + ACCEPT_ERROR_LOG_PERIOD);
        assert_eq!(backoff.unlogged, 0, "the next period logs again, with the count suppressed");
        backoff.recovered();
        assert_eq!(backoff.failed(&error, start), ACCEPT_BACKOFF_MIN);
    }

    #[test]
    fn refused_handshakes_are_logged_at_info_once_per_period() {
        let mut log = HandshakeLog::default();
        let error = io::Error::new(io::ErrorKind::InvalidData, "peer sent no certificates");
        let start = Instant::now();
        for _ in 0..100 {
            log.refused(&error, start);
        }
        assert_eq!(log.since, 99, "a scanner's hundred refusals make one INFO line");
        log.refused(&error, start + HANDSHAKE_LOG_PERIOD);
        assert_eq!(log.since, 0, "the next period logs again, with the count since");
    }
}
