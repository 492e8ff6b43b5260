//! RFC 8785 JSON Canonicalization Scheme (JCS) and the SHAKE256 digest of canonical bytes.
//!
//! This module owns the exact bytes that get signed: keys sorted by UTF-16 code units, numbers in
//! the ECMAScript shortest round-trip form, the RFC's string escaping, no whitespace. It also
//! enforces what RFC 8785 requires of its *input* (I-JSON, RFC 7493): no duplicate object names
//! and no number that is not a finite IEEE 754 double (`NaN`, `Infinity`, or a literal such as
//! `1e400` that overflows). Those are errors here, never silently rewritten to `null`.
//!
//! # Why the serialiser is written here
//!
//! Speed: the canonical form is written in one pass into one buffer. [`canonicalize`] drives
//! `serde_json`'s parser with a visitor that writes each value's canonical form as soon as it is
//! read, checks each member name for a repeat as it arrives, and reorders an object's members (by
//! moving their bytes, already written) only when they did not arrive sorted; no `Value` tree is
//! built. [`canonicalize_value`] walks a `Value` with an explicit stack into one buffer. The JCS
//! crate used before (`serde_json_canonicalizer`, still the tests' reference) allocates a buffer
//! per value and a UTF-16 copy of every name, and ran at a fifth of the speed or less.
//!
//! Only what JCS adds to plain JSON output is written by hand: the UTF-16 order of names (compared
//! on their UTF-8 bytes, without converting them) and the RFC's short list of escapes. Parsing is
//! `serde_json`'s, with its `float_roundtrip` feature so that every literal becomes the nearest
//! double. Numbers are formatted by the `ryu-js` crate, which implements ECMAScript's
//! `Number.prototype.toString` exactly; integers below 2^53, which that form prints as plain
//! integers, go through `itoa`.

use std::borrow::Cow;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher, RandomState};

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
    /// The canonical serialiser refused the value. Every JSON value without the errors above has
    /// a canonical form, so this is not returned today; it stays so that code matching on it
    /// keeps compiling.
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
    // Canonical text is rarely longer than its source (whitespace goes, escapes shrink); only
    // number literals such as `1e20` grow, and the buffer grows with them.
    let mut writer =
        TextWriter { out: Vec::with_capacity(input.len()), members: Vec::new(), scratch: Vec::new(), problem: None };
    let mut deserializer = serde_json::Deserializer::from_slice(input);
    let parsed = CanonSeed { writer: &mut writer }.deserialize(&mut deserializer).and_then(|()| deserializer.end());
    match parsed {
        Ok(()) => Ok(writer.out),
        Err(error) => Err(writer.problem.take().unwrap_or_else(|| parse_error(input, &error))),
    }
}

/// Canonicalizes a JSON value (RFC 8785).
///
/// A `serde_json::Value` normally cannot hold a non-finite number, but with serde_json's
/// `arbitrary_precision` feature it can hold a literal such as `1e400`; that is refused here.
/// The value is walked without recursion, so any depth is fine.
pub fn canonicalize_value(value: &Value) -> Result<Vec<u8>, CanonError> {
    let mut out = Vec::with_capacity(256);
    write_value(&mut out, value)?;
    Ok(out)
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
        Err(error) => Err(problem.into_inner().unwrap_or_else(|| parse_error(input, &error))),
    }
}

/// The error for a parse that failed without a visitor recording why.
fn parse_error(input: &[u8], error: &serde_json::Error) -> CanonError {
    // serde_json reports an overflowing literal (`1e400`) and the bare words `NaN` / `Infinity`
    // as syntax errors; RFC 8785 names them as their own failure.
    if error.to_string().starts_with("number out of range") || has_non_finite_literal(input) {
        return CanonError::NonFiniteNumber;
    }
    CanonError::InvalidJson { line: error.line(), column: error.column(), message: message_of(error) }
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

// ---------------------------------------------------------------------------------------------
// Output pieces: names in UTF-16 order, strings, numbers.

/// Orders two strings by their UTF-16 code units (RFC 8785 §3.2.3) without converting them.
///
/// UTF-8 byte order is code point order; UTF-16 order differs from it only between a character
/// in U+E000..=U+FFFF (UTF-8 lead byte `EE` or `EF`) and one above U+FFFF (lead byte `F0`..=`F4`,
/// a surrogate `D800`..=`DBFF` in UTF-16, which sorts first). The first differing byte decides:
/// both strings share the bytes before it, so it is either a lead byte in both or a continuation
/// byte (below `C0`) in both.
pub(crate) fn cmp_utf16(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    match a.iter().zip(b).position(|(x, y)| x != y) {
        None => a.len().cmp(&b.len()),
        Some(at) => {
            let (x, y) = (a[at], b[at]);
            if x >= 0xee && y >= 0xee && (x >= 0xf0) != (y >= 0xf0) {
                // One is above U+FFFF: its high surrogate sorts before U+E000..=U+FFFF.
                if x >= 0xf0 { Ordering::Less } else { Ordering::Greater }
            } else {
                x.cmp(&y)
            }
        }
    }
}

/// For each byte, the letter of its escape (`u` for `\u00XX`), or 0 if it is written as is
/// (RFC 8785 §3.2.2.2: only `"`, `\` and the controls below U+0020 are escaped).
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes in `word` needs an escape: a control byte, `"` or `\`.
/// (`x - 0x01..01*n & !x & 0x80..80` is non-zero exactly when some byte of `x` is below `n`.)
fn word_needs_escape(word: u64) -> bool {
    let below = |x: u64, n: u64| x.wrapping_sub(LOW_BITS * n) & !x & HIGH_BITS != 0;
    below(word, 0x20) || below(word ^ (LOW_BITS * u64::from(b'"')), 1) || below(word ^ (LOW_BITS * u64::from(b'\\')), 1)
}

/// Writes `text` as a JSON string in RFC 8785 form, copying runs that need no escape whole.
fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let end = (at + 8).min(bytes.len());
        if let Ok(word) = <[u8; 8]>::try_from(&bytes[at..end])
            && !word_needs_escape(u64::from_le_bytes(word))
        {
            at = end;
            continue;
        }
        for index in at..end {
            let byte = bytes[index];
            let escape = ESCAPE[usize::from(byte)];
            if escape != 0 {
                out.extend_from_slice(&bytes[copied..index]);
                copied = index + 1;
                if escape == b'u' {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    out.extend_from_slice(&[
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX[usize::from(byte >> 4)],
                        HEX[usize::from(byte & 0xf)],
                    ]);
                } else {
                    out.extend_from_slice(&[b'\\', escape]);
                }
            }
        }
        at = end;
    }
    out.extend_from_slice(&bytes[copied..]);
    out.push(b'"');
}

/// Integers below this magnitude are exact doubles whose ECMAScript form is the plain integer.
const EXACT_INTEGER_LIMIT: u64 = 1 << 53;

fn write_integer(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Writes a finite double as ECMAScript's `Number.prototype.toString` does (RFC 8785 §3.2.2.3).
fn write_f64(out: &mut Vec<u8>, value: f64) {
    debug_assert!(value.is_finite());
    // `-0.0` takes this branch too and prints as `0`, as ECMAScript does.
    if value.abs() < EXACT_INTEGER_LIMIT as f64 && (value as i64) as f64 == value {
        write_integer(out, value as i64);
    } else {
        out.extend_from_slice(ryu_js::Buffer::new().format_finite(value).as_bytes());
    }
}

/// Writes an integer the way JCS does: as the double nearest to it.
fn write_u64(out: &mut Vec<u8>, value: u64) {
    if value < EXACT_INTEGER_LIMIT { write_integer(out, value) } else { write_f64(out, value as f64) }
}

/// Writes an integer the way JCS does: as the double nearest to it.
fn write_i64(out: &mut Vec<u8>, value: i64) {
    if value.unsigned_abs() < EXACT_INTEGER_LIMIT { write_integer(out, value) } else { write_f64(out, value as f64) }
}

/// Writes a `serde_json::Number`, which under `arbitrary_precision` may hold any literal.
fn write_number(out: &mut Vec<u8>, number: &Number) -> Result<(), CanonError> {
    if let Some(value) = number.as_u64() {
        write_u64(out, value);
    } else if let Some(value) = number.as_i64() {
        write_i64(out, value);
    } else {
        match number.as_f64() {
            Some(value) if value.is_finite() => write_f64(out, value),
            _ => return Err(CanonError::NonFiniteNumber),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// `canonicalize_value`: a walk over a `Value` with an explicit stack.

/// An array or object whose members are still being written.
enum Open<'v> {
    Array {
        items: std::slice::Iter<'v, Value>,
        first: bool,
    },
    /// Its members, sorted, are `members[start..]`; `next` is the next one to write.
    Object {
        start: usize,
        next: usize,
    },
}

fn write_value(out: &mut Vec<u8>, root: &Value) -> Result<(), CanonError> {
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut members: Vec<(&str, &Value)> = Vec::new();
    let mut pending = Some(root);
    loop {
        if let Some(value) = pending.take() {
            match value {
                Value::Null => out.extend_from_slice(b"null"),
                Value::Bool(true) => out.extend_from_slice(b"true"),
                Value::Bool(false) => out.extend_from_slice(b"false"),
                Value::Number(number) => write_number(out, number)?,
                Value::String(text) => write_str(out, text),
                Value::Array(items) => {
                    out.push(b'[');
                    open.push(Open::Array { items: items.iter(), first: true });
                }
                Value::Object(map) => {
                    out.push(b'{');
                    let start = members.len();
                    members.extend(map.iter().map(|(key, item)| (key.as_str(), item)));
                    // A `Map` without `preserve_order` iterates in UTF-8 order, which is nearly
                    // always UTF-16 order already.
                    let own = &mut members[start..];
                    if !own.is_sorted_by(|a, b| cmp_utf16(a.0, b.0) == Ordering::Less) {
                        own.sort_unstable_by(|a, b| cmp_utf16(a.0, b.0));
                    }
                    open.push(Open::Object { start, next: start });
                }
            }
        }
        let Some(top) = open.last_mut() else { return Ok(()) };
        match top {
            Open::Array { items, first } => match items.next() {
                Some(item) => {
                    if !*first {
                        out.push(b',');
                    }
                    *first = false;
                    pending = Some(item);
                }
                None => {
                    out.push(b']');
                    open.pop();
                }
            },
            Open::Object { start, next } => match members.get(*next) {
                Some(&(key, item)) => {
                    if *next > *start {
                        out.push(b',');
                    }
                    *next += 1;
                    write_str(out, key);
                    out.push(b':');
                    pending = Some(item);
                }
                None => {
                    out.push(b'}');
                    members.truncate(*start);
                    open.pop();
                }
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `canonicalize`: canonical output written while serde_json parses.

/// State shared by the visitors of one `canonicalize` call.
struct TextWriter<'de> {
    /// The canonical output so far.
    out: Vec<u8>,
    /// The members of every object still open, innermost last.
    members: Vec<Member<'de>>,
    /// Where an object's members are copied while they are put in order.
    scratch: Vec<u8>,
    /// Why the visitor failed the parse, when it did.
    problem: Option<CanonError>,
}

/// An object member already written: its name, and its bytes `"name":value` in the output.
struct Member<'de> {
    key: Cow<'de, str>,
    start: usize,
    end: usize,
}

/// Objects with fewer members than this are searched for a repeated name one by one; larger ones
/// (that did not arrive sorted) through a set of name hashes.
const LINEAR_SEARCH_LIMIT: usize = 16;

impl TextWriter<'_> {
    fn fail<E: de::Error>(&mut self, problem: CanonError) -> E {
        let message = problem.to_string();
        self.problem = Some(problem);
        E::custom(message)
    }

    /// Puts the members of the object whose body starts at `body` in UTF-16 order of their
    /// names, moving their bytes.
    fn reorder(&mut self, base: usize, body: usize) {
        let Self { out, members, scratch, .. } = self;
        let members = &mut members[base..];
        members.sort_unstable_by(|a, b| cmp_utf16(&a.key, &b.key));
        scratch.clear();
        scratch.extend_from_slice(&out[body..]);
        out.truncate(body);
        for (index, member) in members.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&scratch[member.start - body..member.end - body]);
        }
    }
}

/// Whether `key` names one of `members` already. `hashes` is built the first time an object
/// reaches [`LINEAR_SEARCH_LIMIT`] members and then holds every name's hash.
fn repeats(members: &[Member<'_>], key: &str, hashes: &mut Option<(RandomState, HashSet<u64>)>) -> bool {
    if hashes.is_none() && members.len() < LINEAR_SEARCH_LIMIT {
        return members.iter().any(|member| member.key == key);
    }
    let (state, seen) = hashes.get_or_insert_with(|| {
        let state = RandomState::new();
        let seen = members.iter().map(|member| state.hash_one(&*member.key)).collect();
        (state, seen)
    });
    // A new hash is a new name; a known hash is checked against the names themselves.
    !seen.insert(state.hash_one(key)) && members.iter().any(|member| member.key == key)
}

/// Writes the canonical form of the next JSON value into the [`TextWriter`].
struct CanonSeed<'w, 'de> {
    writer: &'w mut TextWriter<'de>,
}

impl<'de> DeserializeSeed<'de> for CanonSeed<'_, 'de> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CanonSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        self.writer.out.extend_from_slice(if value { b"true" } else { b"false" });
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        write_i64(&mut self.writer.out, value);
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        write_u64(&mut self.writer.out, value);
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        if !value.is_finite() {
            return Err(self.writer.fail(CanonError::NonFiniteNumber));
        }
        write_f64(&mut self.writer.out, value);
        Ok(())
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        write_str(&mut self.writer.out, value);
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.writer.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let writer = self.writer;
        writer.out.push(b'[');
        let mut first = true;
        loop {
            // The comma goes in before the element is known to exist, and out again if not.
            if !first {
                writer.out.push(b',');
            }
            if seq.next_element_seed(CanonSeed { writer: &mut *writer })?.is_none() {
                if !first {
                    writer.out.pop();
                }
                break;
            }
            first = false;
        }
        writer.out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let writer = self.writer;
        writer.out.push(b'{');
        let body = writer.out.len();
        let base = writer.members.len();
        // Whether the names so far arrived in strictly increasing order: then a name greater
        // than the last one is new without searching, and nothing needs reordering.
        let mut sorted = true;
        let mut hashes = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let own = &writer.members[base..];
            if let Some(last) = own.last() {
                if !(sorted && cmp_utf16(&last.key, &key) == Ordering::Less) {
                    sorted = false;
                    if repeats(own, &key, &mut hashes) {
                        return Err(writer.fail(CanonError::DuplicateKey { key: key.into_owned() }));
                    }
                }
                writer.out.push(b',');
            }
            let start = writer.out.len();
            write_str(&mut writer.out, &key);
            writer.out.push(b':');
            map.next_value_seed(CanonSeed { writer: &mut *writer })?;
            let end = writer.out.len();
            writer.members.push(Member { key, start, end });
        }
        if !sorted {
            writer.reorder(base, body);
        }
        writer.members.truncate(base);
        writer.out.push(b'}');
        Ok(())
    }
}

/// Reads an object member name, borrowing it from the input when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object member name")
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(value))
    }
}

// ---------------------------------------------------------------------------------------------
// `parse_strict`: a `Value` for the verifier, with the same input rules.

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

    #[test]
    fn utf16_order_matches_comparing_code_units() {
        let samples = [
            "",
            "a",
            "ab",
            "b",
            "\u{7f}",
            "\u{80}",
            "\u{7ff}",
            "\u{800}",
            "\u{d7ff}",
            "\u{e000}",
            "\u{ffff}",
            "\u{10000}",
            "\u{1f600}",
            "\u{10ffff}",
            "a\u{ffff}",
            "a\u{10000}",
            "\u{ffff}a",
            "\u{10000}a",
        ];
        for a in samples {
            for b in samples {
                let units = a.encode_utf16().cmp(b.encode_utf16());
                assert_eq!(cmp_utf16(a, b), units, "{a:?} vs {b:?}");
            }
        }
    }

    /// Text whose objects draw names from a small pool, so that many repeat, at every depth.
    fn text_with_repeats(seed: &mut u64, depth: u32, out: &mut String) {
        fn next_below(seed: &mut u64, n: u64) -> u64 {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed % n
        }
        const NAMES: [&str; 6] = ["a", "b", "\\u0061", "\\ud83d\\ude00", "\\uffff", "k"];
        match (depth, next_below(seed, 4)) {
            (0, _) | (_, 0) => out.push_str(["1", "\"s\"", "null", "2.5e3", "[]"][next_below(seed, 5) as usize]),
            (_, 1) => {
                out.push('[');
                for index in 0..next_below(seed, 4) {
                    if index > 0 {
                        out.push(',');
                    }
                    text_with_repeats(seed, depth - 1, out);
                }
                out.push(']');
            }
            _ => {
                let count = if next_below(seed, 5) == 0 { 20 + next_below(seed, 20) } else { next_below(seed, 5) };
                out.push('{');
                for index in 0..count {
                    if index > 0 {
                        out.push(',');
                    }
                    let name = NAMES[next_below(seed, NAMES.len() as u64) as usize];
                    if count > 6 {
                        out.push_str(&format!("\"{name}{}\":", next_below(seed, 40)));
                    } else {
                        out.push_str(&format!("\"{name}\":"));
                    }
                    text_with_repeats(seed, depth - 1, out);
                }
                out.push('}');
            }
        }
    }

    #[test]
    fn streaming_canonicalize_agrees_with_parsing_into_a_value() {
        let mut seed = 0x1234_5678_9abc_def1_u64;
        let (mut refused, mut accepted) = (0, 0);
        for case in 0..4000 {
            let mut input = String::new();
            text_with_repeats(&mut seed, 4, &mut input);
            let streamed = canonicalize(input.as_bytes());
            let through_value = parse_strict(input.as_bytes()).and_then(|value| canonicalize_value(&value));
            assert_eq!(streamed, through_value, "case {case}: {input}");
            if let Ok(canonical) = &streamed {
                let value: Value = serde_json::from_slice(input.as_bytes()).expect("json");
                let reference = serde_json_canonicalizer::to_vec(&value).expect("reference");
                assert_eq!(text(canonical), text(&reference), "case {case}: {input}");
                accepted += 1;
            } else {
                refused += 1;
            }
        }
        assert!(refused > 500 && accepted > 500, "{refused} refused, {accepted} accepted");
    }
}
