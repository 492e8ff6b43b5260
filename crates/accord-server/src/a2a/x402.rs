//! Paid tasks on the A2A faces: the x402 payments extension for A2A, v0.2, standalone flow.
//!
//! A new message for a priced skill without a payment gets its task back `input-required`, the
//! status message's metadata carrying `x402.payment.status: "payment-required"` and
//! `x402.payment.required` (the x402 `PaymentRequired` of the rail's own challenge). A follow-up
//! with that `taskId`, `x402.payment.status: "payment-submitted"` and `x402.payment.payload` (a
//! `PaymentPayload`) pays: the rail verifies and settles it as it would a `PAYMENT-SIGNATURE`
//! header, in the order the task service keeps for every paid task, and the skill runs with the
//! task's original input. The outcome is in the status messages: `payment-completed` with
//! `x402.payment.receipts` (the `SettleResponse`s), or `payment-failed` with
//! `x402.payment.error`. Only an x402 rail collects here; see `docs/behaviour.md`, "Paid tasks over
//! A2A (x402 extension)".

use std::sync::Arc;

use accord_engine::task::{PaymentFlow, PaymentOutcome, SettleFailure, Task};
use accord_engine::{Agent, Message, Part, Role, Skill, SkillError};
use accord_payments::x402::{self as wire, SettleResponse};
use accord_payments::{Operation, PaymentError, PaymentRequest, Receipt};
use accord_types::a2a::{A2aError, A2aErrorKind, AgentExtension};
use async_trait::async_trait;
use http::HeaderMap;
use serde_json::{Map, Value, json};

use crate::payments::{Priced, RailPayment, refused_as};
use crate::{PaymentsConfig, ServerConfig};

/// The extension's canonical URI (spec §2).
pub(crate) const EXTENSION_URI: &str = "https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2";

/// The metadata keys (spec §7).
pub(crate) const STATUS: &str = "x402.payment.status";
pub(crate) const REQUIRED: &str = "x402.payment.required";
pub(crate) const PAYLOAD: &str = "x402.payment.payload";
pub(crate) const RECEIPTS: &str = "x402.payment.receipts";
pub(crate) const ERROR: &str = "x402.payment.error";

/// The only rail whose payments travel this way.
const PROTOCOL: &str = "x402";

/// Declares the extension on the A2A faces (and so on the card) when the server collects with an
/// x402 rail and some skill's tasks are priced. Not `required`: free skills need no payment, and
/// a required extension would make every request of a client that does not activate it fail.
pub(crate) fn declare(agent: &Agent, mut config: ServerConfig) -> ServerConfig {
    let collects = config.payments.as_ref().is_some_and(|payments| payments.rail.protocol() == PROTOCOL)
        && agent.skills().iter().any(|skill| skill.pricing().task.is_some());
    if let Some(a2a) = config.a2a.as_mut()
        && collects
        && !a2a.extensions.iter().any(|extension| extension.uri.as_deref() == Some(EXTENSION_URI))
    {
        a2a.extensions.push(AgentExtension {
            uri: Some(EXTENSION_URI.into()),
            description: Some("Priced skills are paid with x402 (standalone flow): the task asks for the payment in its status message metadata.".into()),
            required: Some(false),
            params: None,
        });
    }
    config
}

/// Why a payment step refused.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The skill cannot be paid for here at all: answered as this error, the task untouched.
    Unpayable(A2aError),
    /// The payment was refused or could not be processed; nothing was charged.
    Failed(Failure),
}

/// A refused payment, as the extension reports it.
#[derive(Debug)]
pub(crate) struct Failure {
    /// The spec's error code (§9.1), or the rail's reason in its style.
    code: String,
    /// The rail's reason.
    reason: String,
    /// For people.
    text: String,
}

/// The A2A side of a paid task: the credential from the message's metadata, the payment request
/// and the outcomes as status messages. The task service decides the order of the steps.
pub(crate) struct X402Payment<'a> {
    config: Option<&'a PaymentsConfig>,
    /// The paid resource: the endpoint the payment request was made at (a follow-up reads it
    /// back from the task's payment request, so it may come by another binding).
    resource: String,
    /// The `PaymentPayload` the message submits.
    payload: Option<Value>,
    rail: RailPayment,
    /// The payload as the rail reads a credential.
    credential: HeaderMap,
    /// Passed to the facilitator with the settlement, so a retried one is not charged twice.
    idempotency_key: Option<String>,
}

impl<'a> X402Payment<'a> {
    /// The flow for a message sent at `resource`. Only a follow-up pays: a payment is always for
    /// a task whose payment request the agent made, so a payload on a new message is ignored.
    pub(crate) fn new(
        config: Option<&'a PaymentsConfig>,
        resource: String,
        message: Option<&Message>,
        follow_up: bool,
    ) -> Self {
        let metadata = message.filter(|_| follow_up).and_then(|message| message.metadata.as_ref());
        let submitted =
            metadata.and_then(|metadata| metadata.get(STATUS)).and_then(Value::as_str) == Some("payment-submitted");
        let payload = metadata.and_then(|metadata| metadata.get(PAYLOAD)).filter(|_| submitted).cloned();
        let credential = payload.as_ref().map(wire::credential_headers).unwrap_or_default();
        Self { config, resource, payload, rail: RailPayment::default(), credential, idempotency_key: None }
    }

    fn request(&self) -> Option<PaymentRequest<'_>> {
        self.rail.request(&self.resource, Operation::Task, &self.credential, self.idempotency_key.as_deref())
    }

    fn network(&self) -> String {
        self.rail.priced().map(|priced| priced.price.network.clone()).unwrap_or_default()
    }

    fn failure(&self, error: PaymentError, settling: bool) -> Refusal {
        Refusal::Failed(match error {
            PaymentError::Rejected { reason, .. } => Failure {
                code: error_code(&reason, settling),
                text: if settling {
                    format!("Payment settlement was refused: {reason}. Nothing was charged.")
                } else {
                    format!("Payment verification failed: {reason}. Nothing was charged.")
                },
                reason,
            },
            other => {
                tracing::warn!(error = %other, "x402 payment could not be processed");
                Failure {
                    code: "PAYMENT_UNAVAILABLE".into(),
                    reason: "payment_unavailable".into(),
                    text: "The payment could not be verified or settled right now. Nothing was charged; send a new message for a new payment request.".into(),
                }
            }
        })
    }
}

/// The spec's error code (§9.1) for a rail's reason; a settlement refused for any other reason is
/// `SETTLEMENT_FAILED`, a verification the reason itself in upper case.
fn error_code(reason: &str, settling: bool) -> String {
    let reason = reason.to_ascii_lowercase();
    let code = if reason.contains("insufficient_funds") {
        "INSUFFICIENT_FUNDS"
    } else if reason.contains("signature") {
        "INVALID_SIGNATURE"
    } else if reason.contains("expired") || reason.contains("valid_before") {
        "EXPIRED_PAYMENT"
    } else if reason.contains("nonce") {
        "DUPLICATE_NONCE"
    } else if reason.contains("network") {
        "NETWORK_MISMATCH"
    } else if reason.contains("amount") {
        "INVALID_AMOUNT"
    } else if settling {
        "SETTLEMENT_FAILED"
    } else {
        let code: String =
            reason.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        return if code.is_empty() { "INVALID_PAYMENT".into() } else { code };
    };
    code.into()
}

/// An agent message with `text` and the extension's `metadata`.
fn status_message(text: impl Into<String>, metadata: Value) -> Message {
    let metadata = match metadata {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Message::new(Role::Agent, vec![Part::Text(text.into())]).with_metadata(metadata)
}

fn receipts_value(receipts: &[SettleResponse]) -> Value {
    serde_json::to_value(receipts).unwrap_or_else(|_| Value::Array(Vec::new()))
}

#[async_trait]
impl PaymentFlow for X402Payment<'_> {
    type Receipt = Receipt;
    type Refusal = Refusal;

    fn accept(&mut self, skill: &Skill, amount: &str) -> Result<(), Refusal> {
        let key = skill.key();
        let Some(config) = self.config else {
            return Err(Refusal::Unpayable(
                A2aError::new(A2aErrorKind::UnsupportedOperation)
                    .with_message(format!("Skill \"{key}\" is priced and this agent has no payment rail configured")),
            ));
        };
        let protocol = config.rail.protocol();
        if protocol != PROTOCOL {
            return Err(Refusal::Unpayable(A2aError::new(A2aErrorKind::UnsupportedOperation).with_message(format!(
                "Skill \"{key}\" is priced and this agent collects with the {protocol} rail; the A2A faces take payments only through the x402 extension ({EXTENSION_URI}), with an x402 rail. Use the Lucid task routes to pay with {protocol}."
            ))));
        }
        let price = config.price(amount);
        if let Err(reason) = config.rail.supports(Operation::Task, &price) {
            return Err(Refusal::Unpayable(
                A2aError::new(A2aErrorKind::UnsupportedOperation)
                    .with_message(format!("Skill \"{key}\" cannot be paid for as a task: {reason}")),
            ));
        }
        self.rail.price(Priced { rail: Arc::clone(&config.rail), price }, skill);
        Ok(())
    }

    fn has_credential(&self) -> bool {
        self.payload.is_some()
    }

    fn admission_ttl(&self) -> Option<std::time::Duration> {
        self.config.map(|config| config.admission_ttl)
    }

    fn payment_request(&self) -> Option<Message> {
        let priced = self.rail.priced()?;
        let challenge = priced.rail.challenge(&self.request()?);
        crate::observe::payment(priced.rail.protocol(), "required");
        let mut required = wire::challenge_payment_required(&challenge)?;
        // The challenge's `error` names the HTTP header to send; here the payload goes in metadata.
        required.error = None;
        let price = &priced.price;
        let text =
            format!("Payment is required: {} {} on {} to {}.", price.amount, price.asset, price.network, price.pay_to);
        Some(status_message(text, json!({STATUS: "payment-required", REQUIRED: required})))
    }

    fn payment_for(&mut self, task: &Task) {
        let required = task.status_message.as_ref().and_then(|message| message.metadata.as_ref()?.get(REQUIRED));
        if let Some(url) = required.and_then(|required| required.pointer("/resource/url")).and_then(Value::as_str) {
            self.resource = url.to_owned();
        }
        self.idempotency_key = Some(format!("a2a-x402-{}", task.id));
    }

    async fn verify(&mut self) -> Result<(), Refusal> {
        let key = self.idempotency_key.as_deref();
        let verified = self.rail.verify(&self.resource, Operation::Task, &self.credential, key).await;
        verified.map_err(|error| self.failure(error, false))
    }

    async fn settle(&mut self) -> Result<Receipt, SettleFailure<Receipt, Refusal>> {
        let settled = self.rail.settle().await;
        settled.map_err(|failure| refused_as(failure, |error| self.failure(error, true)))
    }

    async fn abort(&mut self) {
        self.rail.abort().await;
    }

    fn outcome_message(&self, outcome: PaymentOutcome<'_, Receipt, Refusal>) -> Option<Message> {
        Some(match outcome {
            PaymentOutcome::Settled(receipt) => {
                let receipts = wire::receipt_settlements(receipt);
                status_message(
                    "Payment successful.",
                    json!({STATUS: "payment-completed", RECEIPTS: receipts_value(&receipts)}),
                )
            }
            PaymentOutcome::Refused(Refusal::Failed(failure)) => {
                // No settlement happened: the receipt says so, as the spec's failure example does.
                let receipt = SettleResponse {
                    success: false,
                    error_reason: Some(failure.reason.clone()),
                    payer: None,
                    transaction: String::new(),
                    network: self.network(),
                };
                status_message(
                    failure.text.clone(),
                    json!({STATUS: "payment-failed", ERROR: failure.code, RECEIPTS: receipts_value(&[receipt])}),
                )
            }
            PaymentOutcome::Refused(Refusal::Unpayable(error)) => status_message(
                error.message.clone(),
                json!({STATUS: "payment-failed", ERROR: "UNSUPPORTED_PAYMENT", RECEIPTS: []}),
            ),
            PaymentOutcome::Committed { receipt, error } => committed_message(receipt, error),
            _ => return None,
        })
    }
}

/// The payment committed (or may have) and the task did not run.
fn committed_message(receipt: &Receipt, error: &SkillError) -> Message {
    let receipts = receipts_value(&wire::receipt_settlements(receipt));
    if error.code == "settlement_uncertain" {
        // Money may have moved: whatever evidence exists is kept for reconciliation.
        status_message(
            error.message.clone(),
            json!({STATUS: "payment-failed", ERROR: "SETTLEMENT_UNCERTAIN", RECEIPTS: receipts}),
        )
    } else {
        status_message(error.message.clone(), json!({STATUS: "payment-completed", RECEIPTS: receipts}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rail_reasons_map_to_the_spec_error_codes() {
        assert_eq!(error_code("invalid_signature", false), "INVALID_SIGNATURE");
        assert_eq!(error_code("expired", false), "EXPIRED_PAYMENT");
        assert_eq!(error_code("nonce_spent", true), "DUPLICATE_NONCE");
        assert_eq!(error_code("network_mismatch", false), "NETWORK_MISMATCH");
        assert_eq!(error_code("insufficient_amount", false), "INVALID_AMOUNT");
        assert_eq!(error_code("insufficient_funds", true), "INSUFFICIENT_FUNDS");
        assert_eq!(error_code("resource_mismatch", false), "RESOURCE_MISMATCH");
        assert_eq!(error_code("resource_mismatch", true), "SETTLEMENT_FAILED");
        assert_eq!(error_code("", false), "INVALID_PAYMENT");
    }

    #[test]
    fn a_message_submits_a_payload_only_with_the_submitted_status() {
        let with = |metadata: Value| {
            let Value::Object(metadata) = metadata else { unreachable!() };
            Message::new(Role::User, Vec::new()).with_metadata(metadata)
        };
        let submitted = with(json!({STATUS: "payment-submitted", PAYLOAD: {"x402Version": 2}}));
        assert!(X402Payment::new(None, String::new(), Some(&submitted), true).has_credential());
        let rejected = with(json!({STATUS: "payment-rejected", PAYLOAD: {"x402Version": 2}}));
        assert!(!X402Payment::new(None, String::new(), Some(&rejected), true).has_credential());
        let empty = with(json!({STATUS: "payment-submitted"}));
        assert!(!X402Payment::new(None, String::new(), Some(&empty), true).has_credential());
        assert!(!X402Payment::new(None, String::new(), None, true).has_credential());
        assert!(!X402Payment::new(None, String::new(), Some(&submitted), false).has_credential(), "a new message");
    }
}
