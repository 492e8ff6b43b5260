//! Target-side idempotency for direct invocations.
//!
//! A caller that retries a request with the same `Idempotency-Key` must not run the skill twice.
//! The store remembers, per scope and key, a fingerprint of the request and, once it succeeded,
//! the response. The face decides what goes into the fingerprint (method, URL, body, the caller's
//! credentials) and what a response is; the store only keeps bytes.
//!
//! Guarantees:
//! - at most one request per scope and key is in progress; a second one is told so;
//! - a request with the same key but another fingerprint is a conflict, never a replay;
//! - only responses handed to [`IdempotencyClaim::complete`] are kept; a claim dropped without
//!   completing releases the key, so a failed request can be retried;
//! - the store is bounded: expired entries go first, then the oldest completed ones; when only
//!   in-progress entries remain, new claims are refused with [`Claim::Full`];
//! - the responses kept are bounded in bytes too ([`IdempotencyConfig::max_bytes`]): a response
//!   that does not fit, once the oldest kept bodies have made room, is remembered by its digest
//!   only. Its key still never runs twice: a repeat is answered with [`Claim::NotReplayable`].
//!
//! This store lives in the process. Responses of durable tasks are protected by the task store
//! instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Limits of an [`IdempotencyStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdempotencyConfig {
    /// How many keys are remembered at most (default 10,000).
    pub max_entries: usize,
    /// How long a claim may stay in progress before another request may take the key
    /// (default 15 min).
    pub in_progress_ttl: Duration,
    /// How long a completed response is replayed (default 24 h).
    pub retention: Duration,
    /// How many bytes of responses (bodies and headers) are kept for replay at most (default
    /// 64 MiB). A response that does not fit — even after the oldest kept ones have given up
    /// their bodies — is remembered by its status, length and SHA-256 only.
    pub max_bytes: usize,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            in_progress_ttl: Duration::from_secs(15 * 60),
            retention: Duration::from_secs(24 * 60 * 60),
            max_bytes: 64 << 20,
        }
    }
}

/// A stored response, replayed byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The HTTP status.
    pub status: u16,
    /// Headers worth replaying (content type, receipts).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: bytes::Bytes,
}

impl StoredResponse {
    /// The bytes it takes in the store: its body and headers.
    fn size(&self) -> usize {
        self.body.len() + self.headers.iter().map(|(name, value)| name.len() + value.len()).sum::<usize>()
    }

    /// What is remembered of it when its body is not kept.
    fn digest(&self) -> ResponseDigest {
        ResponseDigest { status: self.status, body_len: self.body.len(), body_sha256: fingerprint_bytes(&self.body) }
    }
}

/// What is remembered of a response too large to keep for replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseDigest {
    /// The HTTP status it had.
    pub status: u16,
    /// The length of its body.
    pub body_len: usize,
    /// The SHA-256 (hex) of its body.
    pub body_sha256: String,
}

/// The answer to [`IdempotencyStore::claim`].
#[derive(Debug)]
pub enum Claim {
    /// The key is yours: run the request, then complete or drop the claim.
    Acquired(IdempotencyClaim),
    /// The same request already succeeded: here is its response.
    Replay(StoredResponse),
    /// The same request already succeeded, but its response was too large to keep: only its
    /// digest is left. The request must not run again.
    NotReplayable(ResponseDigest),
    /// The same key is being processed by another request right now.
    InProgress,
    /// The key was used for a different request.
    Conflict,
    /// The store is full of requests in progress.
    Full,
}

/// The SHA-256 (hex) of `bytes`.
fn fingerprint_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The SHA-256 (hex) of the parts, each length-prefixed so that parts cannot run into each other.
pub fn fingerprint<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hex::encode(hasher.finalize())
}

enum State {
    InProgress {
        claim_id: u64,
    },
    Done(StoredResponse),
    /// Done, with a response too large to keep.
    Digest(ResponseDigest),
}

impl State {
    /// The bytes it counts against [`IdempotencyConfig::max_bytes`].
    fn size(&self) -> usize {
        match self {
            Self::Done(response) => response.size(),
            _ => 0,
        }
    }
}

struct Entry {
    fingerprint: String,
    state: State,
    created: Instant,
    expires: Instant,
}

#[derive(Default)]
struct Entries {
    map: HashMap<String, Entry>,
    next_claim: u64,
    /// The bytes of the responses kept, the sum of [`State::size`].
    bytes: usize,
}

impl Entries {
    fn remove(&mut self, key: &str) {
        if let Some(entry) = self.map.remove(key) {
            self.bytes -= entry.state.size();
        }
    }

    /// Forgets every expired entry.
    fn remove_expired(&mut self, now: Instant) {
        let mut freed = 0;
        self.map.retain(|_, entry| {
            let keep = entry.expires > now;
            if !keep {
                freed += entry.state.size();
            }
            keep
        });
        self.bytes -= freed;
    }

    /// Makes room for `size` more bytes of responses, dropping the bodies of the oldest kept
    /// responses (their keys and digests stay). `false` when `size` cannot fit.
    fn make_byte_room(&mut self, size: usize, max: usize, now: Instant) -> bool {
        if size > max {
            return false;
        }
        if self.bytes + size > max {
            self.remove_expired(now);
        }
        while self.bytes + size > max {
            let oldest = self
                .map
                .values_mut()
                .filter(|entry| matches!(entry.state, State::Done(_)))
                .min_by_key(|entry| entry.created);
            let Some(entry) = oldest else { return false };
            if let State::Done(response) = &entry.state {
                let digest = State::Digest(response.digest());
                self.bytes -= entry.state.size();
                entry.state = digest;
            }
        }
        true
    }
}

/// An in-process idempotency store. Cheap to clone; clones share entries.
#[derive(Clone, Default)]
pub struct IdempotencyStore {
    config: IdempotencyConfig,
    entries: Arc<Mutex<Entries>>,
}

impl std::fmt::Debug for IdempotencyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyStore").field("config", &self.config).finish_non_exhaustive()
    }
}

impl IdempotencyStore {
    /// A store with these limits.
    pub fn new(config: IdempotencyConfig) -> Self {
        Self { config, entries: Arc::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // The map stays consistent even if a holder panicked: every update is a single insert
        // or remove.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims `key` within `scope` for a request with this fingerprint.
    pub fn claim(&self, scope: &str, key: &str, fingerprint: &str) -> Claim {
        let now = Instant::now();
        let map_key = format!("{scope}\u{0}{key}");
        let mut entries = self.lock();
        if let Some(entry) = entries.map.get(&map_key) {
            if entry.expires > now {
                if entry.fingerprint != fingerprint {
                    return Claim::Conflict;
                }
                return match &entry.state {
                    State::InProgress { .. } => Claim::InProgress,
                    State::Done(response) => Claim::Replay(response.clone()),
                    State::Digest(digest) => Claim::NotReplayable(digest.clone()),
                };
            }
            entries.remove(&map_key);
        }
        if entries.map.len() >= self.config.max_entries && !make_room(&mut entries, now, self.config.max_entries) {
            return Claim::Full;
        }
        entries.next_claim += 1;
        let claim_id = entries.next_claim;
        entries.map.insert(
            map_key.clone(),
            Entry {
                fingerprint: fingerprint.to_owned(),
                state: State::InProgress { claim_id },
                created: now,
                expires: now + self.config.in_progress_ttl,
            },
        );
        Claim::Acquired(IdempotencyClaim { store: self.clone(), map_key, claim_id, finished: false })
    }

    /// How many keys are remembered now.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// How many bytes of responses are kept now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Frees one slot or more: expired entries first, then the oldest completed entry.
fn make_room(entries: &mut Entries, now: Instant, max: usize) -> bool {
    entries.remove_expired(now);
    if entries.map.len() < max {
        return true;
    }
    let oldest_done = entries
        .map
        .iter()
        .filter(|(_, entry)| matches!(entry.state, State::Done(_) | State::Digest(_)))
        .min_by_key(|(_, entry)| entry.created)
        .map(|(key, _)| key.clone());
    match oldest_done {
        Some(key) => {
            entries.remove(&key);
            true
        }
        None => false,
    }
}

/// The right to run one request under an idempotency key. Dropping it without
/// [`IdempotencyClaim::complete`] releases the key.
pub struct IdempotencyClaim {
    store: IdempotencyStore,
    map_key: String,
    claim_id: u64,
    finished: bool,
}

impl std::fmt::Debug for IdempotencyClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyClaim").field("claim_id", &self.claim_id).finish_non_exhaustive()
    }
}

impl IdempotencyClaim {
    /// Stores the response for replay — or, when it does not fit in
    /// [`IdempotencyConfig::max_bytes`], its digest. Returns `false` when the claim was lost
    /// meanwhile (it expired and another request took the key), in which case nothing is stored.
    pub fn complete(mut self, response: StoredResponse) -> bool {
        self.finished = true;
        let IdempotencyConfig { retention, max_bytes, .. } = self.store.config;
        let now = Instant::now();
        let mut entries = self.store.lock();
        let ours = |entries: &Entries| matches!(entries.map.get(&self.map_key), Some(Entry { state: State::InProgress { claim_id }, .. }) if *claim_id == self.claim_id);
        if !ours(&entries) {
            return false;
        }
        let size = response.size();
        let state = if entries.make_byte_room(size, max_bytes, now) {
            entries.bytes += size;
            State::Done(response)
        } else {
            State::Digest(response.digest())
        };
        // Making room only drops bodies of completed entries, and this one is in progress.
        if let Some(entry) = entries.map.get_mut(&self.map_key) {
            entry.state = state;
            entry.expires = now + retention;
        }
        true
    }
}

impl Drop for IdempotencyClaim {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut entries = self.store.lock();
        if matches!(entries.map.get(&self.map_key), Some(Entry { state: State::InProgress { claim_id }, .. }) if *claim_id == self.claim_id)
        {
            entries.remove(&self.map_key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(body: &str) -> StoredResponse {
        StoredResponse { status: 200, headers: vec![], body: bytes::Bytes::from(body.to_owned()) }
    }

    #[test]
    fn replays_once_completed_and_refuses_conflicts() {
        let store = IdempotencyStore::default();
        let Claim::Acquired(claim) = store.claim("s", "k", "f1") else { panic!("first claim") };
        assert!(matches!(store.claim("s", "k", "f1"), Claim::InProgress));
        assert!(matches!(store.claim("s", "k", "f2"), Claim::Conflict));
        assert!(matches!(store.claim("other", "k", "f2"), Claim::Acquired(_)));
        assert!(claim.complete(response("a")));
        assert!(matches!(store.claim("s", "k", "f1"), Claim::Replay(r) if r.body == "a"));
        assert!(matches!(store.claim("s", "k", "f2"), Claim::Conflict));
    }

    #[test]
    fn a_dropped_claim_releases_the_key() {
        let store = IdempotencyStore::default();
        let Claim::Acquired(claim) = store.claim("s", "k", "f") else { panic!("claim") };
        drop(claim);
        assert!(store.is_empty());
        assert!(matches!(store.claim("s", "k", "f"), Claim::Acquired(_)));
    }

    #[test]
    fn bounded_evicting_completed_before_refusing() {
        let store = IdempotencyStore::new(IdempotencyConfig { max_entries: 2, ..IdempotencyConfig::default() });
        let Claim::Acquired(a) = store.claim("s", "a", "f") else { panic!("a") };
        assert!(a.complete(response("a")));
        let Claim::Acquired(_b) = store.claim("s", "b", "f") else { panic!("b") };
        let Claim::Acquired(_c) = store.claim("s", "c", "f") else { panic!("c evicts a") };
        assert!(matches!(store.claim("s", "a", "f"), Claim::Full));
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn expired_entries_are_forgotten() {
        let store = IdempotencyStore::new(IdempotencyConfig {
            in_progress_ttl: Duration::ZERO,
            ..IdempotencyConfig::default()
        });
        let Claim::Acquired(stale) = store.claim("s", "k", "f") else { panic!("claim") };
        let Claim::Acquired(fresh) = store.claim("s", "k", "f") else { panic!("expired claim is taken over") };
        assert!(!stale.complete(response("late")), "a lost claim stores nothing");
        drop(fresh);
    }

    #[test]
    fn responses_beyond_the_byte_budget_keep_their_digest_and_never_run_again() {
        let store = IdempotencyStore::new(IdempotencyConfig { max_bytes: 10, ..IdempotencyConfig::default() });
        let Claim::Acquired(a) = store.claim("s", "a", "f") else { panic!("a") };
        assert!(a.complete(response("123456")));
        assert_eq!(store.bytes(), 6);
        let Claim::Acquired(b) = store.claim("s", "b", "f") else { panic!("b") };
        assert!(b.complete(response("abcdef")), "b takes a's room");
        assert_eq!(store.bytes(), 6);
        let Claim::NotReplayable(digest) = store.claim("s", "a", "f") else { panic!("a keeps its digest") };
        assert_eq!((digest.status, digest.body_len), (200, 6));
        assert_eq!(digest.body_sha256, fingerprint_bytes(b"123456"));
        assert!(matches!(store.claim("s", "b", "f"), Claim::Replay(r) if r.body == "abcdef"));
        let Claim::Acquired(c) = store.claim("s", "c", "f") else { panic!("c") };
        assert!(c.complete(response("far too large for ten bytes")));
        assert!(matches!(store.claim("s", "c", "f"), Claim::NotReplayable(_)));
        assert!(matches!(store.claim("s", "b", "f"), Claim::Replay(_)), "a response that cannot fit evicts nothing");
        assert!(matches!(store.claim("s", "c", "other"), Claim::Conflict));
    }

    #[test]
    fn fingerprints_separate_parts() {
        assert_ne!(fingerprint([b"ab".as_slice(), b"c"]), fingerprint([b"a".as_slice(), b"bc"]));
        assert_eq!(fingerprint([b"x".as_slice()]).len(), 64);
    }
}
