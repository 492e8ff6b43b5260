//! Turning SQLite failures into [`StoreError`]s for operators.
//!
//! Messages name the operation and the kind of failure, never a bound value: no owner hash,
//! token, input or output ever reaches an error or a log line from here.

use std::time::Duration;

use accord_engine::task::StoreError;

/// SQLite's primary result codes this module tells apart (`sqlite3.h`).
const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;
const SQLITE_READONLY: i32 = 8;
const SQLITE_IOERR: i32 = 10;
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_FULL: i32 = 13;
const SQLITE_CANTOPEN: i32 = 14;
const SQLITE_NOTADB: i32 = 26;

/// Maps a driver error met while doing `what` (e.g. "creating a task").
pub(crate) fn store_error(error: sqlx::Error, what: &str, busy_timeout: Duration) -> StoreError {
    let message = match &error {
        sqlx::Error::PoolClosed => return StoreError::Closed,
        sqlx::Error::Database(database) => {
            let primary = database.code().and_then(|code| code.parse::<i32>().ok()).map(|code| code & 0xff);
            database_message(primary, database.message(), what, busy_timeout)
        }
        sqlx::Error::Io(io) => format!("I/O error while {what}: {io}"),
        sqlx::Error::PoolTimedOut => {
            format!("no SQLite connection became free in time while {what}; the store is overloaded")
        }
        sqlx::Error::WorkerCrashed => format!("the SQLite connection's worker thread died while {what}"),
        other => format!("SQLite driver error while {what}: {}", driver_kind(other)),
    };
    unavailable(message)
}

/// Whether SQLite refused for a lock another connection holds.
pub(crate) fn is_busy(error: &sqlx::Error) -> bool {
    let sqlx::Error::Database(database) = error else { return false };
    let primary = database.code().and_then(|code| code.parse::<i32>().ok()).map(|code| code & 0xff);
    matches!(primary, Some(SQLITE_BUSY | SQLITE_LOCKED))
}

/// Maps an error of the writer's connection met while doing `what`.
pub(crate) fn writer_error(error: &rusqlite::Error, what: &str, busy_timeout: Duration) -> StoreError {
    let message = match error {
        rusqlite::Error::SqliteFailure(failure, message) => database_message(
            Some(failure.extended_code & 0xff),
            message.as_deref().unwrap_or("(no message)"),
            what,
            busy_timeout,
        ),
        // The other kinds are conversions and API misuse; their text may quote values.
        _ => format!("SQLite driver error while {what}: unexpected error"),
    };
    unavailable(message)
}

/// The message of a failure SQLite reported with `primary` result code.
fn database_message(primary: Option<i32>, message: &str, what: &str, busy_timeout: Duration) -> String {
    match primary {
        Some(SQLITE_BUSY | SQLITE_LOCKED) => format!(
            "the SQLite database stayed locked for longer than the busy timeout ({busy_timeout:?}) while \
             {what}: another connection or process holds a long write transaction"
        ),
        Some(
            code @ (SQLITE_READONLY | SQLITE_IOERR | SQLITE_CORRUPT | SQLITE_FULL | SQLITE_CANTOPEN | SQLITE_NOTADB),
        ) => {
            format!(
                "SQLite storage failure while {what} (code {code}): {message}; check the disk, the file and its \
                 permissions"
            )
        }
        _ => format!("SQLite error while {what}: {message}"),
    }
}

fn unavailable(message: String) -> StoreError {
    tracing::warn!(target: "accord_store_sqlite", %message, "task store unavailable");
    StoreError::Unavailable(message)
}

/// A stored value that no longer decodes: the file was edited or damaged.
pub(crate) fn corrupt(column: &str, detail: impl std::fmt::Display) -> StoreError {
    let message = format!("a stored task is corrupt (column {column}): {detail}");
    tracing::error!(target: "accord_store_sqlite", %message, "task store corrupt");
    StoreError::Unavailable(message)
}

/// The class of a driver error, without its details (which may quote decoded values).
fn driver_kind(error: &sqlx::Error) -> &'static str {
    match error {
        sqlx::Error::Configuration(_) => "invalid configuration",
        sqlx::Error::ColumnNotFound(_) | sqlx::Error::ColumnIndexOutOfBounds { .. } => "unexpected schema",
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) | sqlx::Error::Encode(_) => "value conversion failed",
        sqlx::Error::Migrate(_) => "migration failed",
        sqlx::Error::Protocol(_) | sqlx::Error::Tls(_) => "protocol error",
        _ => "unexpected error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_writer_names_the_busy_timeout() {
        let busy = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(SQLITE_BUSY), None);
        let StoreError::Unavailable(message) = writer_error(&busy, "claiming a task", Duration::from_millis(200))
        else {
            panic!("a busy database makes the store unavailable");
        };
        assert!(message.contains("busy timeout (200ms)") && message.contains("claiming a task"), "{message}");
        let misuse = rusqlite::Error::InvalidColumnName("owner_hash".into());
        let StoreError::Unavailable(message) = writer_error(&misuse, "reading", Duration::from_secs(1)) else {
            panic!("unavailable");
        };
        assert!(!message.contains("owner_hash"), "no detail that could quote a value: {message}");
    }

    #[test]
    fn a_closed_pool_reads_as_a_closed_store() {
        assert_eq!(store_error(sqlx::Error::PoolClosed, "reading", Duration::from_secs(5)), StoreError::Closed);
    }

    #[test]
    fn io_errors_are_unavailable_with_the_operation_named() {
        let error = sqlx::Error::Io(std::io::Error::other("disk gone"));
        let StoreError::Unavailable(message) = store_error(error, "creating a task", Duration::from_secs(5)) else {
            panic!("an I/O error makes the store unavailable");
        };
        assert!(message.contains("creating a task") && message.contains("disk gone"), "{message}");
    }
}
