//! Accord's client for the Lucid HTTP profile.
//!
//! ```no_run
//! use accord_client::{Client, InvokeOptions};
//! use futures_util::StreamExt;
//!
//! # async fn run() -> Result<(), accord_client::ClientError> {
//! let client = Client::new();
//! let card = client.fetch_card("http://127.0.0.1:8787").await?;
//! let answer = client.invoke(&card, "echo", serde_json::json!({"text": "hi"}), InvokeOptions::default()).await?;
//! println!("{:?}", answer.output);
//!
//! let mut events = client.stream(&card, "ticks", serde_json::json!({"count": 3})).await?;
//! while let Some(event) = events.next().await {
//!     println!("{}", event?.event);
//! }
//! # Ok(()) }
//! ```
//!
//! Routes are resolved against the card's HTTP base URL — the first `supportedInterfaces` entry
//! whose binding contains `HTTP`, else `url` — so an agent mounted under a base path is reached
//! under it.
//!
//! For the official A2A protocol (1.0 over JSON-RPC, HTTP+JSON and gRPC, with 0.3 as the fallback),
//! use [`a2a::A2aClient`]; for the JSON-RPC tasks dialect, [`rpc`].
//!
//! **Errors.** Every call of the crate fails with [`ClientError`]: its variants are the kinds (the
//! peer not reached, an error answer, an unreadable answer, input refused before sending), and an
//! error that a request produced names its [`Operation`] and URL.
//!
//! **TLS.** `https://` peers are verified against the platform's roots. [`TlsOptions`] adds CA
//! certificates and a client certificate for mutual TLS, once for every client: load it into a
//! [`TlsConfig`] and build with [`Client::with_tls`] or [`a2a::A2aClientOptions::tls`]. A failed
//! handshake's error names its cause ([`tls_failure`]).
//!
//! **Features.** `grpc` (on by default) builds the A2A gRPC binding (tonic); without it the A2A
//! client passes over a card's `GRPC` interfaces, as bindings it does not speak.

pub mod a2a;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handshake;
mod http;
mod lucid;
pub mod payment;
pub mod rpc;
mod signed;
mod tasks;
mod tls;

/// The signed-card crate, re-exported so that keys, claims and reject reasons are of the version
/// this client verifies with.
pub use accord_card;
pub use error::{ClientError, Operation, TaskCreationFailure};
pub use handshake::tls_failure;
pub use http::MAX_RESPONSE_BYTES;
pub use lucid::{CARD_PATHS, Client, EventStream, InvokeOptions, StreamEvent};
pub use payment::Settlement;
pub use signed::{FetchedEnvelope, MAX_ENVELOPE_RESPONSE_BYTES, SIGNED_CARD_PATHS, VerifiedCard};
pub use tasks::{ListOptions, SendMessageResponse, SendOptions, TaskAccess, TaskEventStream, TaskStreamEvent};
pub use tls::{TlsConfig, TlsOptions};
