//! x402: the wire types of the x402 specification and [`X402Rail`], a client of an x402
//! facilitator.
//!
//! # Wire format (x402 v2, "Transport: HTTP")
//!
//! - Challenge: `402` with header `PAYMENT-REQUIRED` = base64 (standard alphabet, padded) of the
//!   JSON [`PaymentRequired`] (`x402-specification-v2`, section 5.1).
//! - Credential: request header `PAYMENT-SIGNATURE` = base64 JSON [`PaymentPayload`] (section
//!   5.2). The legacy x402 v1 header `X-PAYMENT` (base64 JSON [`PaymentPayloadV1`], or a v2
//!   payload) is read too.
//! - Receipt: response header `PAYMENT-RESPONSE` = base64 JSON [`SettleResponse`] (section 5.3).
//!   When, and only when, the credential came in the legacy `X-PAYMENT` header, the same value is
//!   also sent as `X-PAYMENT-RESPONSE` (the v1 transport's header).
//! - Facilitator (section 7): `POST /verify` and `POST /settle` with the JSON body
//!   `{"x402Version", "paymentPayload", "paymentRequirements"}`, answered with [`VerifyResponse`]
//!   and [`SettleResponse`]; `GET /supported` answers [`SupportedResponse`].
//!
//! # The challenge body
//!
//! The x402 HTTP transport leaves the `402` body to the server. Accord's rails send one JSON
//! object that is both the Lucid fallback shape and, apart from `error`, the `PaymentRequired`
//! object: `{"x402Version": 2, "error": {"code": "payment_required", "message", "price", "asset",
//! "network", "payTo", "reason"?}, "resource": {...}, "accepts": [...]}`. In the
//! `PAYMENT-REQUIRED` header `error` is the specification's human-readable string (the rejection
//! reason, or `PAYMENT-SIGNATURE header is required`).
//!
//! # Outcomes of [`X402Rail`]
//!
//! | step | facilitator answer | result |
//! | --- | --- | --- |
//! | verify | `isValid: true` | an admission |
//! | verify | `isValid: false` | `Rejected` (the `invalidReason`), with a fresh challenge |
//! | verify | unreachable, timeout, `5xx`, unparseable | `Unavailable` |
//! | settle | `success: true` | `Ok(receipt)`, committed |
//! | settle | `success: false` | `Rejected` (the `errorReason`), not committed |
//! | settle | connection refused (request never sent) | `Unavailable`, not committed |
//! | settle | timeout, connection lost after sending, `5xx`, unparseable | `Uncertain`, committed |
//!
//! The HTTP client keeps no idle connections, so a settlement is always sent on a fresh
//! connection and "refused" really means the request never left.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use http::{HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::codec::{b64_json_decode, b64_json_header};
use crate::state::{Admitted, Settle};
use crate::{Admission, Challenge, Operation, PaymentError, PaymentRail, PaymentRequest, Price, Receipt};

/// The protocol version this module speaks.
pub const X402_VERSION: u32 = 2;
/// `PAYMENT-REQUIRED` (server → client, the challenge).
pub const PAYMENT_REQUIRED: &str = "payment-required";
/// `PAYMENT-SIGNATURE` (client → server, the credential).
pub const PAYMENT_SIGNATURE: &str = "payment-signature";
/// `PAYMENT-RESPONSE` (server → client, the settlement).
pub const PAYMENT_RESPONSE: &str = "payment-response";
/// `X-PAYMENT` (the x402 v1 credential header).
pub const X_PAYMENT: &str = "x-payment";
/// `X-PAYMENT-RESPONSE` (the x402 v1 settlement header).
pub const X_PAYMENT_RESPONSE: &str = "x-payment-response";
/// The default `error` of a first challenge.
pub const CREDENTIAL_REQUIRED: &str = "PAYMENT-SIGNATURE header is required";

/// `ResourceInfo` (section 5.1.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    /// The resource URL.
    pub url: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The response MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// `PaymentRequirements` (section 5.1.2): one acceptable way to pay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirements {
    /// The scheme (`exact`, `upto`, `accord-voucher`…).
    pub scheme: String,
    /// The CAIP-2 network.
    pub network: String,
    /// The amount in atomic units.
    pub amount: String,
    /// The asset.
    pub asset: String,
    /// The payee.
    pub pay_to: String,
    /// How long the payment may take.
    pub max_timeout_seconds: u64,
    /// Scheme-specific data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

/// `PaymentRequired` (section 5.1): the challenge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequired {
    /// Always 2.
    pub x402_version: u32,
    /// Why payment is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The resource.
    pub resource: ResourceInfo,
    /// The acceptable payments.
    pub accepts: Vec<PaymentRequirements>,
    /// Extensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

/// `PaymentPayload` (section 5.2): the credential.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload {
    /// The protocol version.
    pub x402_version: u32,
    /// The resource, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceInfo>,
    /// The requirements the client chose, echoed.
    pub accepted: PaymentRequirements,
    /// Scheme-specific payment data.
    pub payload: Value,
    /// Extensions, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

impl fmt::Debug for PaymentPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PaymentPayload")
            .field("x402_version", &self.x402_version)
            .field("resource", &self.resource)
            .field("accepted", &self.accepted)
            .field("payload", &"<redacted>")
            .finish()
    }
}

/// x402 v1 `PaymentRequirements` (the legacy body challenge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirementsV1 {
    /// The scheme.
    pub scheme: String,
    /// The network.
    pub network: String,
    /// The amount in atomic units.
    pub max_amount_required: String,
    /// The resource URL.
    pub resource: String,
    /// A description.
    #[serde(default)]
    pub description: String,
    /// The response MIME type.
    #[serde(default)]
    pub mime_type: String,
    /// The output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The payee.
    pub pay_to: String,
    /// How long the payment may take.
    pub max_timeout_seconds: u64,
    /// The asset.
    pub asset: String,
    /// Scheme-specific data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

/// x402 v1 `PaymentPayload` (the `X-PAYMENT` header).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayloadV1 {
    /// Always 1.
    pub x402_version: u32,
    /// The scheme.
    pub scheme: String,
    /// The network.
    pub network: String,
    /// Scheme-specific payment data.
    pub payload: Value,
}

impl fmt::Debug for PaymentPayloadV1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PaymentPayloadV1")
            .field("scheme", &self.scheme)
            .field("network", &self.network)
            .field("payload", &"<redacted>")
            .finish()
    }
}

/// The body of `POST /verify` and `POST /settle` (section 7).
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FacilitatorRequest {
    /// The version of the payload (1 or 2).
    pub x402_version: u32,
    /// A [`PaymentPayload`] (or [`PaymentPayloadV1`]).
    pub payment_payload: Value,
    /// A [`PaymentRequirements`] (or [`PaymentRequirementsV1`]).
    pub payment_requirements: Value,
}

impl fmt::Debug for FacilitatorRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FacilitatorRequest")
            .field("x402_version", &self.x402_version)
            .field("payment_payload", &"<redacted>")
            .field("payment_requirements", &self.payment_requirements)
            .finish()
    }
}

/// `VerifyResponse` (section 5.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResponse {
    /// Whether the payment is valid.
    pub is_valid: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// Who pays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
}

/// `SettleResponse` (section 5.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    /// Whether the settlement succeeded.
    pub success: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// Who paid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    /// The transaction id (empty when the settlement failed).
    #[serde(default)]
    pub transaction: String,
    /// The network.
    #[serde(default)]
    pub network: String,
}

/// One `kinds[]` entry of `GET /supported` (section 7.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SupportedKind {
    /// The protocol version.
    pub x402_version: u32,
    /// The scheme.
    pub scheme: String,
    /// The network.
    pub network: String,
    /// Scheme-specific configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

/// `GET /supported` (section 7.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupportedResponse {
    /// Supported payment kinds.
    pub kinds: Vec<SupportedKind>,
    /// Implemented extensions.
    #[serde(default)]
    pub extensions: Vec<String>,
    /// CAIP-2 patterns to signer addresses.
    #[serde(default)]
    pub signers: Map<String, Value>,
}

/// A credential read from a request.
#[derive(Debug, Clone)]
pub enum Credential {
    /// An x402 v2 payload.
    V2(Box<PaymentPayload>),
    /// An x402 v1 payload.
    V1(PaymentPayloadV1),
}

impl Credential {
    /// The scheme-specific `payload`.
    pub fn payload(&self) -> &Value {
        match self {
            Self::V2(payload) => &payload.payload,
            Self::V1(payload) => &payload.payload,
        }
    }

    /// The chosen scheme.
    pub fn scheme(&self) -> &str {
        match self {
            Self::V2(payload) => &payload.accepted.scheme,
            Self::V1(payload) => &payload.scheme,
        }
    }

    /// The x402 version of the payload.
    pub fn version(&self) -> u32 {
        match self {
            Self::V2(payload) => payload.x402_version,
            Self::V1(payload) => payload.x402_version,
        }
    }

    /// The payload as JSON, as the facilitator receives it.
    pub fn to_value(&self) -> Value {
        match self {
            Self::V2(payload) => serde_json::to_value(payload),
            Self::V1(payload) => serde_json::to_value(payload),
        }
        .unwrap_or(Value::Null)
    }
}

/// Whether the request carries an x402 credential (`PAYMENT-SIGNATURE` or `X-PAYMENT`).
pub fn has_x402_credential(headers: &HeaderMap) -> bool {
    headers.contains_key(PAYMENT_SIGNATURE) || headers.contains_key(X_PAYMENT)
}

/// Reads the credential: `None` without one; `Some((Err(reason), legacy))` when it cannot be
/// decoded; `legacy` tells whether it came in `X-PAYMENT`.
pub fn read_credential(headers: &HeaderMap) -> Option<(Result<Credential, String>, bool)> {
    let (value, legacy) = match headers.get(PAYMENT_SIGNATURE) {
        Some(value) => (value, false),
        None => (headers.get(X_PAYMENT)?, true),
    };
    let decoded = value
        .to_str()
        .ok()
        .and_then(b64_json_decode)
        .ok_or_else(|| "the payment header is not base64 JSON".to_string())
        .and_then(|json| match json.get("x402Version").and_then(Value::as_u64) {
            Some(2) => serde_json::from_value(json)
                .map(|payload| Credential::V2(Box::new(payload)))
                .map_err(|_| "not an x402 v2 PaymentPayload".into()),
            Some(1) => {
                serde_json::from_value(json).map(Credential::V1).map_err(|_| "not an x402 v1 PaymentPayload".into())
            }
            _ => Err("unsupported x402Version".into()),
        });
    Some((decoded, legacy))
}

/// Builds the x402 challenge for `requirements` (see the module documentation for the body).
pub fn x402_challenge(
    requirements: &PaymentRequirements,
    request: &PaymentRequest<'_>,
    reason: Option<&str>,
) -> Challenge {
    let resource = ResourceInfo {
        url: request.resource.to_string(),
        description: request.description.map(str::to_string),
        mime_type: Some("application/json".into()),
    };
    let required = PaymentRequired {
        x402_version: X402_VERSION,
        error: Some(reason.unwrap_or(CREDENTIAL_REQUIRED).to_string()),
        resource: resource.clone(),
        accepts: vec![requirements.clone()],
        extensions: None,
    };
    let mut headers = HeaderMap::new();
    headers.insert(PAYMENT_REQUIRED, b64_json_header(&required));
    let mut error = json!({
        "code": "payment_required",
        "message": match reason {
            Some(reason) => format!("Payment rejected: {reason}"),
            None => "Payment required".to_string(),
        },
        "price": request.price.amount,
        "asset": request.price.asset,
        "network": request.price.network,
        "payTo": request.price.pay_to,
    });
    if let Some(reason) = reason {
        error["reason"] = Value::from(reason);
    }
    let body = json!({
        "x402Version": X402_VERSION,
        "error": error,
        "resource": resource,
        "accepts": [requirements],
    });
    Challenge { headers, body }
}

/// The receipt for a successful settlement: `PAYMENT-RESPONSE`, plus `X-PAYMENT-RESPONSE` when
/// the credential was legacy.
pub fn settlement_receipt(response: &SettleResponse, legacy: bool) -> Receipt {
    let value = b64_json_header(response);
    let mut headers = HeaderMap::new();
    if legacy {
        headers.insert(X_PAYMENT_RESPONSE, value.clone());
    }
    headers.insert(PAYMENT_RESPONSE, value);
    Receipt::new(headers)
}

/// The `PaymentRequired` an x402 challenge carries in its `PAYMENT-REQUIRED` header, for a
/// transport that carries it elsewhere (the A2A x402 extension puts it in message metadata).
/// `None` when the challenge has no such header (it is not an x402 challenge).
pub fn challenge_payment_required(challenge: &Challenge) -> Option<PaymentRequired> {
    let header = challenge.headers.get(PAYMENT_REQUIRED)?.to_str().ok()?;
    serde_json::from_value(b64_json_decode(header)?).ok()
}

/// Request headers carrying `payload` — an x402 `PaymentPayload` (v2, or v1) received by another
/// transport — as an HTTP client sends it (`PAYMENT-SIGNATURE`), so that a rail reads it exactly
/// like a credential that came in a header.
pub fn credential_headers(payload: &Value) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(PAYMENT_SIGNATURE, b64_json_header(payload));
    headers
}

/// The `SettleResponse`s a receipt carries (its `PAYMENT-RESPONSE` headers), decoded.
pub fn receipt_settlements(receipt: &Receipt) -> Vec<SettleResponse> {
    receipt
        .headers
        .get_all(PAYMENT_RESPONSE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter_map(b64_json_decode)
        .filter_map(|json| serde_json::from_value(json).ok())
        .collect()
}

/// The x402 v1 form of v2 requirements for `request`.
pub fn requirements_v1(requirements: &PaymentRequirements, request: &PaymentRequest<'_>) -> PaymentRequirementsV1 {
    PaymentRequirementsV1 {
        scheme: requirements.scheme.clone(),
        network: requirements.network.clone(),
        max_amount_required: requirements.amount.clone(),
        resource: request.resource.to_string(),
        description: request.description.unwrap_or_default().to_string(),
        mime_type: "application/json".into(),
        output_schema: None,
        pay_to: requirements.pay_to.clone(),
        max_timeout_seconds: requirements.max_timeout_seconds,
        asset: requirements.asset.clone(),
        extra: requirements.extra.clone(),
    }
}

/// Checks that a credential answers these requirements for this resource (the resource server's
/// own check before asking the facilitator).
pub fn check_accepted(
    credential: &Credential,
    requirements: &PaymentRequirements,
    resource: &str,
) -> Result<(), String> {
    match credential {
        Credential::V2(payload) => {
            let accepted = &payload.accepted;
            if accepted.scheme != requirements.scheme {
                return Err("unsupported_scheme".into());
            }
            if accepted.network != requirements.network {
                return Err("invalid_network".into());
            }
            if accepted.amount != requirements.amount
                || accepted.asset != requirements.asset
                || accepted.pay_to != requirements.pay_to
            {
                return Err("invalid_payment_requirements".into());
            }
            if payload.resource.as_ref().is_some_and(|info| info.url != resource) {
                return Err("resource_mismatch".into());
            }
            Ok(())
        }
        Credential::V1(payload) => {
            if payload.scheme != requirements.scheme {
                return Err("unsupported_scheme".into());
            }
            if payload.network != requirements.network {
                return Err("invalid_network".into());
            }
            Ok(())
        }
    }
}

/// Defaults of [`X402Rail`].
pub mod defaults {
    use std::time::Duration;

    /// `POST /verify` timeout.
    pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(10);
    /// `POST /settle` timeout.
    pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
    /// TCP connect timeout (within the per-call timeouts).
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
    /// The largest facilitator answer read.
    pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;
    /// `maxTimeoutSeconds` of the requirements.
    pub const MAX_TIMEOUT_SECONDS: u64 = 300;
    /// The scheme.
    pub const SCHEME: &str = "exact";
}

/// A rail that verifies and settles through an x402 facilitator over HTTP.
#[derive(Clone)]
pub struct X402Rail {
    facilitator: String,
    client: reqwest::Client,
    scheme: String,
    extra: Option<Value>,
    max_timeout_seconds: u64,
    verify_timeout: Duration,
    settle_timeout: Duration,
    max_response_bytes: usize,
}

impl fmt::Debug for X402Rail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("X402Rail")
            .field("facilitator", &self.facilitator)
            .field("scheme", &self.scheme)
            .field("max_timeout_seconds", &self.max_timeout_seconds)
            .field("verify_timeout", &self.verify_timeout)
            .field("settle_timeout", &self.settle_timeout)
            .finish_non_exhaustive()
    }
}

impl X402Rail {
    /// A rail using the facilitator at `facilitator` (an `http` or `https` base URL; `/verify`
    /// and `/settle` are appended), scheme `exact`, and the default timeouts.
    pub fn new(facilitator: &str) -> Result<Self, String> {
        let facilitator = facilitator.trim_end_matches('/').to_string();
        let parsed: http::Uri =
            facilitator.parse().map_err(|_| format!("facilitator URL {facilitator:?} is invalid"))?;
        if !matches!(parsed.scheme_str(), Some("http" | "https")) || parsed.host().is_none() {
            return Err(format!("facilitator URL {facilitator:?} is not an absolute http(s) URL"));
        }
        if parsed.authority().is_some_and(|authority| authority.as_str().contains('@')) {
            return Err("facilitator URL must not carry credentials".into());
        }
        let client = reqwest::Client::builder()
            .connect_timeout(defaults::CONNECT_TIMEOUT)
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| "could not build the HTTP client".to_string())?;
        Ok(Self {
            facilitator,
            client,
            scheme: defaults::SCHEME.into(),
            extra: None,
            max_timeout_seconds: defaults::MAX_TIMEOUT_SECONDS,
            verify_timeout: defaults::VERIFY_TIMEOUT,
            settle_timeout: defaults::SETTLE_TIMEOUT,
            max_response_bytes: defaults::MAX_RESPONSE_BYTES,
        })
    }

    /// Uses another scheme (`upto`, `accord-voucher`…).
    pub fn with_scheme(mut self, scheme: impl Into<String>) -> Self {
        self.scheme = scheme.into();
        self
    }

    /// Sets the requirements' `extra`.
    pub fn with_extra(mut self, extra: Value) -> Self {
        self.extra = Some(extra);
        self
    }

    /// Sets the requirements' `maxTimeoutSeconds`.
    pub fn with_max_timeout_seconds(mut self, seconds: u64) -> Self {
        self.max_timeout_seconds = seconds;
        self
    }

    /// Sets the `POST /verify` timeout.
    pub fn with_verify_timeout(mut self, timeout: Duration) -> Self {
        self.verify_timeout = timeout;
        self
    }

    /// Sets the `POST /settle` timeout.
    pub fn with_settle_timeout(mut self, timeout: Duration) -> Self {
        self.settle_timeout = timeout;
        self
    }

    /// Sets the largest facilitator answer read (larger answers count as unparseable).
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The facilitator's base URL.
    pub fn facilitator(&self) -> &str {
        &self.facilitator
    }

    /// The scheme.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// The requirements this rail asks for `price`.
    pub fn requirements(&self, price: &Price) -> PaymentRequirements {
        PaymentRequirements {
            scheme: self.scheme.clone(),
            network: price.network.clone(),
            amount: price.amount.clone(),
            asset: price.asset.clone(),
            pay_to: price.pay_to.clone(),
            max_timeout_seconds: self.max_timeout_seconds,
            extra: self.extra.clone(),
        }
    }

    fn caller(&self) -> Caller {
        Caller {
            client: self.client.clone(),
            facilitator: self.facilitator.clone(),
            max_response_bytes: self.max_response_bytes,
        }
    }
}

/// What happened to one facilitator call.
enum CallOutcome {
    /// The request never left (connection refused, connect timeout).
    NotSent,
    /// It was sent and no complete answer came back: timed out.
    TimedOut,
    /// It was sent and the connection failed before a complete answer.
    Lost,
    /// An answer (`body` is `None` when it was too large or could not be read).
    Answer { status: u16, body: Option<Vec<u8>> },
}

#[derive(Clone)]
struct Caller {
    client: reqwest::Client,
    facilitator: String,
    max_response_bytes: usize,
}

impl Caller {
    async fn post(&self, path: &str, body: &FacilitatorRequest, timeout: Duration, key: Option<&str>) -> CallOutcome {
        let mut request = self.client.post(format!("{}{path}", self.facilitator)).timeout(timeout).json(body);
        if let Some(key) = key.and_then(|key| HeaderValue::from_str(key).ok()) {
            request = request.header("idempotency-key", key);
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(error) if error.is_connect() => return CallOutcome::NotSent,
            Err(error) if error.is_timeout() => return CallOutcome::TimedOut,
            Err(_) => return CallOutcome::Lost,
        };
        let status = response.status().as_u16();
        let mut bytes = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > self.max_response_bytes {
                        return CallOutcome::Answer { status, body: None };
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => return CallOutcome::Answer { status, body: Some(bytes) },
                Err(error) if error.is_timeout() => return CallOutcome::TimedOut,
                Err(_) => return CallOutcome::Lost,
            }
        }
    }
}

#[async_trait]
impl PaymentRail for X402Rail {
    fn protocol(&self) -> &'static str {
        "x402"
    }

    fn card_entry(&self) -> Value {
        json!({
            "protocol": "x402",
            "x402Version": X402_VERSION,
            "scheme": self.scheme,
            "facilitator": self.facilitator,
        })
    }

    fn supports(&self, operation: Operation, price: &Price) -> Result<(), String> {
        price.validate()?;
        if self.scheme == "upto" && operation != Operation::Invoke {
            return Err("x402 upto only supports invoke operations".into());
        }
        Ok(())
    }

    fn has_credential(&self, headers: &HeaderMap) -> bool {
        has_x402_credential(headers)
    }

    fn challenge(&self, request: &PaymentRequest<'_>) -> Challenge {
        x402_challenge(&self.requirements(request.price), request, None)
    }

    async fn verify(&self, request: &PaymentRequest<'_>) -> Result<Box<dyn Admission>, PaymentError> {
        let requirements = self.requirements(request.price);
        let reject = |reason: &str| rejection(&requirements, request, reason);
        let (credential, legacy) = accepted_credential(&requirements, request)?;
        let body = FacilitatorRequest {
            x402_version: credential.version(),
            payment_payload: credential.to_value(),
            payment_requirements: match credential {
                Credential::V2(_) => serde_json::to_value(&requirements),
                Credential::V1(_) => serde_json::to_value(requirements_v1(&requirements, request)),
            }
            .unwrap_or(Value::Null),
        };
        let caller = self.caller();
        let verdict = match caller.post("/verify", &body, self.verify_timeout, None).await {
            CallOutcome::NotSent => return Err(unavailable("the facilitator could not be reached")),
            CallOutcome::TimedOut => return Err(unavailable("the facilitator did not answer /verify in time")),
            CallOutcome::Lost => return Err(unavailable("the connection to the facilitator was lost during /verify")),
            CallOutcome::Answer { status, .. } if status >= 500 => {
                return Err(unavailable(&format!("the facilitator answered /verify with status {status}")));
            }
            CallOutcome::Answer { status, body } => {
                match body.and_then(|body| serde_json::from_slice::<VerifyResponse>(&body).ok()) {
                    Some(verdict) if verdict.is_valid && (200..300).contains(&status) => verdict,
                    Some(verdict) if !verdict.is_valid => {
                        return Err(reject(verdict.invalid_reason.as_deref().unwrap_or("invalid_payment")));
                    }
                    _ => {
                        return Err(unavailable(&format!(
                            "the facilitator's /verify answer (status {status}) is not a VerifyResponse"
                        )));
                    }
                }
            }
        };
        Ok(Box::new(Admitted::new(X402Admission {
            caller,
            settle_timeout: self.settle_timeout,
            body,
            idempotency_key: request.idempotency_key.map(str::to_string),
            payer: verdict.payer,
            legacy,
            challenge: x402_challenge(&requirements, request, Some("settlement_failed")),
            requirements,
        })))
    }
}

/// A refusal of an x402 credential: the reason, with a fresh challenge carrying it.
pub(crate) fn rejection(
    requirements: &PaymentRequirements,
    request: &PaymentRequest<'_>,
    reason: &str,
) -> PaymentError {
    PaymentError::Rejected {
        reason: reason.to_string(),
        challenge: x402_challenge(requirements, request, Some(reason)),
    }
}

/// The request's x402 credential, read and checked against `requirements` (scheme, network,
/// amount, payee, resource): the credential and whether it came in the legacy `X-PAYMENT`
/// header, or the rejection.
// The error type is the contract's `PaymentError` (a challenge travels inside it).
#[allow(clippy::result_large_err)]
pub(crate) fn accepted_credential(
    requirements: &PaymentRequirements,
    request: &PaymentRequest<'_>,
) -> Result<(Credential, bool), PaymentError> {
    let Some((credential, legacy)) = read_credential(request.headers) else {
        return Err(rejection(requirements, request, "payment_required"));
    };
    let credential = credential.map_err(|_| rejection(requirements, request, "invalid_payload"))?;
    check_accepted(&credential, requirements, request.resource)
        .map_err(|reason| rejection(requirements, request, &reason))?;
    Ok((credential, legacy))
}

fn unavailable(message: &str) -> PaymentError {
    PaymentError::Unavailable { message: message.to_string() }
}

fn uncertain(message: &str, receipt: Receipt) -> PaymentError {
    PaymentError::Uncertain { message: message.to_string(), receipt }
}

/// An x402 payment verified by the facilitator, settled on `finalize`.
struct X402Admission {
    caller: Caller,
    settle_timeout: Duration,
    body: FacilitatorRequest,
    idempotency_key: Option<String>,
    payer: Option<String>,
    legacy: bool,
    challenge: Challenge,
    requirements: PaymentRequirements,
}

impl fmt::Debug for X402Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("X402Admission")
            .field("facilitator", &self.caller.facilitator)
            .field("scheme", &self.requirements.scheme)
            .field("payer", &self.payer)
            .field("legacy", &self.legacy)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Settle for X402Admission {
    async fn settle(&self) -> Result<Receipt, PaymentError> {
        let outcome =
            self.caller.post("/settle", &self.body, self.settle_timeout, self.idempotency_key.as_deref()).await;
        let (status, body) = match outcome {
            CallOutcome::NotSent => return Err(unavailable("the facilitator could not be reached to settle")),
            CallOutcome::TimedOut => {
                return Err(uncertain("the facilitator did not answer /settle in time", Receipt::default()));
            }
            CallOutcome::Lost => {
                return Err(uncertain("the connection to the facilitator was lost during /settle", Receipt::default()));
            }
            CallOutcome::Answer { status, body } => (status, body),
        };
        let answer = body.and_then(|body| serde_json::from_slice::<SettleResponse>(&body).ok());
        match answer {
            Some(answer) if status >= 500 => {
                // A failing status with a settlement in it: keep what evidence there is.
                let receipt =
                    if answer.success { settlement_receipt(&answer, self.legacy) } else { Receipt::default() };
                Err(uncertain(&format!("the facilitator answered /settle with status {status}"), receipt))
            }
            None if status >= 500 => {
                Err(uncertain(&format!("the facilitator answered /settle with status {status}"), Receipt::default()))
            }
            Some(answer) if answer.success && (200..300).contains(&status) => {
                Ok(settlement_receipt(&answer, self.legacy))
            }
            Some(answer) if !answer.success => {
                let reason = answer.error_reason.unwrap_or_else(|| "settlement_failed".into());
                let mut challenge = self.challenge.clone();
                challenge.body["error"]["reason"] = Value::from(reason.clone());
                Err(PaymentError::Rejected { reason, challenge })
            }
            _ => Err(uncertain(
                &format!("the facilitator's /settle answer (status {status}) is not a SettleResponse"),
                Receipt::default(),
            )),
        }
    }

    fn challenge(&self) -> &Challenge {
        &self.challenge
    }

    fn payer(&self) -> Option<&str> {
        self.payer.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::b64_decode_lenient;

    fn price() -> Price {
        Price { amount: "10000".into(), asset: "USDC".into(), network: "accord:local".into(), pay_to: "shop".into() }
    }

    fn request<'a>(price: &'a Price, headers: &'a HeaderMap) -> PaymentRequest<'a> {
        PaymentRequest {
            resource: "https://agent.example/entrypoints/echo/invoke",
            operation: Operation::Invoke,
            price,
            description: Some("Echo"),
            headers,
            idempotency_key: None,
        }
    }

    #[test]
    fn upto_only_supports_invoke() {
        let exact = X402Rail::new("http://127.0.0.1:9").expect("rail");
        let upto = exact.clone().with_scheme("upto");
        for operation in [Operation::Invoke, Operation::Stream, Operation::Task] {
            assert!(exact.supports(operation, &price()).is_ok());
        }
        assert!(upto.supports(Operation::Invoke, &price()).is_ok());
        assert_eq!(upto.supports(Operation::Task, &price()), Err("x402 upto only supports invoke operations".into()));
        assert_eq!(upto.supports(Operation::Stream, &price()), Err("x402 upto only supports invoke operations".into()));
        let mut bad = price();
        bad.amount = "1.5".into();
        assert!(exact.supports(Operation::Invoke, &bad).is_err());
    }

    #[test]
    fn facilitator_urls_are_checked() {
        assert!(X402Rail::new("ftp://facilitator").is_err());
        assert!(X402Rail::new("not a url").is_err());
        assert!(X402Rail::new("http://user:secret@127.0.0.1:1").is_err());
        assert_eq!(X402Rail::new("http://127.0.0.1:1/").expect("rail").facilitator(), "http://127.0.0.1:1");
    }

    #[test]
    fn the_challenge_header_is_a_v2_payment_required() {
        let rail = X402Rail::new("http://127.0.0.1:9")
            .expect("rail")
            .with_extra(json!({"name": "USDC"}))
            .with_max_timeout_seconds(60);
        let price = price();
        let headers = HeaderMap::new();
        let challenge = rail.challenge(&request(&price, &headers));
        let header = challenge.headers[PAYMENT_REQUIRED].to_str().expect("ascii");
        let decoded: Value = serde_json::from_slice(&b64_decode_lenient(header).expect("base64")).expect("json");
        assert_eq!(
            decoded,
            json!({
                "x402Version": 2,
                "error": "PAYMENT-SIGNATURE header is required",
                "resource": {"url": "https://agent.example/entrypoints/echo/invoke", "description": "Echo", "mimeType": "application/json"},
                "accepts": [{"scheme": "exact", "network": "accord:local", "amount": "10000", "asset": "USDC",
                             "payTo": "shop", "maxTimeoutSeconds": 60, "extra": {"name": "USDC"}}]
            })
        );
        assert_eq!(challenge.body["x402Version"], 2);
        assert_eq!(challenge.body["error"]["code"], "payment_required");
        assert_eq!(challenge.body["error"]["price"], "10000");
        assert_eq!(challenge.body["error"]["payTo"], "shop");
        assert_eq!(challenge.body["accepts"], decoded["accepts"]);
    }

    #[tokio::test]
    async fn credentials_are_checked_before_the_facilitator_is_asked() {
        // Nothing listens on port 9 of this host's loopback: a request that got that far would be
        // Unavailable, so Rejected proves the rail refused it first.
        let rail = X402Rail::new("http://127.0.0.1:9").expect("rail");
        let price = price();
        let mut headers = HeaderMap::new();
        headers.insert(PAYMENT_SIGNATURE, HeaderValue::from_static("%%%"));
        let error = rail.verify(&request(&price, &headers)).await.expect_err("garbage");
        assert!(matches!(&error, PaymentError::Rejected { reason, .. } if reason == "invalid_payload"), "{error:?}");

        let mut payload = PaymentPayload {
            x402_version: 2,
            resource: Some(ResourceInfo {
                url: "https://agent.example/other".into(),
                description: None,
                mime_type: None,
            }),
            accepted: rail.requirements(&price),
            payload: json!({}),
            extensions: None,
        };
        headers.insert(PAYMENT_SIGNATURE, b64_json_header(&payload));
        let error = rail.verify(&request(&price, &headers)).await.expect_err("other resource");
        assert!(matches!(&error, PaymentError::Rejected { reason, .. } if reason == "resource_mismatch"), "{error:?}");

        payload.resource = None;
        payload.accepted.amount = "1".into();
        headers.insert(PAYMENT_SIGNATURE, b64_json_header(&payload));
        let error = rail.verify(&request(&price, &headers)).await.expect_err("cheaper");
        match error {
            PaymentError::Rejected { reason, challenge } => {
                assert_eq!(reason, "invalid_payment_requirements");
                assert_eq!(challenge.body["error"]["reason"], "invalid_payment_requirements");
                let header = challenge.headers[PAYMENT_REQUIRED].to_str().expect("ascii");
                assert_eq!(b64_json_decode(header).expect("json")["error"], "invalid_payment_requirements");
            }
            other => panic!("{other:?}"),
        }

        // A well-formed credential goes to the facilitator, which is not there.
        payload.accepted.amount = "10000".into();
        headers.insert(PAYMENT_SIGNATURE, b64_json_header(&payload));
        let error = rail.verify(&request(&price, &headers)).await.expect_err("no facilitator");
        assert!(matches!(error, PaymentError::Unavailable { .. }), "{error:?}");
    }

    #[test]
    fn the_challenge_credential_and_receipt_travel_outside_headers_unchanged() {
        let rail = X402Rail::new("http://127.0.0.1:9").expect("rail");
        let price = price();
        let headers = HeaderMap::new();
        let challenge = rail.challenge(&request(&price, &headers));
        let required = challenge_payment_required(&challenge).expect("a PaymentRequired");
        assert_eq!(required.accepts, vec![rail.requirements(&price)]);
        assert_eq!(required.resource.url, "https://agent.example/entrypoints/echo/invoke");
        assert!(challenge_payment_required(&Challenge { headers: HeaderMap::new(), body: json!({}) }).is_none());

        let payload = PaymentPayload {
            x402_version: 2,
            resource: Some(required.resource),
            accepted: rail.requirements(&price),
            payload: json!({"signed": true}),
            extensions: None,
        };
        let carried = credential_headers(&serde_json::to_value(&payload).expect("json"));
        match read_credential(&carried) {
            Some((Ok(Credential::V2(read)), false)) => assert_eq!(*read, payload),
            other => panic!("{other:?}"),
        }

        let answer = SettleResponse {
            success: true,
            error_reason: None,
            payer: Some("p".into()),
            transaction: "t".into(),
            network: "accord:local".into(),
        };
        assert_eq!(receipt_settlements(&settlement_receipt(&answer, true)), vec![answer]);
        assert!(receipt_settlements(&Receipt::default()).is_empty());
    }

    #[test]
    fn receipts_name_the_legacy_header_only_for_legacy_credentials() {
        let answer = SettleResponse {
            success: true,
            error_reason: None,
            payer: Some("p".into()),
            transaction: "t".into(),
            network: "accord:local".into(),
        };
        let modern = settlement_receipt(&answer, false);
        assert_eq!(modern.headers.len(), 1);
        let value = modern.headers[PAYMENT_RESPONSE].to_str().expect("ascii");
        assert_eq!(
            b64_json_decode(value).expect("json"),
            json!({"success": true, "payer": "p", "transaction": "t", "network": "accord:local"})
        );
        let legacy = settlement_receipt(&answer, true);
        assert_eq!(legacy.headers.len(), 2);
        assert_eq!(legacy.headers[X_PAYMENT_RESPONSE], legacy.headers[PAYMENT_RESPONSE]);
    }
}
