//! Push notifications: webhooks registered for a task's updates, and the outbox they are
//! delivered from.
//!
//! **Configs.** A [`PushConfig`] names a URL to POST each update of one task to, with an optional
//! token and `Authorization` credentials. It is kept with its task (and goes when the task goes),
//! scoped to the task's owner, at most [`MAX_PUSH_CONFIGS_PER_TASK`] per task. Its URL and
//! secrets are *sealed* ([`PushKey`]: XChaCha20-Poly1305 under a server key, bound to the task and
//! config ids) before they reach a store, so a database, a backup or a log of rows holds none of
//! them in clear.
//!
//! **The outbox is the task's log.** Every update a task goes through is an entry of its log,
//! written in the same atomic step as the change itself. Each config keeps a cursor — the last
//! log sequence delivered — so the updates still to deliver to it are exactly the log entries
//! after its cursor: nothing to write beside an update, and nothing an update can be written
//! without. A worker takes a config's pending entries under a delivery lease
//! ([`TaskStore::claim_push_deliveries`]), POSTs them in order and moves the cursor
//! ([`TaskStore::settle_push_delivery`]); a worker that dies mid-delivery loses nothing, because the
//! cursor has not moved and its lease lapses, and another worker (or the restarted one) takes the
//! same entries again. Delivery is therefore at least once, in log order per config, and every
//! POST carries a delivery id that is the same on every attempt, for receivers to drop
//! duplicates.
//!
//! [`TaskStore::claim_push_deliveries`]: super::TaskStore::claim_push_deliveries
//! [`TaskStore::settle_push_delivery`]: super::TaskStore::settle_push_delivery

use chacha20poly1305::XChaCha20Poly1305;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use serde::{Deserialize, Serialize};

use crate::model::{Millis, TaskEvent, TaskEventKind, TaskId};

/// At most this many configs per task.
pub const MAX_PUSH_CONFIGS_PER_TASK: usize = 10;

/// The longest config id accepted (bytes).
pub const MAX_PUSH_CONFIG_ID_LEN: usize = 128;

/// The longest webhook URL accepted (bytes).
pub const MAX_PUSH_URL_LEN: usize = 2048;

/// A webhook for a task's updates, as callers give it and read it back.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushConfig {
    /// The config's id, unique per task (a caller's choice, or generated).
    pub id: String,
    /// Where updates are POSTed.
    pub url: String,
    /// Sent as `X-A2A-Notification-Token` with each update, for the receiver to check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Sent as `Authorization: <scheme> <credentials>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushAuthentication>,
}

impl std::fmt::Debug for PushConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a secret of its own (many webhook URLs do): only its origin is shown.
        let origin = self.url.split(['?', '#']).next().unwrap_or_default();
        let origin = origin.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
        f.debug_struct("PushConfig")
            .field("id", &self.id)
            .field("origin", &origin)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("authentication", &self.authentication)
            .finish()
    }
}

/// How a webhook POST authenticates.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushAuthentication {
    /// The HTTP authentication scheme (`Bearer`, `Basic`, …).
    pub scheme: String,
    /// The credentials for that scheme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

impl std::fmt::Debug for PushAuthentication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushAuthentication")
            .field("scheme", &self.scheme)
            .field("credentials", &self.credentials.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// A config as a store keeps it: the ids in clear, everything else sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPushConfig {
    /// The task.
    pub task_id: TaskId,
    /// The config's id, unique per task.
    pub id: String,
    /// The sealed [`PushConfig`] ([`PushKey::seal`]).
    pub sealed: Vec<u8>,
    /// When it was first stored.
    pub created_at: Millis,
}

/// Where a new config's deliveries start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliverFrom {
    /// With the updates after the task's latest log entry: the updates to come.
    Now,
    /// With the updates after this log sequence (`0`: every update of the task, from its
    /// creation).
    After(u64),
}

/// What [`TaskStore::put_push_config`](super::TaskStore::put_push_config) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushPut {
    /// Stored: new, or replacing the config with the same id (whose delivery cursor is kept).
    Stored,
    /// The task does not exist or is not the owner's.
    TaskNotFound,
    /// The task has [`MAX_PUSH_CONFIGS_PER_TASK`] other configs.
    TooMany,
}

/// Updates to deliver to one config, taken under a delivery lease.
#[derive(Debug, Clone, PartialEq)]
pub struct PushDelivery {
    /// The config (sealed).
    pub config: StoredPushConfig,
    /// The task's context.
    pub context_id: Option<String>,
    /// The log entries after the config's cursor, in order (at most the `limit` asked for).
    pub events: Vec<TaskEvent>,
    /// Failed attempts at the first of `events` so far.
    pub attempts: u32,
}

/// How a delivery ended, for [`TaskStore::settle_push_delivery`](super::TaskStore::settle_push_delivery).
#[derive(Debug, Clone, PartialEq)]
pub struct PushSettle {
    /// The config's cursor after this delivery: the last log sequence delivered (or given up on).
    pub delivered_through: u64,
    /// Failed attempts at the entry after the cursor (0 when it has not been tried).
    pub attempts: u32,
    /// When the config may be taken again.
    pub next_attempt_at: Millis,
    /// A dead letter to append to the task's log in the same atomic step (an update that was
    /// given up on after the last attempt).
    pub dead_letter: Option<TaskEventKind>,
}

/// The server key that seals push configs at rest: 32 random bytes. Each sealed value is
/// XChaCha20-Poly1305 over the config's JSON, with a fresh 24-byte nonce and the task and config
/// ids as associated data, so a sealed value moved onto another row does not open.
#[derive(Clone)]
pub struct PushKey([u8; 32]);

impl std::fmt::Debug for PushKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PushKey(<redacted>)")
    }
}

/// A sealed config could not be opened: another key sealed it, or it was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsealable;

impl std::fmt::Display for Unsealable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a push config could not be opened with this server's push key")
    }
}

impl std::error::Error for Unsealable {}

const SEAL_VERSION: u8 = 1;
const NONCE_LEN: usize = 24;

impl PushKey {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Self {
        let mut bytes = [0; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random source is unavailable");
        Self(bytes)
    }

    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The key's 32 bytes (to save it).
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&self.0.into())
    }

    fn associated_data(task_id: &TaskId, config_id: &str) -> Vec<u8> {
        let mut aad = Vec::with_capacity(task_id.as_str().len() + config_id.len() + 24);
        aad.extend_from_slice(b"accord-push-config/1\0");
        aad.extend_from_slice(task_id.as_str().as_bytes());
        aad.push(0);
        aad.extend_from_slice(config_id.as_bytes());
        aad
    }

    /// Seals `config` for the task `task_id`: version byte, nonce, ciphertext and tag.
    pub fn seal(&self, task_id: &TaskId, config: &PushConfig) -> Vec<u8> {
        let mut nonce = [0; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the operating system's random source is unavailable");
        let plain = serde_json::to_vec(config).expect("a push config serializes");
        let aad = Self::associated_data(task_id, &config.id);
        let sealed = self
            .cipher()
            .encrypt(&nonce.into(), Payload { msg: &plain, aad: &aad })
            .expect("XChaCha20-Poly1305 encrypts any message of this size");
        let mut out = Vec::with_capacity(1 + NONCE_LEN + sealed.len());
        out.push(SEAL_VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens what [`PushKey::seal`] sealed for this task and config id.
    pub fn open(&self, stored: &StoredPushConfig) -> Result<PushConfig, Unsealable> {
        let (version, rest) = stored.sealed.split_first().ok_or(Unsealable)?;
        if *version != SEAL_VERSION || rest.len() < NONCE_LEN {
            return Err(Unsealable);
        }
        let (nonce, sealed) = rest.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| Unsealable)?;
        let aad = Self::associated_data(&stored.task_id, &stored.id);
        let plain = self.cipher().decrypt(&nonce.into(), Payload { msg: sealed, aad: &aad }).map_err(|_| Unsealable)?;
        let config: PushConfig = serde_json::from_slice(&plain).map_err(|_| Unsealable)?;
        if config.id != stored.id {
            return Err(Unsealable);
        }
        Ok(config)
    }

    /// Seals `config` into the record a store keeps.
    pub fn stored(&self, task_id: &TaskId, config: &PushConfig, now: Millis) -> StoredPushConfig {
        StoredPushConfig {
            task_id: task_id.clone(),
            id: config.id.clone(),
            sealed: self.seal(task_id, config),
            created_at: now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> PushConfig {
        PushConfig {
            id: "hook".into(),
            url: "https://example.com/hook?secret=s3cr3t".into(),
            token: Some("tok-123".into()),
            authentication: Some(PushAuthentication { scheme: "Bearer".into(), credentials: Some("cred-456".into()) }),
        }
    }

    #[test]
    fn a_sealed_config_opens_with_its_key_and_ids_only() {
        let key = PushKey::generate();
        let task = TaskId::new("t-1");
        let stored = key.stored(&task, &config(), 7);
        assert_eq!(key.open(&stored).expect("opens"), config());
        let text = String::from_utf8_lossy(&stored.sealed);
        for secret in ["s3cr3t", "tok-123", "cred-456", "example.com"] {
            assert!(!text.contains(secret), "{secret} is in the sealed bytes");
        }
        assert_eq!(PushKey::generate().open(&stored), Err(Unsealable), "another key");
        let moved = StoredPushConfig { task_id: TaskId::new("t-2"), ..stored.clone() };
        assert_eq!(key.open(&moved), Err(Unsealable), "another task");
        let renamed = StoredPushConfig { id: "other".into(), ..stored.clone() };
        assert_eq!(key.open(&renamed), Err(Unsealable), "another config id");
        let mut flipped = stored.clone();
        let last = flipped.sealed.len() - 1;
        flipped.sealed[last] ^= 1;
        assert_eq!(key.open(&flipped), Err(Unsealable), "a changed byte");
        assert_eq!(key.open(&StoredPushConfig { sealed: Vec::new(), ..stored }), Err(Unsealable));
    }

    #[test]
    fn debug_output_hides_every_secret() {
        let shown = format!("{:?} {:?}", config(), PushKey::generate());
        for secret in ["s3cr3t", "tok-123", "cred-456"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("https://example.com"), "{shown}");
    }
}
