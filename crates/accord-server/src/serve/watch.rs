//! What the serve loop watches on each connection: bytes moving, requests open, bodies arriving.
//!
//! Hyper's own header-read timer also runs while a keep-alive connection waits for its next
//! request, so it cannot tell an idle client from a slow one. [`Watch`] keeps the few facts that
//! can, and the connection task asks it, on every tick, whether a limit has been overstepped.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::ConnectionLimits;

/// Why a connection was closed by the serve loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Overstep {
    /// No request for `idle_timeout`.
    Idle,
    /// A request head started but did not finish within `header_timeout`.
    Header,
    /// The peer accepted no response bytes for `write_timeout`.
    Write,
    /// A request body did not finish within `body_timeout` of its head.
    Body,
    /// The connection sent nothing within `first_byte_timeout` of being accepted.
    FirstByte,
    /// The server reached its connection cap and closed this idle connection to make room.
    Evicted,
}

impl Overstep {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle timeout",
            Self::Header => "request head timeout",
            Self::Write => "write timeout (the client does not read)",
            Self::Body => "request body timeout",
            Self::FirstByte => "no first byte in time",
            Self::Evicted => "idle at the connection cap",
        }
    }
}

#[derive(Debug)]
struct State {
    /// Requests whose response has not been fully sent (or dropped).
    open_requests: usize,
    /// Since when the connection has had no open request.
    idle_since: Instant,
    /// When the first byte of the next request head arrived, while no request is open.
    head_started: Option<Instant>,
    /// Since when a write has been waiting for the peer to read.
    write_blocked_since: Option<Instant>,
    /// When a request body outlived `body_timeout`, if one did.
    body_expired: Option<Instant>,
    /// Whether an HTTP/1.1 request's body is still unread (some of it may still be on the way).
    body_pending: bool,
    /// Whether the connection, once its answer is sent, drains what the client still sends
    /// before it closes ([`WatchedIo`]'s lingering close).
    linger: bool,
    /// Whether the client has sent a byte since the connection was accepted.
    ever_read: bool,
    /// Whether this connection is counted in [`IdleCount`] (idle: no request open, no head begun).
    counted_idle: bool,
}

impl State {
    fn is_idle(&self) -> bool {
        self.open_requests == 0 && self.head_started.is_none()
    }
}

/// How many of a server's connections are idle (no request open, no request head begun): the
/// serve loop closes idle connections to make room at the connection cap only when there are
/// some, so that a cap full of busy connections costs nothing to wait on.
#[derive(Debug, Clone, Default)]
pub(super) struct IdleCount(Arc<(AtomicUsize, tokio::sync::Notify)>);

impl IdleCount {
    pub(super) fn get(&self) -> usize {
        self.0.0.load(Ordering::Relaxed)
    }

    /// Completes when a connection has become idle since the last call (or the first).
    pub(super) async fn became_idle(&self) {
        self.0.1.notified().await;
    }

    fn up(&self) {
        self.0.0.fetch_add(1, Ordering::Relaxed);
        self.0.1.notify_one();
    }

    fn down(&self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The shared facts about one connection.
#[derive(Debug, Clone)]
pub(super) struct Watch(Arc<(Mutex<State>, IdleCount, Instant)>);

impl Watch {
    /// A fresh connection, idle and counted as such until [`Watch::closed`].
    pub(super) fn new(idle: IdleCount) -> Self {
        let now = Instant::now();
        idle.up();
        Self(Arc::new((
            Mutex::new(State {
                open_requests: 0,
                idle_since: now,
                head_started: None,
                write_blocked_since: None,
                body_expired: None,
                body_pending: false,
                linger: false,
                ever_read: false,
                counted_idle: true,
            }),
            idle,
            now,
        )))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state is a handful of plain fields, valid after any panic: keep going.
        self.0.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps the server's idle count in step with `state`.
    fn recount(&self, state: &mut State) {
        let idle = state.is_idle();
        if idle != state.counted_idle {
            state.counted_idle = idle;
            if idle {
                self.0.1.up();
            } else {
                self.0.1.down();
            }
        }
    }

    /// Whether the connection is idle: no request open and no request head begun.
    pub(super) fn is_idle(&self) -> bool {
        self.state().is_idle()
    }

    /// The connection has ended: it no longer counts as idle.
    pub(super) fn closed(&self) {
        let mut state = self.state();
        if state.counted_idle {
            state.counted_idle = false;
            self.0.1.down();
        }
    }

    /// The first limit this connection oversteps at `now`, if any.
    pub(super) fn overstep(&self, limits: &ConnectionLimits, now: Instant) -> Option<Overstep> {
        let state = self.state();
        // The request whose body ran late is answered first (its answer says the connection
        // closes); the grace bounds a handler that does not answer.
        if let Some(expired) = state.body_expired
            && (state.open_requests == 0 || now.duration_since(expired) >= BODY_EXPIRED_GRACE)
        {
            return Some(Overstep::Body);
        }
        if let Some(since) = state.write_blocked_since
            && now.duration_since(since) >= limits.write_timeout
        {
            return Some(Overstep::Write);
        }
        if state.open_requests > 0 {
            return None;
        }
        if !state.ever_read && now.duration_since(self.0.2) >= limits.first_byte_timeout {
            return Some(Overstep::FirstByte);
        }
        match state.head_started {
            Some(started) if now.duration_since(started) >= limits.header_timeout => Some(Overstep::Header),
            Some(_) => None,
            None if now.duration_since(state.idle_since) >= limits.idle_timeout => Some(Overstep::Idle),
            None => None,
        }
    }

    /// Whether every open request is being answered without waiting on the client: requests
    /// are open, no write waits for the client to read and no request body outlived its time.
    /// Only a write that starts to wait can overstep a limit then.
    pub(super) fn is_quiet(&self) -> bool {
        let state = self.state();
        state.open_requests > 0 && state.write_blocked_since.is_none() && state.body_expired.is_none()
    }

    /// A request head has been parsed: the request is open until the returned guard drops.
    pub(super) fn request_opened(&self) -> OpenRequest {
        let mut state = self.state();
        state.open_requests += 1;
        state.head_started = None;
        state.ever_read = true;
        self.recount(&mut state);
        OpenRequest(self.clone())
    }

    fn read_some(&self) {
        let mut state = self.state();
        state.ever_read = true;
        if state.open_requests == 0 && state.head_started.is_none() {
            state.head_started = Some(Instant::now());
            self.recount(&mut state);
        }
    }

    fn write_blocked(&self, blocked: bool) {
        let mut state = self.state();
        match (blocked, state.write_blocked_since) {
            (true, None) => state.write_blocked_since = Some(Instant::now()),
            (false, Some(_)) => state.write_blocked_since = None,
            _ => {}
        }
    }

    fn body_expired(&self) {
        self.state().body_expired.get_or_insert_with(Instant::now);
    }

    /// An HTTP/1.1 request with a body has arrived: its body is unread until [`DeadlineBody`]
    /// reaches its end.
    pub(super) fn body_started(&self) {
        self.state().body_pending = true;
    }

    fn body_finished(&self) {
        self.state().body_pending = false;
    }

    /// Whether the last HTTP/1.1 request's body was left unread (refused before it was read, or
    /// broken off): the connection cannot carry another request, and closes after the answer —
    /// lingering, as the client may still be sending.
    pub(super) fn closes_after_answer(&self) -> bool {
        let mut state = self.state();
        let closes = state.body_pending || state.body_expired.is_some();
        state.linger |= closes;
        closes
    }

    fn take_linger(&self) -> bool {
        std::mem::take(&mut self.state().linger)
    }
}

/// Keeps a request open (not idle) while it lives; dropped with the response body.
#[derive(Debug)]
pub(super) struct OpenRequest(Watch);

impl Drop for OpenRequest {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.open_requests = state.open_requests.saturating_sub(1);
        if state.open_requests == 0 {
            state.idle_since = Instant::now();
            self.0.recount(&mut state);
        }
    }
}

/// How long a request may go on once its body ran past `body_timeout` before the connection is
/// closed under it (its handler is expected to answer the broken body at once).
const BODY_EXPIRED_GRACE: Duration = Duration::from_secs(1);

/// How long a lingering close reads what the client still sends, at most.
pub(super) const LINGER_TIME: Duration = Duration::from_secs(2);

/// How many bytes a lingering close reads and drops, at most.
pub(super) const LINGER_BYTES: usize = 64 << 20;

/// The close of a socket whose TLS handshake was refused: its FIN after what was written (the
/// TLS alert that says why), then what the client still sends is read and dropped — until the
/// client closes, [`LINGER_TIME`] passes or [`LINGER_BYTES`] arrive. Closed at once with the
/// client's first request unread (TLS 1.3 clients send it before they learn of the refusal), the
/// socket would send a reset, which can destroy the alert before the client reads it.
pub(super) async fn linger_after_refusal(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let _ = stream.shutdown().await;
    let drain = async {
        let mut scratch = [0u8; 4096];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match stream.read(&mut scratch).await {
                Ok(0) | Err(_) => break,
                Ok(read) => left = left.saturating_sub(read),
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, drain).await;
}

/// The connection's socket, reporting reads and blocked writes to its [`Watch`].
///
/// Its shutdown lingers when the connection closes with a request body unread
/// ([`Watch::closes_after_answer`]): it sends its FIN, then reads and drops what the client still
/// sends — until the client closes, [`LINGER_TIME`] passes or [`LINGER_BYTES`] arrive — before it
/// lets the socket close. Closing a socket with unread bytes makes the kernel send a reset, which
/// can destroy the answer before the client has read it.
#[derive(Debug)]
pub(super) struct WatchedIo<T> {
    inner: T,
    watch: Watch,
    shut: bool,
    linger: Option<Linger>,
}

#[derive(Debug)]
struct Linger {
    deadline: Pin<Box<Sleep>>,
    left: usize,
}

impl<T> WatchedIo<T> {
    pub(super) fn new(inner: T, watch: Watch) -> Self {
        Self { inner, watch, shut: false, linger: None }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WatchedIo<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.read_some();
        }
        result
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncWrite for WatchedIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch.write_blocked(result.is_pending());
        result
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch.write_blocked(result.is_pending());
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.shut {
            std::task::ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
            this.shut = true;
            if this.watch.take_linger() {
                this.linger = Some(Linger { deadline: Box::pin(tokio::time::sleep(LINGER_TIME)), left: LINGER_BYTES });
            }
        }
        let Some(linger) = &mut this.linger else { return Poll::Ready(Ok(())) };
        let mut scratch = [0u8; 4096];
        while linger.left > 0 && linger.deadline.as_mut().poll(cx).is_pending() {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if !buf.filled().is_empty() => {
                    linger.left = linger.left.saturating_sub(buf.filled().len());
                }
                // The client closed, or the socket failed: nothing more to wait for.
                Poll::Ready(_) => break,
                Poll::Pending => return Poll::Pending,
            }
        }
        this.linger = None;
        Poll::Ready(Ok(()))
    }
}

/// A request body that must arrive within a deadline; past it, the read fails and the
/// connection is marked for closing.
pub(super) struct DeadlineBody<B> {
    inner: B,
    deadline: Pin<Box<Sleep>>,
    watch: Watch,
}

impl<B> DeadlineBody<B> {
    pub(super) fn new(inner: B, timeout: Duration, watch: Watch) -> Self {
        Self { inner, deadline: Box::pin(tokio::time::sleep(timeout)), watch }
    }
}

impl<B> http_body::Body for DeadlineBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            if frame.is_none() || this.inner.is_end_stream() {
                this.watch.body_finished();
            }
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            this.watch.body_expired();
            return Poll::Ready(Some(Err("the request body did not arrive in time".into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request open until it is sent or dropped.
pub(super) struct GuardedBody {
    inner: Body,
    _open: OpenRequest,
}

impl GuardedBody {
    pub(super) fn new(inner: Body, open: OpenRequest) -> Self {
        Self { inner, _open: open }
    }
}

impl http_body::Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// How a streamed response ends when the server starts stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StreamEnd {
    /// The body ends, as if the stream were over: an event stream's clean close.
    Close,
    /// The body ends with gRPC trailers saying `UNAVAILABLE`, so that a client retries elsewhere.
    GrpcUnavailable,
}

impl StreamEnd {
    /// How a response with this `Content-Type` ends at a stop; `None` for a body that is not a
    /// stream and finishes on its own.
    pub(super) fn of(content_type: Option<&http::HeaderValue>) -> Option<Self> {
        let content_type = content_type?.to_str().ok()?.trim_start();
        let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        if essence == "text/event-stream" {
            Some(Self::Close)
        } else if essence == "application/grpc" || essence.starts_with("application/grpc+") {
            Some(Self::GrpcUnavailable)
        } else {
            None
        }
    }
}

type StopFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A streamed response body that ends between two frames once the server starts stopping,
/// instead of holding the stop until the stream's own end (a subscription may last for hours).
pub(super) struct EndOnStop {
    inner: Body,
    stop: Option<StopFuture>,
    end: StreamEnd,
    ended: bool,
}

impl EndOnStop {
    pub(super) fn new(inner: Body, end: StreamEnd, mut stopping: tokio::sync::watch::Receiver<bool>) -> Self {
        let stop = Box::pin(async move {
            // A dropped sender means the server is gone: the stream ends too.
            let _ = stopping.wait_for(|stopping| *stopping).await;
        });
        Self { inner, stop: Some(stop), end, ended: false }
    }
}

impl http_body::Body for EndOnStop {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            if frame.is_none() {
                this.ended = true;
            }
            return Poll::Ready(frame);
        }
        let Some(stop) = this.stop.as_mut() else { return Poll::Pending };
        if stop.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.stop = None;
        this.ended = true;
        match this.end {
            StreamEnd::Close => Poll::Ready(None),
            StreamEnd::GrpcUnavailable => {
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", http::HeaderValue::from_static("14"));
                trailers.insert("grpc-message", http::HeaderValue::from_static("the server is shutting down"));
                Poll::Ready(Some(Ok(Frame::trailers(trailers))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        // It may end early: never promise a length.
        SizeHint::default()
    }
}
