//! RFC 8785 canonicalization (`accord_card::canonicalize`): any bytes in, never a panic; the
//! output is a fixed point; and wherever Accord's one-pass writer accepts a text, the reference
//! implementation (`serde_json_canonicalizer`) writes the same bytes, as does canonicalizing the
//! parsed value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(canonical) = accord_card::canonicalize(data) else {
        return;
    };
    assert!(std::str::from_utf8(&canonical).is_ok(), "canonical output is not UTF-8");
    assert_eq!(accord_card::canonicalize(&canonical).as_deref(), Ok(&canonical[..]), "not a fixed point");

    // Accepted text has no duplicate names, so serde_json's value holds exactly what was read.
    let value: Value = serde_json::from_slice(data).expect("canonicalize accepted text serde_json refuses");
    assert_eq!(accord_card::canonicalize_value(&value).as_deref(), Ok(&canonical[..]), "value path differs");
    let reference = serde_json_canonicalizer::to_vec(&value).expect("reference refused a finite value");
    assert_eq!(
        String::from_utf8_lossy(&canonical),
        String::from_utf8_lossy(&reference),
        "differs from the reference implementation"
    );
});
