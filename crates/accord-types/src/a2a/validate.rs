//! Checks serde cannot express: non-empty required arrays and strings, value ranges, RFC 3339
//! timestamps, base64 content.
//!
//! Deserialization already rejects a *missing* required field; [`Validate::validate`] rejects a
//! present one that is still invalid (`"parts": []`, `"messageId": ""`, `"pageSize": 500`) and
//! names every offending field by its JSON path (`message.parts[0].raw`), in the shape of
//! `google.rpc.BadRequest.fieldViolations`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::time;

/// One invalid field, named by its JSON path from the validated value's root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FieldViolation {
    /// The JSON path of the field, e.g. `message.parts` or `skills[2].tags`.
    pub field: String,
    /// What is wrong with it.
    pub description: String,
}

impl FieldViolation {
    /// A violation of `field`.
    pub fn new(field: impl Into<String>, description: impl Into<String>) -> Self {
        Self { field: field.into(), description: description.into() }
    }
}

/// Every violation found in a value; never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// The violations, in field order.
    pub violations: Vec<FieldViolation>,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, violation) in self.violations.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{}: {}", violation.field, violation.description)?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationError {}

/// A wire value that can check the rules of the A2A specification that serde does not.
pub trait Validate {
    /// Appends the violations of `self`, whose own JSON path is `path` (`""` at the root).
    fn collect_violations(&self, path: &str, violations: &mut Vec<FieldViolation>);

    /// Checks `self`; the error lists every violation.
    fn validate(&self) -> Result<(), ValidationError> {
        let mut violations = Vec::new();
        self.collect_violations("", &mut violations);
        if violations.is_empty() { Ok(()) } else { Err(ValidationError { violations }) }
    }
}

/// The path of `name` under `path`.
pub(crate) fn field_path(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") }
}

/// The path of element `index` of `name` under `path`.
pub(crate) fn element_path(path: &str, name: &str, index: usize) -> String {
    format!("{}[{index}]", field_path(path, name))
}

/// A required string: proto3 cannot tell `""` from unset, so an empty one is missing.
pub(crate) fn required_str(out: &mut Vec<FieldViolation>, path: &str, name: &str, value: &str) {
    if value.is_empty() {
        out.push(FieldViolation::new(field_path(path, name), "is required and must not be empty"));
    }
}

/// A required repeated field: §5.7 requires at least one element.
pub(crate) fn required_list<T>(out: &mut Vec<FieldViolation>, path: &str, name: &str, value: &[T]) {
    if value.is_empty() {
        out.push(FieldViolation::new(field_path(path, name), "is required and must contain at least one element"));
    }
}

/// Each element of a repeated message field.
pub(crate) fn each<T: Validate>(out: &mut Vec<FieldViolation>, path: &str, name: &str, items: &[T]) {
    for (index, item) in items.iter().enumerate() {
        item.collect_violations(&element_path(path, name, index), out);
    }
}

/// A nested message field.
pub(crate) fn nested<T: Validate>(out: &mut Vec<FieldViolation>, path: &str, name: &str, item: &T) {
    item.collect_violations(&field_path(path, name), out);
}

/// A timestamp field, when set: RFC 3339 in UTC with a `Z` (§5.6.1).
pub(crate) fn timestamp(out: &mut Vec<FieldViolation>, path: &str, name: &str, value: Option<&str>) {
    if let Some(value) = value
        && let Err(error) = time::parse_rfc3339_utc(value)
    {
        out.push(FieldViolation::new(field_path(path, name), error.to_string()));
    }
}

/// A history length, when set: zero or more.
pub(crate) fn non_negative(out: &mut Vec<FieldViolation>, path: &str, name: &str, value: Option<i32>) {
    if let Some(value) = value
        && value < 0
    {
        out.push(FieldViolation::new(field_path(path, name), format!("must be zero or more, got {value}")));
    }
}

/// Whether `text` is base64 as ProtoJSON accepts it for `bytes`: the standard or URL-safe
/// alphabet, padding optional.
pub(crate) fn is_base64(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    let padding = text.len() - body.len();
    let alphabet_ok = body.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'));
    // A final group of one character cannot encode a byte; padding only completes a 4-char group.
    let length_ok = body.len() % 4 != 1 && (padding == 0 || (padding <= 2 && text.len().is_multiple_of(4)));
    alphabet_ok && length_ok
}
