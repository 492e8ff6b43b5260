//! The payment side every face shares: the server's payment settings ([`PaymentsConfig`]), the
//! priced operations of a skill, the rail's side of a paid request ([`RailPayment`]: price,
//! verification, settlement, abort, with their metrics) and the receipt headers on an answer.
//!
//! It owns no money logic — that is the [`PaymentRail`]'s — and no face's wire: where a
//! credential comes from and how a refusal is answered are each face's (the Lucid profile's in
//! `lucid::payments`, the A2A x402 extension's in `a2a::x402`). It names no face.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::SettleFailure;
use accord_engine::{Agent, Skill};
use accord_payments::{
    Admission, Operation, PaymentError, PaymentRail, PaymentRequest, Price, RECEIPT_HEADERS, Receipt,
};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;

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
    use axum::http::StatusCode;
    use axum::response::IntoResponse;

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
