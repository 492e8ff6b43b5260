//! MPP: the `Payment` HTTP authentication scheme (`draft-ryan-httpauth-payment`, "The Payment
//! Authentication Scheme") with the `charge` intent (`draft-payment-intent-charge`), paid with
//! `accord-voucher` vouchers, verified and settled in process.
//!
//! # Wire format
//!
//! - Challenge ("Challenge (WWW-Authenticate)"): `402` with
//!   `WWW-Authenticate: Payment id="…", realm="…", method="accord-voucher", intent="charge",
//!   request="…", expires="…"` (and `description="…"` when the request has one, and `opaque`, a
//!   base64url JSON `{"nonce"}` that makes every challenge id unique), plus
//!   `Cache-Control: no-store` ("Caching") and `Content-Type: application/problem+json`.
//!   - `request` is base64url (no padding) of the JCS-serialized (RFC 8785) charge request
//!     `{"amount", "currency": <asset>, "recipient": <payTo>, "description"?,
//!     "methodDetails": {"network", "resource"}}` ("Request Schema" of the charge intent).
//!   - `expires` is an RFC 3339 UTC timestamp, [`DEFAULT_CHALLENGE_TTL`] ahead by default.
//!   - `id` is the recommended HMAC-SHA256 binding ("Recommended: HMAC-SHA256 Binding"):
//!     base64url (no padding) of HMAC-SHA256(server secret, `realm|method|intent|request|expires|
//!     digest|opaque`, with empty slots for absent optional parameters, and `|header` appended only
//!     when the `header` parameter is present). The server checks an echoed challenge without
//!     storing it.
//! - Body: Problem Details (RFC 9457) `{"type": "https://paymentauth.org/problems/<code>",
//!   "title", "status": 402, "detail", "challengeId"}` with the draft's codes ("Error Codes"):
//!   `payment-required`, `malformed-credential`, `invalid-challenge`, `payment-expired`,
//!   `payment-insufficient`, `verification-failed`, `invalid-payload`. The rejection reason of a
//!   [`PaymentError::Rejected`] is that code.
//! - Credential ("Credentials"): `Authorization: Payment <base64url JSON>` (or
//!   `Payment-Authorization`, when the challenge selects it), the JSON being `{"challenge": {id,
//!   realm, method, intent, request, expires, …echoed unchanged}, "source"?, "payload":
//!   <SignedVoucher>}`. As the Lucid gate does for MPP, a `PAYMENT-SIGNATURE` header carrying the
//!   same base64url credential (with or without the `Payment ` prefix) is accepted too.
//! - Receipt ("Payment-Receipt Header"): `Payment-Receipt: <base64url JSON {"status": "success",
//!   "method": "accord-voucher", "timestamp": <RFC 3339>, "reference": <receipt id>}>`.
//!
//! Verification checks the echoed challenge (method, intent, realm, the HMAC `id`, `expires`, and
//! that its request is this price for this resource), then the voucher against the price, then
//! that neither the voucher's nonce nor the challenge id was spent. `finalize` spends both at
//! once, so a challenge and a voucher each pay once ("Replay Protection").
//!
//! The draft's method identifiers are lowercase letters only (`payment-method-id = 1*LOWERALPHA`);
//! `accord-voucher` keeps the hyphen so that the scheme has one name in x402 and MPP.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::codec::{b64url, b64url_decode, now_unix, parse_rfc3339, rfc3339};
use crate::state::{Admitted, Settle};
use crate::voucher::{Expected, SignedVoucher, SpentNonces, VoucherError};
use crate::{Admission, Challenge, Operation, PaymentError, PaymentRail, PaymentRequest, Price, Receipt};

/// The payment method (the `accord-voucher` scheme).
pub const METHOD: &str = crate::voucher::SCHEME;
/// The intent.
pub const INTENT: &str = "charge";
/// The credential header selected by a challenge's `header` parameter.
pub const PAYMENT_AUTHORIZATION: &str = "payment-authorization";
/// The receipt header.
pub const PAYMENT_RECEIPT: &str = "payment-receipt";
/// The base of the problem type URIs.
pub const PROBLEM_BASE: &str = "https://paymentauth.org/problems/";
/// How long a challenge stays valid by default.
pub const DEFAULT_CHALLENGE_TTL: Duration = Duration::from_secs(300);
/// The shortest server secret accepted, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// One challenge of a `WWW-Authenticate` field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// The auth scheme (`Payment`, `Bearer`…).
    pub scheme: String,
    /// The auth-params, names lowercased, quoted-strings unescaped.
    pub params: Vec<(String, String)>,
}

impl AuthChallenge {
    /// The value of parameter `name` (lowercase).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Parses the challenges of every `WWW-Authenticate` field (RFC 9110 section 11: several
/// challenges may share one field, separated by commas).
pub fn parse_www_authenticate(headers: &HeaderMap) -> Vec<AuthChallenge> {
    headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(parse_challenges)
        .collect()
}

/// Parses one `WWW-Authenticate` field value.
pub fn parse_challenges(text: &str) -> Vec<AuthChallenge> {
    let bytes = text.as_bytes();
    let mut position = 0;
    let mut challenges = Vec::new();
    let skip = |position: &mut usize, set: &[u8]| {
        while *position < bytes.len() && set.contains(&bytes[*position]) {
            *position += 1;
        }
    };
    let token = |position: &mut usize| {
        let start = *position;
        while *position < bytes.len() && is_tchar(bytes[*position]) {
            *position += 1;
        }
        &text[start..*position]
    };
    loop {
        skip(&mut position, b" \t,");
        let scheme = token(&mut position);
        if scheme.is_empty() {
            break;
        }
        let mut challenge = AuthChallenge { scheme: scheme.to_string(), params: Vec::new() };
        loop {
            let mark = position;
            skip(&mut position, b" \t,");
            let name = token(&mut position);
            skip(&mut position, b" \t");
            if name.is_empty() || position >= bytes.len() || bytes[position] != b'=' {
                // The next challenge's scheme (or the end).
                position = mark;
                break;
            }
            position += 1;
            skip(&mut position, b" \t");
            let value = if bytes.get(position) == Some(&b'"') {
                position += 1;
                let mut value = String::new();
                let mut chars = text[position..].char_indices();
                let mut closed = false;
                while let Some((offset, character)) = chars.next() {
                    match character {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                value.push(escaped);
                            }
                        }
                        '"' => {
                            position += offset + 1;
                            closed = true;
                            break;
                        }
                        other => value.push(other),
                    }
                }
                if !closed {
                    position = bytes.len();
                }
                value
            } else {
                let start = position;
                while position < bytes.len()
                    && (is_tchar(bytes[position]) || bytes[position] == b'/' || bytes[position] == b'=')
                {
                    position += 1;
                }
                text[start..position].to_string()
            };
            challenge.params.push((name.to_ascii_lowercase(), value));
        }
        challenges.push(challenge);
        if position >= bytes.len() {
            break;
        }
        // Anything unparseable (a token68, stray characters): skip to the next comma.
        if !matches!(bytes[position], b' ' | b'\t' | b',') {
            while position < bytes.len() && bytes[position] != b',' {
                position += 1;
            }
        }
    }
    challenges
}

/// Decodes a base64url JSON parameter (`request`, `opaque`).
pub fn decode_json_param(text: &str) -> Option<Value> {
    serde_json::from_slice(&b64url_decode(text)?).ok()
}

/// A quoted-string, with `"` and `\` escaped and anything that is not visible ASCII replaced.
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for character in value.chars() {
        match character {
            '"' | '\\' => {
                out.push('\\');
                out.push(character);
            }
            ' '..='~' => out.push(character),
            _ => out.push('?'),
        }
    }
    out.push('"');
    out
}

/// The echoed challenge inside a credential.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EchoedChallenge {
    /// `id`.
    pub id: String,
    /// `realm`.
    pub realm: String,
    /// `method`.
    pub method: String,
    /// `intent`.
    pub intent: String,
    /// `request`.
    pub request: String,
    /// `expires`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// `description`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `opaque`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque: Option<String>,
    /// `digest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// `header`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
}

impl EchoedChallenge {
    /// The challenge's parameters as a client echoes them.
    pub fn from_challenge(challenge: &AuthChallenge) -> Self {
        let get = |name: &str| challenge.param(name).map(str::to_string);
        Self {
            id: get("id").unwrap_or_default(),
            realm: get("realm").unwrap_or_default(),
            method: get("method").unwrap_or_default(),
            intent: get("intent").unwrap_or_default(),
            request: get("request").unwrap_or_default(),
            expires: get("expires"),
            description: get("description"),
            opaque: get("opaque"),
            digest: get("digest"),
            header: get("header"),
        }
    }

    /// The HMAC input of "Recommended: HMAC-SHA256 Binding".
    pub fn binding_input(&self) -> String {
        let mut input = [
            self.realm.as_str(),
            &self.method,
            &self.intent,
            &self.request,
            self.expires.as_deref().unwrap_or_default(),
            self.digest.as_deref().unwrap_or_default(),
            self.opaque.as_deref().unwrap_or_default(),
        ]
        .join("|");
        if let Some(header) = &self.header {
            input.push('|');
            input.push_str(header);
        }
        input
    }
}

/// The credential (`Authorization: Payment <base64url of this>`).
#[derive(Clone, Serialize, Deserialize)]
pub struct MppCredential {
    /// The echoed challenge.
    pub challenge: EchoedChallenge,
    /// The payer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The method-specific proof (a [`SignedVoucher`]).
    pub payload: Value,
}

impl fmt::Debug for MppCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MppCredential")
            .field("challenge", &self.challenge)
            .field("source", &self.source)
            .field("payload", &"<redacted>")
            .finish()
    }
}

/// The header a client answers `challenge` with, carrying `payload`: `Authorization`, or
/// `Payment-Authorization` when the challenge's `header` parameter selects it (`None` for a
/// value when the `header` parameter names anything else, which the draft forbids answering).
pub fn credential_header(challenge: &AuthChallenge, payload: Value) -> (HeaderName, Option<HeaderValue>) {
    let echoed = EchoedChallenge::from_challenge(challenge);
    let name = match echoed.header.as_deref() {
        None => http::header::AUTHORIZATION,
        Some(header) if header.eq_ignore_ascii_case("Payment-Authorization") => {
            HeaderName::from_static(PAYMENT_AUTHORIZATION)
        }
        Some(_) => return (http::header::AUTHORIZATION, None),
    };
    let credential = MppCredential { challenge: echoed, source: None, payload };
    let json = serde_json::to_vec(&credential).unwrap_or_default();
    (name, HeaderValue::from_str(&format!("Payment {}", b64url(&json))).ok())
}

/// Reads the credential text (the base64url part) from the request.
fn credential_text(headers: &HeaderMap) -> Option<String> {
    let payment = |value: &HeaderValue| {
        let text = value.to_str().ok()?.trim();
        let (scheme, rest) = text.split_once(' ')?;
        scheme.eq_ignore_ascii_case("payment").then(|| rest.trim().to_string())
    };
    headers
        .get_all(http::header::AUTHORIZATION)
        .iter()
        .find_map(payment)
        .or_else(|| headers.get(PAYMENT_AUTHORIZATION).and_then(payment))
        .or_else(|| {
            let value = headers.get(crate::x402::PAYMENT_SIGNATURE)?;
            payment(value).or_else(|| value.to_str().ok().map(|text| text.trim().to_string()))
        })
}

/// The `Payment` scheme rail.
#[derive(Clone)]
pub struct MppRail {
    realm: String,
    secret: Arc<Zeroizing<Vec<u8>>>,
    challenge_ttl: Duration,
    spent: Arc<SpentNonces>,
}

impl fmt::Debug for MppRail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MppRail")
            .field("realm", &self.realm)
            .field("secret", &"<redacted>")
            .field("challenge_ttl", &self.challenge_ttl)
            .finish_non_exhaustive()
    }
}

impl MppRail {
    /// A rail for protection space `realm` (e.g. the host name), binding challenges with `secret`
    /// (at least [`MIN_SECRET_BYTES`] bytes; keep it stable across restarts so outstanding
    /// challenges stay valid).
    pub fn new(realm: impl Into<String>, secret: &[u8]) -> Result<Self, String> {
        let realm = realm.into();
        if realm.is_empty() || !realm.bytes().all(|byte| (b' '..=b'~').contains(&byte)) {
            return Err("the MPP realm must be non-empty visible ASCII".into());
        }
        if secret.len() < MIN_SECRET_BYTES {
            return Err(format!("the MPP challenge secret must have at least {MIN_SECRET_BYTES} bytes"));
        }
        Ok(Self {
            realm,
            secret: Arc::new(Zeroizing::new(secret.to_vec())),
            challenge_ttl: DEFAULT_CHALLENGE_TTL,
            spent: Arc::new(SpentNonces::new()),
        })
    }

    /// Sets how long challenges stay valid.
    pub fn with_challenge_ttl(mut self, ttl: Duration) -> Self {
        self.challenge_ttl = ttl;
        self
    }

    /// Shares a spent set.
    pub fn with_spent(mut self, spent: Arc<SpentNonces>) -> Self {
        self.spent = spent;
        self
    }

    /// The realm.
    pub fn realm(&self) -> &str {
        &self.realm
    }

    fn mac(&self, input: &str) -> Hmac<Sha256> {
        // HMAC accepts keys of any length, so this cannot fail.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(self.secret.as_slice())
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(input.as_bytes());
        mac
    }

    /// The charge request JSON for `request`.
    pub fn charge_request(request: &PaymentRequest<'_>) -> Value {
        let mut charge = json!({
            "amount": request.price.amount,
            "currency": request.price.asset,
            "recipient": request.price.pay_to,
            "methodDetails": {"network": request.price.network, "resource": request.resource},
        });
        if let Some(description) = request.description {
            charge["description"] = Value::from(description);
        }
        charge
    }

    /// A fresh challenge for `request` with the problem `code` (`payment-required` first).
    fn challenge_with(&self, request: &PaymentRequest<'_>, code: &str, detail: &str) -> Challenge {
        let charge = serde_json_canonicalizer::to_vec(&Self::charge_request(request)).unwrap_or_default();
        let expires = now_unix().saturating_add(self.challenge_ttl.as_secs().max(1));
        let mut echoed = EchoedChallenge {
            realm: self.realm.clone(),
            method: METHOD.into(),
            intent: INTENT.into(),
            request: b64url(&charge),
            expires: Some(rfc3339(expires)),
            description: request.description.map(str::to_string),
            // A fresh nonce makes every challenge's id unique, even two for the same price in the
            // same second: a challenge is spent once, so ids must never repeat.
            opaque: Some(b64url(
                json!({"nonce": crate::codec::random_hex16().unwrap_or_default()}).to_string().as_bytes(),
            )),
            ..EchoedChallenge::default()
        };
        echoed.id = b64url(&self.mac(&echoed.binding_input()).finalize().into_bytes());
        let mut value = format!(
            "Payment id={}, realm={}, method={}, intent={}, request={}, expires={}",
            quoted(&echoed.id),
            quoted(&echoed.realm),
            quoted(METHOD),
            quoted(INTENT),
            quoted(&echoed.request),
            quoted(echoed.expires.as_deref().unwrap_or_default()),
        );
        if let Some(description) = &echoed.description {
            value.push_str(&format!(", description={}", quoted(description)));
        }
        if let Some(opaque) = &echoed.opaque {
            value.push_str(&format!(", opaque={}", quoted(opaque)));
        }
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(http::header::WWW_AUTHENTICATE, value);
        }
        headers.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        let body = json!({
            "type": format!("{PROBLEM_BASE}{code}"),
            "title": problem_title(code),
            "status": 402,
            "detail": detail,
            "challengeId": echoed.id,
        });
        Challenge { headers, body }
    }

    fn reject(&self, request: &PaymentRequest<'_>, code: &str, detail: &str) -> PaymentError {
        PaymentError::Rejected { reason: code.to_string(), challenge: self.challenge_with(request, code, detail) }
    }

    /// Checks the echoed challenge; the error is a problem code and detail.
    fn check_echo(
        &self,
        echoed: &EchoedChallenge,
        request: &PaymentRequest<'_>,
        now: u64,
    ) -> Result<u64, (&'static str, String)> {
        if echoed.method != METHOD || echoed.intent != INTENT || echoed.realm != self.realm {
            return Err(("invalid-challenge", "the credential answers another kind of challenge".into()));
        }
        let id = b64url_decode(&echoed.id).unwrap_or_default();
        if self.mac(&echoed.binding_input()).verify_slice(&id).is_err() {
            return Err(("invalid-challenge", "the challenge was not issued by this server or was altered".into()));
        }
        let expires = echoed
            .expires
            .as_deref()
            .and_then(parse_rfc3339)
            .ok_or(("invalid-challenge", "the challenge has no valid expiry".to_string()))?;
        if now >= expires {
            return Err(("payment-expired", "the challenge has expired".into()));
        }
        let charge = decode_json_param(&echoed.request).unwrap_or(Value::Null);
        let expected = Self::charge_request(request);
        let same = ["amount", "currency", "recipient"].iter().all(|key| charge[key] == expected[key])
            && charge["methodDetails"]["network"] == expected["methodDetails"]["network"]
            && charge["methodDetails"]["resource"] == expected["methodDetails"]["resource"];
        if !same {
            return Err(("invalid-challenge", "the challenge was issued for another price or resource".into()));
        }
        Ok(expires)
    }
}

fn problem_title(code: &str) -> &'static str {
    match code {
        "payment-required" => "Payment Required",
        "payment-insufficient" => "Payment Insufficient",
        "payment-expired" => "Payment Expired",
        "verification-failed" => "Verification Failed",
        "malformed-credential" => "Malformed Credential",
        "invalid-challenge" => "Invalid Challenge",
        "invalid-payload" => "Invalid Payload",
        _ => "Payment Error",
    }
}

/// The problem code for a voucher refusal.
fn problem_code(error: &VoucherError) -> &'static str {
    match error {
        VoucherError::Malformed(_) => "invalid-payload",
        VoucherError::InsufficientAmount => "payment-insufficient",
        VoucherError::Expired => "payment-expired",
        VoucherError::NonceSpent => "invalid-challenge",
        _ => "verification-failed",
    }
}

#[async_trait]
impl PaymentRail for MppRail {
    fn protocol(&self) -> &'static str {
        "mpp"
    }

    fn card_entry(&self) -> Value {
        json!({"protocol": "mpp", "method": METHOD, "intent": INTENT, "realm": self.realm})
    }

    fn supports(&self, _operation: Operation, price: &Price) -> Result<(), String> {
        price.validate()
    }

    fn has_credential(&self, headers: &HeaderMap) -> bool {
        let payment = |value: &HeaderValue| {
            value.to_str().ok().is_some_and(|text| {
                text.trim_start().get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case("payment "))
            })
        };
        headers.get_all(http::header::AUTHORIZATION).iter().any(payment)
            || headers.get(PAYMENT_AUTHORIZATION).is_some_and(payment)
            || headers.contains_key(crate::x402::PAYMENT_SIGNATURE)
    }

    fn challenge(&self, request: &PaymentRequest<'_>) -> Challenge {
        self.challenge_with(request, "payment-required", "Payment is required for this resource.")
    }

    async fn verify(&self, request: &PaymentRequest<'_>) -> Result<Box<dyn Admission>, PaymentError> {
        let Some(text) = credential_text(request.headers) else {
            return Err(self.reject(request, "payment-required", "Payment is required for this resource."));
        };
        let credential: MppCredential = match b64url_decode(&text).and_then(|bytes| serde_json::from_slice(&bytes).ok())
        {
            Some(credential) => credential,
            None => return Err(self.reject(request, "malformed-credential", "The credential is not base64url JSON.")),
        };
        let now = now_unix();
        let expires = self
            .check_echo(&credential.challenge, request, now)
            .map_err(|(code, detail)| self.reject(request, code, &detail))?;
        let voucher = SignedVoucher::from_value(&credential.payload)
            .map_err(|_| self.reject(request, "invalid-payload", "The payload is not an accord-voucher."))?;
        voucher.verify(&Expected::from_price(request.price, request.resource), now).map_err(|error| {
            self.reject(request, problem_code(&error), &format!("The voucher was refused: {error}."))
        })?;
        let keys = vec![voucher.nonce_key(), format!("challenge:{}", credential.challenge.id)];
        if keys.iter().any(|key| self.spent.is_spent(key, now)) {
            return Err(self.reject(request, "invalid-challenge", "The challenge or voucher was already used."));
        }
        let reference = voucher
            .receipt_id()
            .map_err(|error| self.reject(request, problem_code(&error), "The voucher is malformed."))?;
        Ok(Box::new(Admitted::new(MppAdmission {
            spent: self.spent.clone(),
            keys,
            until: expires.max(voucher.voucher.valid_before),
            voucher,
            reference,
            challenge: self.challenge_with(request, "verification-failed", "The payment could not be settled."),
        })))
    }
}

/// A verified `Payment` credential.
struct MppAdmission {
    spent: Arc<SpentNonces>,
    keys: Vec<String>,
    until: u64,
    voucher: SignedVoucher,
    reference: String,
    challenge: Challenge,
}

impl fmt::Debug for MppAdmission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MppAdmission")
            .field("payer", &self.voucher.voucher.payer)
            .field("reference", &self.reference)
            .finish_non_exhaustive()
    }
}

impl MppAdmission {
    fn rejected(&self, code: &str, detail: &str) -> PaymentError {
        let mut challenge = self.challenge.clone();
        challenge.body["type"] = Value::from(format!("{PROBLEM_BASE}{code}"));
        challenge.body["title"] = Value::from(problem_title(code));
        challenge.body["detail"] = Value::from(detail);
        PaymentError::Rejected { reason: code.to_string(), challenge }
    }
}

#[async_trait]
impl Settle for MppAdmission {
    async fn settle(&self) -> Result<Receipt, PaymentError> {
        let now = now_unix();
        if now >= self.voucher.voucher.valid_before {
            return Err(self.rejected("payment-expired", "The voucher expired before settlement."));
        }
        if !self.spent.try_spend(&self.keys, self.until, now) {
            return Err(self.rejected("invalid-challenge", "The challenge or voucher was already used."));
        }
        let receipt = json!({
            "status": "success",
            "method": METHOD,
            "timestamp": rfc3339(now),
            "reference": self.reference,
        });
        let mut headers = HeaderMap::new();
        let value = b64url(&serde_json::to_vec(&receipt).unwrap_or_default());
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(PAYMENT_RECEIPT, value);
        }
        Ok(Receipt::new(headers))
    }

    fn challenge(&self) -> &Challenge {
        &self.challenge
    }

    fn payer(&self) -> Option<&str> {
        Some(&self.voucher.voucher.payer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wallet::Wallet;

    const RESOURCE: &str = "https://agent.example/entrypoints/echo/invoke";
    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn price(amount: &str) -> Price {
        Price { amount: amount.into(), asset: "usd".into(), network: "accord:local".into(), pay_to: "shop".into() }
    }

    fn request<'a>(price: &'a Price, headers: &'a HeaderMap) -> PaymentRequest<'a> {
        PaymentRequest {
            resource: RESOURCE,
            operation: Operation::Invoke,
            price,
            description: Some("Echo \"quoted\""),
            headers,
            idempotency_key: None,
        }
    }

    fn rail() -> MppRail {
        MppRail::new("agent.example", SECRET).expect("rail")
    }

    fn pay(rail: &MppRail, wallet: &Wallet, price: &Price) -> HeaderMap {
        let empty = HeaderMap::new();
        let challenge = rail.challenge(&request(price, &empty));
        wallet.pay(402, &challenge.headers, b"").expect("pay").expect("payable")
    }

    fn credential(headers: &HeaderMap) -> Value {
        let text = headers[http::header::AUTHORIZATION].to_str().expect("ascii");
        let encoded = text.strip_prefix("Payment ").expect("scheme");
        serde_json::from_slice(&b64url_decode(encoded).expect("base64url")).expect("json")
    }

    fn encode(credential: &Value) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = format!("Payment {}", b64url(&serde_json::to_vec(credential).expect("json")));
        headers.insert(http::header::AUTHORIZATION, HeaderValue::from_str(&value).expect("header"));
        headers
    }

    fn reason(error: PaymentError) -> String {
        match error {
            PaymentError::Rejected { reason, challenge } => {
                assert_eq!(challenge.body["type"], format!("{PROBLEM_BASE}{reason}"));
                assert!(challenge.headers.contains_key(http::header::WWW_AUTHENTICATE));
                reason
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_challenge_follows_the_draft() {
        let rail = rail();
        let price = price("1000");
        let headers = HeaderMap::new();
        let challenge = rail.challenge(&request(&price, &headers));
        assert_eq!(challenge.headers[http::header::CACHE_CONTROL], "no-store");
        assert_eq!(challenge.headers[http::header::CONTENT_TYPE], "application/problem+json");
        let parsed = parse_www_authenticate(&challenge.headers);
        assert_eq!(parsed.len(), 1);
        let parsed = &parsed[0];
        assert_eq!(parsed.scheme, "Payment");
        assert_eq!(parsed.param("realm"), Some("agent.example"));
        assert_eq!(parsed.param("method"), Some("accord-voucher"));
        assert_eq!(parsed.param("intent"), Some("charge"));
        assert_eq!(parsed.param("description"), Some("Echo \"quoted\""));
        let expires = parse_rfc3339(parsed.param("expires").expect("expires")).expect("rfc 3339");
        assert!(expires > now_unix() && expires <= now_unix() + 300);
        // The request is JCS: keys sorted, no whitespace.
        let request_bytes = b64url_decode(parsed.param("request").expect("request")).expect("base64url");
        assert_eq!(
            String::from_utf8(request_bytes).expect("utf-8"),
            format!(
                r#"{{"amount":"1000","currency":"usd","description":"Echo \"quoted\"","methodDetails":{{"network":"accord:local","resource":"{RESOURCE}"}},"recipient":"shop"}}"#
            )
        );
        // The opaque nonce makes every challenge unique.
        let opaque = parsed.param("opaque").expect("opaque");
        let nonce = decode_json_param(opaque).expect("base64url JSON");
        assert_eq!(nonce["nonce"].as_str().map(str::len), Some(32), "{nonce}");
        let again = rail.challenge(&request(&price, &headers));
        assert_ne!(again.body["challengeId"], challenge.body["challengeId"], "ids never repeat");
        // The id is the HMAC of the other parameters.
        let echoed = EchoedChallenge::from_challenge(parsed);
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(SECRET).expect("key");
        mac.update(
            format!(
                "agent.example|accord-voucher|charge|{}|{}||{opaque}",
                parsed.param("request").expect("request"),
                parsed.param("expires").expect("expires")
            )
            .as_bytes(),
        );
        assert_eq!(echoed.id, b64url(&mac.finalize().into_bytes()));
        assert_eq!(challenge.body["type"], "https://paymentauth.org/problems/payment-required");
        assert_eq!(challenge.body["status"], 402);
        assert_eq!(challenge.body["challengeId"], echoed.id);
        assert!(!format!("{rail:?}").contains("0123456789abcdef"));
    }

    #[test]
    fn challenges_with_several_schemes_parse() {
        let parsed = parse_challenges(
            r#"Bearer realm="x", error="invalid_token", Payment id="a\"b", realm=api, method="m", intent="charge", request="eyJ9", Basic realm="y""#,
        );
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[0].scheme, "Bearer");
        assert_eq!(parsed[0].param("error"), Some("invalid_token"));
        assert_eq!(parsed[1].scheme, "Payment");
        assert_eq!(parsed[1].param("id"), Some("a\"b"));
        assert_eq!(parsed[1].param("realm"), Some("api"));
        assert_eq!(parsed[1].param("request"), Some("eyJ9"));
        assert_eq!(parsed[2].scheme, "Basic");
        assert_eq!(parsed[2].param("realm"), Some("y"));
    }

    #[tokio::test]
    async fn a_credential_pays_once_with_a_receipt() {
        let rail = rail();
        let wallet = Wallet::generate().expect("wallet");
        let price = price("1000");
        let headers = pay(&rail, &wallet, &price);
        assert!(rail.has_credential(&headers));
        let echoed = credential(&headers);
        assert_eq!(echoed["challenge"]["method"], "accord-voucher");
        assert_eq!(echoed["payload"]["voucher"]["amount"], "1000");
        assert_eq!(echoed["payload"]["voucher"]["asset"], "usd");
        assert_eq!(echoed["payload"]["voucher"]["resource"], RESOURCE);

        let mut admission = rail.verify(&request(&price, &headers)).await.expect("valid");
        let receipt = admission.finalize().await.expect("settled");
        assert!(admission.is_committed());
        assert_eq!(receipt.headers.len(), 1);
        let text = receipt.headers[PAYMENT_RECEIPT].to_str().expect("ascii");
        let decoded: Value = serde_json::from_slice(&b64url_decode(text).expect("base64url")).expect("json");
        assert_eq!(decoded["status"], "success");
        assert_eq!(decoded["method"], "accord-voucher");
        assert!(parse_rfc3339(decoded["timestamp"].as_str().expect("timestamp")).is_some());
        let voucher = SignedVoucher::from_value(&echoed["payload"]).expect("voucher");
        assert_eq!(decoded["reference"], voucher.receipt_id().expect("id"));
        // Replay of the same credential.
        assert_eq!(reason(rail.verify(&request(&price, &headers)).await.expect_err("replay")), "invalid-challenge");
    }

    #[tokio::test]
    async fn echoed_challenges_are_checked() {
        let rail = rail();
        let wallet = Wallet::generate().expect("wallet");
        let price = price("1000");
        let headers = pay(&rail, &wallet, &price);
        let original = credential(&headers);

        // An altered parameter breaks the HMAC binding.
        let mut altered = original.clone();
        altered["challenge"]["expires"] = Value::from(rfc3339(now_unix() + 10_000));
        assert_eq!(
            reason(rail.verify(&request(&price, &encode(&altered))).await.expect_err("altered")),
            "invalid-challenge"
        );
        // Another server's secret.
        let other = MppRail::new("agent.example", b"another secret that is long enough!!").expect("rail");
        assert_eq!(reason(other.verify(&request(&price, &headers)).await.expect_err("foreign")), "invalid-challenge");
        // The challenge was for another price.
        let dearer = super::tests::price("2000");
        assert_eq!(reason(rail.verify(&request(&dearer, &headers)).await.expect_err("dearer")), "invalid-challenge");
        // Garbage.
        let mut garbage = HeaderMap::new();
        garbage.insert(http::header::AUTHORIZATION, HeaderValue::from_static("Payment !!!"));
        assert!(rail.has_credential(&garbage));
        assert_eq!(reason(rail.verify(&request(&price, &garbage)).await.expect_err("garbage")), "malformed-credential");
        // A tampered voucher.
        let mut tampered = original.clone();
        tampered["payload"]["voucher"]["payTo"] = Value::from("thief");
        assert_eq!(
            reason(rail.verify(&request(&price, &encode(&tampered))).await.expect_err("tampered")),
            "verification-failed"
        );
        // Not a voucher.
        let mut empty = original;
        empty["payload"] = json!({});
        assert_eq!(reason(rail.verify(&request(&price, &encode(&empty))).await.expect_err("empty")), "invalid-payload");
    }

    #[tokio::test]
    async fn expired_challenges_are_refused() {
        let rail = rail().with_challenge_ttl(Duration::from_secs(1));
        let wallet = Wallet::generate().expect("wallet");
        let price = price("1");
        let headers = pay(&rail, &wallet, &price);
        tokio::time::sleep(Duration::from_millis(2100)).await;
        assert_eq!(reason(rail.verify(&request(&price, &headers)).await.expect_err("expired")), "payment-expired");
    }

    #[tokio::test]
    async fn payment_signature_also_carries_the_credential() {
        let rail = rail();
        let wallet = Wallet::generate().expect("wallet");
        let price = price("3");
        let paid = pay(&rail, &wallet, &price);
        let text =
            paid[http::header::AUTHORIZATION].to_str().expect("ascii").trim_start_matches("Payment ").to_string();
        let mut headers = HeaderMap::new();
        headers.insert(crate::x402::PAYMENT_SIGNATURE, HeaderValue::from_str(&text).expect("header"));
        assert!(rail.has_credential(&headers));
        let mut admission = rail.verify(&request(&price, &headers)).await.expect("valid");
        admission.abort().await;
        assert!(!admission.is_committed());
        assert!(rail.spent.is_empty());
    }

    #[tokio::test]
    async fn wallets_honour_the_header_parameter_and_their_cap() {
        let wallet = Wallet::from_secret(&[9; 32]).with_max_amount("10").expect("cap");
        let rail = rail();
        let price = price("11");
        let empty = HeaderMap::new();
        let challenge = rail.challenge(&request(&price, &empty));
        assert!(matches!(wallet.pay(402, &challenge.headers, b""), Err(crate::wallet::WalletError::OverCap { .. })));
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static(
                r#"Payment id="abc", realm="r", method="accord-voucher", intent="charge", header="Payment-Authorization", request="eyJhbW91bnQiOiIxIiwiY3VycmVuY3kiOiJ1c2QiLCJyZWNpcGllbnQiOiJzaG9wIn0""#,
            ),
        );
        let paid = wallet.pay(402, &headers, b"").expect("pay").expect("payable");
        assert!(paid.contains_key(PAYMENT_AUTHORIZATION));
        assert!(!paid.contains_key(http::header::AUTHORIZATION));
        // Another intent is not payable.
        headers.insert(
            http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static(
                r#"Payment id="abc", realm="r", method="accord-voucher", intent="session", request="e30""#,
            ),
        );
        assert_eq!(wallet.pay(402, &headers, b"").expect("pay"), None);
    }
}
