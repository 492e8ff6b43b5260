//! Capacity and rates at the edge: the per-caller rate limit ([`RateLimitConfig`], a middleware
//! every face is mounted with) and the `Retry-After` every face sends with a retryable refusal
//! (the store full, a caller at its share of it, a caller over its rate).
//!
//! What is counted is decided here once; how a refusal looks is each face's shape, rendered by
//! the face from a face-neutral [`crate::refusal::Refusal`]. The task store's capacity and the per-owner share are the
//! engine's rules (`RuntimeConfig::max_active_per_owner`); this module only gives their refusals
//! a `Retry-After`.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;

use crate::client_address::ClientAddress;
use axum::response::Response;
use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};

use crate::auth::Principal;
use crate::refusal::{Refusal, RefusalKind, Refusals};

/// The `Retry-After` (seconds) of a refusal because the task store is full or the caller holds
/// its whole share of it: a task's end cannot be predicted, so this is a polite pace, not a
/// promise.
pub const CAPACITY_RETRY_AFTER_SECS: u64 = 5;

/// The most callers whose rate is tracked at once. Callers idle long enough to be back at a full
/// burst are forgotten every 10 s; should this many be tracked even so, anonymous callers (keyed
/// by address, which an attacker can multiply) are refused until a sweep makes room, so the
/// table's memory stays bounded; authenticated callers are still counted.
pub const MAX_TRACKED_CALLERS: usize = 100_000;

/// How often forgotten callers are swept out of the rate limiter's table.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// A per-caller rate limit (GCRA, as a token bucket): `per_second` requests a second on average,
/// up to `burst` at once. Off unless set ([`crate::ServerConfig::rate_limit`]).
///
/// A caller is the authenticated principal's owner; an anonymous caller is its client address
/// (IPv6 by its /64 prefix), which the server only knows when it is served with
/// `into_make_service_with_connect_info::<SocketAddr>()` (as `accord serve` is) — otherwise every
/// anonymous caller is one. Behind a proxy the address is the proxy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// Requests a second, on average.
    pub per_second: NonZeroU32,
    /// Requests at once (the bucket's size).
    pub burst: NonZeroU32,
}

impl RateLimitConfig {
    /// `per_second` requests a second with a burst of as many.
    pub fn per_second(per_second: NonZeroU32) -> Self {
        Self { per_second, burst: per_second }
    }

    /// Sets [`RateLimitConfig::burst`].
    pub fn burst(mut self, burst: NonZeroU32) -> Self {
        self.burst = burst;
        self
    }

    /// Reads `N/s` or `N` (requests a second), as `accord serve --rate-limit` takes it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let number = text.trim().strip_suffix("/s").unwrap_or(text.trim());
        number
            .trim()
            .parse::<NonZeroU32>()
            .map(Self::per_second)
            .map_err(|_| format!("expected requests a second as N/s with N at least 1, not {text:?}"))
    }
}

/// Who a rate is counted for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CallerKey {
    /// An authenticated principal's owner.
    Owner([u8; 32]),
    /// An anonymous caller's address (an IPv6 address cut to its /64).
    Address(IpAddr),
    /// An anonymous caller whose address the server does not know.
    Unknown,
}

impl CallerKey {
    fn of(request: &axum::extract::Request) -> Self {
        if let Some(principal) = request.extensions().get::<Principal>() {
            return Self::Owner(*principal.owner.as_bytes());
        }
        // The client address the serving layers resolved (trusted proxies' `X-Forwarded-For`
        // included), else the connection's peer; an IPv6 client counts by its /64.
        let address = ClientAddress::of(request.extensions()).or_else(|| {
            request.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(peer)| ClientAddress(peer.ip()))
        });
        match address {
            Some(address) => Self::Address(address.key()),
            None => Self::Unknown,
        }
    }
}

/// The shared limiter behind every face's rate-limit middleware.
pub(crate) struct RateLimits {
    limiter: RateLimiter<CallerKey, HashMapStateStore<CallerKey>, DefaultClock>,
    clock: DefaultClock,
    started: Instant,
    /// When the table was last swept, in milliseconds since `started`.
    swept_at: AtomicU64,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits").field("tracked", &self.limiter.len()).finish_non_exhaustive()
    }
}

impl RateLimits {
    pub(crate) fn new(config: RateLimitConfig) -> Arc<Self> {
        let quota = Quota::per_second(config.per_second).allow_burst(config.burst);
        let clock = DefaultClock::default();
        Arc::new(Self {
            limiter: RateLimiter::new(quota, HashMapStateStore::default(), clock.clone()),
            clock,
            started: Instant::now(),
            swept_at: AtomicU64::new(0),
        })
    }

    /// Forgets callers back at a full burst, at most once per [`SWEEP_EVERY`] (or at once when
    /// the table is full).
    fn sweep(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.swept_at.load(Ordering::Relaxed);
        let due = now.saturating_sub(last) >= SWEEP_EVERY.as_millis() as u64;
        let full = self.limiter.len() >= MAX_TRACKED_CALLERS;
        // One request sweeps; the others go on.
        if (due || full) && self.swept_at.compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            self.limiter.retain_recent();
        }
    }

    /// `Ok` when the caller may go on, else how many seconds it should wait.
    fn check(&self, key: &CallerKey) -> Result<(), u64> {
        self.sweep();
        // Addresses are what an attacker can multiply; authenticated owners are as many as the
        // identity provider issues.
        if self.limiter.len() >= MAX_TRACKED_CALLERS && !matches!(key, CallerKey::Owner(_)) {
            return Err(SWEEP_EVERY.as_secs());
        }
        self.limiter.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            // Rounded up: a caller that waits as long as it is told is let in.
            (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
        })
    }
}

/// What [`admit`] is mounted with: how the face behind it words a refusal, and its rate limits.
#[derive(Clone)]
pub(crate) struct Admission {
    pub(crate) refusals: Refusals,
    pub(crate) limits: Option<Arc<RateLimits>>,
}

/// The admission middleware of one face, innermost before its routes:
/// - a request the serve loop marked busy ([`crate::refusal::Busy`]: the server is at its cap of
///   requests in flight) is refused, with the seconds to wait;
/// - a request marked [`Unauthenticated`](crate::auth) (its credentials were refused) is refused,
///   with the `WWW-Authenticate` challenges — the one place that happens;
/// - with rate limits, the request is counted against its caller (named by authentication, so
///   after it) and refused, with the seconds to wait, when the caller is over its rate.
///
/// Every refusal is rendered in the shape of the face mounted behind it (its [`Refusals`]).
pub(crate) async fn admit(
    axum::extract::State(admission): axum::extract::State<Arc<Admission>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(refusal) = crate::refusal::busy_of(&request) {
        return crate::refusal::answered_busy(admission.refusals.render(refusal));
    }
    if let Some(refusal) = crate::auth::refusal_of(&request) {
        return admission.refusals.render(&refusal);
    }
    if let Some(limits) = &admission.limits
        && let Err(retry_after) = limits.check(&CallerKey::of(&request))
    {
        tracing::info!(target: "accord::audit", event = "rate.limited", path = request.uri().path(), retry_after);
        let message = "Too many requests from this caller; retry after the time Retry-After gives";
        return admission.refusals.render(&Refusal::new(RefusalKind::RateLimited, message).retry_after(retry_after));
    }
    next.run(request).await
}
