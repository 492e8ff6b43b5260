//! The payment gate: priced skills, challenges, verification and settlement, in the order the
//! Lucid profile fixes (see `docs/behaviour.md`, "Payments").
//!
//! The gate is shared by invoke, stream and task creation. It owns no money logic — that is the
//! [`PaymentRail`]'s — only the order of the steps and what happens to the work at each failure:
//! input is validated before any payment step; a request without a credential gets the rail's
//! `402` and reserves nothing; a verified credential is settled only once the work is safe (a
//! task durably reserved and its claim renewed; an invocation finished); a failure before commit
//! releases everything; a failure after commit never loses the receipt.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{PaymentFlow, SettleFailure};
use accord_engine::{Agent, Skill};
use accord_payments::{
    Admission, Challenge, Operation, PaymentError, PaymentRail, PaymentRequest, Price, RECEIPT_HEADERS, Receipt,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::LucidError;

/// How paid skills are paid: the rail that collects, and the asset, network and payee every
/// price is in. A skill's [`accord_engine::Pricing`] gives the amounts.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PaymentsConfig {
    /// The rail.
    pub rail: Arc<dyn PaymentRail>,
    /// The asset amounts are in.
    pub asset: String,
    /// The network (`namespace:reference`).
    pub network: String,
    /// Who is paid.
    pub pay_to: String,
    /// How long a paid task's reservation waits for its payment to settle before the store reaps
    /// it (default 5 min).
    pub admission_ttl: Duration,
}

impl PaymentsConfig {
    /// Payments through `rail`, in `asset` on `network`, to `pay_to`.
    pub fn new(
        rail: Arc<dyn PaymentRail>,
        asset: impl Into<String>,
        network: impl Into<String>,
        pay_to: impl Into<String>,
    ) -> Self {
        Self {
            rail,
            asset: asset.into(),
            network: network.into(),
            pay_to: pay_to.into(),
            admission_ttl: Duration::from_secs(300),
        }
    }

    /// The full price of an amount.
    pub fn price(&self, amount: &str) -> Price {
        Price {
            amount: amount.to_owned(),
            asset: self.asset.clone(),
            network: self.network.clone(),
            pay_to: self.pay_to.clone(),
        }
    }

    /// Checks every price of `agent` against this configuration and the rail: call it when the
    /// server starts, so a price the rail cannot collect is found before a caller finds it.
    /// (The gate checks again per request and answers `400 payment_capability_unsupported`.)
    ///
    /// That every way of calling a priced skill is priced or free on purpose is checked earlier,
    /// when the agent is built ([`accord_engine::Pricing`]); this check repeats it, so a start-up
    /// that reaches here never serves a priced skill for nothing.
    pub fn check(&self, agent: &Agent) -> Result<(), String> {
        for skill in agent.skills() {
            let pricing = skill.pricing();
            let open = skill
                .operations()
                .into_iter()
                .find(|operation| pricing.amount(*operation).is_none() && !pricing.free.contains(operation));
            if let Some(operation) = open.filter(|_| pricing.is_priced()) {
                return Err(format!(
                    "skill {:?} is priced, but its {} is neither priced nor free on purpose",
                    skill.key(),
                    operation.as_str()
                ));
            }
            for (operation, amount) in priced_operations(skill) {
                let price = self.price(amount);
                price.validate().map_err(|reason| format!("skill {:?}: {reason}", skill.key()))?;
                self.rail
                    .supports(operation, &price)
                    .map_err(|reason| format!("skill {:?}, {}: {reason}", skill.key(), operation.as_str()))?;
            }
        }
        Ok(())
    }
}

/// A skill's priced operations with their amounts.
pub(crate) fn priced_operations(skill: &Skill) -> Vec<(Operation, &str)> {
    let pricing = skill.pricing();
    [(Operation::Invoke, &pricing.invoke), (Operation::Stream, &pricing.stream), (Operation::Task, &pricing.task)]
        .into_iter()
        .filter_map(|(operation, amount)| amount.as_deref().map(|amount| (operation, amount)))
        .collect()
}

/// A priced request: the rail and the price.
#[derive(Debug, Clone)]
pub(crate) struct Priced {
    pub(crate) rail: Arc<dyn PaymentRail>,
    pub(crate) price: Price,
}

/// The rail's side of a paid request, shared by every face's [`PaymentFlow`]: the price the rail
/// collects, the admission it verified, and the metric of each step. A face keeps what is its
/// own: where the credential comes from, the paid resource, and how a refusal is answered.
#[derive(Default)]
pub(crate) struct RailPayment {
    priced: Option<(Priced, Option<String>)>,
    admission: Option<Box<dyn Admission>>,
}

impl RailPayment {
    /// `skill`'s request is collected at `priced`.
    pub(crate) fn price(&mut self, priced: Priced, skill: &Skill) {
        self.priced = Some((priced, skill.description().map(str::to_owned)));
    }

    /// The rail and price, once priced.
    pub(crate) fn priced(&self) -> Option<&Priced> {
        self.priced.as_ref().map(|(priced, _)| priced)
    }

    /// The protocol of the rail collecting this request's price (`none` before it is priced).
    pub(crate) fn rail_name(&self) -> &'static str {
        self.priced().map_or("none", |priced| priced.rail.protocol())
    }

    /// The admission, once verified.
    pub(crate) fn admission(&self) -> Option<&dyn Admission> {
        self.admission.as_deref()
    }

    /// The rail's request for `resource`, once priced.
    pub(crate) fn request<'r>(
        &'r self,
        resource: &'r str,
        operation: Operation,
        headers: &'r HeaderMap,
        idempotency_key: Option<&'r str>,
    ) -> Option<PaymentRequest<'r>> {
        let priced = self.priced.as_ref()?;
        Some(request_at(priced, resource, operation, headers, idempotency_key))
    }

    /// Verifies the credential the request for `resource` carries and keeps the admission.
    pub(crate) async fn verify(
        &mut self,
        resource: &str,
        operation: Operation,
        headers: &HeaderMap,
        idempotency_key: Option<&str>,
    ) -> Result<(), PaymentError> {
        // The priced field alone is borrowed for the request, so the admission can be kept.
        let Some(priced) = self.priced.as_ref() else {
            return Err(PaymentError::Unavailable { message: "no payment rail".into() });
        };
        let request = request_at(priced, resource, operation, headers, idempotency_key);
        let rail = &priced.0.rail;
        match rail.verify(&request).await {
            Ok(admission) => {
                self.admission = Some(admission);
                Ok(())
            }
            Err(error) => {
                crate::observe::payment(rail.protocol(), "refused");
                Err(error)
            }
        }
    }

    /// Settles the verified admission.
    pub(crate) async fn settle(&mut self) -> Result<Receipt, SettleFailure<Receipt, PaymentError>> {
        let rail = self.rail_name();
        let Some(admission) = self.admission.as_mut() else {
            return Err(SettleFailure::Refused(PaymentError::Unavailable {
                message: "the payment was not verified".into(),
            }));
        };
        let settled = admission.finalize().await;
        crate::observe::payment(
            rail,
            match &settled {
                Ok(_) => "settled",
                Err(PaymentError::Uncertain { .. }) => "uncertain",
                Err(_) => "settle_failed",
            },
        );
        match settled {
            Ok(receipt) => Ok(receipt),
            Err(PaymentError::Uncertain { message, receipt }) => {
                tracing::error!(%message, rail, "payment settlement uncertain");
                Err(SettleFailure::Uncertain(receipt))
            }
            Err(error) => Err(SettleFailure::Refused(error)),
        }
    }

    /// Releases a verified admission that will not be settled.
    pub(crate) async fn abort(&mut self) {
        let rail = self.rail_name();
        if let Some(admission) = self.admission.as_mut() {
            crate::observe::payment(rail, "aborted");
            admission.abort().await;
        }
    }
}

/// The rail's request for `resource` at a price (with the skill's description).
fn request_at<'r>(
    (priced, description): &'r (Priced, Option<String>),
    resource: &'r str,
    operation: Operation,
    headers: &'r HeaderMap,
    idempotency_key: Option<&'r str>,
) -> PaymentRequest<'r> {
    PaymentRequest {
        resource,
        operation,
        price: &priced.price,
        description: description.as_deref(),
        headers,
        idempotency_key,
    }
}

/// A settlement's refusal in a face's terms (an uncertain one keeps its receipt).
pub(crate) fn refused_as<F>(
    failure: SettleFailure<Receipt, PaymentError>,
    refusal: impl FnOnce(PaymentError) -> F,
) -> SettleFailure<Receipt, F> {
    match failure {
        SettleFailure::Refused(error) => SettleFailure::Refused(refusal(error)),
        SettleFailure::Uncertain(receipt) => SettleFailure::Uncertain(receipt),
    }
}

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

/// Copies the receipt headers onto a response and makes it private to the payer: a response that
/// carries a receipt must not be served to anyone else from a shared cache.
pub(crate) fn with_receipt(response: &mut Response, receipt: &Receipt) {
    if receipt.is_empty() {
        return;
    }
    let headers = response.headers_mut();
    // Only settlement evidence is ever copied, whatever a rail put in its receipt.
    for (name, value) in receipt.headers.iter().filter(|(name, _)| RECEIPT_HEADERS.contains(&name.as_str())) {
        headers.append(name.clone(), value.clone());
    }
    private_cache_control(headers);
}

/// `Cache-Control` without `public`/`private`, then `private`.
fn private_cache_control(headers: &mut HeaderMap) {
    let kept: Vec<String> = headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|directive| {
            !directive.is_empty()
                && !directive.eq_ignore_ascii_case("public")
                && !directive.eq_ignore_ascii_case("private")
        })
        .map(str::to_owned)
        .collect();
    let value = kept.into_iter().chain(["private".to_owned()]).collect::<Vec<_>>().join(", ");
    headers.remove(header::CACHE_CONTROL);
    if let Ok(value) = HeaderValue::from_str(&value) {
        headers.insert(header::CACHE_CONTROL, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receipt_makes_the_response_private() {
        let mut response = StatusCode::OK.into_response();
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=60"));
        let mut receipt_headers = HeaderMap::new();
        receipt_headers.insert("payment-receipt", HeaderValue::from_static("r"));
        with_receipt(&mut response, &Receipt::new(receipt_headers));
        assert_eq!(response.headers()["payment-receipt"], "r");
        assert_eq!(response.headers()[header::CACHE_CONTROL], "max-age=60, private");

        let mut untouched = StatusCode::OK.into_response();
        untouched.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
        with_receipt(&mut untouched, &Receipt::default());
        assert_eq!(untouched.headers()[header::CACHE_CONTROL], "public", "no receipt, no change");
    }
}
