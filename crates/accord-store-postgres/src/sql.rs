//! The SQL the store runs, and the conversions between rows and engine types.
//!
//! Every statement is a `&'static str` run with bound parameters (no query macros, so building
//! needs no database), except `list`'s, which is put together from fixed fragments, one per
//! filter in use, with its values bound all the same. The text of terminal states and of the
//! columns read back is spelt once, in the macros below, and spliced in with `concat!`.

use accord_engine::TaskState;
use accord_engine::task::{
    ExecutionLease, LeasePhase, ListQuery, Millis, OwnerHash, PageStart, StoreError, StoredTask, Task, TaskEvent,
    TaskEventKind, TaskId, TaskPayload, apply_to_record, finished_head, with_body_from_log,
};
use sqlx::QueryBuilder;
use sqlx::postgres::Postgres;
use sqlx::types::Json;

/// The terminal states, as the `state` column spells them (kept equal to
/// [`TaskState::is_terminal`] by a test).
macro_rules! terminal_states {
    () => {
        "('completed', 'failed', 'canceled', 'rejected')"
    };
}

/// The columns a [`TaskRow`] is read from.
macro_rules! record_columns {
    () => {
        concat!(
            "owner_hash, task, payload, admission_expires_at, lease_owner, lease_expires_at, lease_phase, last_sequence, ",
            task_log!(),
            " AS log"
        )
    };
}

/// For a row of `accord_tasks` whose task keeps its body in its log (`body_in_log`), the log as a
/// JSON array of `[sequence, kind]` in order; NULL otherwise (see [`TaskRow::into_record`]).
macro_rules! task_log {
    () => {
        "CASE WHEN accord_tasks.body_in_log THEN (SELECT json_agg(json_build_array(e.sequence, e.kind) \
         ORDER BY e.sequence) FROM accord_task_events AS e WHERE e.task_id = accord_tasks.id) END"
    };
}

/// The NOTIFY payload `<sequence>:<task id>` for the task id in `$id` whose log now ends at
/// `$sequence`, or `*` ("wake every subscriber") for an id too long for a notification
/// (PostgreSQL's limit is 8000 bytes).
macro_rules! notify_payload {
    ($sequence:literal, $id:literal) => {
        concat!("CASE WHEN octet_length(", $id, ") < 7900 THEN ", $sequence, " || ':' || ", $id, " ELSE '*' END")
    };
}

/// The channel every task change is announced on (see [`crate::wakeups`] for the payload).
pub(crate) const CHANNEL: &str = "accord_task_events";

/// The payload that wakes every subscriber.
pub(crate) const WAKE_ALL: &str = "*";

/// Stores new records, each with its first log entries, in one statement; returns the ids
/// stored. A record whose id exists already is skipped (and its entries with it): the ids missing
/// from the answer are duplicates. Rows go in in id order, so two groups creating the same ids at
/// once wait for each other in the same order (never a deadlock).
///
/// Nothing is announced: nobody can be subscribed to a task that did not exist (`subscribe`
/// refuses an unknown task), so a create has nobody to wake. (An announcement would also take
/// PostgreSQL's database-wide notification lock, held through the commit's flush to disk, and so
/// serialize the commits of every worker.)
pub(crate) const CREATE_MANY: &str = concat!(
    "WITH created AS (",
    " INSERT INTO accord_tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload,",
    "  admission_expires_at, lease_owner, lease_expires_at, lease_phase, last_sequence, body_in_log)",
    " SELECT n.id, n.owner_hash, n.context_id, n.state, n.created_at, n.updated_at, n.task::jsonb,",
    "  n.payload::jsonb, n.admission_expires_at, n.lease_owner, n.lease_expires_at, n.lease_phase,",
    "  n.last_sequence, n.body_in_log",
    " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[],",
    "  $8::text[], $9::bigint[], $10::text[], $11::bigint[], $12::text[], $13::bigint[], $18::boolean[])",
    " AS n(id, owner_hash, context_id, state, created_at, updated_at, task, payload, admission_expires_at,",
    "  lease_owner, lease_expires_at, lease_phase, last_sequence, body_in_log)",
    " ORDER BY n.id COLLATE \"C\"",
    " ON CONFLICT (id) DO NOTHING",
    " RETURNING id",
    "), logged AS (",
    " INSERT INTO accord_task_events (task_id, sequence, at, kind)",
    " SELECT e.task_id, e.sequence, e.at, e.kind::jsonb",
    " FROM unnest($14::text[], $15::bigint[], $16::bigint[], $17::text[]) AS e(task_id, sequence, at, kind)",
    " JOIN created ON created.id = e.task_id",
    ")",
    " SELECT id FROM created"
);

/// Locks the rows of the tasks `$1` for a group of writes, in id order (so that groups and
/// reapers locking overlapping tasks, on any worker, never deadlock), and reads them.
pub(crate) const LOCK_FOR_WRITE: &str =
    concat!("SELECT id, ", record_columns!(), " FROM accord_tasks WHERE id = ANY($1) ORDER BY id FOR UPDATE");

/// How many tasks are not terminal, and which of the ids `$1` exist already (run once
/// [`LOCK_CAPACITY`] is held, so that the count includes every create committed before).
pub(crate) const ACTIVE_AND_EXISTING: &str = concat!(
    "SELECT (SELECT count(*) FROM accord_tasks WHERE state NOT IN ",
    terminal_states!(),
    ") AS active, ARRAY(SELECT id FROM accord_tasks WHERE id = ANY($1)) AS existing"
);

/// The `synchronous_commit` levels below `on`: a commit at one of them may return before it is
/// flushed on every synchronous server.
macro_rules! weaker_than_on {
    () => {
        "('off', 'local', 'remote_write')"
    };
}

/// Raises this transaction's `synchronous_commit` to `on` when the session's is weaker (an
/// operator's choice), for a transaction that writes a paid task; returns the level the commit
/// will use. PostgreSQL reads the level when the transaction commits.
pub(crate) const RAISE_DURABILITY: &str = concat!(
    "SELECT CASE WHEN current_setting('synchronous_commit') IN ",
    weaker_than_on!(),
    " THEN set_config('synchronous_commit', 'on', true) ELSE current_setting('synchronous_commit') END"
);

/// The `synchronous_commit` level the transaction would commit with now.
#[cfg(test)]
pub(crate) const COMMIT_LEVEL: &str = "SELECT current_setting('synchronous_commit')";

/// The column a lease update returns besides the record: the `synchronous_commit` level its
/// commit uses, raised to `on` for a paid task (see [`RAISE_DURABILITY`]). A lease update is one
/// statement in a transaction of its own, so this sets the level of its commit.
macro_rules! lease_durability {
    () => {
        concat!(
            ", CASE WHEN (payload ->> 'paid')::boolean AND current_setting('synchronous_commit') IN ",
            weaker_than_on!(),
            " THEN set_config('synchronous_commit', 'on', true) ELSE current_setting('synchronous_commit') END",
            " AS commit_level"
        )
    };
}

/// Serializes creations while a capacity limit is enforced, so that two workers cannot both
/// take the last place (an advisory lock held until the transaction ends).
pub(crate) const LOCK_CAPACITY: &str = "SELECT pg_advisory_xact_lock(7240531101250283114)";

/// Which of the ids `$1` exist already.
pub(crate) const EXISTING: &str = "SELECT id FROM accord_tasks WHERE id = ANY($1)";

/// Serializes creations for the owners whose advisory keys ([`owner_lock_key`]) are `$1` (sorted,
/// distinct), while their shares are enforced, so that two workers cannot both take an owner's
/// last place. The locks are taken in the order of the keys and held until the transaction ends.
pub(crate) const LOCK_OWNERS: &str =
    "SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT k FROM unnest($1::bigint[]) AS k ORDER BY k) AS keys";

/// How many tasks of each owner `$1` are not terminal (owners with none have no row; run once
/// [`LOCK_OWNERS`] is held, so that the count includes every create committed before).
pub(crate) const UNFINISHED_OF_OWNERS: &str = concat!(
    "SELECT owner_hash, count(*) FROM accord_tasks WHERE owner_hash = ANY($1) AND state NOT IN ",
    terminal_states!(),
    " GROUP BY owner_hash"
);

/// The advisory lock key of an owner (its hex hash): its first 64 bits. Two owners that share a
/// key only wait for each other.
pub(crate) fn owner_lock_key(owner_hash: &str) -> i64 {
    let prefix = owner_hash.get(..16).unwrap_or(owner_hash);
    // The owner hash is hex; anything else (never written by this store) maps to key 0.
    u64::from_str_radix(prefix, 16).map_or(0, |key| key as i64)
}

pub(crate) const GET: &str = concat!("SELECT ", record_columns!(), " FROM accord_tasks WHERE id = $1");

/// Appends the `list` statement for the owner's tasks matching `query`: the count of all that
/// match and one page of them, in one snapshot (a row with a NULL task when the page is empty).
/// The page holds one task more than asked for, when there is one: whether it exists says whether
/// more follow.
///
/// Each filter in use adds its own fixed condition and one that is not in use adds nothing, so
/// that every combination is planned with the index that serves it (a cursor continues within the
/// same index); every value is bound.
///
/// A total over the owner's tasks, or over those in some states, is summed from the counts the
/// triggers keep (see the migrations), folded and not yet folded: a few rows, however many tasks
/// the owner has. With a context, skill or time filter the matches are counted.
pub(crate) fn push_list(sql: &mut QueryBuilder<Postgres>, owner: &OwnerHash, query: &ListQuery) {
    if query.context_id.is_none() && query.skill.is_none() && query.updated_after.is_none() {
        sql.push("SELECT c.total, p.task, p.log FROM (SELECT COALESCE(sum(n), 0)::bigint AS total FROM (");
        for (at, counts) in ["accord_task_counts", "accord_task_count_changes"].into_iter().enumerate() {
            sql.push(if at == 0 { "SELECT n FROM " } else { " UNION ALL SELECT n FROM " }).push(counts);
            push_list_filters(sql, owner, query);
        }
        sql.push(") AS n");
    } else {
        sql.push("SELECT c.total, p.task, p.log FROM (SELECT count(*) AS total FROM accord_tasks");
        push_list_filters(sql, owner, query);
    }
    sql.push(concat!(") AS c LEFT JOIN (SELECT task, ", task_log!(), " AS log, created_at, id FROM accord_tasks"));
    push_list_filters(sql, owner, query);
    if let PageStart::After(cursor) = &query.page {
        sql.push(" AND (created_at, id) < (")
            .push_bind(to_db(cursor.created_at))
            .push(", ")
            .push_bind(cursor.id.as_str().to_owned())
            .push(")");
    }
    // The page size is written into the statement (a number, and one of a hundred: one prepared
    // statement each), not bound, and a first page has no `OFFSET`: costed without their values,
    // a bound limit or offset made the plan for any owner dearer than the plan for the owner at
    // hand, so PostgreSQL planned the statement afresh at every list (0.14 ms of planning for
    // 0.09 ms of execution) instead of reusing one plan.
    sql.push(" ORDER BY created_at DESC, id DESC LIMIT ").push(count_to_db(query.limit.saturating_add(1)));
    if let PageStart::Offset(offset) = query.page
        && offset > 0
    {
        sql.push(" OFFSET ").push_bind(count_to_db(offset));
    }
    sql.push(") AS p ON true ORDER BY p.created_at DESC, p.id DESC");
}

/// The `WHERE` clause of [`push_list`]: the owner and each filter of `query` in use.
fn push_list_filters(sql: &mut QueryBuilder<Postgres>, owner: &OwnerHash, query: &ListQuery) {
    sql.push(" WHERE owner_hash = ").push_bind(owner.to_hex());
    if let Some(context) = &query.context_id {
        sql.push(" AND context_id = ").push_bind(context.clone());
    }
    if let Some(states) = &query.states {
        let names: Vec<String> = states.iter().map(|state| state.as_str().to_owned()).collect();
        sql.push(" AND state = ANY(").push_bind(names).push(")");
    }
    if let Some(skill) = &query.skill {
        sql.push(" AND skill = ").push_bind(skill.clone());
    }
    if let Some(after) = query.updated_after {
        sql.push(" AND updated_at >= ").push_bind(to_db(after));
    }
}

/// Takes the lock under which one worker at a time folds the count changes, if no other holds it
/// (an advisory lock of this transaction; its key is `accord:c` in ASCII, as a big-endian integer).
pub(crate) const TRY_LOCK_COUNT_FOLD: &str = "SELECT pg_try_advisory_xact_lock(7017561974685055587)";

/// Folds up to `$1` count changes into the counts, in one statement: the changes are deleted and
/// their sums added to their owners' counts. Answers how many changes were folded, and the owners
/// and states whose count is now zero (kept from growing the table, by [`DROP_EMPTY_COUNTS`]).
/// Run under [`TRY_LOCK_COUNT_FOLD`]: the changes are only ever deleted here, so the rows picked
/// by their tuple ids stay put until the delete.
pub(crate) const FOLD_COUNTS: &str = concat!(
    "WITH gone AS (",
    " DELETE FROM accord_task_count_changes",
    " WHERE ctid = ANY(ARRAY(SELECT ctid FROM accord_task_count_changes LIMIT $1))",
    " RETURNING owner_hash, state, n",
    "), folded AS (",
    " INSERT INTO accord_task_counts (owner_hash, state, n)",
    " SELECT owner_hash, state, sum(n)::bigint FROM gone GROUP BY owner_hash, state",
    " ON CONFLICT (owner_hash, state) DO UPDATE SET n = accord_task_counts.n + EXCLUDED.n",
    " RETURNING owner_hash, state, n",
    ")",
    " SELECT (SELECT count(*) FROM gone),",
    " ARRAY(SELECT owner_hash FROM folded WHERE n = 0), ARRAY(SELECT state FROM folded WHERE n = 0)"
);

/// Reclaims the folded count changes (after a large fold). A vacuum of the table by another
/// worker is waited for (for milliseconds: the table is small); one by autovacuum gives way.
pub(crate) const VACUUM_COUNT_CHANGES: &str = "VACUUM accord_task_count_changes";

/// Deletes the counts of owners `$1` in states `$2` (pairwise) that are zero.
pub(crate) const DROP_EMPTY_COUNTS: &str = concat!(
    "DELETE FROM accord_task_counts AS c USING unnest($1::text[], $2::text[]) AS e(owner_hash, state)",
    " WHERE c.owner_hash = e.owner_hash AND c.state = e.state AND c.n = 0"
);

/// How many tasks there are in each state: the folded counts and the changes not yet folded.
pub(crate) const COUNT_BY_STATE: &str = concat!(
    "SELECT state, sum(n)::bigint FROM (SELECT state, n FROM accord_task_counts",
    " UNION ALL SELECT state, n FROM accord_task_count_changes) AS c GROUP BY state"
);

/// Takes a prepared lease for `$2` until `$3` at `$4`: the task is submitted or working, its
/// admission has not expired, and no live lease blocks.
pub(crate) const CLAIM: &str = concat!(
    "UPDATE accord_tasks",
    " SET lease_owner = $2, lease_expires_at = $3, lease_phase = 'prepared', admission_expires_at = NULL",
    " WHERE id = $1 AND state IN ('submitted', 'working')",
    " AND (lease_owner IS NULL OR lease_expires_at <= $4)",
    " AND (admission_expires_at IS NULL OR admission_expires_at > $4)",
    " RETURNING ",
    record_columns!(),
    lease_durability!()
);

/// Takes over, for `$2` until `$3`, a task whose active lease lapsed at `$4`: straight to an
/// active lease (a recovery), never through the prepared phase.
pub(crate) const TAKE_OVER: &str = concat!(
    "UPDATE accord_tasks",
    " SET lease_owner = $2, lease_expires_at = $3, lease_phase = 'active', admission_expires_at = NULL",
    " WHERE id = $1 AND state IN ('submitted', 'working')",
    " AND lease_phase = 'active' AND lease_expires_at <= $4",
    " RETURNING ",
    record_columns!(),
    lease_durability!()
);

/// Extends `$2`'s live lease to `$3` at `$4`, keeping its phase.
pub(crate) const RENEW: &str = concat!(
    "UPDATE accord_tasks SET lease_expires_at = $3",
    " WHERE id = $1 AND state NOT IN ",
    terminal_states!(),
    " AND lease_owner = $2 AND lease_expires_at > $4",
    " RETURNING ",
    record_columns!(),
    lease_durability!()
);

/// Turns `$2`'s live prepared lease active until `$3` at `$4`.
pub(crate) const ACTIVATE: &str = concat!(
    "UPDATE accord_tasks SET lease_expires_at = $3, lease_phase = 'active'",
    " WHERE id = $1 AND state NOT IN ",
    terminal_states!(),
    " AND lease_owner = $2 AND lease_phase = 'prepared' AND lease_expires_at > $4",
    " RETURNING ",
    record_columns!(),
    lease_durability!()
);

/// Tasks that reaping terminalizes at `$1`: an admission expired without a lease, or a prepared
/// lease lapsed. Each branch is served by its own partial index.
pub(crate) const REAP_CANDIDATES: &str = concat!(
    "(SELECT id FROM accord_tasks",
    " WHERE lease_owner IS NULL AND admission_expires_at <= $1 AND state NOT IN ",
    terminal_states!(),
    " ORDER BY admission_expires_at LIMIT $2)",
    " UNION",
    " (SELECT id FROM accord_tasks",
    " WHERE lease_owner IS NOT NULL AND lease_phase = 'prepared' AND lease_expires_at <= $1 AND state NOT IN ",
    terminal_states!(),
    " ORDER BY lease_expires_at LIMIT $2)"
);

/// Locks the candidates `$2` that are still due for reaping at `$1`, in id order (so concurrent
/// reapers never deadlock); a row changed meanwhile is re-checked under its lock.
pub(crate) const LOCK_REAPABLE: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM accord_tasks WHERE id = ANY($2) AND state NOT IN ",
    terminal_states!(),
    " AND ((lease_owner IS NULL AND admission_expires_at <= $1)",
    " OR (lease_owner IS NOT NULL AND lease_phase = 'prepared' AND lease_expires_at <= $1))",
    " ORDER BY id FOR UPDATE"
);

/// Writes changed records and appends their new events in one statement, and announces each
/// changed task (delivered when the transaction commits).
pub(crate) const WRITE_CHANGES: &str = concat!(
    "WITH changes AS (",
    " SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[],",
    "  $7::bigint[], $8::text[], $9::bigint[], $14::boolean[])",
    " AS c(id, state, updated_at, task, admission_expires_at, lease_owner, lease_expires_at, lease_phase,",
    "  last_sequence, body_in_log)",
    "), updated AS (",
    " UPDATE accord_tasks AS t SET state = c.state, updated_at = c.updated_at, task = c.task::jsonb,",
    "  admission_expires_at = c.admission_expires_at, lease_owner = c.lease_owner,",
    "  lease_expires_at = c.lease_expires_at, lease_phase = c.lease_phase, last_sequence = c.last_sequence,",
    // A row that keeps its body in its log is a finished task's: its input goes with it.
    "  body_in_log = c.body_in_log,",
    "  payload = CASE WHEN c.body_in_log THEN jsonb_set(t.payload, '{input}', 'null'::jsonb) ELSE t.payload END",
    " FROM changes AS c WHERE t.id = c.id",
    " RETURNING t.id, t.last_sequence",
    "), logged AS (",
    " INSERT INTO accord_task_events (task_id, sequence, at, kind)",
    " SELECT task_id, sequence, at, kind::jsonb",
    " FROM unnest($10::text[], $11::bigint[], $12::bigint[], $13::text[]) AS e(task_id, sequence, at, kind)",
    " RETURNING task_id",
    ")",
    " SELECT pg_notify('accord_task_events', ",
    notify_payload!("last_sequence::text", "id"),
    ") FROM updated"
);

/// Submitted or working tasks whose active lease lapsed at `$1`, lapsed first, at most `$2`
/// (a task waiting for input holds no lease, and is not recovered).
pub(crate) const EXPIRED_ACTIVE_LEASES: &str = concat!(
    "SELECT id FROM accord_tasks",
    " WHERE lease_owner IS NOT NULL AND lease_phase = 'active' AND lease_expires_at <= $1",
    " AND state IN ('submitted', 'working')",
    " ORDER BY lease_expires_at, id LIMIT $2"
);

/// The task's owner and its log entries after `$2`, in order (one row with NULL entry columns
/// when there are none; no row when the task does not exist).
pub(crate) const EVENTS_SINCE: &str = concat!(
    "SELECT t.owner_hash, e.sequence, e.at, e.kind FROM accord_tasks AS t",
    " LEFT JOIN accord_task_events AS e ON e.task_id = t.id AND e.sequence > $2",
    " WHERE t.id = $1 ORDER BY e.sequence"
);

/// The task's owner and the sequence number of its log's last entry.
/// A task's owner hash (what an ownership check reads before the record), or the stand-in `$2`
/// when there is no such task; and whether there is (one row either way).
pub(crate) const OWNER: &str = "SELECT COALESCE(MAX(owner_hash), $2), COUNT(*) FROM accord_tasks WHERE id = $1";

/// The owner hash decoded in place of a missing task's (64 hex digits, as stored).
pub(crate) const STAND_IN_OWNER: &str = "0000000000000000000000000000000000000000000000000000000000000000";

pub(crate) const OWNER_AND_LAST_SEQUENCE: &str = "SELECT owner_hash, last_sequence FROM accord_tasks WHERE id = $1";

/// Deletes up to `$2` terminal tasks last changed at or before `$1`, with their logs. Rows
/// another worker is purging at the same time are skipped, so purgers never wait on each other.
pub(crate) const PURGE: &str = concat!(
    "DELETE FROM accord_tasks WHERE id IN (",
    " SELECT id FROM accord_tasks WHERE state IN ",
    terminal_states!(),
    " AND updated_at <= $1 ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)"
);

/// Locks the task `$1` for a change of its push configs (so that concurrent puts on one task
/// count its configs one at a time, and no append moves its log meanwhile), and reads its owner,
/// its log's last sequence and whether it is paid.
pub(crate) const LOCK_FOR_PUSH_CONFIG: &str = concat!(
    "SELECT owner_hash, last_sequence, coalesce((payload ->> 'paid')::boolean, false) AS paid",
    " FROM accord_tasks WHERE id = $1 FOR UPDATE"
);

/// Stores the config `$2` of the task `$1` (sealed `$3`, created at `$4`, its cursor at `$5`, the
/// task's log at `$6`) unless the task has `$7` other configs; a config with the same id is
/// replaced in place, keeping its creation time, cursor, attempts, next attempt and lease.
/// Returns a row when stored. Run under [`LOCK_FOR_PUSH_CONFIG`], so the count cannot race.
pub(crate) const PUT_PUSH_CONFIG: &str = concat!(
    "INSERT INTO accord_push_configs (task_id, id, sealed, created_at, delivered, task_sequence, next_attempt_at)",
    " SELECT $1, $2, $3, $4, $5, $6, $4",
    " WHERE (SELECT count(*) FROM accord_push_configs WHERE task_id = $1 AND id <> $2) < $7",
    " ON CONFLICT (task_id, id) DO UPDATE SET sealed = EXCLUDED.sealed",
    " RETURNING id"
);

/// The task's owner and its push configs by id, bytewise (one row with NULL config columns when
/// it has none; no row when the task does not exist).
pub(crate) const PUSH_CONFIGS: &str = concat!(
    "SELECT t.owner_hash, p.id, p.sealed, p.created_at FROM accord_tasks AS t",
    " LEFT JOIN accord_push_configs AS p ON p.task_id = t.id",
    " WHERE t.id = $1 ORDER BY p.id"
);

/// Deletes the config `$2` of the task `$1`; returns a row when it was there.
pub(crate) const DELETE_PUSH_CONFIG: &str =
    "DELETE FROM accord_push_configs WHERE task_id = $1 AND id = $2 RETURNING id";

/// Takes up to `$4` configs with updates to deliver at `$2` for the worker `$1` until `$3`, the
/// longest waiting first, each with up to `$5` log entries after its cursor (one row per entry,
/// in order; one row with NULL entry columns for a config given none).
///
/// Configs are taken with `FOR UPDATE SKIP LOCKED`: a config another claim is taking is passed
/// over (never waited for), and one it took meanwhile is re-checked, its lease live, and left, so
/// concurrent claims, on any worker, never share a config. A claim waits for no lock, so it
/// takes part in no deadlock.
pub(crate) const CLAIM_PUSH_DELIVERIES: &str = concat!(
    "WITH due AS (",
    " SELECT task_id, id FROM accord_push_configs",
    " WHERE delivered < task_sequence AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until <= $2)",
    " ORDER BY next_attempt_at, task_id, id LIMIT $4",
    " FOR UPDATE SKIP LOCKED",
    "), claimed AS (",
    " UPDATE accord_push_configs AS p SET lease_worker = $1, lease_until = $3",
    " FROM due WHERE p.task_id = due.task_id AND p.id = due.id",
    " RETURNING p.task_id, p.id, p.sealed, p.created_at, p.delivered, p.attempts, p.next_attempt_at",
    ")",
    " SELECT c.task_id, c.id, c.sealed, c.created_at, c.attempts, t.context_id, e.sequence, e.at, e.kind",
    " FROM claimed AS c JOIN accord_tasks AS t ON t.id = c.task_id",
    " LEFT JOIN LATERAL (SELECT sequence, at, kind FROM accord_task_events",
    "  WHERE task_id = c.task_id AND sequence > c.delivered ORDER BY sequence LIMIT $5) AS e ON true",
    " ORDER BY c.next_attempt_at, c.task_id, c.id, e.sequence"
);

/// The whole log of the task `$1`, in order (read under the task's row lock).
pub(crate) const LOG_OF_ONE: &str =
    "SELECT sequence, kind FROM accord_task_events WHERE task_id = $1 ORDER BY sequence";

/// Locks the task `$1` and reads it, for a settlement that appends a dead letter to its log.
pub(crate) const LOCK_ONE: &str = concat!("SELECT ", record_columns!(), " FROM accord_tasks WHERE id = $1 FOR UPDATE");

/// Ends the worker `$3`'s delivery of the config `$2` of the task `$1`: the cursor moves forward
/// to `$4` (never back), the attempts become `$5` and the next attempt `$6`, and the lease goes.
/// Returns a row when the worker held the lease.
pub(crate) const SETTLE_PUSH_DELIVERY: &str = concat!(
    "UPDATE accord_push_configs",
    " SET delivered = GREATEST(delivered, $4), attempts = $5, next_attempt_at = $6,",
    " lease_worker = NULL, lease_until = NULL",
    " WHERE task_id = $1 AND id = $2 AND lease_worker = $3",
    " RETURNING id"
);

fn phase_name(phase: LeasePhase) -> &'static str {
    match phase {
        LeasePhase::Prepared => "prepared",
        LeasePhase::Active => "active",
    }
}

fn phase_from_name(name: &str) -> Option<LeasePhase> {
    match name {
        "prepared" => Some(LeasePhase::Prepared),
        "active" => Some(LeasePhase::Active),
        _ => None,
    }
}

/// A count or offset as a BIGINT (saturating).
pub(crate) fn count_to_db(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// Milliseconds as a BIGINT (times past the year 292 million saturate).
pub(crate) fn to_db(millis: Millis) -> i64 {
    i64::try_from(millis).unwrap_or(i64::MAX)
}

/// A BIGINT as milliseconds (a negative value, which the store never writes, reads as 0).
pub(crate) fn from_db(millis: i64) -> Millis {
    Millis::try_from(millis).unwrap_or(0)
}

/// The columns of a task record.
#[derive(sqlx::FromRow)]
pub(crate) struct TaskRow {
    owner_hash: String,
    task: Json<Task>,
    payload: Json<TaskPayload>,
    admission_expires_at: Option<i64>,
    lease_owner: Option<String>,
    lease_expires_at: Option<i64>,
    lease_phase: Option<String>,
    last_sequence: i64,
    /// The [`task_log`] column.
    log: Option<Json<Vec<(i64, TaskEventKind)>>>,
}

impl TaskRow {
    /// The record, and the sequence number of its log's last entry.
    pub(crate) fn into_record(self) -> Result<(StoredTask, u64), StoreError> {
        let owner = parse_owner(&self.owner_hash)?;
        let lease = match (self.lease_owner, self.lease_expires_at, self.lease_phase) {
            (Some(owner_id), Some(expires_at), Some(phase)) => Some(ExecutionLease {
                owner_id,
                expires_at: from_db(expires_at),
                phase: phase_from_name(&phase).ok_or_else(|| corrupt("an unknown lease phase"))?,
            }),
            (None, None, None) => None,
            _ => return Err(corrupt("a partial execution lease")),
        };
        let task = match self.log {
            Some(Json(log)) => {
                with_body_from_log(self.task.0, log.iter().map(|(sequence, kind)| (from_db(*sequence), kind)))
            }
            None => self.task.0,
        };
        let record = StoredTask {
            task,
            owner,
            payload: self.payload.0,
            admission_expires_at: self.admission_expires_at.map(from_db),
            lease,
        };
        Ok((record, u64::try_from(self.last_sequence).unwrap_or(0)))
    }
}

/// Reads a stored owner hash (never echoing it: it identifies a token holder).
pub(crate) fn parse_owner(hex: &str) -> Result<OwnerHash, StoreError> {
    OwnerHash::from_hex(hex).ok_or_else(|| corrupt("a malformed owner hash"))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Unavailable(format!("the task table holds {what}; the row was not written by this store"))
}

/// Changed records and their new events, as the column arrays [`WRITE_CHANGES`] binds.
#[derive(Default)]
pub(crate) struct Changes {
    ids: Vec<String>,
    states: Vec<&'static str>,
    updated_at: Vec<i64>,
    tasks: Vec<String>,
    admission_expires_at: Vec<Option<i64>>,
    lease_owners: Vec<Option<String>>,
    lease_expires_at: Vec<Option<i64>>,
    lease_phases: Vec<Option<&'static str>>,
    last_sequences: Vec<i64>,
    bodies_in_log: Vec<bool>,
    event_task_ids: Vec<String>,
    event_sequences: Vec<i64>,
    event_times: Vec<i64>,
    event_kinds: Vec<String>,
}

impl Changes {
    pub(crate) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Adds a locked record as it now is, and the entries appended to it. Fails, adding nothing,
    /// when the record cannot be encoded.
    pub(crate) fn push(&mut self, locked: &Locked) -> Result<(), StoreError> {
        let record = &locked.record;
        let task = &record.task;
        let encoded = encode(locked.head.as_ref().unwrap_or(task))?;
        self.ids.push(task.id.as_str().to_owned());
        self.states.push(task.state.as_str());
        self.updated_at.push(to_db(task.updated_at));
        self.tasks.push(encoded);
        self.admission_expires_at.push(record.admission_expires_at.map(to_db));
        self.lease_owners.push(record.lease.as_ref().map(|lease| lease.owner_id.clone()));
        self.lease_expires_at.push(record.lease.as_ref().map(|lease| to_db(lease.expires_at)));
        self.lease_phases.push(record.lease.as_ref().map(|lease| phase_name(lease.phase)));
        self.last_sequences.push(to_db(locked.last_sequence));
        self.bodies_in_log.push(locked.head.is_some());
        for event in &locked.appended {
            self.event_task_ids.push(task.id.as_str().to_owned());
            self.event_sequences.push(to_db(event.sequence));
            self.event_times.push(to_db(event.at));
            self.event_kinds.push(event.kind.clone());
        }
        Ok(())
    }

    /// The [`WRITE_CHANGES`] statement with these changes bound.
    pub(crate) fn statement(&self) -> sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments> {
        sqlx::query(WRITE_CHANGES)
            .bind(self.ids.as_slice())
            .bind(self.states.as_slice())
            .bind(self.updated_at.as_slice())
            .bind(self.tasks.as_slice())
            .bind(self.admission_expires_at.as_slice())
            .bind(self.lease_owners.as_slice())
            .bind(self.lease_expires_at.as_slice())
            .bind(self.lease_phases.as_slice())
            .bind(self.last_sequences.as_slice())
            .bind(self.event_task_ids.as_slice())
            .bind(self.event_sequences.as_slice())
            .bind(self.event_times.as_slice())
            .bind(self.event_kinds.as_slice())
            .bind(self.bodies_in_log.as_slice())
    }
}

/// A log entry appended in this transaction, its kind encoded.
pub(crate) struct Appended {
    pub(crate) sequence: u64,
    pub(crate) at: Millis,
    pub(crate) kind: String,
}

/// A record read under its row lock, with the entries appended to it in this transaction.
pub(crate) struct Locked {
    pub(crate) record: StoredTask,
    pub(crate) last_sequence: u64,
    pub(crate) appended: Vec<Appended>,
    /// What the `task` column keeps of a finished task whose log rebuilds the rest
    /// ([`finished_head`]), once [`Locked::keep_finished_once`] found it so.
    pub(crate) head: Option<Task>,
}

impl Locked {
    pub(crate) fn new(row: TaskRow) -> Result<Self, StoreError> {
        let (record, last_sequence) = row.into_record()?;
        Ok(Self { record, last_sequence, appended: Vec::new(), head: None })
    }

    /// For a task that this transaction finished (or noted something on after it finished): reads
    /// its log, and when the log rebuilds the task's status message, result, artifacts and
    /// history, keeps only the rest to be written ([`Locked::head`]), so that each is stored
    /// once. Any doubt (an entry that does not read back) keeps the whole task.
    pub(crate) async fn keep_finished_once(&mut self, conn: &mut sqlx::PgConnection) -> Result<(), sqlx::Error> {
        self.head = None;
        if !self.record.task.state.is_terminal() || self.appended.is_empty() {
            return Ok(());
        }
        let stored: Vec<(i64, Json<TaskEventKind>)> =
            sqlx::query_as(LOG_OF_ONE).bind(self.record.task.id.as_str()).fetch_all(&mut *conn).await?;
        let mut appended = Vec::with_capacity(self.appended.len());
        for entry in &self.appended {
            let Ok(kind) = serde_json::from_str::<TaskEventKind>(&entry.kind) else { return Ok(()) };
            appended.push((entry.sequence, kind));
        }
        let log = stored
            .iter()
            .map(|(sequence, kind)| (from_db(*sequence), &kind.0))
            .chain(appended.iter().map(|(sequence, kind)| (*sequence, kind)));
        self.head = finished_head(&self.record.task, log);
        Ok(())
    }

    /// Appends `kind` (encoded as `encoded`) and applies it to the record with
    /// [`apply_to_record`]: a write that ends the execution clears the lease (and, when
    /// terminal, the admission expiry).
    pub(crate) fn append(&mut self, kind: &TaskEventKind, encoded: String, now: Millis) {
        apply_to_record(&mut self.record, kind, now);
        self.last_sequence += 1;
        self.appended.push(Appended { sequence: self.last_sequence, at: now, kind: encoded });
    }

    /// Cancels the task as reaping does.
    pub(crate) fn reap(&mut self, now: Millis) -> Result<(), StoreError> {
        let cancel = TaskEventKind::Status { state: TaskState::Canceled, message: None };
        let encoded = encode(&cancel)?;
        self.append(&cancel, encoded, now);
        self.record.lease = None;
        self.record.admission_expires_at = None;
        Ok(())
    }
}

/// A new record with its first log entries, checked and encoded: what [`CREATE_MANY`] binds for
/// it.
#[derive(Clone)]
pub(crate) struct NewRow {
    id: String,
    owner_hash: String,
    context_id: Option<String>,
    state: &'static str,
    created_at: i64,
    updated_at: i64,
    task: String,
    payload: String,
    admission_expires_at: Option<i64>,
    lease_owner: Option<String>,
    lease_expires_at: Option<i64>,
    lease_phase: Option<&'static str>,
    /// Whether `task` is a finished task's head, whose body its log keeps ([`finished_head`]).
    body_in_log: bool,
    /// When the entries after the first were logged.
    at: i64,
    /// The log's entries, numbered from 1.
    kinds: Vec<String>,
}

impl NewRow {
    /// The owner's hash, in hex.
    pub(crate) fn owner_hash(&self) -> &str {
        &self.owner_hash
    }

    /// `record` as it is stored, with `kinds` (encoded) as its log from sequence 1: the first
    /// entry dated with the task's `created_at`, the others with `at`. `head`, for a task created
    /// already ended, is what its row keeps of it, its log keeping the rest ([`finished_head`]).
    /// Refuses text PostgreSQL cannot store.
    pub(crate) fn new(
        record: &StoredTask,
        head: Option<&Task>,
        kinds: Vec<String>,
        at: Millis,
    ) -> Result<Self, StoreError> {
        let task = &record.task;
        let lease = record.lease.as_ref();
        let texts = [Some(task.id.as_str()), task.context_id.as_deref(), lease.map(|lease| lease.owner_id.as_str())];
        if texts.into_iter().flatten().any(|text| text.contains('\0')) {
            return Err(nul_refused("creating a task"));
        }
        Ok(Self {
            id: task.id.as_str().to_owned(),
            owner_hash: record.owner.to_hex(),
            context_id: task.context_id.clone(),
            state: task.state.as_str(),
            created_at: to_db(task.created_at),
            updated_at: to_db(task.updated_at),
            task: encode_storable(head.unwrap_or(task), "creating a task")?,
            payload: encode_storable(&record.payload, "creating a task")?,
            admission_expires_at: record.admission_expires_at.map(to_db),
            lease_owner: lease.map(|lease| lease.owner_id.clone()),
            lease_expires_at: lease.map(|lease| to_db(lease.expires_at)),
            lease_phase: lease.map(|lease| phase_name(lease.phase)),
            body_in_log: head.is_some(),
            at: to_db(at),
            kinds,
        })
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }
}

/// New records, as the column arrays [`CREATE_MANY`] binds.
#[derive(Default)]
pub(crate) struct NewRows<'a> {
    ids: Vec<&'a str>,
    owner_hashes: Vec<&'a str>,
    context_ids: Vec<Option<&'a str>>,
    states: Vec<&'static str>,
    created_at: Vec<i64>,
    updated_at: Vec<i64>,
    tasks: Vec<&'a str>,
    payloads: Vec<&'a str>,
    admission_expires_at: Vec<Option<i64>>,
    lease_owners: Vec<Option<&'a str>>,
    lease_expires_at: Vec<Option<i64>>,
    lease_phases: Vec<Option<&'static str>>,
    last_sequences: Vec<i64>,
    bodies_in_log: Vec<bool>,
    event_task_ids: Vec<&'a str>,
    event_sequences: Vec<i64>,
    event_times: Vec<i64>,
    event_kinds: Vec<&'a str>,
}

impl<'a> NewRows<'a> {
    pub(crate) fn push(&mut self, row: &'a NewRow) {
        self.ids.push(&row.id);
        self.owner_hashes.push(&row.owner_hash);
        self.context_ids.push(row.context_id.as_deref());
        self.states.push(row.state);
        self.created_at.push(row.created_at);
        self.updated_at.push(row.updated_at);
        self.tasks.push(&row.task);
        self.payloads.push(&row.payload);
        self.admission_expires_at.push(row.admission_expires_at);
        self.lease_owners.push(row.lease_owner.as_deref());
        self.lease_expires_at.push(row.lease_expires_at);
        self.lease_phases.push(row.lease_phase);
        self.last_sequences.push(count_to_db(row.kinds.len()));
        self.bodies_in_log.push(row.body_in_log);
        for (sequence, kind) in (1..).zip(&row.kinds) {
            self.event_task_ids.push(&row.id);
            self.event_sequences.push(sequence);
            // The first entry is dated with the task's creation, the ones that follow it with the
            // store's clock.
            self.event_times.push(if sequence == 1 { row.created_at } else { row.at });
            self.event_kinds.push(kind);
        }
    }

    /// The [`CREATE_MANY`] statement with these records bound.
    pub(crate) fn statement(
        &self,
    ) -> sqlx::query::QueryScalar<'_, sqlx::Postgres, String, sqlx::postgres::PgArguments> {
        sqlx::query_scalar(CREATE_MANY)
            .bind(self.ids.as_slice())
            .bind(self.owner_hashes.as_slice())
            .bind(self.context_ids.as_slice())
            .bind(self.states.as_slice())
            .bind(self.created_at.as_slice())
            .bind(self.updated_at.as_slice())
            .bind(self.tasks.as_slice())
            .bind(self.payloads.as_slice())
            .bind(self.admission_expires_at.as_slice())
            .bind(self.lease_owners.as_slice())
            .bind(self.lease_expires_at.as_slice())
            .bind(self.lease_phases.as_slice())
            .bind(self.last_sequences.as_slice())
            .bind(self.event_task_ids.as_slice())
            .bind(self.event_sequences.as_slice())
            .bind(self.event_times.as_slice())
            .bind(self.event_kinds.as_slice())
            .bind(self.bodies_in_log.as_slice())
    }
}

/// `value` as JSON text.
pub(crate) fn encode(value: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(value)
        .map_err(|error| StoreError::Unavailable(format!("a task could not be serialized for storage: {error}")))
}

/// `value` as JSON text that PostgreSQL's JSONB can hold: refused (by `operation`) when it has a
/// NUL character.
pub(crate) fn encode_storable(value: &impl serde::Serialize, operation: &str) -> Result<String, StoreError> {
    let json = encode(value)?;
    if has_nul_escape(&json) { Err(nul_refused(operation)) } else { Ok(json) }
}

/// Whether JSON text holds the escape of a NUL character (`\u0000`), which JSONB refuses. The
/// escape's backslash is one that is not itself escaped: `\\u0000` is a backslash and `u0000`.
pub(crate) fn has_nul_escape(json: &str) -> bool {
    json.match_indices("u0000").any(|(at, _)| {
        let backslashes = json.as_bytes()[..at].iter().rev().take_while(|byte| **byte == b'\\').count();
        backslashes % 2 == 1
    })
}

/// The refusal of a task holding text PostgreSQL cannot store.
pub(crate) fn nul_refused(operation: &str) -> StoreError {
    StoreError::Unavailable(format!(
        "{operation}: the task holds text PostgreSQL cannot store (a NUL character, \\u0000)"
    ))
}

/// One log entry read back.
pub(crate) fn event(task_id: &TaskId, sequence: i64, at: i64, kind: Json<TaskEventKind>) -> TaskEvent {
    TaskEvent {
        task_id: task_id.clone(),
        sequence: u64::try_from(sequence).unwrap_or(0),
        at: from_db(at),
        kind: kind.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn the_sql_terminal_states_are_the_engines() {
        let terminal: Vec<String> = TaskState::ALL
            .into_iter()
            .filter(|state| state.is_terminal())
            .map(|state| format!("'{}'", state.as_str()))
            .collect();
        assert_eq!(terminal_states!(), format!("({})", terminal.join(", ")));
    }

    #[test]
    fn every_change_announces_itself_on_the_channel() {
        let notify = format!("pg_notify('{CHANNEL}', ");
        assert!(WRITE_CHANGES.contains(&notify), "{WRITE_CHANGES}");
        assert!(!CREATE_MANY.contains("pg_notify"), "a new task has no subscribers to wake");
    }

    #[test]
    fn nul_characters_are_found_in_json_text() {
        let json = |value: Value| encode(&value).expect("JSON");
        assert!(has_nul_escape(&json(Value::from("a\u{0}b"))));
        assert!(has_nul_escape(&json(serde_json::json!({"key\u{0}": 1}))));
        assert!(has_nul_escape(&json(Value::from("\\\u{0}"))), "a backslash, then a NUL");
        assert!(!has_nul_escape(&json(Value::from("\\u0000"))), "a backslash, then the text u0000");
        assert!(!has_nul_escape(&json(Value::from("\\\\u0000"))));
        assert!(!has_nul_escape(&json(Value::from("u0000"))));
        let refused = encode_storable(&Value::from("\u{0}"), "creating a task");
        assert!(matches!(refused, Err(StoreError::Unavailable(message)) if message.contains("NUL character")));
    }

    #[test]
    fn lease_phases_round_trip() {
        for phase in [LeasePhase::Prepared, LeasePhase::Active] {
            assert_eq!(phase_from_name(phase_name(phase)), Some(phase));
        }
        assert_eq!(phase_from_name("gone"), None);
    }

    #[test]
    fn times_saturate_instead_of_wrapping() {
        assert_eq!(to_db(Millis::MAX), i64::MAX);
        assert_eq!(from_db(to_db(1_700_000_000_000)), 1_700_000_000_000);
        assert_eq!(from_db(-5), 0);
    }
}

/// The store's queries keep using their indexes on a table of many tasks. This checks query
/// plans, not timings: a sequential scan of the task table in any of them would make the store
/// slow down as it grows.
#[cfg(test)]
mod plans {
    use super::*;
    use serde_json::Value;
    use sqlx::{AssertSqlSafe, Connection, PgConnection};

    const TASKS: u32 = 100_000;
    /// The reference time of the generated tasks: leases and admissions lapse around it.
    const NOW: i64 = 1_000_000;

    fn admin_url() -> String {
        match std::env::var("ACCORD_PG_URL") {
            Ok(url) if !url.trim().is_empty() => url,
            _ => panic!(
                "ACCORD_PG_URL is not set, so the query plan test has no server. Run the tests through \
                 scripts/with-postgres: `scripts/with-postgres cargo test -p accord-store-postgres`"
            ),
        }
    }

    /// Every `Seq Scan` of `accord_tasks` or `accord_push_configs` in a JSON plan.
    fn seq_scans_of_tasks(plan: &Value, found: &mut Vec<String>) {
        match plan {
            Value::Object(node) => {
                let relation = node.get("Relation Name").and_then(Value::as_str);
                if node.get("Node Type") == Some(&Value::from("Seq Scan"))
                    && matches!(relation, Some("accord_tasks" | "accord_push_configs"))
                {
                    found.push(plan.to_string());
                }
                node.values().for_each(|child| seq_scans_of_tasks(child, found));
            }
            Value::Array(items) => items.iter().for_each(|child| seq_scans_of_tasks(child, found)),
            _ => {}
        }
    }

    /// The relation of every scan in a JSON plan, once per scan.
    fn relations_read(plan: &Value, found: &mut Vec<String>) {
        match plan {
            Value::Object(node) => {
                if let Some(relation) = node.get("Relation Name").and_then(Value::as_str) {
                    found.push(relation.to_owned());
                }
                node.values().for_each(|child| relations_read(child, found));
            }
            Value::Array(items) => items.iter().for_each(|child| relations_read(child, found)),
            _ => {}
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_queries_use_indexes_on_a_large_table() {
        let admin_url = admin_url();
        let name = format!("accord_plans_{}", std::process::id());
        let mut admin = PgConnection::connect(&admin_url).await.expect("connect to ACCORD_PG_URL");
        for statement in [format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), format!("CREATE DATABASE {name}")] {
            sqlx::raw_sql(AssertSqlSafe(statement)).execute(&mut admin).await.expect("make a scratch database");
        }
        // The same server and credentials, another database (the URL ends in `/DATABASE[?…]`).
        let (base, query) = admin_url.split_once('?').map_or((admin_url.as_str(), None), |(base, q)| (base, Some(q)));
        let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
        let url = match query {
            Some(query) => format!("{server}/{name}?{query}"),
            None => format!("{server}/{name}"),
        };
        let config = crate::PostgresStoreConfig::new(url.clone()).max_connections(1).housekeeping_interval(None);
        let store = crate::PostgresStore::connect(config).await.expect("migrate the scratch database");
        let mut db = PgConnection::connect(&url).await.expect("connect to the scratch database");

        // 1,000 owners; a third of the tasks in one of 50 contexts; 97% terminal, 2% running
        // (half of their leases lapsed), 1% reserved (half of their admissions expired).
        let generate = format!(
            "INSERT INTO accord_tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload, \
             admission_expires_at, lease_owner, lease_expires_at, lease_phase, last_sequence) \
             SELECT 'task-' || g, md5('owner' || (g % 1000)) || md5('again' || (g % 1000)), \
             CASE WHEN g % 3 = 0 THEN 'context-' || (g % 50) END, \
             CASE WHEN g % 100 < 97 THEN 'completed' WHEN g % 100 < 99 THEN 'working' ELSE 'submitted' END, \
             g, g, jsonb_build_object('skill', 'skill-' || (g % 7)), '{{}}'::jsonb, \
             CASE WHEN g % 100 = 99 THEN {NOW} - 50 + g % 100 END, \
             CASE WHEN g % 100 IN (97, 98) THEN 'worker' END, \
             CASE WHEN g % 100 IN (97, 98) THEN {NOW} - 1 + g % 2 END, \
             CASE WHEN g % 100 IN (97, 98) THEN 'active' END, 1 \
             FROM generate_series(1, {TASKS}) AS g"
        );
        sqlx::raw_sql(AssertSqlSafe(generate)).execute(&mut db).await.expect("generate tasks");
        // A push config for every task, nearly all of them caught up with their task's log.
        let configs = "INSERT INTO accord_push_configs (task_id, id, sealed, created_at, delivered, task_sequence, \
             next_attempt_at) SELECT id, 'hook', '\\x00'::bytea, created_at, 1, \
             CASE WHEN created_at % 100 = 0 THEN 2 ELSE 1 END, created_at FROM accord_tasks";
        sqlx::raw_sql(configs).execute(&mut db).await.expect("generate push configs");
        sqlx::raw_sql("VACUUM ANALYZE accord_tasks, accord_push_configs").execute(&mut db).await.expect("analyze");
        let owner: String = sqlx::query_scalar("SELECT owner_hash FROM accord_tasks WHERE id = 'task-7'")
            .fetch_one(&mut db)
            .await
            .expect("an owner");

        let explain = |sql: &str| AssertSqlSafe(format!("EXPLAIN (FORMAT JSON) {sql}"));
        let owner_hash = OwnerHash::from_hex(&owner).expect("a generated owner hash");
        let cursor = PageStart::After(accord_engine::task::ListCursor {
            created_at: 50_000,
            id: accord_engine::task::TaskId::new("task-50000"),
        });
        let lists = [
            ("list", ListQuery::default()),
            ("list by state", ListQuery { states: Some(vec![TaskState::Working]), ..ListQuery::default() }),
            ("list in a context", ListQuery { context_id: Some("context-3".into()), ..ListQuery::default() }),
            ("list by skill", ListQuery { skill: Some("skill-3".into()), ..ListQuery::default() }),
            ("list changed since", ListQuery { updated_after: Some(99_000), ..ListQuery::default() }),
            ("list after a cursor", ListQuery { page: cursor.clone(), ..ListQuery::default() }),
            (
                "list by skill after a cursor",
                ListQuery { skill: Some("skill-3".into()), page: cursor, ..ListQuery::default() },
            ),
        ];
        let mut plans: Vec<(&str, Result<Value, sqlx::Error>)> = Vec::new();
        for (name, query) in lists {
            let mut statement = QueryBuilder::new("EXPLAIN (FORMAT JSON) ");
            push_list(&mut statement, &owner_hash, &query);
            plans.push((name, statement.build_query_scalar().fetch_one(&mut db).await));
        }
        plans.extend([
            (
                "reap candidates",
                sqlx::query_scalar(explain(REAP_CANDIDATES)).bind(NOW).bind(256_i64).fetch_one(&mut db).await,
            ),
            (
                "expired active leases",
                sqlx::query_scalar(explain(EXPIRED_ACTIVE_LEASES)).bind(NOW).bind(100_i64).fetch_one(&mut db).await,
            ),
            (
                "count active",
                sqlx::query_scalar(explain(ACTIVE_AND_EXISTING))
                    .bind(vec!["task-7".to_owned()])
                    .fetch_one(&mut db)
                    .await,
            ),
            (
                "lock for a write",
                sqlx::query_scalar(explain(LOCK_FOR_WRITE))
                    .bind(vec!["task-7".to_owned(), "task-8".to_owned()])
                    .fetch_one(&mut db)
                    .await,
            ),
            ("purge", sqlx::query_scalar(explain(PURGE)).bind(NOW).bind(256_i64).fetch_one(&mut db).await),
            (
                "claim push deliveries",
                sqlx::query_scalar(explain(CLAIM_PUSH_DELIVERIES))
                    .bind("worker")
                    .bind(NOW)
                    .bind(NOW + 60_000)
                    .bind(16_i64)
                    .bind(100_i64)
                    .fetch_one(&mut db)
                    .await,
            ),
            ("push configs", sqlx::query_scalar(explain(PUSH_CONFIGS)).bind("task-7").fetch_one(&mut db).await),
            ("get", sqlx::query_scalar(explain(GET)).bind("task-7").fetch_one(&mut db).await),
            (
                "events since",
                sqlx::query_scalar(explain(EVENTS_SINCE)).bind("task-7").bind(0_i64).fetch_one(&mut db).await,
            ),
        ]);
        for (query, plan) in plans {
            let plan = plan.unwrap_or_else(|error| panic!("explain {query}: {error}"));
            let mut scans = Vec::new();
            seq_scans_of_tasks(&plan, &mut scans);
            assert!(scans.is_empty(), "the {query} query scans the whole task table: {plan}");
            if matches!(query, "list" | "list by state" | "list after a cursor") {
                // The total is summed from the counts: the tasks are read for the page alone.
                let mut relations = Vec::new();
                relations_read(&plan, &mut relations);
                // (A finished task's body is read from its log.)
                relations.retain(|relation| relation != "accord_task_events");
                relations.sort_unstable();
                assert_eq!(
                    relations,
                    ["accord_task_count_changes", "accord_task_counts", "accord_tasks"],
                    "the {query} query counts the owner's tasks: {plan}"
                );
            }
        }

        // A first page is planned once per connection, not at each list (PostgreSQL takes the
        // plan for any owner after five runs when it costs no more than those for each owner).
        for query in
            [ListQuery::default(), ListQuery { states: Some(vec![TaskState::Completed]), ..ListQuery::default() }]
        {
            for _ in 0..8 {
                let mut statement = QueryBuilder::new("");
                push_list(&mut statement, &owner_hash, &query);
                statement.build().fetch_all(&mut db).await.expect("list");
            }
        }
        let plans: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE 'SELECT c.total%'",
        )
        .fetch_all(&mut db)
        .await
        .expect("the prepared lists");
        assert_eq!(plans.len(), 2, "{plans:?}");
        assert!(plans.iter().all(|(generic, _)| *generic >= 3), "a list is planned at every run: {plans:?}");

        // Statistics that lag behind the table: taken while nearly every task was unfinished,
        // read after nearly every task ended. The writer's connection still counts the
        // unfinished tasks from their index.
        let flip = |from: &str, to: &str| {
            AssertSqlSafe(format!(
                "UPDATE accord_tasks SET state = '{to}' WHERE state = '{from}' AND lease_owner IS NULL \
                 AND admission_expires_at IS NULL"
            ))
        };
        sqlx::raw_sql(flip("completed", "submitted")).execute(&mut db).await.expect("tasks unfinished");
        sqlx::raw_sql("ANALYZE accord_tasks").execute(&mut db).await.expect("analyze");
        sqlx::raw_sql(flip("submitted", "completed")).execute(&mut db).await.expect("tasks ended again");
        let options = url.parse::<sqlx::postgres::PgConnectOptions>().expect("the scratch database's URL");
        let mut writer = PgConnection::connect_with(&crate::store::writer_options(&options)).await.expect("connect");
        let counts = [
            sqlx::query_scalar(explain(ACTIVE_AND_EXISTING))
                .bind(vec!["task-7".to_owned()])
                .fetch_one(&mut writer)
                .await,
            sqlx::query_scalar(explain(UNFINISHED_OF_OWNERS)).bind(vec![owner.clone()]).fetch_one(&mut writer).await,
        ];
        for plan in counts {
            let plan: Value = plan.expect("explain a count of unfinished tasks");
            let mut scans = Vec::new();
            seq_scans_of_tasks(&plan, &mut scans);
            assert!(scans.is_empty(), "with stale statistics the writer counts by reading the table: {plan}");
            // A bitmap scan never marks the entries of ended tasks dead in the index of
            // unfinished ones: each count read thousands of them (1.5 ms for 12 tasks).
            assert!(!plan.to_string().contains("Bitmap"), "the writer counts with a bitmap scan: {plan}");
        }
        drop(writer);

        accord_engine::task::TaskStore::close(&store).await;
        drop(db);
        sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
            .execute(&mut admin)
            .await
            .expect("drop the scratch database");
    }
}
