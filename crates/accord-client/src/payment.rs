//! Paying for priced entrypoints and tasks: the "payment-enabled fetch".
//!
//! A [`Client`](crate::Client) with a [`PaymentHook`] answers a `402 Payment Required` by asking
//! the hook for a credential and retrying the same request once with it (same body, same
//! `Idempotency-Key`, so the agent's payment provider can deduplicate a retried settlement). A
//! hook that declines, or a second `402`, is returned to the caller as the `402` it is.
//! Settlement evidence (`Payment-Receipt`, `Payment-Response`, `X-Payment-Response`) comes back
//! as a [`Settlement`] on successes and on
//! [`TaskCreationFailure`](crate::TaskCreationFailure).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::HeaderMap;

/// The response headers that carry settlement evidence.
const SETTLEMENT_HEADERS: [&str; 3] = ["payment-receipt", "payment-response", "x-payment-response"];

/// Payment evidence returned with a task capability.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settlement {
    /// `Payment-Receipt`.
    pub payment_receipt: Option<String>,
    /// `Payment-Response`.
    pub payment_response: Option<String>,
    /// `X-Payment-Response`.
    pub x_payment_response: Option<String>,
}

impl Settlement {
    pub(crate) fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let get = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::to_owned);
        let [receipt, response, x_response] = SETTLEMENT_HEADERS.map(get);
        (receipt.is_some() || response.is_some() || x_response.is_some()).then_some(Self {
            payment_receipt: receipt,
            payment_response: response,
            x_payment_response: x_response,
        })
    }
}

/// A `402` answer, as the hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct PaymentChallenge<'a> {
    /// The URL that asked for payment.
    pub url: &'a str,
    /// The response's headers (`PAYMENT-REQUIRED`, `WWW-Authenticate`, …).
    pub headers: &'a HeaderMap,
    /// The response's body.
    pub body: &'a [u8],
}

/// Produces payment credentials. Implemented by [`accord_payments::wallet::Wallet`] (the local
/// development rail's vouchers, for x402 and MPP challenges); implement it for any other wallet.
#[async_trait]
pub trait PaymentHook: Send + Sync + fmt::Debug {
    /// The headers to retry with (`PAYMENT-SIGNATURE`, `Authorization: Payment …`), or `None` to
    /// decline. An error is reported to the caller as the reason the payment was not made.
    async fn credential(&self, challenge: &PaymentChallenge<'_>) -> Result<Option<HeaderMap>, String>;
}

#[async_trait]
impl PaymentHook for accord_payments::wallet::Wallet {
    async fn credential(&self, challenge: &PaymentChallenge<'_>) -> Result<Option<HeaderMap>, String> {
        self.pay(402, challenge.headers, challenge.body).map_err(|error| error.to_string())
    }
}

/// What sending a request that may be paid for gave.
pub(crate) enum Sent {
    /// The response (the retried one, when a payment was made).
    Response(reqwest::Response),
    /// The hook declined with this reason.
    Declined(String),
}

/// Sends `request`; on a `402`, with a payment hook, pays and retries once.
pub(crate) async fn send_paying(
    payments: Option<&Arc<dyn PaymentHook>>,
    request: reqwest::RequestBuilder,
) -> Result<Sent, reqwest::Error> {
    let Some(hook) = payments else { return request.send().await.map(Sent::Response) };
    let retry = request.try_clone();
    let response = request.send().await?;
    let (true, Some(retry)) = (response.status() == reqwest::StatusCode::PAYMENT_REQUIRED, retry) else {
        return Ok(Sent::Response(response));
    };
    let status = response.status();
    let headers = response.headers().clone();
    let url = response.url().to_string();
    let body = response.bytes().await?;
    let challenge = PaymentChallenge { url: &url, headers: &headers, body: &body };
    match hook.credential(&challenge).await {
        Ok(Some(credential)) => retry.headers(credential).send().await.map(Sent::Response),
        Ok(None) => {
            // Nothing payable: the caller gets the 402 as it came.
            let mut rebuilt = http::Response::new(body.to_vec());
            *rebuilt.status_mut() = status;
            *rebuilt.headers_mut() = headers;
            Ok(Sent::Response(reqwest::Response::from(rebuilt)))
        }
        Err(reason) => Ok(Sent::Declined(reason)),
    }
}
