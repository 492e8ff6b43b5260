//! The Lucid profile's payment gate: priced skills, challenges, verification and settlement, in
//! the order the profile fixes (see `docs/behaviour.md`, "Payments"), with its refusals as Lucid
//! errors.
//!
//! The gate is shared by invoke, stream and task creation. It owns no money logic — that is the
//! rail's — only the order of the steps and what happens to the work at each failure: input is
//! validated before any payment step; a request without a credential gets the rail's `402` and
//! reserves nothing; a verified credential is settled only once the work is safe (a task durably
//! reserved and its claim renewed; an invocation finished); a failure before commit releases
//! everything; a failure after commit never loses the receipt. The rail's side is the shared
//! [`crate::payments`].

use std::sync::Arc;
use std::time::Duration;

use accord_engine::Skill;
use accord_engine::task::{PaymentFlow, SettleFailure};
use accord_payments::{Challenge, Operation, PaymentError, PaymentRequest, Receipt};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::LucidError;
use crate::payments::{PaymentsConfig, Priced, RailPayment, refused_as, with_receipt};

/// The price of `operation` on `skill`, if it has one: `503 payment_configuration_error` when no
/// rail is configured to collect it, `400 payment_capability_unsupported` when the rail cannot.
pub(crate) fn priced(
    payments: Option<&PaymentsConfig>,
    skill: &Skill,
    operation: Operation,
) -> Result<Option<Priced>, LucidError> {
    let pricing = skill.pricing();
    let amount = match operation {
        Operation::Invoke => &pricing.invoke,
        Operation::Stream => &pricing.stream,
        Operation::Task => &pricing.task,
    };
    let Some(amount) = amount else { return Ok(None) };
    let Some(payments) = payments else {
        tracing::error!(skill = %skill.key(), "a priced skill was called but no payment rail is configured");
        return Err(LucidError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "payment_configuration_error",
            "This entrypoint is priced but no payment rail is configured",
        ));
    };
    let price = payments.price(amount);
    if let Err(reason) = payments.rail.supports(operation, &price) {
        return Err(LucidError::new(StatusCode::BAD_REQUEST, "payment_capability_unsupported", reason));
    }
    Ok(Some(Priced { rail: Arc::clone(&payments.rail), price }))
}

/// The `402` a rail asks for.
pub(crate) fn challenge_response(challenge: Challenge) -> Response {
    let mut response = (StatusCode::PAYMENT_REQUIRED, axum::Json(challenge.body)).into_response();
    response.headers_mut().extend(challenge.headers);
    response
}

/// The response for a payment step that failed before anything moved, or whose settlement is
/// uncertain (for callers that have nothing better to answer with).
pub(crate) fn payment_error_response(error: PaymentError) -> Response {
    match error {
        PaymentError::Rejected { reason, challenge } => {
            tracing::info!(%reason, "payment rejected");
            challenge_response(challenge)
        }
        PaymentError::Unavailable { message } => {
            tracing::warn!(%message, "payment rail unavailable");
            LucidError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "authorization_failed",
                "The payment could not be verified or settled; nothing was charged",
            )
            .into_response()
        }
        PaymentError::Uncertain { message, receipt } => {
            tracing::error!(%message, "payment settlement uncertain");
            let mut response = LucidError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "settlement_uncertain",
                "The payment's settlement could not be confirmed",
            )
            .into_response();
            with_receipt(&mut response, &receipt);
            response
        }
        other => {
            tracing::error!(error = %other, "payment failed");
            LucidError::new(StatusCode::SERVICE_UNAVAILABLE, "authorization_failed", "The payment failed")
                .into_response()
        }
    }
}

/// A face's side of a paid run or task over HTTP: the rail from the server's payment settings,
/// the credential in the request's headers, refusals as the Lucid profile's responses. The engine
/// decides the order of the steps ([`accord_engine::task::TaskService::send_paid`],
/// [`accord_engine::Agent::invoke_paid`], [`accord_engine::Agent::stream_paid`]).
pub(crate) struct HttpPayment<'a> {
    config: Option<&'a PaymentsConfig>,
    headers: &'a HeaderMap,
    resource: String,
    operation: Operation,
    idempotency_key: Option<&'a str>,
    payer_unknown: Option<LucidError>,
    rail: RailPayment,
}

impl<'a> HttpPayment<'a> {
    pub(crate) fn new(
        config: Option<&'a PaymentsConfig>,
        headers: &'a HeaderMap,
        resource: String,
        operation: Operation,
        idempotency_key: Option<&'a str>,
    ) -> Self {
        Self {
            config,
            headers,
            resource,
            operation,
            idempotency_key,
            payer_unknown: None,
            rail: RailPayment::default(),
        }
    }

    /// Priced work is refused with `error` before any payment step: the payer is not known yet
    /// (a paid task's owner must be, so that its capability cannot outlive the payment).
    pub(crate) fn payer_unknown(mut self, error: LucidError) -> Self {
        self.payer_unknown = Some(error);
        self
    }

    fn request(&self) -> Option<PaymentRequest<'_>> {
        self.rail.request(&self.resource, self.operation, self.headers, self.idempotency_key)
    }

    /// Who pays for this request, once its credential is verified, as a digest: the SHA-256 of
    /// the rail and the payer it names (an x402 payer address, a voucher's key id) — or, when the
    /// rail names none, of the credential itself, which then matches no other credential. `None`
    /// before verification and for free work.
    pub(crate) fn payer_digest(&self) -> Option<String> {
        let admission = self.rail.admission()?;
        let rail = self.rail.rail_name().as_bytes();
        Some(match admission.payer() {
            Some(payer) => accord_engine::idempotency::fingerprint([b"payer".as_slice(), rail, payer.as_bytes()]),
            None => {
                let mut parts = vec![b"credential".as_slice(), rail];
                for name in ["payment-signature", "x-payment", "authorization"] {
                    parts.push(name.as_bytes());
                    parts.extend(self.headers.get_all(name).iter().map(HeaderValue::as_bytes));
                }
                accord_engine::idempotency::fingerprint(parts)
            }
        })
    }

    /// The rail's `402` for this request (an initial challenge reserves nothing).
    pub(crate) fn challenge(&self) -> Response {
        match (self.rail.priced(), self.request()) {
            (Some(priced), Some(request)) => {
                crate::observe::payment(priced.rail.protocol(), "required");
                challenge_response(priced.rail.challenge(&request))
            }
            _ => LucidError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal error").into_response(),
        }
    }
}

#[async_trait::async_trait]
impl PaymentFlow for HttpPayment<'_> {
    type Receipt = Receipt;
    type Refusal = Response;

    fn accept(&mut self, skill: &Skill, _amount: &str) -> Result<(), Response> {
        let Some(priced) = priced(self.config, skill, self.operation).map_err(IntoResponse::into_response)? else {
            return Ok(());
        };
        if let Some(error) = self.payer_unknown.take() {
            return Err(error.into_response());
        }
        self.rail.price(priced, skill);
        Ok(())
    }

    fn has_credential(&self) -> bool {
        self.rail.priced().is_some_and(|priced| priced.rail.has_credential(self.headers))
    }

    fn admission_ttl(&self) -> Option<Duration> {
        self.config.map(|config| config.admission_ttl)
    }

    async fn verify(&mut self) -> Result<(), Response> {
        let verified = self.rail.verify(&self.resource, self.operation, self.headers, self.idempotency_key).await;
        verified.map_err(payment_error_response)
    }

    async fn settle(&mut self) -> Result<Receipt, SettleFailure<Receipt, Response>> {
        self.rail.settle().await.map_err(|failure| refused_as(failure, payment_error_response))
    }

    async fn abort(&mut self) {
        self.rail.abort().await;
    }
}
