//! RFC 8785 JSON Canonicalization Scheme (JCS) and the SHAKE256 digest of canonical bytes.
//!
//! This module owns the exact bytes that get signed: keys sorted by UTF-16 code units, numbers in
//! the ECMAScript shortest round-trip form, the RFC's string escaping, no whitespace. The
//! serialisation itself is `serde_json_canonicalizer`; this module adds what RFC 8785 requires
//! of its *input* (I-JSON, RFC 7493): no duplicate object names and no number that is not a
//! finite IEEE 754 double (`NaN`, `Infinity`, or a literal such as `1e400` that overflows).
//! Those are errors here, never silently rewritten to `null`.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use shake::{ExtendableOutput, Shake256, Update, XofReader};

/// Length of the SHAKE256 digest that card signatures cover in digest mode.
pub const SHAKE256_DIGEST_LEN: usize = 64;

/// Why a JSON text or value has no RFC 8785 canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CanonError {
    /// The input is not JSON text (RFC 8259); the position is 1-based.
    InvalidJson {
        /// Line of the first error.
        line: usize,
        /// Column of the first error.
        column: usize,
        /// What the parser found wrong.
        message: String,
    },
    /// An object names the same member twice, which I-JSON forbids: two parsers could each see
    /// a different value under one signature.
    DuplicateKey {
        /// The repeated name.
        key: String,
    },
    /// A number that is not a finite IEEE 754 double: `NaN`, `Infinity`, or a literal too large
    /// to represent (RFC 8785 §3.2.2.3 makes these an error).
    NonFiniteNumber,
    /// The canonical serialiser refused the value.
    Serialize {
        /// The serialiser's message.
        message: String,
    },
}

impl fmt::Display for CanonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidJson { line, column, message } => {
                write!(f, "not JSON at line {line} column {column}: {message}")
            }
            Self::DuplicateKey { key } => write!(f, "duplicate object member {key:?}"),
            Self::NonFiniteNumber => f.write_str("number is not a finite IEEE 754 double (NaN, Infinity or overflow)"),
            Self::Serialize { message } => write!(f, "cannot canonicalize: {message}"),
        }
    }
}

impl std::error::Error for CanonError {}

/// Canonicalizes a JSON text (RFC 8785).
///
/// This is the fuzzing entry point: it accepts any bytes, never panics, and either returns the
/// canonical UTF-8 bytes or says why there are none. Duplicate object names, numbers that are not
/// finite doubles, invalid UTF-8 and unpaired surrogate escapes are errors. Canonicalizing the
/// output again returns it unchanged.
///
/// ```
/// let canonical = accord_card::canonicalize(br#"{ "b": 2.50, "a": [1E3, "\u0041"] }"#).unwrap();
/// assert_eq!(canonical, br#"{"a":[1000,"A"],"b":2.5}"#);
/// ```
pub fn canonicalize(input: &[u8]) -> Result<Vec<u8>, CanonError> {
    let value = parse_strict(input)?;
    canonicalize_value(&value)
}

/// Canonicalizes a JSON value (RFC 8785).
///
/// A `serde_json::Value` normally cannot hold a non-finite number, but with serde_json's
/// `arbitrary_precision` feature it can hold a literal such as `1e400`; that is refused here.
pub fn canonicalize_value(value: &Value) -> Result<Vec<u8>, CanonError> {
    ensure_finite(value)?;
    serde_json_canonicalizer::to_vec(value).map_err(|error| CanonError::Serialize { message: error.to_string() })
}

/// The 64-byte SHAKE256 digest of `data` (FIPS 202), the message signed in digest mode.
pub fn shake256_64(data: &[u8]) -> [u8; SHAKE256_DIGEST_LEN] {
    let mut hasher = Shake256::default();
    hasher.update(data);
    let mut digest = [0u8; SHAKE256_DIGEST_LEN];
    hasher.finalize_xof().read(&mut digest);
    digest
}

/// Parses JSON text into a value, refusing what I-JSON refuses (duplicate names, non-finite
/// numbers). The parser's own recursion limit bounds nesting, so hostile input cannot overflow
/// the stack.
pub(crate) fn parse_strict(input: &[u8]) -> Result<Value, CanonError> {
    let problem = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(input);
    let parsed = StrictSeed { problem: &problem }.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    match parsed {
        Ok(value) => Ok(value),
        Err(error) => {
            if let Some(found) = problem.into_inner() {
                return Err(found);
            }
            // serde_json reports an overflowing literal (`1e400`) and the bare words `NaN` /
            // `Infinity` as syntax errors; RFC 8785 names them as their own failure.
            if error.to_string().starts_with("number out of range") || has_non_finite_literal(input) {
                return Err(CanonError::NonFiniteNumber);
            }
            Err(CanonError::InvalidJson { line: error.line(), column: error.column(), message: message_of(&error) })
        }
    }
}

/// serde_json's message without its " at line L column C" suffix, which `InvalidJson` carries
/// as fields.
fn message_of(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

/// Whether `NaN` or `Infinity` appears outside a string: the forms JavaScript and Python emit
/// for non-finite numbers.
fn has_non_finite_literal(input: &[u8]) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    for (index, &byte) in input.iter().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if byte == b'"' {
            in_string = true;
        } else if input[index..].starts_with(b"NaN") || input[index..].starts_with(b"Infinity") {
            return true;
        }
    }
    false
}

/// Walks the value without recursion (a programmatically built value can be deeper than any
/// stack) and refuses a number that is not a finite double.
fn ensure_finite(value: &Value) -> Result<(), CanonError> {
    let mut pending = vec![value];
    while let Some(current) = pending.pop() {
        match current {
            Value::Number(number) => {
                if !number.as_f64().is_some_and(f64::is_finite) {
                    return Err(CanonError::NonFiniteNumber);
                }
            }
            Value::Array(items) => pending.extend(items),
            Value::Object(members) => pending.extend(members.values()),
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    Ok(())
}

/// Builds a `Value` like serde_json does, but records a duplicate name or a non-finite number in
/// `problem` (and fails the parse) instead of keeping the last value.
#[derive(Clone, Copy)]
struct StrictSeed<'a> {
    problem: &'a RefCell<Option<CanonError>>,
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl StrictSeed<'_> {
    fn fail<E: de::Error>(self, problem: CanonError) -> E {
        let message = problem.to_string();
        *self.problem.borrow_mut() = Some(problem);
        E::custom(message)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        match Number::from_f64(value) {
            Some(number) => Ok(Value::Number(number)),
            None => Err(self.fail(CanonError::NonFiniteNumber)),
        }
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(self.fail(CanonError::DuplicateKey { key }));
            }
            let value = map.next_value_seed(self)?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> &str {
        std::str::from_utf8(bytes).expect("canonical output is UTF-8")
    }

    #[test]
    fn duplicate_names_are_refused_at_any_depth() {
        assert_eq!(canonicalize(br#"{"a":1,"a":2}"#), Err(CanonError::DuplicateKey { key: "a".into() }));
        assert_eq!(canonicalize(br#"[{"x":{"k":1,"k":1}}]"#), Err(CanonError::DuplicateKey { key: "k".into() }));
        // The same name in sibling objects is fine.
        assert_eq!(text(&canonicalize(br#"[{"k":1},{"k":2}]"#).expect("ok")), r#"[{"k":1},{"k":2}]"#);
    }

    #[test]
    fn non_finite_numbers_are_errors_not_null() {
        for input in [&b"NaN"[..], b"[Infinity]", b"{\"a\":-Infinity}", b"1e400", b"[-1e309]"] {
            assert_eq!(canonicalize(input), Err(CanonError::NonFiniteNumber), "{}", String::from_utf8_lossy(input));
        }
        // The words inside a string are just text.
        assert_eq!(text(&canonicalize(br#"["NaN","Infinity"]"#).expect("ok")), r#"["NaN","Infinity"]"#);
    }

    #[test]
    fn invalid_json_reports_where() {
        match canonicalize(b"{\n  \"a\": x}") {
            Err(CanonError::InvalidJson { line, column, message }) => {
                assert_eq!(line, 2);
                assert!(column > 0);
                assert!(!message.contains("at line"), "{message}");
            }
            other => panic!("expected InvalidJson, got {other:?}"),
        }
        assert!(matches!(canonicalize(b"{} {}"), Err(CanonError::InvalidJson { .. })));
        assert!(matches!(canonicalize(b"\"\xff\""), Err(CanonError::InvalidJson { .. })));
        assert!(matches!(canonicalize(br#""\ud800""#), Err(CanonError::InvalidJson { .. })));
        assert!(matches!(canonicalize(b""), Err(CanonError::InvalidJson { .. })));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(matches!(canonicalize(deep.as_bytes()), Err(CanonError::InvalidJson { .. })));
    }

    #[test]
    fn shake256_matches_fips_202_known_answers() {
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let empty = hex(&shake256_64(b""));
        assert!(empty.starts_with("46b9dd2b") && empty.ends_with("b7c4be"), "{empty}");
        let abc = hex(&shake256_64(b"abc"));
        assert!(abc.starts_with("48336660") && abc.ends_with("01e751e4"), "{abc}");
    }
}
