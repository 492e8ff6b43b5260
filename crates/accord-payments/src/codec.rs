//! Small encoding helpers shared by the rails: base64 flavours, decimal amounts, clocks and
//! RFC 3339 timestamps.

use std::cmp::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use http::HeaderValue;
use serde::Serialize;
use serde_json::Value;

/// Standard base64 with padding (the x402 header encoding).
pub(crate) fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Base64url without padding (the MPP encoding, and keys/signatures in vouchers).
pub(crate) fn b64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Strict base64url without padding.
pub(crate) fn b64url_decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim()).ok()
}

/// Any of standard/url-safe, padded or not (what peers actually send in x402 headers).
pub(crate) fn b64_decode_lenient(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD].iter().find_map(|engine| engine.decode(text).ok())
}

/// Serializes `value` as JSON and base64-encodes it into a header value.
pub(crate) fn b64_json_header<T: Serialize>(value: &T) -> HeaderValue {
    let json = serde_json::to_vec(value).unwrap_or_default();
    HeaderValue::from_str(&b64(&json)).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Decodes a base64 (any flavour) JSON header value.
pub(crate) fn b64_json_decode(text: &str) -> Option<Value> {
    serde_json::from_slice(&b64_decode_lenient(text)?).ok()
}

/// Whether `amount` is a canonical decimal integer: digits only, no sign, no leading zeros.
pub(crate) fn is_decimal(amount: &str) -> bool {
    !amount.is_empty()
        && amount.bytes().all(|byte| byte.is_ascii_digit())
        && !(amount.len() > 1 && amount.starts_with('0'))
}

/// Compares two canonical decimal integers of any length (callers check [`is_decimal`] first).
pub(crate) fn compare_amounts(left: &str, right: &str) -> Ordering {
    left.len().cmp(&right.len()).then_with(|| left.cmp(right))
}

/// Seconds since the Unix epoch.
pub(crate) fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_secs()).unwrap_or(0)
}

/// An RFC 3339 UTC timestamp (`2026-01-15T12:05:00Z`).
pub(crate) fn rfc3339(unix: u64) -> String {
    let seconds = i64::try_from(unix).unwrap_or(i64::MAX);
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .ok()
        .and_then(|moment| moment.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

/// Parses an RFC 3339 timestamp into Unix seconds (`None` before the epoch or when malformed).
pub(crate) fn parse_rfc3339(text: &str) -> Option<u64> {
    let moment = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    u64::try_from(moment.unix_timestamp()).ok()
}

/// 16 random bytes as lowercase hex.
pub(crate) fn random_hex16() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(hex(&bytes))
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_compare_numerically() {
        assert_eq!(compare_amounts("10", "9"), Ordering::Greater);
        assert_eq!(compare_amounts("100", "100"), Ordering::Equal);
        assert_eq!(compare_amounts("99", "100"), Ordering::Less);
        assert_eq!(compare_amounts("340282366920938463463374607431768211456", "1"), Ordering::Greater);
        assert!(is_decimal("0") && is_decimal("10"));
        assert!(!is_decimal("01") && !is_decimal("") && !is_decimal("-1") && !is_decimal("1.0"));
    }

    #[test]
    fn timestamps_round_trip() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_736_942_700), "2025-01-15T12:05:00Z");
        assert_eq!(parse_rfc3339("2025-01-15T12:05:00Z"), Some(1_736_942_700));
        assert_eq!(parse_rfc3339("2025-01-15T13:05:00+01:00"), Some(1_736_942_700));
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn base64_flavours_are_accepted() {
        let bytes = b"\xfb\xff{\"a\":1}";
        for text in [b64(bytes), b64url(bytes), STANDARD_NO_PAD.encode(bytes), URL_SAFE.encode(bytes)] {
            assert_eq!(b64_decode_lenient(&text).as_deref(), Some(&bytes[..]), "{text}");
        }
        assert_eq!(b64url_decode(&b64url(bytes)).as_deref(), Some(&bytes[..]));
        assert!(b64_decode_lenient("not base64!").is_none());
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }
}
