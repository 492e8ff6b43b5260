//! Accord's client for the official A2A protocol, over the JSON-RPC, the HTTP+JSON and the gRPC
//! bindings: 1.0, with 0.3 as the fallback on the first two.
//!
//! ```no_run
//! use accord_client::a2a::{A2aClient, A2aClientOptions, user_text_message};
//! use accord_types::a2a::{SendMessageRequest, SendMessageResponse};
//! use futures_util::StreamExt;
//!
//! # async fn run() -> Result<(), accord_client::ClientError> {
//! let client = A2aClient::from_card_url("http://127.0.0.1:8787", A2aClientOptions::default()).await?;
//! println!("speaking {} at {}", client.binding(), client.interface().url);
//! let request = SendMessageRequest {
//!     tenant: None,
//!     message: user_text_message("hello"),
//!     configuration: None,
//!     metadata: None,
//! };
//! if let SendMessageResponse::Task(task) = client.send_message(request.clone()).await? {
//!     println!("{} is {}", task.id, task.status.state);
//! }
//! let mut events = client.send_streaming_message(request).await?;
//! while let Some(event) = events.next().await {
//!     println!("{:?}", event?.response);
//! }
//! # Ok(()) }
//! ```
//!
//! **Choosing an interface.** The card's `supportedInterfaces` are walked in the order of the
//! caller's preference ([`A2aClientOptions::bindings`], default `JSONRPC`, `HTTP+JSON`, then
//! `GRPC`): the first interface whose `protocolBinding` equals a preferred binding exactly and
//! whose `protocolVersion` is `1.0` wins (another `1.x` only when no `1.0` one is listed). Bindings
//! this client does not speak (custom URIs such as `urn:accord:binding:lucid-http`) are skipped.
//! To prefer gRPC, say so: `A2aClientOptions::with_bindings(["GRPC", "JSONRPC"])`. When no 1.x entry fits, a `0.3` entry is taken the same way (a 0.3 card, which has
//! no `supportedInterfaces`, is read as one listing its `url` and `additionalInterfaces` at 0.3:
//! [`parse_card`]). When nothing fits, construction fails with
//! [`ClientError::NoCompatibleInterface`](crate::ClientError::NoCompatibleInterface) before any request is made.
//!
//! **gRPC.** A `GRPC` interface's `url` is `host:port` (plaintext HTTP/2, as the official SDKs and
//! the TCK connect), `http://host:port` (the same) or `https://host:port` (HTTP/2 over TLS, with
//! the system's root certificates); anything else fails construction with
//! [`ClientError::InvalidUrl`](crate::ClientError::InvalidUrl). Calls are the RPCs of `lf.a2a.v1.A2AService`, converted to and
//! from the same types as the other bindings; the caller's headers travel as metadata with
//! `a2a-version: 1.0`, the interface's `tenant` in each request's `tenant` field, and errors are
//! read from the `google.rpc.Status` (a connection failure is [`ClientError::GrpcTransport`](crate::ClientError::GrpcTransport)).
//! Answers are decoded up to [`MAX_RESPONSE_BYTES`] per message. There is no 0.3 fallback on gRPC
//! (0.3's gRPC is another service): `VersionNotSupported` is returned as it comes.
//! [`A2aClientOptions::http`] is not used by gRPC calls.
//!
//! **Falling back to 0.3.** A client bound to 1.0 that is answered `VersionNotSupported` switches
//! — itself and its clones, for every later call — to the card's 0.3 entry of the same binding
//! ([`choose_interface_v03`]; else 0.3 at the same URL) and makes the call again; no other error
//! switches it. In 0.3 the calls are spelled in 0.3 (JSON-RPC `message/send` …, or the REST
//! routes `/v1/message:send` … with the 0.3 proto's ProtoJSON) through the one conversion in
//! [`accord_types::a2a::v03`], and read back into the same 1.0 types; `list_tasks` is
//! `UnsupportedOperation` (0.3 has no such call). [`A2aClient::protocol_version`] says which is
//! in use.
//!
//! **Wire.** Every 1.0 request carries `A2A-Version: 1.0`; 0.3 requests carry none. Requests are sent as `application/json`;
//! responses are read whatever their JSON media type (`application/json` or the v1.0.1
//! `application/a2a+json`, which the official SDKs use for REST). The interface's `tenant`, when
//! set, is copied into every request (JSON-RPC `params.tenant`; REST path prefix `/{tenant}`).
//! Responses are limited to [`MAX_RESPONSE_BYTES`] (one event, for streams).
//!
//! **Streams** ([`A2aClient::send_streaming_message`], [`A2aClient::subscribe`]) yield
//! [`A2aEvent`]s that keep their SSE `id` (gRPC streams have none). A stream ends after the server closes it once the task
//! reached a terminal or interrupted state (or after a single `Message`). If the connection drops
//! or stalls for [`A2aClientOptions::stream_idle_timeout`] before that, the stream reconnects with
//! `SubscribeToTask` and `Last-Event-ID` set to the last SSE id seen — at most
//! [`A2aClientOptions::max_reconnects`] times in a row, waiting
//! [`A2aClientOptions::reconnect_delay`] before each attempt; a received event resets the count.
//! Without any SSE id seen (always, on gRPC), the resumed stream starts with the task's current
//! snapshot. When the
//! attempts are used up the stream yields [`ClientError::StreamInterrupted`](crate::ClientError::StreamInterrupted) and ends. An error
//! inside a stream (a JSON-RPC error response, or an SSE `event: error` frame), an unreadable
//! event or one larger than [`MAX_RESPONSE_BYTES`] is yielded as one error item, and the stream
//! ends. Once the task has settled, the stream waits at most 5 s more for the server to close it
//! (a final task snapshot may still come).

//!
//! **Layout.** [`A2aClient`] (`client`) holds one binding behind one seam (`transport`): the
//! JSON-RPC (`jsonrpc`), HTTP+JSON (`rest`) and gRPC (`grpc`) bindings, and the 0.3 dialect
//! (`v03`) as an adapter over the first two. Card discovery is `card`; the HTTP plumbing the
//! HTTP bindings share is `http`; following a stream is `stream`; the error is `error`.

pub(crate) mod card;
pub(crate) mod client;

#[cfg(feature = "grpc")]
pub(crate) mod grpc;
pub(crate) mod http;
pub(crate) mod jsonrpc;
pub(crate) mod rest;
pub(crate) mod stream;
pub(crate) mod transport;
pub(crate) mod v03;

pub use card::{choose_interface, choose_interface_v03, fetch_card, parse_card};
pub use client::{A2aClient, A2aClientOptions, DEFAULT_BINDINGS, new_message_id, user_text_message};

pub use stream::{A2aEvent, A2aEventStream};
pub use transport::{A2A_VERSION, A2A_VERSION_HEADER, Binding, ProtocolVersion};

pub use crate::http::MAX_RESPONSE_BYTES;
