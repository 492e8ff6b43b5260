//! Accord's HTTP faces.
//!
//! [`router`] turns an [`Agent`] into an axum [`Router`] that serves the agent card and the
//! Lucid HTTP profile. The router is an ordinary axum router: nest it under a base path, merge it
//! with your own routes, wrap it in your own layers. Each face parses its wire, calls the engine
//! and maps the engine's errors to its own error shape; no face holds business rules.
//!
//! ```no_run
//! use accord_engine::{Agent, Skill, SkillError};
//! use accord_server::AgentRouterExt;
//! # #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)] struct Echo { text: String }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = Agent::builder("echo-agent")
//!     .skill(Skill::builder("echo").typed(|input: Echo, _run| async move { Ok::<_, SkillError>(input) }))
//!     .build()?;
//! let app = axum::Router::new().nest("/agents/echo", agent.router());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! // Bounded connections, requests in flight and client slowness; TCP_NODELAY (see `serve`).
//! accord_server::serve::Server::new(listener, app).await?;
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::Duration;

use accord_engine::Agent;
use accord_engine::idempotency::{IdempotencyConfig, IdempotencyStore};
use accord_engine::task::{ServiceConfig, TaskRuntime, TaskService};
use axum::Router;
use axum::routing::{get, post};

mod a2a;
pub mod auth;
mod body;
mod card;
pub mod client_address;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod jsonrpc_tasks;
mod landing;
mod limits;
mod lucid;
pub mod observe;
pub mod openapi;
mod payments;
pub mod push;
mod refusal;
pub mod serve;
mod sse;
pub mod tls;
mod version;

pub use card::SIGNED_CARD_PATH;
pub use card::jws::{JwsCardConfig, MAX_SIGNED_ORIGINS};
pub use card::signed::{DEFAULT_SIGNED_CARD_MAX_AGE, MAX_CACHED_ORIGINS, MIN_SIGNED_CARD_TTL, SignedCardConfig};
pub use limits::{CAPACITY_RETRY_AFTER_SECS, MAX_TRACKED_CALLERS, RateLimitConfig};
pub use lucid::error::LucidError;
pub use payments::PaymentsConfig;

/// Settings of the HTTP faces.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The largest request body accepted, in bytes (default 1 MiB). Larger bodies get 413.
    pub body_limit: usize,
    /// How long clients and proxies may cache the card (default 5 min).
    pub card_max_age: Duration,
    /// Limits of the invoke idempotency store.
    pub idempotency: IdempotencyConfig,
    /// The task runtime behind the `/tasks` routes; without one the routes are not mounted and
    /// the card does not advertise tasks.
    pub tasks: Option<TaskRuntime>,
    /// The Lucid profile's safety timeout of `GET /tasks/{id}/subscribe`: the stream ends after
    /// this long even if the task has not (default 5 min, as the profile says). The A2A and
    /// JSON-RPC task streams have no such timeout: their specifications keep a subscription open
    /// until the task ends, and their clients resume with `Last-Event-ID`.
    pub lucid_subscription_timeout: Duration,
    /// The JSON-RPC tasks face, mounted with the task routes (default: at `/a2a/tasks`, no
    /// scopes). `None` leaves it out.
    pub jsonrpc_tasks: Option<JsonRpcTasksConfig>,
    /// The official A2A v1.0 faces, mounted with the task routes (default: JSON-RPC at
    /// `/a2a/jsonrpc`). `None` leaves them out.
    pub a2a: Option<A2aConfig>,
    /// The signed card, served at [`SIGNED_CARD_PATH`] (and at `/.well-known/agent.json` when
    /// [`SignedCardConfig::serve_at_legacy_path`] is set). `None` (the default) serves none.
    pub signed_card: Option<SignedCardConfig>,
    /// The official A2A card signatures: every card route serves the card with a `signatures`
    /// entry (a JWS) per configured key. `None` (the default) serves the card unsigned.
    pub jws_card: Option<JwsCardConfig>,
    /// How priced skills are paid. `None` (the default): a priced skill answers
    /// `503 payment_configuration_error`.
    pub payments: Option<PaymentsConfig>,
    /// Settings of the task service behind every face: the longest blocking wait, and what
    /// anonymous callers may do (by default they may not list tasks).
    pub task_service: ServiceConfig,
    /// Whether the Lucid HTTP profile is served (default `true`): `/entrypoints…` and, with a
    /// task runtime, the Lucid `/tasks…` routes, listed on the card with the Lucid members
    /// (`entrypoints`, `payments`). `false` leaves them out; `/health` stays.
    pub lucid: bool,
    /// How callers authenticate (default: no scheme, every caller anonymous): the card's
    /// security schemes and requirements, the [`auth::AuthLayer`] every face is mounted with, and
    /// the authenticated extended card.
    pub auth: auth::AuthConfig,
    /// Push notifications (A2A webhooks), with the official faces: which webhook URLs are
    /// accepted and how deliveries are retried (default: on, `https` to public addresses only).
    /// `None` answers the push operations `PushNotificationNotSupportedError` and the card says
    /// `pushNotifications: false`.
    pub push: Option<push::PushSettings>,
    /// A per-caller rate limit on every face (not the card routes): requests over it are
    /// refused with 429 and `Retry-After` in the face's shape. `None` (the default): no limit.
    pub rate_limit: Option<RateLimitConfig>,
    /// Proxies whose `X-Forwarded-For` names the client (default none: the connection's peer is
    /// the client). The rate limit and the anonymous callers' share count callers by that
    /// address ([`client_address`]).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Whether the agent streams (default `true`). `false` turns the capability off on the
    /// card (`capabilities.streaming`, each entrypoint's `streaming`) and refuses every streaming
    /// method: A2A `SendStreamingMessage` and `SubscribeToTask` (and 0.3's `message/stream`,
    /// `tasks/resubscribe`) with `UnsupportedOperationError`, the Lucid stream routes and
    /// `/tasks/{id}/subscribe` with `400 stream_not_supported`.
    pub streaming: bool,
    /// Whether `GET /openapi.json` is served (default `true`): an OpenAPI 3.1 document of the
    /// routes the other settings serve, generated from the faces' route tables.
    pub openapi: bool,
    /// Whether the landing page is served (default `true`): `/` (the agent's name, card and skills,
    /// with try-it forms and a task panel), `/favicon.svg` and the page's assets under `/assets/`.
    /// `false` leaves all three out.
    pub landing: bool,
    /// Whether [`Faces::router`] serves `GET /metrics` in the Prometheus text format (default
    /// `false`; `accord serve` turns it on). The route is outside the agent's authentication,
    /// like `/health`: keep it private, or serve [`observe::metrics_router`] on a listener of
    /// its own. The faces record their metrics either way; see [`observe`].
    pub metrics: bool,
    /// Whether the server takes new work: while it drains before a stop, `GET /health` answers
    /// `503` with `"ok": false`, so that a load balancer sends no more. The server that stops
    /// sets it ([`serve::Readiness::drain`]).
    pub readiness: serve::Readiness,
    /// The states of the backends the agent's skills call, for `GET /health` (default: none).
    pub backends: Option<BackendsHealth>,
}

/// Where `GET /health` reads the states of the backends the agent's skills call
/// ([`ServerConfig::backends`]): a function asked at each request. Cheap to clone.
#[derive(Clone)]
pub struct BackendsHealth(Arc<dyn Fn() -> Vec<accord_types::lucid::BackendHealth> + Send + Sync>);

impl BackendsHealth {
    /// A source that calls `read` at each `GET /health`.
    pub fn new(read: impl Fn() -> Vec<accord_types::lucid::BackendHealth> + Send + Sync + 'static) -> Self {
        Self(Arc::new(read))
    }

    /// The states now.
    pub fn read(&self) -> Vec<accord_types::lucid::BackendHealth> {
        (self.0)()
    }
}

impl std::fmt::Debug for BackendsHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendsHealth").finish_non_exhaustive()
    }
}

/// Where and how the JSON-RPC tasks face is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonRpcTasksConfig {
    /// The path, relative to the agent's base path (default `/a2a/tasks`). A skill's scope is
    /// the agent's ([`accord_engine::SkillBuilder::scope`],
    /// [`accord_engine::Agent::with_skill_scope`]), held on every face.
    pub path: String,
}

impl Default for JsonRpcTasksConfig {
    fn default() -> Self {
        Self { path: JSONRPC_TASKS_PATH.into() }
    }
}

/// Where and how the official A2A v1.0 faces are mounted.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aConfig {
    /// The JSON-RPC binding's path, relative to the agent's base path (default `/a2a/jsonrpc`;
    /// the same path with a trailing `/` is served too).
    pub jsonrpc_path: String,
    /// The HTTP+JSON binding's base path (default `/a2a/rest`).
    pub rest_path: String,
    /// The skill a message runs when it names none in `metadata.skillId` (default: the agent's
    /// first skill with an invoke handler).
    pub default_skill: Option<String>,
    /// Which edition's HTTP status mapping REST errors use: v1.0.1 (the default, what the official
    /// SDKs do) or v1.0.0 (what the public conformance kit checks).
    pub error_mapping: accord_types::a2a::ErrorMapping,
    /// Extensions the agent declares on its card (`capabilities.extensions`). A client activates
    /// them with the `A2A-Extensions` header; one marked `required` must be activated on every
    /// A2A request (`ExtensionSupportRequiredError` otherwise); activated ones are echoed.
    pub extensions: Vec<accord_types::a2a::AgentExtension>,
    /// Whether the A2A 0.3 dialect is served beside 1.0 (default `true`): on the JSON-RPC
    /// binding, a request without `A2A-Version` (or with `0.3`) is served in 0.3 instead of
    /// refused, and the card lists the 0.3 interface with the 0.3 members (`url`,
    /// `preferredTransport`, `protocolVersion`, `additionalInterfaces`). See `docs/a2a-0.3.md`.
    pub v03: bool,
    /// Whether A2A 1.0 is served (default `true`). Off, with [`A2aConfig::v03`] on, the agent is
    /// a 0.3-only peer: 1.0 requests are answered `VersionNotSupported` and the card lists only
    /// the 0.3 interfaces (what clients falling back to 0.3 meet).
    pub v10: bool,
    /// Where the gRPC binding ([`Faces::a2a_grpc`]) is reached, which the card lists as its
    /// `GRPC` interface (default: none — the binding is served only where its router is mounted,
    /// and the card does not list it). `accord serve --grpc-port` sets it. Without the `grpc`
    /// feature the binding is neither served nor listed, whatever this says.
    pub grpc: Option<GrpcAddress>,
}

/// Where the card says the gRPC binding is reached. The spec writes a gRPC interface's `url` as
/// `host:port` (what gRPC clients dial), which is what the card lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrpcAddress {
    /// The host and port the card was asked at: the binding is served on the HTTP listener
    /// (gRPC is HTTP/2; its paths are its own). A card read at `http://agent.example:8787`
    /// lists `agent.example:8787`; without a port, the scheme's (`agent.example:443`).
    SamePort,
    /// The host the card was asked at (its public origin, see the card docs), on this port: a
    /// card read at `http://agent.example:8787` lists `agent.example:50051`.
    Port(u16),
    /// This address exactly (a `host:port`, for a gRPC listener behind a proxy of its own).
    Fixed(String),
}

impl Default for A2aConfig {
    fn default() -> Self {
        Self {
            jsonrpc_path: A2A_JSONRPC_PATH.into(),
            rest_path: A2A_REST_PATH.into(),
            default_skill: None,
            error_mapping: accord_types::a2a::ErrorMapping::default(),
            extensions: Vec::new(),
            v03: true,
            v10: true,
            grpc: None,
        }
    }
}

/// The default path of the A2A JSON-RPC binding.
pub const A2A_JSONRPC_PATH: &str = "/a2a/jsonrpc";

/// The default base path of the A2A HTTP+JSON binding.
pub const A2A_REST_PATH: &str = "/a2a/rest";

pub use accord_types::card::LUCID_BINDING;

/// The default path of the JSON-RPC tasks face.
pub const JSONRPC_TASKS_PATH: &str = "/a2a/tasks";

/// The binding name under which the card lists the JSON-RPC tasks face. A URN, so that neither
/// official A2A clients (which look for `JSONRPC`) nor Lucid clients (which take the first binding
/// containing `HTTP`) mistake it for their own.
pub const JSONRPC_TASKS_BINDING: &str = "urn:accord:binding:jsonrpc-tasks";

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            body_limit: 1024 * 1024,
            card_max_age: Duration::from_secs(300),
            idempotency: IdempotencyConfig::default(),
            tasks: None,
            lucid_subscription_timeout: Duration::from_secs(300),
            jsonrpc_tasks: Some(JsonRpcTasksConfig::default()),
            a2a: Some(A2aConfig::default()),
            signed_card: None,
            jws_card: None,
            payments: None,
            task_service: ServiceConfig::default(),
            lucid: true,
            push: Some(push::PushSettings::default()),
            auth: auth::AuthConfig::default(),
            rate_limit: None,
            trusted_proxies: Vec::new(),
            streaming: true,
            openapi: true,
            landing: true,
            metrics: false,
            readiness: serve::Readiness::default(),
            backends: None,
        }
    }
}

impl ServerConfig {
    /// The A2A faces' settings when they are served (they need a task runtime): what the card
    /// lists and what [`Faces`] mounts, decided here once.
    pub(crate) fn served_a2a(&self) -> Option<&A2aConfig> {
        self.tasks.as_ref().and(self.a2a.as_ref())
    }

    /// The push settings when push notifications are sent (they need the official faces).
    pub(crate) fn served_push(&self) -> Option<&push::PushSettings> {
        self.served_a2a().and(self.push.as_ref())
    }

    /// The JSON-RPC tasks face's settings when it is served (it needs a task runtime).
    pub(crate) fn served_jsonrpc_tasks(&self) -> Option<&JsonRpcTasksConfig> {
        self.tasks.as_ref().and(self.jsonrpc_tasks.as_ref())
    }

    /// Sets [`ServerConfig::rate_limit`].
    pub fn rate_limit(mut self, rate_limit: Option<RateLimitConfig>) -> Self {
        self.rate_limit = rate_limit;
        self
    }

    /// Sets [`ServerConfig::streaming`].
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Sets [`ServerConfig::trusted_proxies`].
    pub fn trusted_proxies(mut self, proxies: Vec<ipnet::IpNet>) -> Self {
        self.trusted_proxies = proxies;
        self
    }

    /// Serves `/openapi.json` or leaves it out ([`ServerConfig::openapi`]).
    pub fn openapi(mut self, enabled: bool) -> Self {
        self.openapi = enabled;
        self
    }

    /// Sets [`ServerConfig::readiness`]: the handle whose drain makes `/health` answer `503`.
    pub fn readiness(mut self, readiness: serve::Readiness) -> Self {
        self.readiness = readiness;
        self
    }

    /// Sets [`ServerConfig::backends`].
    pub fn backends(mut self, backends: BackendsHealth) -> Self {
        self.backends = Some(backends);
        self
    }

    /// Serves `/metrics` or leaves it out ([`ServerConfig::metrics`]).
    pub fn metrics(mut self, enabled: bool) -> Self {
        self.metrics = enabled;
        self
    }

    /// Sets [`ServerConfig::body_limit`].
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Sets [`ServerConfig::card_max_age`].
    pub fn card_max_age(mut self, max_age: Duration) -> Self {
        self.card_max_age = max_age;
        self
    }

    /// Enables the `/tasks` routes, run by `runtime`.
    pub fn tasks(mut self, runtime: TaskRuntime) -> Self {
        self.tasks = Some(runtime);
        self
    }

    /// Sets [`ServerConfig::jsonrpc_tasks`].
    pub fn jsonrpc_tasks(mut self, config: Option<JsonRpcTasksConfig>) -> Self {
        self.jsonrpc_tasks = config;
        self
    }

    /// Sets [`ServerConfig::a2a`].
    pub fn a2a(mut self, config: Option<A2aConfig>) -> Self {
        self.a2a = config;
        self
    }

    /// Sets [`ServerConfig::lucid_subscription_timeout`].
    pub fn lucid_subscription_timeout(mut self, timeout: Duration) -> Self {
        self.lucid_subscription_timeout = timeout;
        self
    }

    /// Sets [`ServerConfig::idempotency`].
    pub fn idempotency(mut self, config: IdempotencyConfig) -> Self {
        self.idempotency = config;
        self
    }

    /// Collects payments for priced skills ([`ServerConfig::payments`]).
    pub fn payments(mut self, config: PaymentsConfig) -> Self {
        self.payments = Some(config);
        self
    }

    /// Sets [`ServerConfig::task_service`].
    pub fn task_service(mut self, config: ServiceConfig) -> Self {
        self.task_service = config;
        self
    }

    /// Serves the Lucid HTTP profile or leaves it out ([`ServerConfig::lucid`]).
    pub fn lucid(mut self, enabled: bool) -> Self {
        self.lucid = enabled;
        self
    }

    /// Serves the landing page or leaves it out ([`ServerConfig::landing`]).
    pub fn landing(mut self, enabled: bool) -> Self {
        self.landing = enabled;
        self
    }

    /// Sets [`ServerConfig::auth`].
    pub fn auth(mut self, config: auth::AuthConfig) -> Self {
        self.auth = config;
        self
    }

    /// Publishes the signed card ([`ServerConfig::signed_card`]).
    pub fn signed_card(mut self, config: SignedCardConfig) -> Self {
        self.signed_card = Some(config);
        self
    }

    /// Signs the served card with JWS signatures ([`ServerConfig::jws_card`]).
    pub fn jws_card(mut self, config: JwsCardConfig) -> Self {
        self.jws_card = Some(config);
        self
    }
}

/// What every handler shares.
pub(crate) struct AppState {
    pub(crate) agent: Agent,
    /// The task service, when tasks are enabled.
    pub(crate) tasks: Option<TaskService>,
    pub(crate) config: ServerConfig,
    pub(crate) idempotency: IdempotencyStore,
    /// The one builder of the card every card route serves (and of the extended card).
    pub(crate) card: Arc<card::CardBuilder>,
    /// Adds the JWS signatures to the served card, when configured.
    pub(crate) card_signer: Option<Arc<card::jws::CardSigner>>,
    /// The rate limiter every face shares, when a rate limit is set.
    pub(crate) rate_limits: Option<Arc<limits::RateLimits>>,
}

pub(crate) type State = axum::extract::State<Arc<AppState>>;

/// The agent's routes with the default [`ServerConfig`].
pub fn router(agent: &Agent) -> Router {
    router_with(agent, ServerConfig::default())
}

/// The agent's routes:
///
/// | method | path | |
/// |---|---|---|
/// | GET | `/.well-known/agent-card.json`, `/.well-known/agent.json` | the card |
/// | GET | `/.well-known/agent-card.signed.json` | the signed card envelope (when configured; also at `/.well-known/agent.json` when opted in) |
/// | GET | `/health` | `{"ok":true,"version":…}` |
/// | GET | `/entrypoints` | the skills (this row and the next four: the Lucid face, unless turned off) |
/// | POST | `/entrypoints/{key}/invoke` | run a skill, answer with its output |
/// | POST | `/entrypoints/{key}/stream` | run a skill, answer with a server-sent event stream |
/// | POST, GET | `/tasks` | create a task; list the caller's tasks (when tasks are enabled) |
/// | GET | `/tasks/{id}` | read a task |
/// | POST | `/tasks/{id}/cancel` | cancel a task |
/// | GET | `/tasks/{id}/subscribe` | a task's updates as server-sent events |
/// | POST | `/a2a/tasks` | the JSON-RPC tasks face (with the task routes, unless turned off) |
/// | GET | `/openapi.json` | the OpenAPI 3.1 document of these routes (unless turned off) |
/// | GET | `/`, `/favicon.svg`, `/assets/{name}` | the landing page and its assets (unless turned off) |
///
/// The router sets no fallback, so it can be merged with routers that do.
pub fn router_with(agent: &Agent, config: ServerConfig) -> Router {
    Faces::new(agent, config).router()
}

/// An agent's faces, each its own [`Router`] that can be mounted alone — merged into an app, or
/// nested under a path — and all of them over one task service, so a task created through one
/// face is the same task on every other.
///
/// ```no_run
/// # use accord_engine::{Agent, task::{MemoryStore, RuntimeConfig, TaskRuntime}};
/// # use accord_server::{Faces, ServerConfig};
/// # fn run(agent: Agent) {
/// let runtime = TaskRuntime::new(agent.clone(), std::sync::Arc::new(MemoryStore::default()), RuntimeConfig::default());
/// // Only the card and the official A2A JSON-RPC binding; the card lists what the configuration
/// // turns on, so the other faces are turned off there too.
/// let config = ServerConfig::default().tasks(runtime).lucid(false).jsonrpc_tasks(None);
/// let faces = Faces::new(&agent, config);
/// let app = axum::Router::new().merge(faces.cards()).merge(faces.a2a_jsonrpc());
/// # }
/// ```
///
/// The card lists the faces the configuration turns on, whichever routers are mounted: turn off
/// in the configuration what is not served.
#[derive(Clone)]
pub struct Faces {
    state: Arc<AppState>,
    a2a: Option<a2a::A2aCore>,
}

impl std::fmt::Debug for Faces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faces").field("agent", &self.state.agent.name()).finish_non_exhaustive()
    }
}

impl Faces {
    /// The faces of `agent` as `config` sets them up.
    pub fn new(agent: &Agent, config: ServerConfig) -> Self {
        // Declared before anything reads the extensions: the A2A core and the card get the same list.
        let config = a2a::x402::declare(agent, config);
        // One task service behind every face: the faces translate, the service decides.
        let service = config.tasks.as_ref().map(|runtime| {
            let mut service_config = config.task_service.clone();
            if let Some(a2a) = &config.a2a
                && a2a.default_skill.is_some()
            {
                service_config.default_skill.clone_from(&a2a.default_skill);
            }
            // Streaming off is the service's rule, so that every face refuses streams alike.
            service_config.streaming &= config.streaming;
            TaskService::new(runtime.clone(), service_config)
        });
        let a2a = match (&service, config.served_a2a()) {
            (Some(service), Some(a2a_config)) => Some(a2a::A2aCore {
                service: service.clone(),
                extensions: a2a_config.extensions.clone().into(),
                payments: config.payments.clone(),
                push: config.served_push().map(|push| Arc::new(push.policy.clone())),
            }),
            _ => None,
        };
        // One delivery worker per set of faces: it reads the outbox every face writes to.
        if let (Some(service), Some(push)) = (&service, config.served_push()) {
            // The A2A faces serve push notifications: their projection writes each update.
            push::deliver::spawn(service.clone(), push.clone(), a2a::push::projection());
        }
        if config.metrics {
            // Installed now, so that what the faces record from the first request is kept.
            let _ = observe::recorder_installed();
        }
        let state = Arc::new(AppState {
            agent: agent.clone(),
            idempotency: IdempotencyStore::new(config.idempotency),
            tasks: service,
            card: Arc::new(card::CardBuilder::from_config(agent, &config)),
            card_signer: config.jws_card.clone().map(|jws| Arc::new(card::jws::CardSigner::new(jws))),
            rate_limits: config.rate_limit.map(limits::RateLimits::new),
            config,
        });
        Self { state, a2a }
    }

    /// The discovery routes: the card (`/.well-known/agent-card.json`, the legacy
    /// `/.well-known/agent.json`, the signed card when configured) and `/health`.
    pub fn cards(&self) -> Router {
        self.cards_routes().into_router()
    }

    fn cards_routes(&self) -> openapi::Routes {
        use openapi::describe;
        let state = &self.state;
        let signed = state.config.signed_card.clone();
        let card = || get(card::card).with_state(Arc::clone(state));
        let routes =
            openapi::Routes::new().route(card::CARD_PATH, card(), describe::card("getAgentCard", "The agent card"));
        let routes = match &signed {
            Some(signed) if signed.serves_at_legacy_path() => routes,
            _ => routes.route(
                card::LEGACY_CARD_PATH,
                card(),
                describe::card("getAgentCardLegacy", "The agent card at its legacy path"),
            ),
        };
        let routes = routes.route("/health", get(lucid::health).with_state(Arc::clone(state)), describe::health());
        let routes = match signed {
            Some(signed) => routes.merge(card::signed::routes(Arc::clone(state), signed)),
            None => routes,
        };
        routes.map_router(|router| observed(router, "cards"))
    }

    /// `GET /metrics` in the Prometheus text format, with the task gauges read from this agent's
    /// store. Empty unless [`ServerConfig::metrics`] is on (and Accord's recorder could be
    /// installed: `observe::prometheus_handle`, feature `prometheus`).
    pub fn metrics(&self) -> Router {
        self.metrics_routes().into_router()
    }

    fn metrics_routes(&self) -> openapi::Routes {
        // Not served (nor documented) when another recorder holds the process's metrics.
        if !self.state.config.metrics || !observe::recorder_installed() {
            return openapi::Routes::new();
        }
        // Not observed (a scrape is not the agent's traffic), but refused when the server is busy.
        #[cfg(feature = "prometheus")]
        return openapi::Routes::new().endpoint(
            observe::metrics_router(self.state.tasks.as_ref().map(|service| service.runtime().clone()))
                .layer(axum::middleware::from_fn(refusal::refuse_busy)),
            openapi::describe::metrics(),
        );
        #[cfg(not(feature = "prometheus"))]
        openapi::Routes::new()
    }

    /// The Lucid HTTP profile: `/entrypoints…` and, with a task runtime, `/tasks…`. Empty when
    /// [`ServerConfig::lucid`] is off.
    pub fn lucid(&self) -> Router {
        self.lucid_routes().into_router()
    }

    fn lucid_routes(&self) -> openapi::Routes {
        use openapi::describe;
        let state = &self.state;
        if !state.config.lucid {
            return openapi::Routes::new();
        }
        let with = |handler: axum::routing::MethodRouter<Arc<AppState>>| handler.with_state(Arc::clone(state));
        let agent = &state.agent;
        let routes = openapi::Routes::new()
            .route("/entrypoints", with(get(lucid::entrypoints)), describe::entrypoints())
            .route("/entrypoints/{key}/invoke", with(post(lucid::invoke::invoke)), describe::invoke(agent))
            .route("/entrypoints/{key}/stream", with(post(lucid::stream::stream)), describe::stream(agent));
        let routes = if state.tasks.is_some() {
            routes
                .route("/tasks", with(post(lucid::tasks::create).get(lucid::tasks::list)), describe::lucid_tasks(agent))
                .route("/tasks/{id}", with(get(lucid::tasks::get_task)), describe::lucid_task_get())
                .route("/tasks/{id}/cancel", with(post(lucid::tasks::cancel)), describe::lucid_task_cancel())
                .route("/tasks/{id}/subscribe", with(get(lucid::tasks::subscribe)), describe::lucid_task_subscribe())
        } else {
            routes
        };
        routes.map_router(|router| self.authenticated(router, "lucid", lucid::refusals()))
    }

    /// `router` behind the configured [`auth::AuthLayer`] (when a scheme is configured) and the
    /// face's refusal of requests whose credentials were refused (always, so that an
    /// [`auth::AuthLayer`] of the user's own, outside, is answered in the face's shape too).
    /// With a rate limit, the face's requests are counted per caller (after authentication, which
    /// names the caller) and refused over it.
    fn authenticated(&self, router: Router, face: &'static str, refusals: refusal::Refusals) -> Router {
        let admission = limits::Admission { refusals, limits: self.state.rate_limits.clone() };
        let router = router.layer(axum::middleware::from_fn_with_state(Arc::new(admission), limits::admit));
        let router = if self.state.config.auth.is_empty() {
            router
        } else {
            router.layer(auth::AuthLayer::new(self.state.config.auth.clone()))
        };
        let trusted: Arc<[ipnet::IpNet]> = self.state.config.trusted_proxies.clone().into();
        router.layer(axum::middleware::from_fn_with_state(
            observe::Observed { face, trusted: Some(trusted) },
            observe::observe,
        ))
    }

    /// The JSON-RPC tasks face at [`JsonRpcTasksConfig::path`]. Empty without a task runtime or
    /// with the face turned off.
    pub fn jsonrpc_tasks(&self) -> Router {
        self.jsonrpc_tasks_routes().into_router()
    }

    fn jsonrpc_tasks_routes(&self) -> openapi::Routes {
        let config = &self.state.config;
        match (&self.state.tasks, config.served_jsonrpc_tasks()) {
            (Some(service), Some(jsonrpc)) => openapi::Routes::new()
                .endpoint(
                    jsonrpc_tasks::TasksEndpoint::new(jsonrpc_tasks::EngineTasks::new(service.clone()))
                        .max_bytes(config.body_limit)
                        .router(),
                    openapi::describe::jsonrpc_tasks(),
                )
                .nest(&jsonrpc.path)
                .map_router(|router| self.authenticated(router, "jsonrpc_tasks", jsonrpc_tasks::refusals())),
            _ => openapi::Routes::new(),
        }
    }

    /// The official A2A JSON-RPC binding at [`A2aConfig::jsonrpc_path`] (with and without a
    /// trailing `/`). Empty without a task runtime or with the A2A faces turned off.
    pub fn a2a_jsonrpc(&self) -> Router {
        self.a2a_jsonrpc_routes().into_router()
    }

    fn a2a_jsonrpc_routes(&self) -> openapi::Routes {
        let (Some(core), Some(a2a_config)) = (&self.a2a, self.state.config.served_a2a()) else {
            return openapi::Routes::new();
        };
        let state = Arc::new(a2a::JsonRpcState {
            core: core.clone(),
            body_limit: self.state.config.body_limit,
            card: Arc::clone(&self.state.card),
            path: a2a_config.jsonrpc_path.clone(),
            v03: a2a_config.v03,
            v10: a2a_config.v10,
        });
        let endpoint = post(a2a::jsonrpc::handle).with_state(state).layer(axum::middleware::from_fn(version::record));
        let path = a2a_config.jsonrpc_path.clone();
        // Served with and without a trailing slash: some clients join `/` onto the interface URL.
        let slashed = format!("{}/", path.trim_end_matches('/'));
        openapi::Routes::new()
            .route(&path, endpoint.clone(), openapi::describe::a2a_jsonrpc(false))
            .route(&slashed, endpoint, openapi::describe::a2a_jsonrpc(true))
            .map_router(|router| self.authenticated(router, "a2a_jsonrpc", a2a::jsonrpc::refusals()))
    }

    /// The official A2A HTTP+JSON binding under [`A2aConfig::rest_path`]. Empty without a task
    /// runtime or with the A2A faces turned off.
    pub fn a2a_rest(&self) -> Router {
        self.a2a_rest_routes().into_router()
    }

    fn a2a_rest_routes(&self) -> openapi::Routes {
        let (Some(core), Some(a2a_config)) = (&self.a2a, self.state.config.served_a2a()) else {
            return openapi::Routes::new();
        };
        let state = Arc::new(a2a::rest::RestState {
            core: core.clone(),
            body_limit: self.state.config.body_limit,
            mapping: a2a_config.error_mapping,
            card: Arc::clone(&self.state.card),
            path: a2a_config.rest_path.clone(),
            v10: a2a_config.v10,
        });
        let mut rest = a2a::rest::routes(Arc::clone(&state));
        if a2a_config.v03 {
            // The 0.3 routes (`/v1/…`) hand 1.0 requests for those paths to the 1.0 routes.
            rest = a2a::v03_rest_routes(state, rest.clone().into_router()).merge(rest);
        }
        rest.nest(&a2a_config.rest_path)
            .map_router(|router| self.authenticated(router, "a2a_rest", a2a::rest::refusals(a2a_config.error_mapping)))
    }

    /// The official A2A gRPC binding: `lf.a2a.v1.A2AService` at `/lf.a2a.v1.A2AService/{method}`
    /// (HTTP/2), behind the same credentials and rate limits as the other faces. Empty without a
    /// task runtime, with the A2A faces turned off, with 1.0 turned off, or without
    /// [`A2aConfig::grpc`]. [`Faces::router`] includes it, so the binding is served on the HTTP
    /// port and on any other listener given the same router. Always empty without the `grpc`
    /// feature.
    #[cfg(feature = "grpc")]
    pub fn a2a_grpc(&self) -> Router {
        let (Some(core), Some(a2a_config)) = (&self.a2a, self.state.config.served_a2a()) else {
            return Router::new();
        };
        if a2a_config.grpc.is_none() || !a2a_config.v10 {
            return Router::new();
        }
        let face = a2a::grpc::GrpcFace {
            core: core.clone(),
            mapping: a2a_config.error_mapping,
            card: Arc::clone(&self.state.card),
        };
        self.authenticated(
            a2a::grpc::router(face, self.state.config.body_limit),
            "a2a_grpc",
            a2a::grpc::refusals(a2a_config.error_mapping),
        )
    }

    /// The official A2A gRPC binding: not built in (the `grpc` feature is off).
    #[cfg(not(feature = "grpc"))]
    pub fn a2a_grpc(&self) -> Router {
        if self.state.config.served_a2a().is_some_and(|a2a| a2a.grpc.is_some()) {
            tracing::warn!("the A2A gRPC binding is configured but not built in (feature `grpc`)");
        }
        Router::new()
    }

    /// `GET /openapi.json`: the OpenAPI 3.1 document of the routes [`Faces::router`] serves
    /// (see [`openapi`]). Empty when [`ServerConfig::openapi`] is off.
    pub fn openapi(&self) -> Router {
        if !self.state.config.openapi {
            return Router::new();
        }
        let served = [
            self.cards_routes(),
            self.lucid_routes(),
            self.jsonrpc_tasks_routes(),
            self.a2a_jsonrpc_routes(),
            self.a2a_rest_routes(),
            self.landing_routes(),
            self.metrics_routes(),
        ];
        let operations: Vec<openapi::Operation> =
            served.iter().flat_map(|routes| routes.operations().iter().cloned()).collect();
        observed(openapi::routes(&self.state.agent, &self.state.config, &operations).into_router(), "cards")
    }

    /// The landing page for people with a browser: `/`, `/favicon.svg` and the page's assets
    /// under `/assets/`. It reads the card the card routes serve, and its script calls the Lucid
    /// routes (it says so when they are off). Empty when [`ServerConfig::landing`] is off.
    pub fn landing(&self) -> Router {
        self.landing_routes().into_router()
    }

    fn landing_routes(&self) -> openapi::Routes {
        if !self.state.config.landing {
            return openapi::Routes::new();
        }
        landing::routes(Arc::clone(&self.state)).map_router(|router| observed(router, "cards"))
    }

    /// Every face, merged, and `/metrics` when [`ServerConfig::metrics`] is on: what
    /// [`router_with`] serves.
    pub fn router(&self) -> Router {
        self.cards()
            .merge(self.lucid())
            .merge(self.jsonrpc_tasks())
            .merge(self.a2a_jsonrpc())
            .merge(self.a2a_rest())
            .merge(self.a2a_grpc())
            .merge(self.openapi())
            .merge(self.landing())
            .merge(self.metrics())
    }
}

/// `router` — routes no face renders — with a span and metrics per request, labelled `face`
/// ([`observe`]), outermost, and the plain refusal of a request the serve loop marked busy
/// ([`refusal::refuse_busy`]), so that its handler does not run.
fn observed(router: Router, face: &'static str) -> Router {
    router
        .layer(axum::middleware::from_fn(refusal::refuse_busy))
        .layer(axum::middleware::from_fn_with_state(observe::Observed { face, trusted: None }, observe::observe))
}

/// `agent.router()`: the agent's routes as an axum [`Router`].
pub trait AgentRouterExt {
    /// [`router`] for this agent.
    fn router(&self) -> Router;
    /// [`router_with`] for this agent.
    fn router_with(&self, config: ServerConfig) -> Router;
}

impl AgentRouterExt for Agent {
    fn router(&self) -> Router {
        router(self)
    }

    fn router_with(&self, config: ServerConfig) -> Router {
        router_with(self, config)
    }
}
