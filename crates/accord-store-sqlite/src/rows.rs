//! Encoding records into columns and decoding rows back, and the conversions between the
//! engine's unsigned times and SQLite's signed integers.

use accord_engine::task::{
    ExecutionLease, LeasePhase, Millis, OwnerHash, StoreError, StoredTask, Task, TaskEventKind, with_body_from_log,
};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

/// Why a step of a store call failed, before it is mapped to a [`StoreError`] with the name of
/// the call.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The driver or SQLite failed.
    Driver(sqlx::Error),
    /// A failure of the store's own (a corrupt row, a value that does not encode).
    Store(StoreError),
}

impl From<sqlx::Error> for Fault {
    fn from(error: sqlx::Error) -> Self {
        Self::Driver(error)
    }
}

impl From<StoreError> for Fault {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

/// The columns of a whole record, which [`decode_record`] reads by name.
macro_rules! record_columns {
    () => {
        concat!(
            "owner_hash, task, payload, admission_expires_at, lease_owner, lease_expires_at, lease_phase, ",
            crate::rows::task_log!(),
            " AS log"
        )
    };
}
pub(crate) use record_columns;

/// For a row of `tasks` whose task keeps its body in its log (`body_in_log`), the log as a JSON
/// array of `[sequence, kind]`; `NULL` otherwise. Read with [`decode_task_with_log`].
macro_rules! task_log {
    () => {
        "CASE WHEN tasks.body_in_log = 1 THEN (SELECT json_group_array(json_array(e.sequence, json(e.kind))) \
         FROM task_events AS e WHERE e.task_id = tasks.id) END"
    };
}
pub(crate) use task_log;

/// A time as SQLite stores it. Times beyond `i64::MAX` ms (some 292 million years) are clamped,
/// which keeps every comparison the engine makes.
pub(crate) fn sql_time(ms: Millis) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A stored time or sequence number back as unsigned (a negative value, which this store never
/// writes, reads as 0).
pub(crate) fn unsigned(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The name of a lease phase in the `lease_phase` column.
pub(crate) fn phase_name(phase: LeasePhase) -> &'static str {
    match phase {
        LeasePhase::Prepared => "prepared",
        LeasePhase::Active => "active",
    }
}

fn phase(name: &str) -> Result<LeasePhase, StoreError> {
    match name {
        "prepared" => Ok(LeasePhase::Prepared),
        "active" => Ok(LeasePhase::Active),
        _ => Err(corrupt("lease_phase", "an unknown lease phase")),
    }
}

/// A value as JSON text for a column. `serde_json::to_string` of a value that serializes itself;
/// the error is reduced to its class, since serde's message may quote the value.
pub(crate) fn to_json(encoded: Result<String, serde_json::Error>, column: &str) -> Result<String, StoreError> {
    encoded.map_err(|error| {
        StoreError::Unavailable(format!("cannot encode the {column} column as JSON: {}", classify(&error)))
    })
}

/// The task JSON of the `tasks.task` column.
pub(crate) fn decode_task(text: &str) -> Result<Task, StoreError> {
    serde_json::from_str(text).map_err(|error| bad_json("task", &error))
}

/// The task of a row: the `task` column, whole again from the [`task_log`] column when the row
/// keeps its body in its log.
pub(crate) fn decode_task_with_log(text: &str, log: Option<&str>) -> Result<Task, StoreError> {
    let task = decode_task(text)?;
    let Some(log) = log else { return Ok(task) };
    let mut log: Vec<(u64, TaskEventKind)> =
        serde_json::from_str(log).map_err(|error| bad_json("task_events.kind", &error))?;
    log.sort_unstable_by_key(|(sequence, _)| *sequence);
    Ok(with_body_from_log(task, log.iter().map(|(sequence, kind)| (*sequence, kind))))
}

/// The event-kind JSON of the `task_events.kind` column.
pub(crate) fn decode_kind(text: &str) -> Result<TaskEventKind, StoreError> {
    serde_json::from_str(text).map_err(|error| bad_json("task_events.kind", &error))
}

/// A whole record from a row selected with [`record_columns`].
pub(crate) fn decode_record(row: &SqliteRow) -> Result<StoredTask, Fault> {
    Ok(record_from_columns(RecordColumns {
        owner: row.try_get("owner_hash")?,
        task: row.try_get("task")?,
        payload: row.try_get("payload")?,
        admission: row.try_get("admission_expires_at")?,
        lease_owner: row.try_get("lease_owner")?,
        lease_expires_at: row.try_get("lease_expires_at")?,
        lease_phase: row.try_get("lease_phase")?,
        log: row.try_get("log")?,
    })?)
}

/// The columns of [`record_columns`], as read by either driver.
pub(crate) struct RecordColumns {
    pub(crate) owner: String,
    pub(crate) task: String,
    pub(crate) payload: String,
    pub(crate) admission: Option<i64>,
    pub(crate) lease_owner: Option<String>,
    pub(crate) lease_expires_at: Option<i64>,
    pub(crate) lease_phase: Option<String>,
    /// The [`task_log`] column.
    pub(crate) log: Option<String>,
}

/// A whole record from its columns.
pub(crate) fn record_from_columns(columns: RecordColumns) -> Result<StoredTask, StoreError> {
    let owner =
        OwnerHash::from_hex(&columns.owner).ok_or_else(|| corrupt("owner_hash", "not a SHA-256 in 64 hex digits"))?;
    let task = decode_task_with_log(&columns.task, columns.log.as_deref())?;
    let payload = serde_json::from_str(&columns.payload).map_err(|error| bad_json("payload", &error))?;
    let lease = match (columns.lease_owner, columns.lease_expires_at, columns.lease_phase) {
        (Some(owner_id), Some(expires_at), Some(name)) => {
            Some(ExecutionLease { owner_id, expires_at: unsigned(expires_at), phase: phase(&name)? })
        }
        (None, None, None) => None,
        _ => return Err(corrupt("lease", "a partial lease")),
    };
    Ok(StoredTask { task, owner, payload, admission_expires_at: columns.admission.map(unsigned), lease })
}

fn bad_json(column: &str, error: &serde_json::Error) -> StoreError {
    // The category and position only: serde's message may quote stored values.
    let detail = format!("{} at line {} column {}", classify(error), error.line(), error.column());
    corrupt(column, detail)
}

fn classify(error: &serde_json::Error) -> &'static str {
    match error.classify() {
        serde_json::error::Category::Io => "an I/O error",
        serde_json::error::Category::Syntax => "invalid JSON",
        serde_json::error::Category::Data => "JSON of the wrong shape",
        serde_json::error::Category::Eof => "truncated JSON",
    }
}

fn corrupt(column: &str, detail: impl std::fmt::Display) -> StoreError {
    crate::error::corrupt(column, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_phase_names_are_the_json_names_and_round_trip() {
        for lease_phase in [LeasePhase::Prepared, LeasePhase::Active] {
            assert_eq!(serde_json::to_value(lease_phase).ok(), Some(serde_json::Value::from(phase_name(lease_phase))));
            assert!(matches!(phase(phase_name(lease_phase)), Ok(parsed) if parsed == lease_phase));
        }
        assert!(phase("finished").is_err());
    }

    #[test]
    fn times_clamp_instead_of_wrapping() {
        assert_eq!(sql_time(42), 42);
        assert_eq!(sql_time(Millis::MAX), i64::MAX);
        assert_eq!(unsigned(42), 42);
        assert_eq!(unsigned(-1), 0);
    }
}
