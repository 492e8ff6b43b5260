//! RFC 8785 vectors written out inline, edge cases of the hand-written serialiser (number
//! boundaries, UTF-16 name order, escapes, large and deep structures), and a randomized
//! cross-check against `serde_json_canonicalizer`, an independent JCS implementation.

use std::fmt::Write as _;

use accord_card::{CanonError, canonicalize, canonicalize_value};
use serde_json::{Map, Value, json};

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("canonical output is UTF-8")
}

/// The reference: `serde_json_canonicalizer`'s output for a value.
fn reference(value: &Value) -> Vec<u8> {
    serde_json_canonicalizer::to_vec(value).expect("reference canonicalizes")
}

/// RFC 8785 Appendix B: IEEE 754 bits and their canonical form.
const APPENDIX_B: &[(u64, &str)] = &[
    (0x0000000000000000, "0"),
    (0x8000000000000000, "0"),
    (0x0000000000000001, "5e-324"),
    (0x8000000000000001, "-5e-324"),
    (0x7fefffffffffffff, "1.7976931348623157e+308"),
    (0xffefffffffffffff, "-1.7976931348623157e+308"),
    (0x4340000000000000, "9007199254740992"),
    (0xc340000000000000, "-9007199254740992"),
    (0x4430000000000000, "295147905179352830000"),
    (0x44b52d02c7e14af5, "9.999999999999997e+22"),
    (0x44b52d02c7e14af6, "1e+23"),
    (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
    (0x444b1ae4d6e2ef4e, "999999999999999700000"),
    (0x444b1ae4d6e2ef4f, "999999999999999900000"),
    (0x444b1ae4d6e2ef50, "1e+21"),
    (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
    (0x3eb0c6f7a0b5ed8d, "0.000001"),
    (0x41b3de4355555553, "333333333.3333332"),
    (0x41b3de4355555554, "333333333.33333325"),
    (0x41b3de4355555555, "333333333.3333333"),
    (0x41b3de4355555556, "333333333.3333334"),
    (0x41b3de4355555557, "333333333.33333343"),
    (0xbecbf647612f3696, "-0.0000033333333333333333"),
    (0x43143ff3c1cb0959, "1424953923781206.2"),
];

#[test]
fn appendix_b_numbers_inline() {
    for &(bits, expected) in APPENDIX_B {
        let number = f64::from_bits(bits);
        let got = canonicalize_value(&Value::from(number)).expect("finite");
        assert_eq!(text(&got), expected, "value {bits:016x}");
        // As JSON text, in two spellings.
        for literal in [format!("{number:e}"), format!("{number:?}")] {
            let got = canonicalize(literal.as_bytes()).expect("finite literal");
            assert_eq!(text(&got), expected, "text {literal}");
        }
    }
    // The two rows the RFC marks as errors.
    assert!(serde_json::Number::from_f64(f64::from_bits(0x7fffffffffffffff)).is_none());
    assert_eq!(canonicalize(b"NaN"), Err(CanonError::NonFiniteNumber));
    assert_eq!(canonicalize(b"1e999"), Err(CanonError::NonFiniteNumber));
}

#[test]
fn number_form_boundaries() {
    let cases: &[(&str, &str)] = &[
        ("1e21", "1e+21"),
        ("1e20", "100000000000000000000"),
        ("123456789012345678901", "123456789012345680000"),
        ("1e-7", "1e-7"),
        ("1e-6", "0.000001"),
        ("0.0000001234", "1.234e-7"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("0e10", "0"),
        ("1E3", "1000"),
        ("2.50", "2.5"),
        ("9007199254740991", "9007199254740991"),
        ("9007199254740992", "9007199254740992"),
        ("9007199254740993", "9007199254740992"),
        ("-9007199254740993", "-9007199254740992"),
        ("9007199254740995", "9007199254740996"),
        ("18446744073709551615", "18446744073709552000"),
        ("18446744073709551616", "18446744073709552000"),
        ("-9223372036854775808", "-9223372036854776000"),
        ("2251799813685248.5", "2251799813685248.5"),
        ("4503599627370496.5", "4503599627370496"),
        ("4503599627370497.5", "4503599627370498"),
        ("0.1", "0.1"),
        ("100", "100"),
        ("-100.0", "-100"),
        ("5e-324", "5e-324"),
    ];
    for &(literal, expected) in cases {
        let got = canonicalize(literal.as_bytes()).unwrap_or_else(|error| panic!("{literal}: {error}"));
        assert_eq!(text(&got), expected, "{literal}");
        let value: Value = serde_json::from_str(literal).expect("literal parses");
        assert_eq!(text(&canonicalize_value(&value).expect("finite")), expected, "value of {literal}");
    }
    for value in [
        Value::from(u64::MAX),
        Value::from(i64::MIN),
        Value::from(i64::MAX),
        Value::from((1u64 << 53) - 1),
        Value::from(1u64 << 53),
        Value::from((1u64 << 53) + 1),
        Value::from(-(1i64 << 53) + 1),
        Value::from(-(1i64 << 53)),
        Value::from(-(1i64 << 53) - 1),
        Value::from(9_007_199_254_740_990.0),
        Value::from(-0.0),
        Value::from(1e300),
        Value::from(-1.5e-300),
    ] {
        assert_eq!(canonicalize_value(&value).expect("finite"), reference(&value), "{value}");
    }
}

/// RFC 8785 §3.2.2: the example with numbers, escapes and literals.
#[test]
fn rfc_8785_example_inline() {
    let input = br#"{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"#;
    let expected = "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\
                    \"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
    assert_eq!(text(&canonicalize(input).expect("canonical")), expected);
}

/// RFC 8785 §3.2.3: names sorted by UTF-16 code units.
#[test]
fn rfc_8785_sorting_example_inline() {
    let input = br#"{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}"#;
    let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
                    \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
                    \"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
    let got = canonicalize(input).expect("canonical");
    assert_eq!(text(&got), expected);
    let value: Value = serde_json::from_slice(input).expect("json");
    assert_eq!(text(&canonicalize_value(&value).expect("canonical")), expected);

    // The same names plus "10", in every rotation of the input order.
    let names = ["\u{20ac}", "\r", "\u{1f600}", "\u{80}", "1", "\u{f6}", "10", "\u{fb33}"];
    let sorted = ["\r", "1", "10", "\u{80}", "\u{f6}", "\u{20ac}", "\u{1f600}", "\u{fb33}"];
    let expected: String = {
        let members: Vec<String> = sorted
            .iter()
            .map(|name| format!("{}:{}", json!(name), names.iter().position(|n| n == name).unwrap_or(0)))
            .collect();
        format!("{{{}}}", members.join(","))
    };
    for rotation in 0..names.len() {
        let members: Vec<String> = (0..names.len())
            .map(|i| (i + rotation) % names.len())
            .map(|i| format!("{}:{i}", json!(names[i])))
            .collect();
        let input = format!("{{{}}}", members.join(","));
        assert_eq!(text(&canonicalize(input.as_bytes()).expect("canonical")), expected, "{input}");
    }
}

#[test]
fn names_differing_only_above_the_bmp_sort_by_utf16() {
    // U+E000..U+FFFF against U+10000..U+10FFFF at the first difference, after a shared prefix,
    // and inside a multi-byte character (same lead byte).
    let cases: &[(&[&str], &[&str])] = &[
        (&["\u{ffff}", "\u{10000}"], &["\u{10000}", "\u{ffff}"]),
        (&["x\u{e000}", "x\u{10ffff}", "x\u{d7ff}"], &["x\u{d7ff}", "x\u{10ffff}", "x\u{e000}"]),
        (&["\u{1f601}", "\u{1f600}", "\u{10000}"], &["\u{10000}", "\u{1f600}", "\u{1f601}"]),
        (&["\u{ef}a", "\u{ee}", "\u{f0}"], &["\u{ee}", "\u{ef}a", "\u{f0}"]),
        (&["ab", "a", "abc", ""], &["", "a", "ab", "abc"]),
    ];
    for (input, expected) in cases {
        let object: Map<String, Value> = input.iter().map(|name| ((*name).to_owned(), Value::Null)).collect();
        let want = format!(
            "{{{}}}",
            expected.iter().map(|name| format!("{}:null", json!(name))).collect::<Vec<_>>().join(",")
        );
        let value = Value::Object(object);
        assert_eq!(text(&canonicalize_value(&value).expect("canonical")), want);
        let input_text =
            format!("{{{}}}", input.iter().map(|name| format!("{}:null", json!(name))).collect::<Vec<_>>().join(","));
        assert_eq!(text(&canonicalize(input_text.as_bytes()).expect("canonical")), want);
    }
}

#[test]
fn every_escape_and_every_control_character() {
    let all: String =
        (0u32..0x80).chain([0x7f, 0x80, 0x2028, 0x2029, 0xfeff, 0x1f600]).filter_map(char::from_u32).collect();
    let value = Value::String(all.clone());
    let got = canonicalize_value(&value).expect("canonical");
    assert_eq!(got, reference(&value));
    assert!(text(&got).starts_with(r#""\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e"#));
    // The same string read from text that escapes everything with \uXXXX.
    let escaped: String = all.encode_utf16().fold(String::from("\""), |mut out, unit| {
        write!(out, "\\u{unit:04X}").expect("write to String");
        out
    }) + "\"";
    assert_eq!(canonicalize(escaped.as_bytes()).expect("canonical"), got);
    // Runs longer than a machine word, with the escape at each position.
    for at in 0..40 {
        let mut s = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN".to_owned();
        s.replace_range(at..=at, "\"");
        let value = Value::String(s);
        assert_eq!(canonicalize_value(&value).expect("canonical"), reference(&value), "{at}");
    }
}

#[test]
fn large_objects_find_duplicates_and_sort() {
    // Unsorted, more members than the linear search covers: the hash set path.
    let names: Vec<String> = (0..200).map(|i| format!("k{}", (i * 7919) % 200)).collect();
    let members: Vec<String> = names.iter().enumerate().map(|(i, name)| format!("\"{name}\":{i}")).collect();
    let input = format!("{{{}}}", members.join(","));
    let value: Value = serde_json::from_str(&input).expect("json");
    assert_eq!(canonicalize(input.as_bytes()).expect("canonical"), reference(&value));
    // A repeat at the end, in the middle, and of the first name.
    for repeated in [&names[199], &names[100], &names[0], &names[16], &names[15]] {
        let with_repeat = format!("{{{},\"{repeated}\":0}}", members.join(","));
        assert_eq!(canonicalize(with_repeat.as_bytes()), Err(CanonError::DuplicateKey { key: repeated.clone() }));
    }
    // Sorted input takes the no-search path; a repeat of the last name is still caught.
    let sorted: Vec<String> = (0..100).map(|i| format!("\"k{i:03}\":{i}")).collect();
    let input = format!("{{{},\"k099\":1}}", sorted.join(","));
    assert_eq!(canonicalize(input.as_bytes()), Err(CanonError::DuplicateKey { key: "k099".into() }));
    let input = format!("{{{},\"k050\":1}}", sorted.join(","));
    assert_eq!(canonicalize(input.as_bytes()), Err(CanonError::DuplicateKey { key: "k050".into() }));
    // A repeat spelled differently (an escape) is the same name.
    assert_eq!(canonicalize(br#"{"ab":1,"a\u0062":2}"#), Err(CanonError::DuplicateKey { key: "ab".into() }));
}

#[test]
fn the_first_repeat_is_reported_before_its_value_is_read() {
    // Two repeats: the one whose second occurrence comes first is reported.
    assert_eq!(canonicalize(br#"{"b":1,"a":1,"a":2,"b":2}"#), Err(CanonError::DuplicateKey { key: "a".into() }));
    assert_eq!(canonicalize(br#"{"b":1,"a":1,"b":2,"a":2}"#), Err(CanonError::DuplicateKey { key: "b".into() }));
    // The repeat is found before the (invalid) value after it is parsed.
    assert_eq!(canonicalize(br#"{"a":1,"a":x}"#), Err(CanonError::DuplicateKey { key: "a".into() }));
    // An error before the repeat wins.
    assert!(matches!(canonicalize(br#"{"a":x,"a":1}"#), Err(CanonError::InvalidJson { .. })));
}

#[test]
fn values_deeper_than_the_stack_canonicalize() {
    let depth = 200_000;
    let mut value = Value::Null;
    for i in 0..depth {
        value = if i % 2 == 0 {
            Value::Array(vec![value])
        } else {
            // Not `json!`, which would copy `value` through a recursive `to_value`.
            let mut members = Map::new();
            members.insert("k".to_owned(), value);
            Value::Object(members)
        };
    }
    let got = canonicalize_value(&value).expect("canonical");
    // Each array level adds `[]`, each object level `{"k":}`.
    assert_eq!(got.len(), 4 + depth / 2 * 2 + depth / 2 * 6);
    assert!(text(&got).starts_with(r#"{"k":[{"k":["#) && text(&got).ends_with("]}]}"));
    // serde_json drops a value recursively; take it apart by hand.
    let mut current = value;
    loop {
        current = match current {
            Value::Array(mut items) => items.pop().unwrap_or(Value::Null),
            Value::Object(mut members) => members.remove("k").unwrap_or(Value::Null),
            _ => break,
        };
    }
}

/// A small deterministic generator (xorshift64*) for the randomized cross-check.
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

    fn char(&mut self) -> char {
        const POOL: &[char] = &[
            'a',
            'b',
            'z',
            'A',
            '0',
            '9',
            ' ',
            '"',
            '\\',
            '/',
            '\n',
            '\r',
            '\t',
            '\u{8}',
            '\u{c}',
            '\u{0}',
            '\u{1}',
            '\u{1f}',
            '\u{7f}',
            '\u{80}',
            'é',
            'ö',
            '€',
            '\u{2028}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{fb33}',
            '\u{ffff}',
            '\u{10000}',
            '😀',
            '😁',
            '𝔸',
            '\u{10ffff}',
        ];
        match self.below(4) {
            // Any scalar value at all, now and then.
            0 => loop {
                if let Some(c) = char::from_u32(self.below(0x11_0000) as u32) {
                    break c;
                }
            },
            _ => POOL[self.below(POOL.len() as u64) as usize],
        }
    }

    fn string(&mut self) -> String {
        let len = match self.below(8) {
            0 => 20 + self.below(60),
            _ => self.below(6),
        };
        (0..len).map(|_| self.char()).collect()
    }

    fn number(&mut self) -> Value {
        match self.below(7) {
            0 => Value::from(self.next() as i64 >> self.below(64)),
            1 => Value::from(self.next() >> self.below(64)),
            2 => Value::from((self.below(2_000_000) as f64 - 1_000_000.0) / 1000.0),
            3 => Value::from((self.next() >> 11) as f64 * if self.below(2) == 0 { 1.0 } else { -1.0 }),
            4 => Value::from(self.below(1 << 20) as f64 * 10f64.powi(self.below(60) as i32 - 30)),
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
            (false, 0..=2) => (0..self.below(6)).map(|_| self.value(depth - 1)).collect(),
            (false, _) => {
                let mut members = Map::new();
                let count = if self.below(10) == 0 { 10 + self.below(30) } else { self.below(7) };
                for _ in 0..count {
                    members.insert(self.string(), self.value(depth - 1));
                }
                Value::Object(members)
            }
        }
    }

    /// Writes `value` as JSON text the way another producer might: members in random order,
    /// random whitespace, characters randomly escaped (`\uXXXX`, surrogate pairs, `\/`), numbers
    /// in random spellings.
    fn write(&mut self, value: &Value, out: &mut String) {
        self.space(out);
        match value {
            Value::Null | Value::Bool(_) => out.push_str(&value.to_string()),
            Value::Number(number) => {
                if let Some(float) = number.as_f64().filter(|_| number.is_f64()) {
                    match self.below(3) {
                        0 => write!(out, "{float:e}"),
                        1 => write!(out, "{float:?}"),
                        _ => write!(out, "{}", Value::from(float)),
                    }
                    .expect("write to String");
                } else {
                    write!(out, "{number}").expect("write to String");
                }
            }
            Value::String(s) => self.write_string(s, out),
            Value::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    self.write(item, out);
                }
                self.space(out);
                out.push(']');
            }
            Value::Object(members) => {
                let mut order: Vec<(&String, &Value)> = members.iter().collect();
                for i in (1..order.len()).rev() {
                    order.swap(i, self.below(i as u64 + 1) as usize);
                }
                out.push('{');
                for (index, (key, item)) in order.into_iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    self.space(out);
                    self.write_string(key, out);
                    self.space(out);
                    out.push(':');
                    self.write(item, out);
                }
                self.space(out);
                out.push('}');
            }
        }
        self.space(out);
    }

    fn write_string(&mut self, s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match (c, self.below(4)) {
                ('"', _) => out.push_str("\\\""),
                ('\\', _) => out.push_str("\\\\"),
                ('/', 0) => out.push_str("\\/"),
                (c, _) if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).expect("write to String"),
                (c, 0) => {
                    for unit in c.encode_utf16(&mut [0; 2]) {
                        write!(out, "\\u{unit:04X}").expect("write to String");
                    }
                }
                (c, _) => out.push(c),
            }
        }
        out.push('"');
    }

    fn space(&mut self, out: &mut String) {
        if self.below(4) == 0 {
            out.push_str([" ", "\n", "\t", "\r\n  "][self.below(4) as usize]);
        }
    }
}

#[test]
fn output_equals_serde_json_canonicalizer_on_random_values() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for case in 0..6000 {
        let value = rng.value(5);
        let expected = reference(&value);
        let from_value = canonicalize_value(&value).unwrap_or_else(|error| panic!("case {case}: {error}"));
        assert_eq!(text(&from_value), text(&expected), "case {case}: value");
        // The same value as text from another producer.
        let mut input = String::new();
        rng.write(&value, &mut input);
        let from_text = canonicalize(input.as_bytes()).unwrap_or_else(|error| panic!("case {case}: {error}\n{input}"));
        assert_eq!(text(&from_text), text(&expected), "case {case}: text {input}");
        // And the canonical form is a fixed point.
        assert_eq!(canonicalize(&from_text).as_deref(), Ok(expected.as_slice()), "case {case}: fixed point");
    }
}
