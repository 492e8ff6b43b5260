//! [`PostgresStoreConfig`]: where the database is and the store's limits.

use std::time::Duration;

/// How a [`PostgresStore`](crate::PostgresStore) connects and what it keeps.
///
/// Every worker of one deployment should use the same `max_active_tasks` and `retention`: each
/// worker enforces the limits it was given on the shared database.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresStoreConfig {
    /// The database URL, `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?PARAMS]`. Never
    /// printed with its password: `Debug` redacts it.
    pub url: String,
    /// The most connections the store's pool opens (default 10), for reads and lease updates.
    /// The store also holds one connection to listen for task events and one per writer
    /// ([`PostgresStoreConfig::writers`]).
    pub max_connections: u32,
    /// How many writers commit creates and appends (default 1), each on a connection of its own.
    /// A writer takes every write queued when it is free and commits them as one transaction.
    /// One writer makes the largest groups: since a fast task is written once, that gave one
    /// worker 1.2× the blocking sends of two writers with fsync on and off, and four fewer still
    /// (docs/bench/profiles.md). More writers let one prepare a group while another waits for
    /// its commit, and keep a group that waits for a row lock (held by another worker) from
    /// holding up every write of this one; measure before raising it.
    pub writers: usize,
    /// The `synchronous_commit` level every connection of the store sets (default
    /// [`SynchronousCommit::On`]: each commit is flushed to disk before the call that made it
    /// returns). `None` keeps the level the server, the database or the role sets. Whatever
    /// it is, a write of a paid task is committed at `on` or stronger.
    pub synchronous_commit: Option<SynchronousCommit>,
    /// The most tasks that are not terminal at once (default: no limit). Abandoned
    /// reservations are reaped before the limit is enforced; a `create` beyond it fails with
    /// `StoreError::CapacityExhausted`.
    pub max_active_tasks: Option<usize>,
    /// How long a terminal task is kept after its last change (default 7 days); housekeeping
    /// deletes it with its event log afterwards.
    pub retention: Duration,
    /// The longest one SQL statement may run, and the longest a transaction may sit idle,
    /// before the server cancels it (default 30 s).
    pub statement_timeout: Duration,
    /// How long a call waits for a free pooled connection before it fails (default 10 s).
    pub acquire_timeout: Duration,
    /// How often the store reaps abandoned reservations and purges terminal tasks past their
    /// retention in the background (default every 60 s; `None`: only when
    /// [`PostgresStore::housekeep`](crate::PostgresStore::housekeep) is called).
    pub housekeeping_interval: Option<Duration>,
}

impl PostgresStoreConfig {
    /// The defaults, for the database at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            max_connections: 10,
            writers: 1,
            synchronous_commit: Some(SynchronousCommit::On),
            max_active_tasks: None,
            retention: Duration::from_secs(7 * 24 * 60 * 60),
            statement_timeout: Duration::from_secs(30),
            acquire_timeout: Duration::from_secs(10),
            housekeeping_interval: Some(Duration::from_secs(60)),
        }
    }

    /// Sets [`PostgresStoreConfig::max_connections`] (at least 1).
    pub fn max_connections(mut self, max_connections: u32) -> Self {
        self.max_connections = max_connections.max(1);
        self
    }

    /// Sets [`PostgresStoreConfig::writers`] (at least 1).
    pub fn writers(mut self, writers: usize) -> Self {
        self.writers = writers.max(1);
        self
    }

    /// Sets [`PostgresStoreConfig::synchronous_commit`].
    pub fn synchronous_commit(mut self, synchronous_commit: Option<SynchronousCommit>) -> Self {
        self.synchronous_commit = synchronous_commit;
        self
    }

    /// Sets [`PostgresStoreConfig::max_active_tasks`].
    pub fn max_active_tasks(mut self, max_active_tasks: Option<usize>) -> Self {
        self.max_active_tasks = max_active_tasks;
        self
    }

    /// Sets [`PostgresStoreConfig::retention`].
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// Sets [`PostgresStoreConfig::statement_timeout`].
    pub fn statement_timeout(mut self, statement_timeout: Duration) -> Self {
        self.statement_timeout = statement_timeout;
        self
    }

    /// Sets [`PostgresStoreConfig::acquire_timeout`].
    pub fn acquire_timeout(mut self, acquire_timeout: Duration) -> Self {
        self.acquire_timeout = acquire_timeout;
        self
    }

    /// Sets [`PostgresStoreConfig::housekeeping_interval`].
    pub fn housekeeping_interval(mut self, housekeeping_interval: Option<Duration>) -> Self {
        self.housekeeping_interval = housekeeping_interval;
        self
    }
}

impl std::fmt::Debug for PostgresStoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStoreConfig")
            .field("url", &redact_url(&self.url))
            .field("max_connections", &self.max_connections)
            .field("writers", &self.writers)
            .field("synchronous_commit", &self.synchronous_commit)
            .field("max_active_tasks", &self.max_active_tasks)
            .field("retention", &self.retention)
            .field("statement_timeout", &self.statement_timeout)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("housekeeping_interval", &self.housekeeping_interval)
            .finish()
    }
}

/// PostgreSQL's `synchronous_commit` levels, weakest first: how far a commit has gone before
/// it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SynchronousCommit {
    /// `off`: the commit returns before it is flushed; a server crash can lose the last
    /// acknowledged commits (never corrupting the database).
    Off,
    /// `local`: flushed to this server's disk.
    Local,
    /// `remote_write`: flushed locally and written (not yet flushed) by synchronous standbys.
    RemoteWrite,
    /// `on`: flushed locally and by synchronous standbys, if any.
    On,
    /// `remote_apply`: as `on`, and applied by synchronous standbys (visible to their readers).
    RemoteApply,
}

impl SynchronousCommit {
    /// The setting's value, as PostgreSQL spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Local => "local",
            Self::RemoteWrite => "remote_write",
            Self::On => "on",
            Self::RemoteApply => "remote_apply",
        }
    }
}

/// The URL without its password and without its query parameters (which may carry one):
/// `postgres://user:***@host:5432/db?…`.
pub(crate) fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let (rest, had_query) = match rest.split_once('?') {
        Some((before, _)) => (before, true),
        None => (rest, false),
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_owned(),
    };
    let mut redacted = String::new();
    if let Some(scheme) = scheme {
        redacted.push_str(scheme);
        redacted.push_str("://");
    }
    redacted.push_str(&authority);
    redacted.push_str(path);
    if had_query {
        redacted.push_str("?…");
    }
    redacted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_print_without_passwords_or_parameters() {
        assert_eq!(redact_url("postgres://alice:s3cret@db:5432/accord"), "postgres://alice:***@db:5432/accord");
        assert_eq!(redact_url("postgres://alice@db/accord"), "postgres://alice@db/accord");
        assert_eq!(redact_url("postgres://db/accord?password=s3cret"), "postgres://db/accord?…");
        assert_eq!(redact_url("postgres://a:p@ss@db"), "postgres://a:***@db");
        assert_eq!(redact_url("not a url:s3cret@x"), "not a url:***@x");
        let config = PostgresStoreConfig::new("postgres://alice:s3cret@db/accord?sslpassword=other");
        let printed = format!("{config:?}");
        assert!(!printed.contains("s3cret") && !printed.contains("other"), "{printed}");
        assert!(printed.contains("postgres://alice:***@db/accord"));
    }
}
