//! Timestamps as the wire writes them.

use std::time::SystemTime;

/// Formats a time the way JavaScript's `Date.prototype.toISOString` does:
/// `2026-11-30T08:15:00.123Z` (UTC, milliseconds).
pub fn iso_millis(at: SystemTime) -> String {
    let at = time::OffsetDateTime::from(at);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}

/// The current time as [`iso_millis`] writes it.
pub fn now_iso() -> String {
    iso_millis(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn formats_like_to_iso_string() {
        let at = UNIX_EPOCH + Duration::from_millis(1_764_460_800_123);
        assert_eq!(iso_millis(at), "2025-11-30T00:00:00.123Z");
        assert_eq!(iso_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }
}
