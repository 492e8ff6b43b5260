//! The A2A v1.0 gRPC binding: the `lf.a2a.v1.A2AService` of the specification's `a2a.proto`,
//! served by tonic over the same [`A2aCore`] as the JSON-RPC and HTTP+JSON bindings.
//!
//! Each RPC converts its protobuf request into the A2A wire types (`accord_grpc`), checks it with
//! the same [`Validate`] rules the HTTP bindings apply, calls the core and converts the answer
//! back. Errors are `google.rpc.Status` with a `google.rpc.ErrorInfo` detail (and a
//! `google.rpc.BadRequest` for invalid fields), with the gRPC codes of the configured
//! [`ErrorMapping`].
//!
//! **Service parameters** come from the request metadata: `a2a-version` (absent or `1.0`: this
//! service is the 1.0 one — 0.3 has a gRPC package of its own; any other version is
//! `VersionNotSupported`), `a2a-extensions` (negotiated like the HTTP header; the activated ones
//! are echoed in the response metadata), and the credentials the HTTP bindings accept
//! (`authorization`, the API-key header), checked by the same layer. **Tenants** are the
//! requests' `tenant` fields, which scope the caller like the other bindings' tenants.
//!
//! The routes are `/lf.a2a.v1.A2AService/{method}` on the agent's router, so the binding is
//! served on the HTTP port (HTTP/2, by path and content type) and on any other listener that
//! serves the same router (`accord serve --grpc-port`).

use std::pin::Pin;
use std::sync::Arc;

use accord_grpc::pb;
use accord_grpc::pb::a2a_service_server::{A2aService, A2aServiceServer};
use accord_types::a2a::{self, A2aError, A2aErrorKind, ErrorMapping, Validate};
use futures_util::{Stream, StreamExt};
use tonic::{Request, Response, Status};

use super::A2aCore;
use crate::auth::{Principal, caller_of};
use crate::refusal::{Refusal, Refusals};

/// The gRPC service.
#[derive(Debug, Clone)]
pub(crate) struct GrpcFace {
    pub(crate) core: A2aCore,
    pub(crate) mapping: ErrorMapping,
    /// The card's builder, for `GetExtendedAgentCard`.
    pub(crate) card: Arc<crate::card::CardBuilder>,
}

/// A stream of `StreamResponse`s.
pub(crate) type GrpcStream = Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

/// The path the service's methods live under.
pub(crate) const SERVICE_PATH: &str = "/lf.a2a.v1.A2AService";

/// The service's methods, each a route of its own (so that the HTTP metrics name the method; a
/// method the service does not have is a 404, which gRPC clients read as `UNIMPLEMENTED`).
const METHODS: [&str; 11] = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "GetExtendedAgentCard",
    "DeleteTaskPushNotificationConfig",
];

/// The binding's routes: every method of the service, decoding messages up to `body_limit`
/// bytes, behind the content-type check.
pub(crate) fn router(face: GrpcFace, body_limit: usize) -> axum::Router {
    let mapping = face.mapping;
    let service =
        A2aServiceServer::new(face).max_decoding_message_size(body_limit).max_encoding_message_size(usize::MAX);
    METHODS
        .iter()
        .fold(axum::Router::new(), |router, method| {
            router.route_service(&format!("{SERVICE_PATH}/{method}"), service.clone())
        })
        // Only on the service's routes: a merged router's fallback must stay a plain 404.
        .route_layer(axum::middleware::from_fn_with_state(mapping, content_type))
}

/// Only protobuf over gRPC is served: another gRPC codec (`application/grpc+json`) is a
/// `ContentTypeNotSupported` status; a request that is not gRPC at all is HTTP 415, which is
/// what the gRPC protocol asks of a server.
async fn content_type(
    axum::extract::State(mapping): axum::extract::State<ErrorMapping>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let essence = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|value| value.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match essence.as_str() {
        "application/grpc" | "application/grpc+proto" => next.run(request).await,
        other if other.starts_with("application/grpc") => error_response(
            mapping,
            &A2aError::new(A2aErrorKind::ContentTypeNotSupported)
                .with_message(format!("{other} is not served: this binding speaks application/grpc+proto")),
        ),
        _ => (
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "the A2A gRPC binding takes application/grpc requests\n",
        )
            .into_response(),
    }
}

/// `error` as the status this binding answers with: the code of `mapping`, an `ErrorInfo` (and
/// the field violations), and `retry-after` metadata for a retryable error.
pub(crate) fn status_of(mapping: ErrorMapping, error: &A2aError) -> Status {
    let mut status = accord_grpc::status::to_status(error, mapping);
    if let Some(seconds) = super::errors::retry_after_of(error) {
        status.metadata_mut().insert("retry-after", seconds.into());
    }
    status
}

/// How this binding answers a layer's refusal: a trailers-only gRPC status (HTTP 200, as gRPC
/// requires) of the kind's code, with `retry-after` and `www-authenticate` as metadata.
pub(crate) fn refusals(mapping: ErrorMapping) -> Refusals {
    Refusals::new(move |refusal: &Refusal| {
        let mut response = error_response(mapping, &super::errors::refusal_error(refusal));
        refusal.append_challenges(&mut response);
        response
    })
}

/// An HTTP response carrying `error` as a gRPC status (trailers-only), for the layers in front
/// of the service (credentials, rate limits).
pub(crate) fn error_response(mapping: ErrorMapping, error: &A2aError) -> axum::response::Response {
    status_of(mapping, error).into_http::<axum::body::Body>()
}

/// Counts a call by method and the status it answered (a stream: the one it started with).
async fn counted<T>(
    method: &'static str,
    call: impl std::future::Future<Output = Result<T, Status>>,
) -> Result<T, Status> {
    let result = call.await;
    let code = match &result {
        Ok(_) => "OK",
        Err(status) => code_name(status.code()),
    };
    metrics::counter!(crate::observe::GRPC_CALLS, "method" => method, "code" => code).increment(1);
    result
}

/// The name of a gRPC status code (`NOT_FOUND`).
fn code_name(code: tonic::Code) -> &'static str {
    let number = code as i32;
    accord_types::a2a::GrpcCode::ALL
        .into_iter()
        .find(|known| known.number() == number)
        .map_or("UNKNOWN", accord_types::a2a::GrpcCode::name)
}

/// What every call starts with: the version and extension checks and the caller.
struct Call {
    caller: accord_engine::task::Caller,
    activated: Vec<String>,
    /// The request's metadata as HTTP headers (what the shared checks read).
    headers: http::HeaderMap,
}

impl GrpcFace {
    fn status(&self, error: &A2aError) -> Status {
        status_of(self.mapping, error)
    }

    /// Checks the service parameters of `request` and names its caller.
    fn begin<T>(&self, request: &Request<T>) -> Result<Call, Status> {
        let headers = request.metadata().clone().into_headers();
        let sent = headers.get("a2a-version").and_then(|value| value.to_str().ok()).map(str::trim);
        if let Some(version) = sent.filter(|version| !version.is_empty()) {
            let error = match crate::version::Requested::of(&headers, None) {
                crate::version::Requested::V1_0 => None,
                // The HTTP refusal of 0.3 speaks of a missing header, which is 1.0 here.
                crate::version::Requested::V0_3 => Some(A2aError::new(A2aErrorKind::VersionNotSupported).with_message(
                    format!("A2A-Version {version} is not supported by lf.a2a.v1.A2AService, which speaks 1.0"),
                )),
                other => Some(other.refusal_in(true, false)),
            };
            if let Some(error) = error {
                return Err(self.status(&error));
            }
        }
        let activated =
            super::negotiate_extensions(&headers, &self.core.extensions).map_err(|error| self.status(&error))?;
        Ok(Call { caller: caller_of(request.extensions()), activated, headers })
    }

    /// The request's message as the A2A wire type, checked like the HTTP bindings check theirs.
    fn parse<P, T>(&self, message: P) -> Result<T, Status>
    where
        T: TryFrom<P, Error = accord_grpc::ConvertError> + Validate,
    {
        let value = T::try_from(message).map_err(|error| self.status(&A2aError::from(error)))?;
        value.validate().map_err(|error| self.status(&A2aError::from(error)))?;
        Ok(value)
    }

    /// `value` as its protobuf message; a value that cannot be written is the server's fault.
    fn write<V, P>(&self, value: V) -> Result<P, Status>
    where
        P: TryFrom<V, Error = accord_grpc::ConvertError>,
    {
        P::try_from(value).map_err(|error| {
            tracing::error!(%error, "an A2A answer does not convert to its gRPC message");
            self.status(&A2aError::new(A2aErrorKind::Internal))
        })
    }

    /// `message` with the activated extensions echoed in its metadata.
    fn answer<P>(message: P, activated: &[String]) -> Response<P> {
        let mut response = Response::new(message);
        if !activated.is_empty()
            && let Ok(value) = activated.join(", ").parse()
        {
            response.metadata_mut().insert("a2a-extensions", value);
        }
        response
    }

    /// A core stream as a gRPC stream: each response converted; one that cannot be ends the
    /// stream with `INTERNAL`.
    fn stream(&self, stream: super::A2aStream) -> GrpcStream {
        let mapping = self.mapping;
        Box::pin(stream.map(move |(_, response)| {
            pb::StreamResponse::try_from(response).map_err(|error| {
                tracing::error!(%error, "an A2A stream response does not convert to its gRPC message");
                status_of(mapping, &A2aError::new(A2aErrorKind::Internal))
            })
        }))
    }

    /// The URL a payment is for: the method's URL on this server.
    fn resource<T>(&self, call: &Call, request: &Request<T>) -> String {
        self.core.resource(&call.headers, &http::Uri::from_static("/"), request.extensions())
    }
}

#[tonic::async_trait]
impl A2aService for GrpcFace {
    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        counted("SendMessage", async {
            let call = self.begin(&request)?;
            let resource = self.resource(&call, &request);
            let params: a2a::SendMessageRequest = self.parse(request.into_inner())?;
            let response = self.core.send_message(params, call.caller, resource).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer(self.write(response)?, &call.activated))
        })
        .await
    }

    type SendStreamingMessageStream = GrpcStream;

    async fn send_streaming_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<Self::SendStreamingMessageStream>, Status> {
        counted("SendStreamingMessage", async {
            let call = self.begin(&request)?;
            let resource = self.resource(&call, &request);
            let params: a2a::SendMessageRequest = self.parse(request.into_inner())?;
            let stream = self.core.send_streaming(params, call.caller, resource).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer(self.stream(stream), &call.activated))
        })
        .await
    }

    async fn get_task(&self, request: Request<pb::GetTaskRequest>) -> Result<Response<pb::Task>, Status> {
        counted("GetTask", async {
            let call = self.begin(&request)?;
            let params: a2a::GetTaskRequest = self.parse(request.into_inner())?;
            let task = self.core.get_task(params, call.caller).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer(self.write(task)?, &call.activated))
        })
        .await
    }

    async fn list_tasks(
        &self,
        request: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        counted("ListTasks", async {
            let call = self.begin(&request)?;
            let params: a2a::ListTasksRequest = self.parse(request.into_inner())?;
            let list = self.core.list_tasks(params, call.caller).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer(self.write(list)?, &call.activated))
        })
        .await
    }

    async fn cancel_task(&self, request: Request<pb::CancelTaskRequest>) -> Result<Response<pb::Task>, Status> {
        counted("CancelTask", async {
            let call = self.begin(&request)?;
            let params: a2a::CancelTaskRequest = self.parse(request.into_inner())?;
            let task = self.core.cancel_task(params, call.caller).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer(self.write(task)?, &call.activated))
        })
        .await
    }

    type SubscribeToTaskStream = GrpcStream;

    /// Starts with the task's snapshot: gRPC has no `Last-Event-ID`.
    async fn subscribe_to_task(
        &self,
        request: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<Self::SubscribeToTaskStream>, Status> {
        counted("SubscribeToTask", async {
            let call = self.begin(&request)?;
            let params: a2a::SubscribeToTaskRequest = self.parse(request.into_inner())?;
            let stream = self.core.subscribe(params, call.caller, None).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer(self.stream(stream), &call.activated))
        })
        .await
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        counted("CreateTaskPushNotificationConfig", async {
            let call = self.begin(&request)?;
            let params: a2a::TaskPushNotificationConfig = self.parse(request.into_inner())?;
            let config = self.core.create_push_config(params, call.caller).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer(self.write(config)?, &call.activated))
        })
        .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        counted("GetTaskPushNotificationConfig", async {
            let call = self.begin(&request)?;
            let params: a2a::GetTaskPushNotificationConfigRequest = self.parse(request.into_inner())?;
            let config = self.core.get_push_config(params, call.caller).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer(self.write(config)?, &call.activated))
        })
        .await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        counted("ListTaskPushNotificationConfigs", async {
            let call = self.begin(&request)?;
            let params: a2a::ListTaskPushNotificationConfigsRequest = self.parse(request.into_inner())?;
            let list = self.core.list_push_configs(params, call.caller).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer(self.write(list)?, &call.activated))
        })
        .await
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        counted("GetExtendedAgentCard", async {
            let call = self.begin(&request)?;
            let (_, extensions, message) = request.into_parts();
            let _params: a2a::GetExtendedAgentCardRequest = self.parse(message)?;
            // The card's URLs are those of the server the call reached: the same router serves the
            // HTTP bindings there too.
            let uri = extensions
                .get::<axum::extract::OriginalUri>()
                .map_or_else(|| http::Uri::from_static("/"), |original| original.0.clone());
            let base_url = crate::card::origin(&call.headers, &uri);
            let card = self
                .card
                .extended(extensions.get::<Principal>(), &base_url)
                .map_err(|(error, _challenges)| self.status(&error))?;
            // The A2A view of Accord's card: the members the proto has (the Lucid ones have no field).
            let card =
                serde_json::to_value(&card).and_then(serde_json::from_value::<a2a::AgentCard>).map_err(|error| {
                    tracing::error!(%error, "the extended card does not read as an A2A card");
                    self.status(&A2aError::new(A2aErrorKind::Internal))
                })?;
            Ok(Self::answer(self.write(card)?, &call.activated))
        })
        .await
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        counted("DeleteTaskPushNotificationConfig", async {
            let call = self.begin(&request)?;
            let params: a2a::DeleteTaskPushNotificationConfigRequest = self.parse(request.into_inner())?;
            self.core.delete_push_config(params, call.caller).await.map_err(|e| self.status(&e))?;
            Ok(Self::answer((), &call.activated))
        })
        .await
    }
}
