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
//!   in-progress entries remain, new claims are refused with [`Claim::Full`].
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
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            in_progress_ttl: Duration::from_secs(15 * 60),
            retention: Duration::from_secs(24 * 60 * 60),
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

/// The answer to [`IdempotencyStore::claim`].
#[derive(Debug)]
pub enum Claim {
    /// The key is yours: run the request, then complete or drop the claim.
    Acquired(IdempotencyClaim),
    /// The same request already succeeded: here is its response.
    Replay(StoredResponse),
    /// The same key is being processed by another request right now.
    InProgress,
    /// The key was used for a different request.
    Conflict,
    /// The store is full of requests in progress.
    Full,
}

/// The SHA-256 (hex) of the parts, each length-prefixed so that parts cannot run into each other.
pub fn fingerprint<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

enum State {
    InProgress { claim_id: u64 },
    Done(StoredResponse),
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
                };
            }
            entries.map.remove(&map_key);
        }
        if entries.map.len() >= self.config.max_entries && !make_room(&mut entries.map, now, self.config.max_entries) {
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

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Frees one slot or more: expired entries first, then the oldest completed entry.
fn make_room(map: &mut HashMap<String, Entry>, now: Instant, max: usize) -> bool {
    map.retain(|_, entry| entry.expires > now);
    if map.len() < max {
        return true;
    }
    let oldest_done = map
        .iter()
        .filter(|(_, entry)| matches!(entry.state, State::Done(_)))
        .min_by_key(|(_, entry)| entry.created)
        .map(|(key, _)| key.clone());
    match oldest_done {
        Some(key) => {
            map.remove(&key);
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
    /// Stores the response for replay. Returns `false` when the claim was lost meanwhile (it
    /// expired and another request took the key), in which case nothing is stored.
    pub fn complete(mut self, response: StoredResponse) -> bool {
        self.finished = true;
        let retention = self.store.config.retention;
        let mut entries = self.store.lock();
        match entries.map.get_mut(&self.map_key) {
            Some(entry) if matches!(entry.state, State::InProgress { claim_id } if claim_id == self.claim_id) => {
                entry.state = State::Done(response);
                entry.expires = Instant::now() + retention;
                true
            }
            _ => false,
        }
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
            entries.map.remove(&self.map_key);
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
    fn fingerprints_separate_parts() {
        assert_ne!(fingerprint([b"ab".as_slice(), b"c"]), fingerprint([b"a".as_slice(), b"bc"]));
        assert_eq!(fingerprint([b"x".as_slice()]).len(), 64);
    }
}
