//! Timestamps as the A2A specification puts them on the wire (§5.6.1): RFC 3339 strings in UTC
//! with a `Z` suffix, millisecond precision preferred (`2025-10-28T10:30:00.000Z`). Other offsets
//! are forbidden, so this parser refuses them.

use std::fmt;

/// Why a string is not an A2A timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimestampError {
    /// Not of the form `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
    Malformed,
    /// Well formed, but with an offset other than `Z`.
    NotUtc,
    /// A field out of range (month 13, February 30, hour 24, …).
    OutOfRange,
}

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Malformed => "is not an RFC 3339 timestamp (YYYY-MM-DDTHH:MM:SS[.fraction]Z)",
            Self::NotUtc => "must be in UTC with a 'Z' suffix; other offsets are not allowed",
            Self::OutOfRange => "has a date or time field out of range",
        })
    }
}

impl std::error::Error for TimestampError {}

const MILLIS_PER_DAY: i64 = 86_400_000;

/// Formats Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`, e.g. `2025-10-28T10:30:00.000Z`.
pub fn format_unix_millis(millis: i64) -> String {
    let days = millis.div_euclid(MILLIS_PER_DAY);
    let in_day = millis.rem_euclid(MILLIS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (second, milli) = (in_day / 1000 % 60, in_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
}

/// Reads an A2A timestamp into Unix milliseconds (fractions finer than a millisecond are
/// truncated). Accepts 0 to 9 fraction digits; refuses any offset other than `Z`.
pub fn parse_rfc3339_utc(text: &str) -> Result<i64, TimestampError> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 {
        return Err(TimestampError::Malformed);
    }
    let digits = |range: std::ops::Range<usize>| -> Result<i64, TimestampError> {
        let part = &bytes[range];
        if part.iter().all(u8::is_ascii_digit) {
            Ok(part.iter().fold(0, |acc, b| acc * 10 + i64::from(b - b'0')))
        } else {
            Err(TimestampError::Malformed)
        }
    };
    let separators_ok =
        bytes[4] == b'-' && bytes[7] == b'-' && bytes[10] == b'T' && bytes[13] == b':' && bytes[16] == b':';
    if !separators_ok {
        return Err(TimestampError::Malformed);
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);

    let mut rest = &bytes[19..];
    let mut millis_fraction = 0;
    if let Some((b'.', after_dot)) = rest.split_first() {
        let count = after_dot.iter().take_while(|b| b.is_ascii_digit()).count();
        if count == 0 || count > 9 {
            return Err(TimestampError::Malformed);
        }
        let fraction = &after_dot[..count];
        millis_fraction =
            (0..3).map(|i| fraction.get(i).map_or(0, |b| i64::from(b - b'0'))).fold(0, |acc, digit| acc * 10 + digit);
        rest = &after_dot[count..];
    }
    match rest {
        b"Z" => {}
        [b'+' | b'-', _, _, b':', _, _] if rest[1..3].iter().chain(&rest[4..6]).all(u8::is_ascii_digit) => {
            return Err(TimestampError::NotUtc);
        }
        _ => return Err(TimestampError::Malformed),
    }

    let month_ok = (1..=12).contains(&month);
    if year < 1 || !month_ok || day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59 || second > 59 {
        return Err(TimestampError::OutOfRange);
    }
    let days = days_from_civil(year, month, day);
    Ok(days * MILLIS_PER_DAY + hour * 3_600_000 + minute * 60_000 + second * 1000 + millis_fraction)
}

/// Whether `text` is an A2A timestamp (RFC 3339, UTC, `Z`).
pub fn is_rfc3339_utc(text: &str) -> bool {
    parse_rfc3339_utc(text).is_ok()
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Day counting in the proleptic Gregorian calendar on 400-year eras (146 097 days each), with
// years starting in March so that the leap day falls at the end of a year.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_the_spec_example_and_the_epoch() {
        assert_eq!(format_unix_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_unix_millis(1_761_647_400_000), "2025-10-28T10:30:00.000Z");
        assert_eq!(format_unix_millis(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(format_unix_millis(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn parses_what_it_formats() {
        for millis in [0, 1, 999, 1_761_647_400_000, 951_782_400_123, -1, -86_400_001, 253_402_300_799_999] {
            assert_eq!(parse_rfc3339_utc(&format_unix_millis(millis)), Ok(millis), "{millis}");
        }
    }

    #[test]
    fn accepts_fraction_lengths_from_none_to_nanoseconds() {
        assert_eq!(parse_rfc3339_utc("2023-10-27T10:00:00Z"), Ok(1_698_400_800_000));
        assert_eq!(parse_rfc3339_utc("2023-10-27T10:00:00.5Z"), Ok(1_698_400_800_500));
        assert_eq!(parse_rfc3339_utc("2025-04-17T17:47:09.680794Z"), Ok(1_744_912_029_680));
        assert_eq!(parse_rfc3339_utc("2025-04-17T17:47:09.680794123Z"), Ok(1_744_912_029_680));
    }

    #[test]
    fn refuses_offsets_and_malformed_or_impossible_dates() {
        assert_eq!(parse_rfc3339_utc("2025-10-28T10:30:00+00:00"), Err(TimestampError::NotUtc));
        assert_eq!(parse_rfc3339_utc("2025-10-28T10:30:00.000-05:00"), Err(TimestampError::NotUtc));
        for text in [
            "",
            "2025-10-28",
            "2025-10-28 10:30:00Z",
            "2025-10-28T10:30:00",
            "2025-10-28T10:30:00.Z",
            "2025-10-28T10:30:00.0000000000Z",
            "2025-10-28T10:30:00z",
            "2025-1a-28T10:30:00Z",
            "2025-10-28T10:30:00ZZ",
        ] {
            assert_eq!(parse_rfc3339_utc(text), Err(TimestampError::Malformed), "{text:?}");
        }
        for text in ["2025-13-01T00:00:00Z", "2023-02-29T00:00:00Z", "2025-10-28T24:00:00Z", "2025-10-28T10:60:00Z"] {
            assert_eq!(parse_rfc3339_utc(text), Err(TimestampError::OutOfRange), "{text:?}");
        }
        assert!(is_rfc3339_utc("2024-02-29T23:59:59.999Z"));
    }
}
