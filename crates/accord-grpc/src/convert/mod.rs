//! Every message of `a2a.proto` to and from Accord's A2A wire types ([`accord_types::a2a`]).
//!
//! Each pair converts both ways with [`TryFrom`] and [`ConvertError`], even where it cannot fail,
//! so that a face writes `.try_into()?` everywhere. The module owns representation only: whether
//! a value is *valid* A2A (a message id not empty, a page size in range, …) is the a2a types'
//! own [`Validate`](accord_types::a2a::Validate), which a face runs after converting, exactly as
//! the HTTP bindings do after deserializing. Only what one side cannot hold is an error here.
//!
//! # The rules
//!
//! - **Plain proto3 strings** are `""` when unset; the a2a side keeps `Option<String>`, so `""`
//!   reads as `None` and `None` writes `""` (`Some("")` therefore comes back as `None`). Proto
//!   `optional` fields (`history_length`, `documentation_url`, the capability flags, …) keep
//!   their presence and map to `Option` one to one.
//! - **Plain proto3 bools** kept as `Option<bool>` on the a2a side (`append`, `last_chunk`,
//!   `return_immediately`, `AgentExtension.required`, `pkce_required`): `true` ↔ `Some(true)`,
//!   `false` ↔ `None`. ProtoJSON leaves a false plain bool out, so `None` is what the same
//!   message reads as over JSON; `Some(false)` means the same and writes `false`.
//! - **Plain proto3 enums and ints** kept as `Option` (`ListTasksRequest.status`,
//!   `ListTaskPushNotificationConfigsRequest.page_size`): `0` ↔ `None`.
//! - **Enums** are `i32` in the messages; a number outside the enum is an error, as the a2a enums
//!   are closed. `TASK_STATE_UNSPECIFIED` and `ROLE_UNSPECIFIED` map to their a2a twins.
//! - **`google.protobuf.Struct` / `Value`** ↔ `serde_json::Map` / `Value`. Proto numbers are
//!   doubles: a double with no fractional part within ±2^53 comes back as a JSON *integer*, any
//!   other as a JSON float (so `1.0` comes back as `1`; a JSON integer beyond 2^53 is rounded to
//!   the nearest double, as every JSON reader in JavaScript does). NaN and infinities cannot be
//!   written in JSON and are errors, as is a `Value` with no kind set. `None` ↔ `None`, an empty
//!   struct ↔ an empty map.
//! - **`Part.raw`**: the a2a side keeps the base64 text of ProtoJSON, the proto side bytes.
//!   Decoding accepts the standard and the URL-safe alphabet, with or without padding (what
//!   [`Validate`](accord_types::a2a::Validate) accepts); encoding writes standard padded base64.
//! - **Timestamps**: RFC 3339 UTC strings (`Z`) ↔ `google.protobuf.Timestamp`. Written as the a2a
//!   types write their own (`2025-10-28T10:30:00.000Z`), with 6 or 9 fraction digits when the
//!   nanoseconds need them, so every valid `Timestamp` survives the round trip. A string that is
//!   not an A2A timestamp, or a `Timestamp` outside years 1 to 9999, is an error.
//! - **Oneofs**: a proto oneof with no member set (`Part.content`, `StreamResponse.payload`,
//!   `SendMessageResponse.payload`, `SecurityScheme.scheme`, `OAuthFlows.flow`) is an error.
//! - **Required messages** unset on the proto side (`SendMessageRequest.message`, `Task.status`,
//!   `TaskStatusUpdateEvent.status`, `TaskArtifactUpdateEvent.artifact`,
//!   `OAuth2SecurityScheme.flows`) are errors, except `AgentCard.capabilities`, which reads as the
//!   empty [`AgentCapabilities`](accord_types::a2a::AgentCapabilities) (every field of it is
//!   optional, so an absent one says nothing more).
//! - **Unknown JSON fields** that the a2a card types keep in `extra` (`AgentCard`,
//!   `AgentInterface`, `AgentCapabilities`, `AgentSkill`) have no place in a proto message and are
//!   left out; on the way back `extra` is empty.
//!
//! Error paths name fields by their JSON (camelCase) names from the converted value's root, as
//! [`FieldViolation`]s do: `message.parts[2].raw`, `securitySchemes["oauth"].oauth2SecurityScheme.flows`.

mod card;
mod requests;
mod task;

use std::fmt;

use accord_types::a2a::time;
use accord_types::a2a::{A2aError, A2aErrorKind, FieldViolation, ValidationError};
use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use serde_json::{Map, Number, Value};

/// Why a value could not be converted: the field, by its JSON path from the converted value's
/// root (`message.parts[2].raw`; empty for the value itself), and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertError {
    field: String,
    reason: String,
}

impl ConvertError {
    /// An error at `field` (a JSON path, `""` for the value itself).
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { field: field.into(), reason: reason.into() }
    }

    /// The JSON path of the offending field, e.g. `message.parts[2].raw`.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong with the field.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The same error seen from the parent that holds the value at `parent` (`parts[2]`): its
    /// path is prefixed with `parent`.
    pub fn within(mut self, parent: &str) -> Self {
        if parent.is_empty() {
            return self;
        }
        self.field = if self.field.is_empty() {
            parent.to_owned()
        } else if self.field.starts_with('[') {
            format!("{parent}{}", self.field)
        } else {
            format!("{parent}.{}", self.field)
        };
        self
    }

    /// The error as a `google.rpc.BadRequest` field violation.
    pub fn to_violation(&self) -> FieldViolation {
        FieldViolation::new(self.field.clone(), self.reason.clone())
    }

    /// The error for a client that could not convert what an agent answered:
    /// [`A2aErrorKind::InvalidAgentResponse`] naming the field. (A server converting a request
    /// uses the `From` conversion instead, which blames the caller's parameters.)
    pub fn to_agent_response_error(&self) -> A2aError {
        A2aError::new(A2aErrorKind::InvalidAgentResponse)
            .with_message(format!("{}: {self}", A2aErrorKind::InvalidAgentResponse.default_message()))
            .with_violations([self.to_violation()])
    }
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() { f.write_str(&self.reason) } else { write!(f, "{}: {}", self.field, self.reason) }
    }
}

impl std::error::Error for ConvertError {}

/// A request that could not be converted is the caller's invalid parameters:
/// [`A2aErrorKind::InvalidParams`] with the field as a `google.rpc.BadRequest` violation, the
/// shape the HTTP bindings give a field that fails validation.
impl From<ConvertError> for A2aError {
    fn from(error: ConvertError) -> Self {
        A2aError::from(ValidationError { violations: vec![error.to_violation()] })
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers of the conversions.

/// Converts `value`, the field `field` of its parent.
pub(crate) fn convert<A, B>(value: A, field: &str) -> Result<B, ConvertError>
where
    B: TryFrom<A, Error = ConvertError>,
{
    B::try_from(value).map_err(|error| error.within(field))
}

/// Converts an optional message field.
pub(crate) fn convert_opt<A, B>(value: Option<A>, field: &str) -> Result<Option<B>, ConvertError>
where
    B: TryFrom<A, Error = ConvertError>,
{
    value.map(|value| convert(value, field)).transpose()
}

/// Converts a message field that the proto marks `REQUIRED` and the a2a side cannot leave out.
pub(crate) fn convert_required<A, B>(value: Option<A>, field: &str) -> Result<B, ConvertError>
where
    B: TryFrom<A, Error = ConvertError>,
{
    match value {
        Some(value) => convert(value, field),
        None => Err(ConvertError::new(field, "is required but not set")),
    }
}

/// Converts a repeated field, naming a failing element by its index.
pub(crate) fn convert_list<A, B>(values: Vec<A>, field: &str) -> Result<Vec<B>, ConvertError>
where
    B: TryFrom<A, Error = ConvertError>,
{
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| B::try_from(value).map_err(|error| error.within(&format!("{field}[{index}]"))))
        .collect()
}

/// Converts the values of a map, each error naming its key: a proto map (`HashMap`) into an
/// a2a `BTreeMap`, or back.
pub(crate) fn convert_map<A, B, M>(
    values: impl IntoIterator<Item = (String, A)>,
    field: &str,
) -> Result<M, ConvertError>
where
    B: TryFrom<A, Error = ConvertError>,
    M: FromIterator<(String, B)>,
{
    values
        .into_iter()
        .map(|(key, value)| {
            let converted = B::try_from(value).map_err(|error| error.within(&format!("{field}[{key:?}]")))?;
            Ok((key, converted))
        })
        .collect()
}

/// A plain proto3 string: `""` is unset.
pub(crate) fn non_empty(text: String) -> Option<String> {
    if text.is_empty() { None } else { Some(text) }
}

/// An optional string as a plain proto3 string.
pub(crate) fn or_empty(text: Option<String>) -> String {
    text.unwrap_or_default()
}

/// A plain proto3 bool kept as `Option<bool>`: false is unset.
pub(crate) fn true_or_none(flag: bool) -> Option<bool> {
    flag.then_some(true)
}

// ---------------------------------------------------------------------------------------------
// google.protobuf.Struct and Value.

/// Beyond this magnitude a double no longer holds every integer, so it stays a JSON float.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// An a2a metadata map as a `google.protobuf.Struct`.
pub(crate) fn struct_to_pb(
    map: Option<Map<String, Value>>,
    field: &str,
) -> Result<Option<prost_types::Struct>, ConvertError> {
    map.map(|map| map_to_struct(map).map_err(|error| error.within(field))).transpose()
}

/// A `google.protobuf.Struct` as an a2a metadata map.
pub(crate) fn struct_from_pb(
    value: Option<prost_types::Struct>,
    field: &str,
) -> Result<Option<Map<String, Value>>, ConvertError> {
    value.map(|value| struct_to_map(value).map_err(|error| error.within(field))).transpose()
}

fn map_to_struct(map: Map<String, Value>) -> Result<prost_types::Struct, ConvertError> {
    let fields = map
        .into_iter()
        .map(|(key, value)| {
            let converted = value_to_pb(value).map_err(|error| error.within(&format!("[{key:?}]")))?;
            Ok((key, converted))
        })
        .collect::<Result<_, ConvertError>>()?;
    Ok(prost_types::Struct { fields })
}

fn struct_to_map(value: prost_types::Struct) -> Result<Map<String, Value>, ConvertError> {
    value
        .fields
        .into_iter()
        .map(|(key, value)| {
            let converted = value_from_pb(value).map_err(|error| error.within(&format!("[{key:?}]")))?;
            Ok((key, converted))
        })
        .collect()
}

/// A JSON value as a `google.protobuf.Value`. Fails only for a number that has no `f64` form,
/// which serde_json without `arbitrary_precision` never holds.
pub(crate) fn value_to_pb(value: Value) -> Result<prost_types::Value, ConvertError> {
    use prost_types::value::Kind;
    let kind = match value {
        Value::Null => Kind::NullValue(prost_types::NullValue::NullValue.into()),
        Value::Bool(flag) => Kind::BoolValue(flag),
        Value::Number(number) => Kind::NumberValue(
            number.as_f64().ok_or_else(|| ConvertError::new("", format!("the number {number} has no double form")))?,
        ),
        Value::String(text) => Kind::StringValue(text),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items
                .into_iter()
                .enumerate()
                .map(|(index, item)| value_to_pb(item).map_err(|error| error.within(&format!("[{index}]"))))
                .collect::<Result<_, _>>()?,
        }),
        Value::Object(map) => Kind::StructValue(map_to_struct(map)?),
    };
    Ok(prost_types::Value { kind: Some(kind) })
}

/// A `google.protobuf.Value` as JSON (numbers as described in the module docs).
pub(crate) fn value_from_pb(value: prost_types::Value) -> Result<Value, ConvertError> {
    use prost_types::value::Kind;
    Ok(match value.kind {
        // NullValue has a single member; whatever number it carries, it is null.
        Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(flag)) => Value::Bool(flag),
        Some(Kind::NumberValue(number)) => Value::Number(number_from_f64(number)?),
        Some(Kind::StringValue(text)) => Value::String(text),
        Some(Kind::ListValue(list)) => Value::Array(
            list.values
                .into_iter()
                .enumerate()
                .map(|(index, item)| value_from_pb(item).map_err(|error| error.within(&format!("[{index}]"))))
                .collect::<Result<_, _>>()?,
        ),
        Some(Kind::StructValue(value)) => Value::Object(struct_to_map(value)?),
        None => {
            return Err(ConvertError::new(
                "",
                "kind must be set: one of nullValue, numberValue, stringValue, boolValue, structValue, listValue",
            ));
        }
    })
}

fn number_from_f64(number: f64) -> Result<Number, ConvertError> {
    if !number.is_finite() {
        return Err(ConvertError::new("", format!("{number} cannot be written in JSON")));
    }
    if number.fract() == 0.0 && number.abs() <= MAX_SAFE_INTEGER {
        // Exact: an integral double within ±2^53 is an integer that fits in i64.
        #[allow(clippy::cast_possible_truncation)]
        return Ok(Number::from(number as i64));
    }
    Number::from_f64(number).ok_or_else(|| ConvertError::new("", format!("{number} cannot be written in JSON")))
}

// ---------------------------------------------------------------------------------------------
// Part.raw: base64 text ↔ bytes.

/// The standard alphabet without padding, trailing bits allowed: with the padding checked apart,
/// this accepts exactly what `Validate` accepts.
const UNPADDED_BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// Decodes ProtoJSON `bytes`: the standard or URL-safe alphabet, padding optional (but, when
/// present, completing the last group of four).
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, ConvertError> {
    let body = text.trim_end_matches('=');
    let padding = text.len() - body.len();
    if padding > 0 && (padding > 2 || !text.len().is_multiple_of(4)) {
        return Err(ConvertError::new("", "is not base64: the padding does not complete a group of four"));
    }
    // The two alphabets differ only in characters 62 and 63.
    let standard: String = body
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            other => other,
        })
        .collect();
    UNPADDED_BASE64
        .decode(standard)
        .map_err(|error| ConvertError::new("", format!("is not base64 (standard or URL-safe): {error}")))
}

/// Encodes bytes as standard padded base64.
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

// ---------------------------------------------------------------------------------------------
// Timestamps.

const NANOS_PER_SECOND: i64 = 1_000_000_000;
/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the range of `google.protobuf.Timestamp`.
const MIN_TIMESTAMP_SECONDS: i64 = -62_135_596_800;
const MAX_TIMESTAMP_SECONDS: i64 = 253_402_300_799;

/// An A2A timestamp string as a `google.protobuf.Timestamp`.
pub(crate) fn timestamp_to_pb(
    text: Option<String>,
    field: &str,
) -> Result<Option<prost_types::Timestamp>, ConvertError> {
    text.map(|text| parse_timestamp(&text).map_err(|error| error.within(field))).transpose()
}

/// A `google.protobuf.Timestamp` as an A2A timestamp string.
pub(crate) fn timestamp_from_pb(
    value: Option<prost_types::Timestamp>,
    field: &str,
) -> Result<Option<String>, ConvertError> {
    value.map(|value| format_timestamp(value).map_err(|error| error.within(field))).transpose()
}

fn parse_timestamp(text: &str) -> Result<prost_types::Timestamp, ConvertError> {
    // The a2a parser checks the form and gives whole milliseconds; the nanoseconds come from the
    // fraction digits, which it has already checked are 1 to 9 ASCII digits after position 19.
    let millis = time::parse_rfc3339_utc(text).map_err(|error| ConvertError::new("", error.to_string()))?;
    let seconds = millis.div_euclid(1000);
    let fraction = text.get(19..).and_then(|rest| rest.strip_prefix('.')).unwrap_or("");
    let digits: Vec<i64> = fraction.bytes().take_while(u8::is_ascii_digit).map(|b| i64::from(b - b'0')).collect();
    let nanos = (0..9).fold(0_i64, |acc, i| acc * 10 + digits.get(i).copied().unwrap_or(0));
    let nanos = i32::try_from(nanos).map_err(|_| ConvertError::new("", "has a fraction out of range"))?;
    Ok(prost_types::Timestamp { seconds, nanos })
}

fn format_timestamp(value: prost_types::Timestamp) -> Result<String, ConvertError> {
    let prost_types::Timestamp { seconds, nanos } = value;
    if !(MIN_TIMESTAMP_SECONDS..=MAX_TIMESTAMP_SECONDS).contains(&seconds) {
        return Err(ConvertError::new("", format!("seconds {seconds} is outside years 1 to 9999")));
    }
    let nanos = i64::from(nanos);
    if !(0..NANOS_PER_SECOND).contains(&nanos) {
        return Err(ConvertError::new("", format!("nanos {nanos} is outside 0 to 999999999")));
    }
    let text = time::format_unix_millis(seconds * 1000 + nanos / 1_000_000);
    if nanos % 1_000_000 == 0 {
        return Ok(text);
    }
    // `YYYY-MM-DDTHH:MM:SS` is the first 19 bytes of what format_unix_millis writes.
    let whole = text.get(..19).unwrap_or(&text);
    Ok(if nanos % 1000 == 0 { format!("{whole}.{:06}Z", nanos / 1000) } else { format!("{whole}.{nanos:09}Z") })
}
