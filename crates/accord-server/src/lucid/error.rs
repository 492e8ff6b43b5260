//! The Lucid error shape, `{"error": {"code", "message"?, ...}}`, and the mapping of engine
//! errors onto it. Internal failures are logged here and never leak detail to the caller.

use accord_engine::{EndStatus, RunError};
use accord_types::lucid::{ErrorBody, ErrorDetail};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// An error response of the Lucid profile.
#[derive(Debug, Clone, PartialEq)]
pub struct LucidError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body (boxed: errors travel through `Result`s on every path).
    pub body: Box<ErrorBody>,
    /// Extra headers (`Retry-After`, …).
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl LucidError {
    /// An error with a code and a message.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self { status, body: Box::new(ErrorBody::new(code, message)), headers: Vec::new() }
    }

    /// An error with a code only.
    pub fn code_only(status: StatusCode, code: &str) -> Self {
        Self { status, body: Box::new(ErrorBody::code_only(code)), headers: Vec::new() }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    pub(crate) fn with_issues(status: StatusCode, code: &str, issues: &[accord_engine::Issue]) -> Self {
        let issues = issues.iter().filter_map(|issue| serde_json::to_value(issue).ok()).collect();
        Self {
            status,
            body: Box::new(ErrorBody {
                error: ErrorDetail { code: code.into(), issues: Some(issues), ..ErrorDetail::default() },
            }),
            headers: Vec::new(),
        }
    }

    pub(crate) fn invalid_json() -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", "Invalid JSON")
    }

    pub(crate) fn entrypoint_not_found() -> Self {
        Self::code_only(StatusCode::NOT_FOUND, "entrypoint_not_found")
    }
}

impl IntoResponse for LucidError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(*self.body)).into_response();
        response.headers_mut().extend(self.headers);
        response
    }
}

impl From<RunError> for LucidError {
    fn from(error: RunError) -> Self {
        match error {
            RunError::UnknownSkill { .. } => Self::entrypoint_not_found(),
            RunError::NotInvocable { .. } => Self::code_only(StatusCode::NOT_IMPLEMENTED, "not_implemented"),
            RunError::NotStreamable { key } => Self {
                status: StatusCode::BAD_REQUEST,
                body: Box::new(ErrorBody {
                    error: ErrorDetail {
                        code: "stream_not_supported".into(),
                        key: Some(key),
                        ..ErrorDetail::default()
                    },
                }),
                headers: Vec::new(),
            },
            RunError::InvalidInput { issues } => Self::with_issues(StatusCode::BAD_REQUEST, "invalid_input", &issues),
            error @ RunError::ScopeRequired { .. } => {
                Self::new(StatusCode::FORBIDDEN, "scope_required", error.to_string())
            }
            RunError::InvalidOutput { issues } => {
                tracing::warn!(issues = issues.len(), "skill output does not match its schema");
                Self::with_issues(StatusCode::INTERNAL_SERVER_ERROR, "invalid_output", &issues)
            }
            RunError::Failed(error) => {
                tracing::warn!(code = %error.code, "skill failed");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, &error.code, error.message)
            }
            RunError::Cancelled => Self::new(StatusCode::SERVICE_UNAVAILABLE, "run_cancelled", "The run was cancelled"),
            RunError::Incomplete { status, message } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                incomplete_code(status),
                message
                    .map(|message| message.text())
                    .filter(|text| !text.is_empty())
                    .unwrap_or_else(|| format!("The skill ended as {}", status.as_str())),
            ),
            other => {
                tracing::error!(error = %other, "unmapped run error");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal error")
            }
        }
    }
}

/// The code for a run that ended without an output.
pub(crate) fn incomplete_code(status: EndStatus) -> &'static str {
    match status {
        EndStatus::InputRequired => "input_required",
        EndStatus::AuthRequired => "auth_required",
        EndStatus::Rejected => "rejected",
        EndStatus::Cancelled => "run_cancelled",
        _ => "internal_error",
    }
}
