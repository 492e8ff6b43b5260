//! Wake-ups across workers: one `LISTEN accord_task_events` connection per store, fanned out to
//! the subscribers of each task.
//!
//! Every write that changes a task calls `pg_notify('accord_task_events', '<sequence>:<task id>')`
//! inside its transaction, where `<sequence>` is the number of the task's last log entry after
//! the write. PostgreSQL delivers the notification to every listening connection, on every
//! worker, when (and only if) the transaction commits. The listener task hands it to the
//! subscribers of that task.
//!
//! A subscriber is woken only for entries it cannot have read: each subscription learns the
//! task's last sequence number when it is made (its *floor*) and ignores notifications at or
//! below it. Notifications that arrive while the floor is being read are held and compared once
//! it is known, so a write committed after `subscribe` is never missed and a write committed
//! before it never causes a stale wake-up.
//!
//! A notification carries no data: subscribers re-read the event log, which is the truth. A
//! notification missed while the listening connection was down is recovered by waking every
//! subscriber once the connection is back (and, failing everything, by the runtime's periodic
//! re-read).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use accord_engine::task::TaskId;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::broadcast;

use crate::sql::{CHANNEL, WAKE_ALL};

/// Wake-ups buffered per subscription before it sees a lag (which also wakes it).
const PER_SUBSCRIBER_CAPACITY: usize = 4;
/// The longest wait between two attempts to re-open the listening connection.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The sequence of a wake-up that concerns every entry (a reconnect, an unaddressable task).
const EVERYTHING: u64 = u64::MAX;

/// The subscribers of each task, by task id.
#[derive(Debug, Default)]
pub(crate) struct Wakeups {
    channels: Mutex<Channels>,
}

#[derive(Debug, Default)]
struct Channels {
    by_task: HashMap<TaskId, Vec<Subscriber>>,
    /// How many subscribers `by_task` holds.
    subscribers: usize,
    /// Subscribers whose receiver is gone are swept out when there are this many.
    sweep_at: usize,
    next_key: u64,
    closed: bool,
}

#[derive(Debug)]
struct Subscriber {
    key: u64,
    sender: broadcast::Sender<TaskId>,
    seen: Seen,
}

/// What a subscriber has seen of its task's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// Its floor is being read; the highest sequence notified meanwhile, if any.
    Unknown { held: Option<u64> },
    /// Entries up to this sequence existed when it subscribed.
    Upto(u64),
}

impl Subscriber {
    fn is_gone(&self) -> bool {
        self.sender.receiver_count() == 0
    }

    /// Hands over a notification about entries up to `sequence`.
    fn notify(&mut self, id: &TaskId, sequence: u64) {
        match &mut self.seen {
            Seen::Unknown { held } => *held = Some(held.map_or(sequence, |held| held.max(sequence))),
            Seen::Upto(floor) => {
                if sequence > *floor {
                    // A send without receivers fails; the sweep removes this subscriber.
                    let _ = self.sender.send(id.clone());
                }
            }
        }
    }
}

impl Channels {
    fn sweep(&mut self) {
        self.by_task.retain(|_, subscribers| {
            subscribers.retain(|subscriber| !subscriber.is_gone());
            !subscribers.is_empty()
        });
        self.subscribers = self.by_task.values().map(Vec::len).sum();
        self.sweep_at = (self.subscribers * 2).max(64);
    }

    fn notify(&mut self, id: &TaskId, sequence: u64) {
        if let Some(subscribers) = self.by_task.get_mut(id) {
            for subscriber in subscribers.iter_mut() {
                subscriber.notify(id, sequence);
            }
            let before = subscribers.len();
            subscribers.retain(|subscriber| !subscriber.is_gone());
            self.subscribers -= before - subscribers.len();
            if subscribers.is_empty() {
                self.by_task.remove(id);
            }
        }
    }
}

/// A subscription whose floor is still being read; see [`Wakeups::settle`].
#[derive(Debug)]
pub(crate) struct Pending {
    id: TaskId,
    key: u64,
}

impl Wakeups {
    fn channels(&self) -> MutexGuard<'_, Channels> {
        // Every critical section leaves the map consistent, so a poisoned lock is still usable.
        self.channels.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a subscription to `id`: notifications are held from now on until
    /// [`Wakeups::settle`] says which entries the subscriber can read itself. `None` once closed.
    pub(crate) fn subscribe(&self, id: &TaskId) -> Option<(Pending, broadcast::Receiver<TaskId>)> {
        let mut channels = self.channels();
        if channels.closed {
            return None;
        }
        if channels.subscribers >= channels.sweep_at {
            channels.sweep();
        }
        let key = channels.next_key;
        channels.next_key += 1;
        let (sender, receiver) = broadcast::channel(PER_SUBSCRIBER_CAPACITY);
        channels.by_task.entry(id.clone()).or_default().push(Subscriber {
            key,
            sender,
            seen: Seen::Unknown { held: None },
        });
        channels.subscribers += 1;
        Some((Pending { id: id.clone(), key }, receiver))
    }

    /// Completes a subscription: entries up to `last_sequence` existed when it was made, so only
    /// later ones wake it (including any notified while its floor was being read).
    pub(crate) fn settle(&self, pending: Pending, last_sequence: u64) {
        let mut channels = self.channels();
        let Some(subscriber) = channels
            .by_task
            .get_mut(&pending.id)
            .and_then(|subscribers| subscribers.iter_mut().find(|subscriber| subscriber.key == pending.key))
        else {
            // Closed meanwhile.
            return;
        };
        let held = match subscriber.seen {
            Seen::Unknown { held } => held,
            Seen::Upto(_) => None,
        };
        subscriber.seen = Seen::Upto(last_sequence);
        if let Some(held) = held {
            subscriber.notify(&pending.id, held);
        }
    }

    /// Ends a subscription that was refused.
    pub(crate) fn cancel(&self, pending: Pending) {
        let mut channels = self.channels();
        if let Some(subscribers) = channels.by_task.get_mut(&pending.id) {
            let before = subscribers.len();
            subscribers.retain(|subscriber| subscriber.key != pending.key);
            let removed = before - subscribers.len();
            if subscribers.is_empty() {
                channels.by_task.remove(&pending.id);
            }
            channels.subscribers -= removed;
        }
    }

    /// Wakes `id`'s subscribers that have not seen entries up to `sequence`.
    fn wake(&self, id: &TaskId, sequence: u64) {
        self.channels().notify(id, sequence);
    }

    /// Wakes every subscriber of every task.
    pub(crate) fn wake_all(&self) {
        let mut channels = self.channels();
        let ids: Vec<TaskId> = channels.by_task.keys().cloned().collect();
        for id in ids {
            channels.notify(&id, EVERYTHING);
        }
    }

    /// Releases every subscriber (their wait returns "closed") and refuses new ones.
    pub(crate) fn close(&self) {
        let mut channels = self.channels();
        channels.closed = true;
        channels.by_task.clear();
        channels.subscribers = 0;
    }

    /// Handles one notification payload: `<sequence>:<task id>`, or `*` for everyone.
    fn dispatch(&self, payload: &str) {
        let parsed = payload.split_once(':').and_then(|(sequence, id)| Some((sequence.parse::<u64>().ok()?, id)));
        match parsed {
            Some((sequence, id)) => self.wake(&TaskId::new(id), sequence),
            // `*`, or a payload this release does not know: waking everyone is always safe.
            None => {
                if payload != WAKE_ALL {
                    tracing::debug!("an unrecognized task event notification woke every subscriber");
                }
                self.wake_all();
            }
        }
    }
}

/// Opens a connection that listens on the task channel. Its own one-connection pool re-opens the
/// connection when it drops.
pub(crate) async fn open_listener(options: &PgConnectOptions) -> Result<PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .max_lifetime(None)
        .idle_timeout(None)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options.clone())
        .await?;
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// Forwards notifications to subscribers until the task is aborted (when the store closes).
pub(crate) async fn forward(mut listener: PgListener, options: PgConnectOptions, wakeups: Arc<Wakeups>) {
    loop {
        match listener.try_recv().await {
            Ok(Some(notification)) => wakeups.dispatch(notification.payload()),
            Ok(None) => {
                // The connection dropped and was re-opened (already listening again): whatever
                // was announced in between is lost, so every subscriber re-reads its log.
                tracing::warn!("the task event listener lost its connection and reconnected");
                wakeups.wake_all();
            }
            Err(error) => {
                tracing::warn!(%error, "the task event listener failed; reconnecting");
                drop(listener);
                listener = reopen(&options).await;
                wakeups.wake_all();
            }
        }
    }
}

/// Re-opens the listening connection, retrying with a growing pause until it succeeds.
async fn reopen(options: &PgConnectOptions) -> PgListener {
    let mut backoff = Duration::from_millis(100);
    loop {
        tokio::time::sleep(backoff).await;
        match open_listener(options).await {
            Ok(listener) => {
                tracing::info!("the task event listener is listening again");
                return listener;
            }
            Err(error) => {
                tracing::warn!(%error, retry_in = ?backoff, "the task event listener could not reconnect");
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> TaskId {
        TaskId::new(text)
    }

    fn subscribed(wakeups: &Wakeups, task: &str, last_sequence: u64) -> broadcast::Receiver<TaskId> {
        let (pending, receiver) = wakeups.subscribe(&id(task)).expect("open");
        wakeups.settle(pending, last_sequence);
        receiver
    }

    #[test]
    fn a_wake_up_reaches_only_the_tasks_subscribers() {
        let wakeups = Wakeups::default();
        let mut first = subscribed(&wakeups, "a", 1);
        let mut other = subscribed(&wakeups, "b", 1);
        wakeups.dispatch("2:a");
        assert_eq!(first.try_recv().ok(), Some(id("a")));
        assert!(other.try_recv().is_err(), "b's subscriber is not woken for a");

        wakeups.dispatch(WAKE_ALL);
        assert_eq!(first.try_recv().ok(), Some(id("a")));
        assert_eq!(other.try_recv().ok(), Some(id("b")));
        wakeups.dispatch("not a notification");
        assert_eq!((first.try_recv().ok(), other.try_recv().ok()), (Some(id("a")), Some(id("b"))));
    }

    #[test]
    fn task_ids_may_contain_colons() {
        let wakeups = Wakeups::default();
        let mut receiver = subscribed(&wakeups, "urn:task:7", 0);
        wakeups.dispatch("1:urn:task:7");
        assert_eq!(receiver.try_recv().ok(), Some(id("urn:task:7")));
    }

    #[test]
    fn entries_a_subscriber_can_read_itself_do_not_wake_it() {
        let wakeups = Wakeups::default();
        let (pending, mut receiver) = wakeups.subscribe(&id("a")).expect("open");
        // Committed before the floor (3) was read: held, then dropped as already readable.
        wakeups.dispatch("3:a");
        wakeups.settle(pending, 3);
        assert!(receiver.try_recv().is_err(), "no stale wake-up");
        wakeups.dispatch("3:a");
        assert!(receiver.try_recv().is_err());
        wakeups.dispatch("4:a");
        assert_eq!(receiver.try_recv().ok(), Some(id("a")));
    }

    #[test]
    fn an_entry_notified_while_the_floor_is_read_wakes_once_settled() {
        let wakeups = Wakeups::default();
        let (pending, mut receiver) = wakeups.subscribe(&id("a")).expect("open");
        wakeups.dispatch("5:a");
        assert!(receiver.try_recv().is_err(), "held until the floor is known");
        wakeups.settle(pending, 4);
        assert_eq!(receiver.try_recv().ok(), Some(id("a")));

        let (pending, mut receiver) = wakeups.subscribe(&id("a")).expect("open");
        wakeups.wake_all();
        wakeups.settle(pending, 9);
        assert_eq!(receiver.try_recv().ok(), Some(id("a")), "a reconnect meanwhile wakes it too");
    }

    #[test]
    fn subscribers_that_left_are_dropped() {
        let wakeups = Wakeups::default();
        drop(subscribed(&wakeups, "a", 0));
        wakeups.dispatch("1:a");
        assert!(!wakeups.channels().by_task.contains_key(&id("a")), "a wake-up nobody hears removes them");

        let (pending, receiver) = wakeups.subscribe(&id("b")).expect("open");
        wakeups.cancel(pending);
        drop(receiver);
        assert_eq!(wakeups.channels().subscribers, 0);

        for n in 0..200 {
            drop(subscribed(&wakeups, &format!("t{n}"), 0));
        }
        let channels = wakeups.channels();
        assert!(channels.subscribers <= 64, "abandoned subscriptions are swept as they pile up");
        assert_eq!(channels.subscribers, channels.by_task.values().map(Vec::len).sum::<usize>());
    }

    #[test]
    fn closing_releases_subscribers_and_refuses_new_ones() {
        let wakeups = Wakeups::default();
        let mut receiver = subscribed(&wakeups, "a", 0);
        wakeups.close();
        assert_eq!(receiver.try_recv(), Err(broadcast::error::TryRecvError::Closed));
        assert!(wakeups.subscribe(&id("a")).is_none());
    }
}
