//! RFC 8785 canonicalization against checked-in vectors (see `testdata/jcs/README.md`), plus a
//! property test: canonicalizing a canonical form returns it unchanged.

use std::fs;
use std::path::{Path, PathBuf};

use accord_card::{CanonError, canonicalize, canonicalize_value};
use serde_json::{Map, Value};

fn testdata(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/jcs").join(relative)
}

fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Every `<name>.input.json` / `<name>.output.json` pair in a folder, or `input/` / `output/`.
fn pairs(inputs: &Path, outputs: &Path, input_suffix: &str, output_suffix: &str) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in fs::read_dir(inputs).expect("read testdata dir") {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).expect("utf-8 file name").to_owned();
        let Some(stem) = name.strip_suffix(input_suffix) else { continue };
        let expected = read(&outputs.join(format!("{stem}{output_suffix}")));
        found.push((stem.to_owned(), read(&path), expected));
    }
    found.sort();
    found
}

fn assert_canonical(name: &str, input: &[u8], expected: &[u8]) {
    let got = canonicalize(input).unwrap_or_else(|error| panic!("{name}: {error}"));
    assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(expected), "{name}");
    assert_eq!(canonicalize(&got).as_deref(), Ok(expected), "{name}: canonical form is a fixed point");
}

#[test]
fn cyberphone_reference_vectors_match_byte_for_byte() {
    let cases = pairs(&testdata("cyberphone/input"), &testdata("cyberphone/output"), ".json", ".json");
    assert_eq!(cases.len(), 6, "all six reference vectors are present");
    for (name, input, expected) in cases {
        assert_canonical(&name, &input, &expected);
        let hex = String::from_utf8(read(&testdata(&format!("cyberphone/outhex/{name}.txt")))).expect("hex text");
        let from_hex: Vec<u8> = hex
            .split_whitespace()
            .map(|pair| u8::from_str_radix(pair, 16).unwrap_or_else(|_| panic!("{name}: bad hex {pair}")))
            .collect();
        assert_eq!(from_hex, expected, "{name}: outhex agrees with output");
    }
}

#[test]
fn rfc_8785_examples_match() {
    for (name, input, expected) in pairs(&testdata("rfc8785"), &testdata("rfc8785"), ".input.json", ".output.json") {
        assert_canonical(&name, &input, &expected);
    }
}

#[test]
fn key_order_is_by_utf16_code_units() {
    let cases = pairs(&testdata("key-order"), &testdata("key-order"), ".input.json", ".output.json");
    assert_eq!(cases.len(), 4);
    for (name, input, expected) in cases {
        assert_canonical(&name, &input, &expected);
    }
    // The discriminating case spelled out: U+10000 (D800 DC00 in UTF-16) sorts before U+E000,
    // although its UTF-8 bytes (F0 ..) sort after EE ...
    let got = canonicalize("{\"\u{e000}\":1,\"\u{10000}\":2}".as_bytes()).expect("canonical");
    assert_eq!(String::from_utf8(got).expect("utf-8"), "{\"\u{10000}\":2,\"\u{e000}\":1}");
}

/// Lines of `hex-bits,expected`, skipping `#` comments.
fn number_table(relative: &str) -> Vec<(f64, String)> {
    let text = String::from_utf8(read(&testdata(relative))).expect("utf-8");
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (bits, expected) = line.split_once(',').unwrap_or_else(|| panic!("bad line {line}"));
            let bits = u64::from_str_radix(bits, 16).unwrap_or_else(|_| panic!("bad hex {bits}"));
            (f64::from_bits(bits), expected.to_owned())
        })
        .collect()
}

/// Checks one double both as a value and as JSON text written with Rust's shortest round-trip
/// formatting.
fn assert_number(number: f64, expected: &str) {
    if expected == "error" {
        assert!(!number.is_finite());
        assert!(serde_json::Number::from_f64(number).is_none(), "a Value cannot hold {number}");
        let literal =
            if number.is_nan() { "NaN".to_owned() } else { format!("{}1e400", if number < 0.0 { "-" } else { "" }) };
        assert_eq!(canonicalize(literal.as_bytes()), Err(CanonError::NonFiniteNumber), "{literal}");
        return;
    }
    let value = Value::from(number);
    let from_value = canonicalize_value(&value).expect("finite double canonicalizes");
    assert_eq!(String::from_utf8_lossy(&from_value), expected, "value {number:e} ({:016x})", number.to_bits());
    let literal = format!("{number:e}");
    let from_text = canonicalize(literal.as_bytes()).expect("finite literal canonicalizes");
    assert_eq!(String::from_utf8_lossy(&from_text), expected, "text {literal}");
}

#[test]
fn rfc_8785_appendix_b_numbers() {
    let table = number_table("rfc8785/appendix-b.txt");
    assert_eq!(table.len(), 26);
    for (number, expected) in table {
        assert_number(number, &expected);
    }
}

#[test]
fn random_doubles_match_ecmascript() {
    let table = number_table("numbers/es6-random.txt");
    assert_eq!(table.len(), 4000);
    for (number, expected) in table {
        assert_number(number, &expected);
    }
}

#[test]
fn number_literals_canonicalize_like_ecmascript() {
    let text = String::from_utf8(read(&testdata("numbers/literals.txt"))).expect("utf-8");
    let mut checked = 0;
    for line in text.lines().filter(|line| !line.is_empty() && !line.starts_with('#')) {
        let (literal, expected) = line.split_once('\t').unwrap_or_else(|| panic!("bad line {line}"));
        let got = canonicalize(literal.as_bytes());
        if expected == "error" {
            assert_eq!(got, Err(CanonError::NonFiniteNumber), "{literal}");
        } else {
            assert_eq!(String::from_utf8_lossy(&got.expect("canonical")), expected, "{literal}");
            // Inside a structure too.
            let wrapped = format!("{{\"n\":[{literal}]}}");
            let got = canonicalize(wrapped.as_bytes()).expect("canonical");
            assert_eq!(String::from_utf8_lossy(&got), format!("{{\"n\":[{expected}]}}"));
        }
        checked += 1;
    }
    assert!(checked >= 30, "{checked}");
}

/// A small deterministic generator (xorshift64*) for the property test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn string(&mut self) -> String {
        // Characters that stress escaping and UTF-16 ordering.
        const POOL: &[char] = &[
            'a',
            'b',
            'Z',
            '0',
            ' ',
            '"',
            '\\',
            '/',
            '\n',
            '\t',
            '\u{0}',
            '\u{1f}',
            '\u{7f}',
            '\u{80}',
            'é',
            '€',
            '\u{2028}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{fb33}',
            '\u{ffff}',
            '\u{10000}',
            '😀',
            '\u{10ffff}',
        ];
        let len = self.below(8);
        (0..len).map(|_| POOL[self.below(POOL.len() as u64) as usize]).collect()
    }

    fn number(&mut self) -> Value {
        match self.below(4) {
            0 => Value::from(self.next() as i64 >> self.below(64)),
            1 => Value::from(self.next() >> self.below(64)),
            2 => Value::from((self.below(2_000_000) as f64 - 1_000_000.0) / 1000.0),
            _ => loop {
                let candidate = f64::from_bits(self.next());
                if candidate.is_finite() {
                    break Value::from(candidate);
                }
            },
        }
    }

    fn value(&mut self, depth: u32) -> Value {
        let leaf = depth == 0 || self.below(3) == 0;
        match (leaf, self.below(6)) {
            (true, 0) => Value::Null,
            (true, 1) => Value::Bool(self.below(2) == 0),
            (true, 2 | 3) => self.number(),
            (true, _) => Value::String(self.string()),
            (false, 0..=2) => (0..self.below(5)).map(|_| self.value(depth - 1)).collect(),
            (false, _) => {
                let mut members = Map::new();
                for _ in 0..self.below(6) {
                    members.insert(self.string(), self.value(depth - 1));
                }
                Value::Object(members)
            }
        }
    }
}

/// Numbers compare as doubles: canonical form keeps the double, not the integer type.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(key, x)| y.get(key).is_some_and(|y| same_json(x, y)))
        }
        _ => a == b,
    }
}

#[test]
fn canonicalizing_a_canonical_form_is_the_identity() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for case in 0..3000 {
        let value = rng.value(4);
        let canonical = canonicalize_value(&value).unwrap_or_else(|error| panic!("case {case}: {error}"));
        let again = canonicalize(&canonical).unwrap_or_else(|error| panic!("case {case}: {error}"));
        assert_eq!(again, canonical, "case {case}: {}", String::from_utf8_lossy(&canonical));
        // And it still means the same JSON.
        let reparsed: Value = serde_json::from_slice(&canonical).expect("canonical output parses");
        assert!(same_json(&reparsed, &value), "case {case}: {value} vs {reparsed}");
        // Pretty-printing changes nothing that matters.
        let pretty = serde_json::to_vec_pretty(&value).expect("pretty");
        assert_eq!(canonicalize(&pretty).as_deref(), Ok(canonical.as_slice()), "case {case}");
    }
}
