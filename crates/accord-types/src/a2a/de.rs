//! ProtoJSON decoding helpers shared by the A2A wire types.
//!
//! ProtoJSON reads `null` as "field not set", accepts `int32` values as JSON numbers or decimal
//! strings, and treats a `google.protobuf.Value` field set to `null` as present. serde's derive does
//! none of that on its own; these helpers are wired in with `deserialize_with`.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;

/// A non-required repeated or map field: absent (with `#[serde(default)]`) or `null` reads as empty.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A `google.protobuf.Value` field: JSON `null` is a value (`NullValue`), not an absent field.
pub(crate) fn present_value<'de, D>(deserializer: D) -> Result<Option<Value>, D::Error>
where
    D: Deserializer<'de>,
{
    Value::deserialize(deserializer).map(Some)
}

/// An `optional int32` (or a plain one read as optional): a number, a decimal string, or `null`.
pub(crate) fn opt_i32<'de, D>(deserializer: D) -> Result<Option<i32>, D::Error>
where
    D: Deserializer<'de>,
{
    deserializer.deserialize_any(OptI32Visitor)
}

/// A plain `int32` whose zero value a ProtoJSON writer may leave out: absent or `null` reads as 0.
pub(crate) fn i32_or_zero<'de, D>(deserializer: D) -> Result<i32, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(opt_i32(deserializer)?.unwrap_or(0))
}

struct OptI32Visitor;

impl<'de> Visitor<'de> for OptI32Visitor {
    type Value = Option<i32>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a 32-bit integer, as a JSON number or a decimal string")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        i32::try_from(value).map(Some).map_err(|_| E::custom(format!("{value} is out of range for int32")))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        i32::try_from(value).map(Some).map_err(|_| E::custom(format!("{value} is out of range for int32")))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        // ProtoJSON accepts an integral float (`5.0`, `1e2`) for an integer field.
        if value.fract() == 0.0 && value >= f64::from(i32::MIN) && value <= f64::from(i32::MAX) {
            // The range and integrality were checked just above, so the cast is exact.
            Ok(Some(value as i32))
        } else {
            Err(E::custom(format!("{value} is not a 32-bit integer")))
        }
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        value.trim().parse::<i32>().map(Some).map_err(|_| E::custom(format!("{value:?} is not a 32-bit integer")))
    }
}
