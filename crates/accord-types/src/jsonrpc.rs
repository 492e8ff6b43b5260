//! The JSON-RPC 2.0 envelope, shared by every JSON-RPC face and client.
//!
//! One place reads and writes the `jsonrpc: "2.0"` member, ids, requests, success and error
//! responses and error objects; the faces keep their methods, their HTTP statuses and their
//! messages.
//!
//! - **Ids** stay [`serde_json::Value`]s so an answer echoes exactly what was received. The
//!   specification allows a string, a number or `null` ([`is_valid_id`]); an absent id makes the
//!   request a notification.
//! - **Reading a request** ([`Request::parse`]): a body that is not JSON is -32700, answered with id
//!   `null`; a JSON array is a batch, which no Accord face serves: it is refused with -32600 "batch
//!   requests are not supported", id `null`, before anything in it is read; any other ill-formed
//!   envelope is -32600, answered with the request's id when it could be read, else `null`.
//!   [`Request::parse_lenient`] checks only what makes an envelope at all (`jsonrpc` and `method`)
//!   and keeps any id and params as sent, for a face whose method checks judge the params.
//! - **Reading a response** ([`Response::parse`], [`Response::check_id`]): the version member, exactly
//!   one of `result` and `error`, a well-formed error object, and the id echo.
//! - **Errors** are [`ErrorObject`]s `{code, message, data?}`; the standard codes are the constants
//!   [`PARSE_ERROR`], [`INVALID_REQUEST`], [`METHOD_NOT_FOUND`], [`INVALID_PARAMS`] and
//!   [`INTERNAL_ERROR`].

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::a2a::de::present_value;

/// The `jsonrpc` member of every request and response.
pub const VERSION: &str = "2.0";

/// The body is not JSON (-32700).
pub const PARSE_ERROR: i64 = -32700;
/// The body is not a valid request (-32600).
pub const INVALID_REQUEST: i64 = -32600;
/// No such method (-32601).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The params are not what the method takes (-32602).
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed (-32603).
pub const INTERNAL_ERROR: i64 = -32603;

/// Whether `id` is one the specification allows in a request: a string, a number or `null`.
pub fn is_valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
}

/// A JSON-RPC 2.0 request (a notification when `id` is `None`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Request {
    /// Always `"2.0"` once read by [`Request::parse`].
    pub jsonrpc: String,
    /// The id as received; `None` when absent (a notification), `Some(Value::Null)` for `null`.
    #[serde(default, deserialize_with = "present_value", skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The method name.
    pub method: String,
    /// The params; `None` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Request {
    /// A call expecting an answer.
    pub fn new(id: impl Into<Value>, method: impl Into<String>, params: Value) -> Self {
        Self { jsonrpc: VERSION.to_owned(), id: Some(id.into()), method: method.into(), params: Some(params) }
    }

    /// A notification: no id, so no answer is expected.
    pub fn notification(method: impl Into<String>, params: Value) -> Self {
        Self { jsonrpc: VERSION.to_owned(), id: None, method: method.into(), params: Some(params) }
    }

    /// Reads a request body as the specification says: JSON (else -32700), not an array (a batch,
    /// refused with -32600), an object with an id that is a string, a number or `null` when
    /// present, `jsonrpc: "2.0"`, a string `method`, and object or array `params` when present
    /// (`null` reads as absent); any other failure is -32600. Checked in that order.
    pub fn parse(body: &[u8]) -> Result<Self, ParseError> {
        Self::from_value(read_json(body)?)
    }

    /// Reads a request already parsed as JSON, with the checks of [`Request::parse`].
    pub fn from_value(value: Value) -> Result<Self, ParseError> {
        Self::read(value, Strictness::Spec)
    }

    /// Reads a request body checking only what makes a JSON-RPC 2.0 envelope: JSON (else
    /// -32700), not an array (a batch, -32600), an object with `jsonrpc: "2.0"` and a string
    /// `method` (else -32600). The id is kept whatever its type, and the params as sent (`null`
    /// included), for faces that echo any id and let each method judge its params (-32602).
    pub fn parse_lenient(body: &[u8]) -> Result<Self, ParseError> {
        Self::read(read_json(body)?, Strictness::Lenient)
    }

    fn read(value: Value, strictness: Strictness) -> Result<Self, ParseError> {
        let mut object = match value {
            Value::Object(object) => object,
            Value::Array(_) => return Err(ParseError::new(ParseErrorKind::Batch, None)),
            _ => return Err(ParseError::new(ParseErrorKind::NotObject, None)),
        };
        let id = object.remove("id");
        if strictness == Strictness::Spec && id.as_ref().is_some_and(|id| !is_valid_id(id)) {
            // An id of the wrong type cannot be echoed: the answer carries `null`.
            return Err(ParseError::new(ParseErrorKind::BadId, None));
        }
        if object.get("jsonrpc").and_then(Value::as_str) != Some(VERSION) {
            return Err(ParseError::new(ParseErrorKind::BadVersion, id));
        }
        let Some(Value::String(method)) = object.remove("method") else {
            return Err(ParseError::new(ParseErrorKind::BadMethod, id));
        };
        let params = match (object.remove("params"), strictness) {
            (params, Strictness::Lenient) => params,
            (None | Some(Value::Null), Strictness::Spec) => None,
            (Some(params @ (Value::Object(_) | Value::Array(_))), Strictness::Spec) => Some(params),
            (Some(_), Strictness::Spec) => return Err(ParseError::new(ParseErrorKind::BadParams, id)),
        };
        Ok(Self { jsonrpc: VERSION.to_owned(), id, method, params })
    }

    /// Whether the request has no id (a notification).
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// The id to answer with: the request's, or `null` for a notification.
    pub fn response_id(&self) -> Value {
        self.id.clone().unwrap_or(Value::Null)
    }

    /// The params, with absent params read as `{}`.
    pub fn params_or_empty(&self) -> Value {
        self.params.clone().unwrap_or_else(|| Value::Object(Map::new()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strictness {
    Spec,
    Lenient,
}

fn read_json(body: &[u8]) -> Result<Value, ParseError> {
    serde_json::from_slice(body).map_err(|_| ParseError::new(ParseErrorKind::NotJson, None))
}

/// Why a body is not a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The body is not JSON (-32700).
    NotJson,
    /// The body is a JSON array: a batch, which is not supported (-32600).
    Batch,
    /// The body is JSON but not an object (-32600).
    NotObject,
    /// The id is not a string, a number or `null` (-32600).
    BadId,
    /// `jsonrpc` is not `"2.0"` (-32600).
    BadVersion,
    /// `method` is missing or not a string (-32600).
    BadMethod,
    /// `params` is neither an object nor an array (-32600).
    BadParams,
}

impl ParseErrorKind {
    /// The error code: [`PARSE_ERROR`] for a body that is not JSON, else [`INVALID_REQUEST`].
    pub fn code(self) -> i64 {
        match self {
            Self::NotJson => PARSE_ERROR,
            _ => INVALID_REQUEST,
        }
    }

    /// What is wrong, in a few words (`batch requests are not supported`).
    pub fn reason(self) -> &'static str {
        match self {
            Self::NotJson => "the body is not valid JSON",
            Self::Batch => "batch requests are not supported",
            Self::NotObject => "the body must be a JSON-RPC request object",
            Self::BadId => "id must be a string, a number or null",
            Self::BadVersion => "jsonrpc must be \"2.0\"",
            Self::BadMethod => "method must be a string",
            Self::BadParams => "params must be an object or an array",
        }
    }
}

/// Why a body is not a request, with the id to answer with.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    /// What is wrong.
    pub kind: ParseErrorKind,
    /// The request's id as received, when the body was an object with an id the reading accepts;
    /// `None` otherwise (not JSON, a batch, not an object, no id, or an id of the wrong type).
    pub id: Option<Value>,
}

impl ParseError {
    /// A failure of `kind` for a request whose id was `id`.
    pub fn new(kind: ParseErrorKind, id: Option<Value>) -> Self {
        Self { kind, id }
    }

    /// The error code (-32700 or -32600).
    pub fn code(&self) -> i64 {
        self.kind.code()
    }

    /// The id to answer with: the request's when it could be read, else `null`.
    pub fn response_id(&self) -> Value {
        self.id.clone().unwrap_or(Value::Null)
    }

    /// The error object `{code, message: <reason>}`.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(self.code(), self.kind.reason())
    }

    /// The answer: the error object with [`ParseError::response_id`].
    pub fn to_response(&self) -> Response {
        Response::failure(self.response_id(), self.to_error_object())
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.kind.reason(), self.code())
    }
}

impl std::error::Error for ParseError {}

/// A JSON-RPC error object: `{code, message, data?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Details, left out when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// Adds details.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// A [`PARSE_ERROR`].
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(PARSE_ERROR, message)
    }

    /// An [`INVALID_REQUEST`].
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(INVALID_REQUEST, message)
    }

    /// A [`METHOD_NOT_FOUND`].
    pub fn method_not_found(message: impl Into<String>) -> Self {
        Self::new(METHOD_NOT_FOUND, message)
    }

    /// An [`INVALID_PARAMS`].
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    /// An [`INTERNAL_ERROR`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(INTERNAL_ERROR, message)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for ErrorObject {}

/// The outcome of a call: exactly one of `result` and `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome<T> {
    /// `result`: what the method returned.
    Result(T),
    /// `error`: why it failed.
    Error(ErrorObject),
}

impl<T, E: Into<ErrorObject>> From<Result<T, E>> for Outcome<T> {
    fn from(result: Result<T, E>) -> Self {
        match result {
            Ok(result) => Self::Result(result),
            Err(error) => Self::Error(error.into()),
        }
    }
}

/// A JSON-RPC 2.0 response, `{"jsonrpc":"2.0","id":…,"result":…}` or `{…,"error":{…}}`. `T` is the
/// result type ([`serde_json::Value`] by default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Response<T = Value> {
    /// Always `"2.0"` once read by [`Response::parse`].
    pub jsonrpc: String,
    /// The request's id (`null` when it could not be read); a missing member reads as `null`.
    #[serde(default)]
    pub id: Value,
    /// The result or the error.
    #[serde(flatten)]
    pub outcome: Outcome<T>,
}

impl<T> Response<T> {
    /// A success.
    pub fn success(id: Value, result: T) -> Self {
        Self::from_outcome(id, Outcome::Result(result))
    }

    /// A failure.
    pub fn failure(id: Value, error: impl Into<ErrorObject>) -> Self {
        Self::from_outcome(id, Outcome::Error(error.into()))
    }

    /// A success or a failure, as `result` says.
    pub fn from_result<E: Into<ErrorObject>>(id: Value, result: Result<T, E>) -> Self {
        Self::from_outcome(id, result.into())
    }

    fn from_outcome(id: Value, outcome: Outcome<T>) -> Self {
        Self { jsonrpc: VERSION.to_owned(), id, outcome }
    }

    /// Whether this is an error response.
    pub fn is_error(&self) -> bool {
        matches!(self.outcome, Outcome::Error(_))
    }

    /// The result, or the error object.
    pub fn into_result(self) -> Result<T, ErrorObject> {
        match self.outcome {
            Outcome::Result(result) => Ok(result),
            Outcome::Error(error) => Err(error),
        }
    }

    /// Checks that this answers the request whose id was `request_id`: the same id, or an error
    /// with id `null` (what a server answers when it could not read the request's id).
    pub fn check_id(&self, request_id: &Value) -> Result<(), ResponseError> {
        if self.id == *request_id || (self.is_error() && self.id.is_null()) {
            Ok(())
        } else {
            Err(ResponseError::IdMismatch { expected: request_id.clone(), found: self.id.clone() })
        }
    }
}

impl<T: DeserializeOwned> Response<T> {
    /// Reads a response body: a JSON object with a string `jsonrpc`, exactly one of `result` and
    /// `error`, the error a well-formed error object, the result a `T`; then `jsonrpc` must be
    /// `"2.0"` (a [`ResponseError::Version`], told apart from a body that is no response at all).
    /// A missing `id` reads as `null`; whether it is the request's is [`Response::check_id`].
    pub fn parse(body: &[u8]) -> Result<Self, ResponseError> {
        let value: Value = serde_json::from_slice(body).map_err(|error| ResponseError::NotJson(error.to_string()))?;
        Self::from_value(value)
    }

    /// Reads a response already parsed as JSON, with the checks of [`Response::parse`].
    pub fn from_value(value: Value) -> Result<Self, ResponseError> {
        let malformed = |why: String| ResponseError::Malformed(why);
        let Value::Object(mut object) = value else {
            return Err(malformed("the body is not a JSON object".into()));
        };
        let Some(Value::String(jsonrpc)) = object.remove("jsonrpc") else {
            return Err(malformed("jsonrpc is missing or not a string".into()));
        };
        let outcome = match (object.remove("result"), object.remove("error")) {
            (Some(result), None) => {
                Outcome::Result(serde_json::from_value(result).map_err(|error| malformed(format!("result: {error}")))?)
            }
            (None, Some(error)) => Outcome::Error(
                serde_json::from_value(error).map_err(|error| malformed(format!("error object: {error}")))?,
            ),
            (Some(_), Some(_)) => return Err(malformed("both result and error are present".into())),
            (None, None) => return Err(malformed("neither result nor error is present".into())),
        };
        if jsonrpc != VERSION {
            return Err(ResponseError::Version(jsonrpc));
        }
        let id = object.remove("id").unwrap_or(Value::Null);
        Ok(Self { jsonrpc, id, outcome })
    }
}

/// Why an answer is not the response expected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResponseError {
    /// The body is not JSON (the parser's message).
    NotJson(String),
    /// The body is JSON but not a JSON-RPC response (what is wrong).
    Malformed(String),
    /// A well-formed response of another version (its `jsonrpc`).
    Version(String),
    /// The response answers another request.
    IdMismatch {
        /// The request's id.
        expected: Value,
        /// The response's id.
        found: Value,
    },
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotJson(error) => write!(f, "not a JSON-RPC 2.0 response: not JSON: {error}"),
            Self::Malformed(why) => write!(f, "not a JSON-RPC 2.0 response: {why}"),
            Self::Version(version) => write!(f, "jsonrpc is {version:?}, not \"2.0\""),
            Self::IdMismatch { found, .. } => write!(f, "the response id {found} is not the request's"),
        }
    }
}

impl std::error::Error for ResponseError {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(body: &str) -> Result<Request, ParseError> {
        Request::parse(body.as_bytes())
    }

    #[test]
    fn requests_round_trip_with_every_id_form() {
        for id in [json!("r-1"), json!(7), json!(-1.5), Value::Null] {
            let request = Request::new(id.clone(), "tasks/get", json!({"taskId": "t"}));
            let wire = serde_json::to_value(&request).expect("json");
            assert_eq!(wire, json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": {"taskId": "t"}}));
            let read = Request::parse(wire.to_string().as_bytes()).expect("request");
            assert_eq!(read, request);
            assert_eq!(read.response_id(), id);
            assert!(!read.is_notification(), "an id of null is still an id");
            let typed: Request = serde_json::from_value(wire).expect("serde");
            assert_eq!(typed, request);
        }
    }

    #[test]
    fn a_request_without_id_is_a_notification() {
        let notification = Request::notification("ping", json!([1]));
        let wire = serde_json::to_value(&notification).expect("json");
        assert_eq!(wire, json!({"jsonrpc": "2.0", "method": "ping", "params": [1]}), "no id member");
        let read = parse(&wire.to_string()).expect("request");
        assert!(read.is_notification());
        assert_eq!(read.response_id(), Value::Null);
        let typed: Request = serde_json::from_value(wire).expect("serde");
        assert_eq!(typed.id, None);
    }

    #[test]
    fn params_absent_or_null_read_as_empty() {
        let absent = parse(r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#).expect("request");
        assert_eq!((absent.params.clone(), absent.params_or_empty()), (None, json!({})));
        let null = parse(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#).expect("request");
        assert_eq!(null.params, None);
        let array = parse(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}"#).expect("request");
        assert_eq!(array.params_or_empty(), json!([1, 2]));
    }

    #[test]
    fn bad_envelopes_carry_the_code_and_the_id_to_answer_with() {
        for (body, kind, id) in [
            ("{nope", ParseErrorKind::NotJson, Value::Null),
            ("", ParseErrorKind::NotJson, Value::Null),
            ("5", ParseErrorKind::NotObject, Value::Null),
            (r#""text""#, ParseErrorKind::NotObject, Value::Null),
            (r#"{"jsonrpc":"2.0","id":{"x":1},"method":"m"}"#, ParseErrorKind::BadId, Value::Null),
            (r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#, ParseErrorKind::BadId, Value::Null),
            (r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#, ParseErrorKind::BadId, Value::Null),
            (r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#, ParseErrorKind::BadVersion, json!(1)),
            (r#"{"jsonrpc":2.0,"id":"a","method":"m"}"#, ParseErrorKind::BadVersion, json!("a")),
            (r#"{"id":"a","method":"m"}"#, ParseErrorKind::BadVersion, json!("a")),
            (r#"{"jsonrpc":"2.0","method":5}"#, ParseErrorKind::BadMethod, Value::Null),
            (r#"{"jsonrpc":"2.0","id":2}"#, ParseErrorKind::BadMethod, json!(2)),
            (r#"{"jsonrpc":"2.0","id":null,"method":7}"#, ParseErrorKind::BadMethod, Value::Null),
            (r#"{"jsonrpc":"2.0","id":3,"method":"m","params":"t"}"#, ParseErrorKind::BadParams, json!(3)),
            (r#"{"jsonrpc":"2.0","id":3,"method":"m","params":4}"#, ParseErrorKind::BadParams, json!(3)),
        ] {
            let error = parse(body).expect_err(body);
            assert_eq!((error.kind, error.response_id()), (kind, id), "{body}");
            let expected_code = if kind == ParseErrorKind::NotJson { PARSE_ERROR } else { INVALID_REQUEST };
            assert_eq!(error.code(), expected_code, "{body}");
        }
        let error = parse(r#"{"jsonrpc":"2.0","method":5}"#).expect_err("bad method");
        assert_eq!(error.id, None, "no id member, nothing to echo");
    }

    #[test]
    fn a_batch_is_refused_whole_with_id_null() {
        for body in [r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#, "[]", "[1, 2]"] {
            for error in [parse(body).expect_err(body), Request::parse_lenient(body.as_bytes()).expect_err(body)] {
                assert_eq!((error.kind, error.code(), error.id.clone()), (ParseErrorKind::Batch, -32600, None));
                assert_eq!(
                    serde_json::to_value(error.to_response()).expect("json"),
                    json!({"jsonrpc": "2.0", "id": null,
                           "error": {"code": -32600, "message": "batch requests are not supported"}})
                );
            }
        }
    }

    #[test]
    fn the_lenient_reading_keeps_any_id_and_params() {
        let body = br#"{"jsonrpc":"2.0","id":{"x":1},"method":"m","params":"text"}"#;
        let request = Request::parse_lenient(body).expect("lenient");
        assert_eq!((request.response_id(), request.params), (json!({"x": 1}), Some(json!("text"))));
        let null = Request::parse_lenient(br#"{"jsonrpc":"2.0","method":"m","params":null}"#).expect("lenient");
        assert_eq!((null.id, null.params), (None, Some(Value::Null)), "null params are kept for the method to judge");
        let error = Request::parse_lenient(br#"{"jsonrpc":"1.0","id":[1],"method":"m"}"#).expect_err("version");
        assert_eq!((error.kind, error.id), (ParseErrorKind::BadVersion, Some(json!([1]))));
        assert_eq!(Request::parse_lenient(b"{").expect_err("json").code(), PARSE_ERROR);
        assert_eq!(Request::parse_lenient(b"null").expect_err("object").kind, ParseErrorKind::NotObject);
    }

    #[test]
    fn responses_round_trip() {
        let success = Response::success(json!("a"), json!({"ok": true}));
        let wire = serde_json::to_value(&success).expect("json");
        assert_eq!(wire, json!({"jsonrpc": "2.0", "id": "a", "result": {"ok": true}}));
        assert_eq!(Response::<Value>::parse(wire.to_string().as_bytes()), Ok(success.clone()));
        assert_eq!(serde_json::from_value::<Response>(wire).expect("serde"), success);

        let error = ErrorObject::new(-32001, "scope required").with_data(json!({"scope": "s"}));
        let failure = Response::<Value>::failure(json!(4), error.clone());
        let wire = serde_json::to_value(&failure).expect("json");
        assert_eq!(
            wire,
            json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32001, "message": "scope required", "data": {"scope": "s"}}})
        );
        let read = Response::<Value>::from_value(wire).expect("response");
        assert!(read.is_error());
        assert_eq!(read.into_result(), Err(error));

        let bare =
            serde_json::to_value(Response::<Value>::failure(Value::Null, ErrorObject::internal("x"))).expect("json");
        assert_eq!(bare, json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": "x"}}), "no data");
        let from_result = Response::from_result(json!(1), Err::<Value, _>(ErrorObject::invalid_params("p")));
        assert_eq!(from_result.into_result().map_err(|error| error.code), Err(INVALID_PARAMS));
    }

    #[test]
    fn responses_are_checked_for_version_shape_and_id() {
        let id = json!("abc");
        let ok = Response::<Value>::parse(br#"{"jsonrpc":"2.0","id":"abc","result":null}"#).expect("ok");
        assert_eq!(ok.check_id(&id), Ok(()));
        assert_eq!(ok.into_result(), Ok(Value::Null), "a null result is a result");
        let other = Response::<Value>::parse(br#"{"jsonrpc":"2.0","id":"zzz","result":{}}"#).expect("ok");
        assert!(matches!(other.check_id(&id), Err(ResponseError::IdMismatch { .. })));
        let null_error =
            Response::<Value>::parse(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#)
                .expect("ok");
        assert_eq!(null_error.check_id(&id), Ok(()), "an error for an unreadable request carries null");
        let null_result = Response::<Value>::parse(br#"{"jsonrpc":"2.0","id":null,"result":1}"#).expect("ok");
        assert!(null_result.check_id(&id).is_err(), "a result must echo the id");
        let no_id = Response::<Value>::parse(br#"{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}"#).expect("ok");
        assert_eq!(no_id.id, Value::Null);

        assert!(matches!(Response::<Value>::parse(b"<html>"), Err(ResponseError::NotJson(_))));
        assert_eq!(
            Response::<Value>::parse(br#"{"jsonrpc":"1.0","id":"abc","result":1}"#),
            Err(ResponseError::Version("1.0".into()))
        );
        for body in [
            r#"[]"#,
            r#"{"id":"abc","result":1}"#,
            r#"{"jsonrpc":2,"id":"abc","result":1}"#,
            r#"{"jsonrpc":"2.0","id":"abc"}"#,
            r#"{"jsonrpc":"2.0","id":"abc","result":1,"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":"abc","error":{"message":"no code"}}"#,
            r#"{"jsonrpc":"2.0","id":"abc","error":{"code":"1","message":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":"abc"}"#,
        ] {
            assert!(matches!(Response::<Value>::parse(body.as_bytes()), Err(ResponseError::Malformed(_))), "{body}");
        }
        let typed = Response::<u32>::parse(br#"{"jsonrpc":"2.0","id":1,"result":"x"}"#);
        assert!(matches!(typed, Err(ResponseError::Malformed(_))), "the result must be a T");
    }

    #[test]
    fn standard_codes() {
        assert_eq!(
            [PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR],
            [-32700, -32600, -32601, -32602, -32603]
        );
        assert_eq!(ErrorObject::parse_error("x").code, PARSE_ERROR);
        assert_eq!(ErrorObject::invalid_request("x").code, INVALID_REQUEST);
        assert_eq!(ErrorObject::method_not_found("x").code, METHOD_NOT_FOUND);
        assert!(is_valid_id(&json!(1)) && is_valid_id(&json!("1")) && is_valid_id(&Value::Null));
        assert!(!is_valid_id(&json!({})) && !is_valid_id(&json!([])) && !is_valid_id(&json!(false)));
    }
}
