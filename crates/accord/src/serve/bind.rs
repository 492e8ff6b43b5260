//! Starting a server: the settings applied to the engine and the faces, then the listeners.

use std::net::SocketAddr;

use accord_engine::Agent;
use accord_engine::task::{AnonymousAccess, Durability, ServiceConfig, TaskRuntime};
use accord_server::serve::Readiness;
use accord_server::{A2aConfig, Faces, GrpcAddress, JsonRpcTasksConfig, PaymentsConfig, ServerConfig};
use accord_types::a2a::ErrorMapping;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::running::{StopLevel, coordinate_stop};
use super::{
    MetricsAt, Running, Serve, ServeArgs, ServeError, StoreSpec, Telemetry, open_store, raise_descriptor_limit,
};

impl Serve {
    /// Opens the store, binds the listeners and starts serving; returns at once with a handle.
    /// Nothing is printed and no signal is watched: stop it with [`Running::stop`].
    pub async fn bind(self) -> Result<Running, ServeError> {
        let prepared = self.prepare().await?;
        prepared.listen().await
    }

    /// Everything but the agent's own listener: the settings checked and applied to the engine
    /// and the faces, the store opened, the gRPC listener of `--grpc-port` bound.
    async fn prepare(self) -> Result<Prepared, ServeError> {
        let Self {
            agent,
            args,
            label,
            error_mapping,
            operator_scopes,
            skill_scopes,
            default_skill,
            backends,
            extended_skills,
            payments,
            hooks,
            notes,
            stop_on: _,
            logging,
            telemetry,
            from_file,
        } = self;
        if let Some(path) = args.config.as_ref().filter(|_| !from_file) {
            return Err(ServeError::usage(format!(
                "--config {}: this program serves an agent of its own, not one from an agent file",
                path.display()
            )));
        }
        let mut agent = agent;
        for (skill, scope) in &skill_scopes {
            agent = agent.with_skill_scope(skill, scope).map_err(|error| ServeError::usage(error.to_string()))?;
        }
        let telemetry = match telemetry {
            Some(installed) => Some(installed),
            None if logging => Some(args.observe.init().map_err(ServeError::usage)?),
            None => None,
        };
        let mapping = args.a2a_error_mapping.map_or(error_mapping, ErrorMapping::from);
        // The certificate first: a bad file stops the start before anything is opened.
        let tls = args.tls.config()?;
        let jws_card = args.signed_card.load_jws()?;
        let signed_card = args.signed_card.load(&args.host, agent.name())?;
        let mut auth = args.auth.config(&operator_scopes).await.map_err(ServeError::usage)?;
        if let Some(certificates) = args.tls.client_certificates(!args.auth.trusted_proxies.is_empty())? {
            auth = auth.client_certificates(certificates);
        }
        if !auth.is_empty()
            && let Some(skills) = extended_skills
        {
            auth = auth.extended_card(skills);
        }
        let store_options = args.budgets.store(args.store_options.options());
        if store_options.sync.is_some() && !matches!(args.store, StoreSpec::Sqlite(_)) {
            return Err(ServeError::usage("--sync sets how a SQLite store syncs; it cannot be used with this --store"));
        }
        let grpc = grpc_setting(&args)?;
        let task_store = open_store(&args.store, &store_options).await.map_err(|error| {
            ServeError::failed(format!("cannot open the task store {}: {error}", args.store.describe()))
        })?;
        let durability = task_store.durability();
        let runtime = TaskRuntime::new(agent.clone(), task_store, args.runtime_config());
        let mut config =
            ServerConfig::default().tasks(runtime.clone()).jsonrpc_tasks(Some(JsonRpcTasksConfig::default()));
        // The gRPC listener is bound first, so that the card lists the port it got (`--grpc-port 0`).
        let grpc_listener = match grpc {
            GrpcServe::Port(grpc_port) => Some(bind(&args.host, grpc_port, "--grpc-port").await?),
            _ => None,
        };
        let grpc_address = match (&grpc_listener, grpc) {
            (_, GrpcServe::Off) => None,
            (Some(listener), _) => Some(GrpcAddress::Port(local_addr(listener)?.port())),
            (None, _) => Some(GrpcAddress::SamePort),
        };
        config.a2a = config.a2a.map(|a2a| A2aConfig { error_mapping: mapping, grpc: grpc_address.clone(), ..a2a });
        if args.anonymous_list {
            config = config.task_service(ServiceConfig::default().anonymous(AnonymousAccess::ListShared));
        }
        config = config
            .idempotency(args.budgets.idempotency())
            .landing(!args.no_landing)
            .streaming(!args.no_streaming)
            .trusted_proxies(args.auth.trusted_proxies.clone());
        config.task_service = args.budgets.service(config.task_service);
        let backend_metrics = match backends {
            Some(backends) => {
                config = config.backends(backends.clone());
                Some(tokio::spawn(backend_metrics(backends)))
            }
            None => None,
        };
        let default_note = default_skill_note(&agent, default_skill.as_ref(), &mut config)?;
        config.push = args.push.settings().map_err(ServeError::usage)?;
        let store_file = args.store.sqlite_file();
        let (push_key, push_key_file) = args
            .push
            .key_beside(durability == Durability::Durable, store_file.as_deref())
            .map_err(ServeError::usage)?;
        config.task_service.push_key = push_key;
        let mut lines = Lines {
            scopes: scopes_note(&agent),
            default_skill: default_note,
            push_key: push_key_file
                .filter(|_| config.push.is_some())
                .map(|file| format!("push key: {}", file.display())),
            notes,
        };
        config = with_payments(config, &agent, &args, payments, &mut lines.notes)?;
        if let Some(signed_card) = signed_card {
            config = config.signed_card(signed_card);
        }
        let metrics_at = args.observe.metrics_at();
        if !cfg!(feature = "prometheus") && matches!(metrics_at, MetricsAt::Own(_)) {
            return Err(ServeError::usage("--metrics-addr needs a build with the `prometheus` cargo feature"));
        }
        let readiness = Readiness::default();
        config = config.metrics(metrics_at == MetricsAt::AgentListener).readiness(readiness.clone());
        if let Some(jws_card) = jws_card {
            config = config.jws_card(jws_card);
        }
        for hook in hooks {
            config = hook(config);
        }
        let served = Served::of(&config);
        let landing = config.landing;
        let faces = Faces::new(&agent, config.auth(auth).rate_limit(args.workers.rate_limit()));
        let base_path = normalize_base_path(&args.base_path);
        let app = app(&faces, &base_path, landing, grpc != GrpcServe::Off);
        let label = label.unwrap_or_else(|| agent.name().to_owned());
        Ok(Prepared {
            args,
            app,
            base_path,
            label,
            mapping,
            served,
            durability,
            grpc: grpc_address.zip(Some(grpc_listener)),
            metrics_at,
            readiness,
            runtime,
            telemetry,
            backend_metrics,
            lines,
            tls,
        })
    }
}

/// A server ready to listen: what [`Serve::prepare`] made of the settings.
struct Prepared {
    args: ServeArgs,
    app: axum::Router,
    base_path: String,
    label: String,
    mapping: ErrorMapping,
    served: Served,
    durability: Durability,
    /// Where gRPC is served (none when it is off), with the listener of `--grpc-port`.
    grpc: Option<(GrpcAddress, Option<TcpListener>)>,
    metrics_at: MetricsAt,
    readiness: Readiness,
    runtime: TaskRuntime,
    telemetry: Option<Telemetry>,
    backend_metrics: Option<JoinHandle<()>>,
    lines: Lines,
    /// The listeners' TLS, when `--tls-cert` is given.
    tls: Option<accord_server::tls::TlsConfig>,
}

/// The summary's lines that the settings give, beside the addresses.
#[derive(Default)]
struct Lines {
    scopes: Option<String>,
    default_skill: Option<String>,
    push_key: Option<String>,
    /// The program's notes and the payment rail's description, last.
    notes: Vec<String>,
}

impl Prepared {
    /// Binds the agent's listener and starts every listener; the summary says where each is.
    async fn listen(self) -> Result<Running, ServeError> {
        let Self { args, app, base_path, label, served, grpc, runtime, lines, tls, .. } = self;
        let (mapping, durability, metrics_at) = (self.mapping, self.durability, self.metrics_at);
        let listener = bind(&args.host, args.port, "--port").await?;
        let address = local_addr(&listener)?;
        let host_part = if address.is_ipv6() { format!("[{}]", address.ip()) } else { address.ip().to_string() };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{host_part}:{}{base_path}/", address.port());
        let mut summary =
            vec![format!("Accord {label} agent listening on {url}"), format!("card: {url}.well-known/agent-card.json")];
        if served.jsonrpc_tasks {
            summary.push(format!("JSON-RPC tasks: {url}a2a/tasks"));
        }
        summary.extend(lines.scopes);
        summary.extend(lines.default_skill);
        summary.extend(lines.push_key);
        if served.a2a {
            let edition = match mapping {
                ErrorMapping::V1_0_0 => "v1.0.0",
                _ => "v1.0.1",
            };
            summary.push(format!(
                "A2A v1.0: {url}a2a/jsonrpc (JSON-RPC), {url}a2a/rest (HTTP+JSON; {edition} error statuses)"
            ));
        }
        if served.a2a_03 {
            summary.push(format!(
                "A2A 0.3: {url}a2a/jsonrpc (JSON-RPC, requests without A2A-Version: 1.0), {url}a2a/rest/v1 (HTTP+JSON)"
            ));
        }
        let descriptor_limit = raise_descriptor_limit();
        let limits = args.connections.limits_under(descriptor_limit);
        let grace = args.connections.shutdown_grace();
        summary.push(match descriptor_limit {
            Some(descriptors) => {
                format!("connections: up to {} at once (file descriptors: {descriptors})", limits.max_connections)
            }
            None => format!("connections: up to {} at once", limits.max_connections),
        });
        let (stop, requested) = watch::channel(StopLevel::Serving);
        let (close, stopped) = watch::channel(StopLevel::Serving);
        tokio::spawn(coordinate_stop(requested, close, self.readiness, args.connections.shutdown_delay()));
        let until = |mut stopped: watch::Receiver<StopLevel>, level: StopLevel| async move {
            let _ = stopped.wait_for(|stop| *stop >= level).await;
        };
        let until_stopped = move |stopped: watch::Receiver<StopLevel>| until(stopped, StopLevel::Graceful);
        let until_cut = move |stopped: watch::Receiver<StopLevel>| until(stopped, StopLevel::Now);
        let mut servers = Vec::new();
        let mut grpc_addr = None;
        match grpc {
            Some((_, Some(grpc_listener))) => {
                let bound = local_addr(&grpc_listener)?;
                grpc_addr = Some(bound);
                summary.push(format!("A2A v1.0 gRPC: {scheme}://{host_part}:{} (and on the HTTP port)", bound.port()));
                // The gRPC listener serves the same app, so its card and extended card are right
                // there too, and it stops with the HTTP one.
                let mut server = accord_server::serve::Server::new(grpc_listener, app.clone())
                    .limits(limits.clone())
                    .shutdown_grace(grace)
                    .with_graceful_shutdown(until_stopped(stopped.clone()))
                    .with_forced_shutdown(until_cut(stopped.clone()));
                if let Some(tls) = &tls {
                    server = server.tls(tls.clone());
                }
                servers.push(tokio::spawn(server.run()));
            }
            Some((_, None)) => {
                grpc_addr = Some(address);
                summary.push(format!(
                    "A2A v1.0 gRPC: {scheme}://{host_part}:{} (HTTP/2 on the same port)",
                    address.port()
                ));
            }
            None => {}
        }
        if let Some(tls) = &tls {
            let expiry = tls.expiry().map_or_else(String::new, |expiry| format!(", notAfter {expiry} (Unix time)"));
            summary.push(format!(
                "TLS: {}{expiry}; reloaded when it changes and on SIGHUP",
                tls.files().certificate.display()
            ));
        }
        summary.push(format!("task store: {} ({})", args.store.describe(), durability.as_str()));
        let mut metrics_url = None;
        match metrics_at {
            MetricsAt::AgentListener if cfg!(feature = "prometheus") => {
                metrics_url = Some(format!("{url}metrics"));
            }
            #[cfg(feature = "prometheus")]
            MetricsAt::Own(metrics_address) => {
                let metrics = accord_server::observe::metrics_router(Some(runtime.clone()));
                let listener = TcpListener::bind(metrics_address).await.map_err(|error| {
                    ServeError::failed(format!("cannot listen on {metrics_address} for --metrics-addr: {error}"))
                })?;
                let bound = local_addr(&listener)?;
                metrics_url = Some(format!("http://{bound}/metrics"));
                let stopped = until_stopped(stopped.clone());
                servers.push(tokio::spawn(async move {
                    axum::serve(listener, metrics).with_graceful_shutdown(stopped).await
                }));
            }
            _ => {}
        }
        if let Some(metrics_url) = &metrics_url {
            summary.push(format!("metrics: {metrics_url}"));
        }
        let mut tls_reload = None;
        if let Some(tls) = &tls {
            tls.publish_expiry();
            tls_reload = Some(tokio::spawn(super::tls::keep_reloaded(tls.clone())));
        }
        summary.extend(lines.notes);
        let mut server = accord_server::serve::Server::new(listener, app)
            .limits(limits)
            .shutdown_grace(grace)
            .with_graceful_shutdown(until_stopped(stopped.clone()))
            .with_forced_shutdown(until_cut(stopped));
        if let Some(tls) = tls {
            server = server.tls(tls);
        }
        servers.insert(0, tokio::spawn(server.run()));
        Ok(Running {
            url,
            address,
            grpc_addr,
            metrics_url,
            summary,
            stop,
            servers,
            runtime,
            telemetry: self.telemetry,
            grace,
            backend_metrics: self.backend_metrics,
            tls_reload,
        })
    }
}

/// Checks the default skill and sets it on the task service; the summary's line about it. Without
/// one chosen, a message naming no skill runs the agent's first skill that can run as a task.
fn default_skill_note(
    agent: &Agent,
    default_skill: Option<&(String, bool)>,
    config: &mut ServerConfig,
) -> Result<Option<String>, ServeError> {
    let Some((key, chosen)) = default_skill else {
        return Ok(agent
            .skills()
            .iter()
            .find(|skill| skill.is_invocable())
            .map(|skill| format!("default skill: {} (the first)", skill.key())));
    };
    agent
        .skill(key)
        .map_err(|_| ServeError::usage(format!("the default skill {key:?} is not a skill of the agent")))?;
    config.task_service.default_skill = Some(key.clone());
    Ok(Some(if *chosen { format!("default skill: {key}") } else { format!("default skill: {key} (the first)") }))
}

/// The payment rail: the program's ([`Serve::payments`]) wins over the flags'; a priced skill
/// needs one or the other, and the rail must collect every price. The flags' rail adds its
/// description to `notes`.
fn with_payments(
    config: ServerConfig,
    agent: &Agent,
    args: &ServeArgs,
    payments: Option<PaymentsConfig>,
    notes: &mut Vec<String>,
) -> Result<ServerConfig, ServeError> {
    let payments = match payments {
        Some(payments) => Some(payments),
        None => {
            let from_flags = args.payments.payments().map_err(ServeError::usage)?;
            notes.extend(from_flags.as_ref().and(args.payments.describe()));
            from_flags
        }
    };
    if let Some(payments) = payments {
        payments.check(agent).map_err(ServeError::usage)?;
        return Ok(config.payments(payments));
    }
    if let Some(skill) = agent.skills().iter().find(|skill| skill.pricing().is_priced()) {
        return Err(ServeError::usage(format!(
            "skill {:?} is priced, but no payment rail collects its price: set --pay-rail (x402, mpp or local)",
            skill.key()
        )));
    }
    Ok(config)
}

/// The states read by `read`, as `/health` shows them.
#[cfg(feature = "backends")]
pub(super) fn backends_health(
    read: impl Fn() -> Vec<accord_backends::BackendStatus> + Send + Sync + 'static,
) -> accord_server::BackendsHealth {
    accord_server::BackendsHealth::new(move || {
        read()
            .into_iter()
            .map(|status| accord_types::lucid::BackendHealth {
                name: status.name,
                up: status.up,
                since: accord_engine::time::iso_millis(status.since),
                error: status.last_error,
                calls: status.calls,
                failures: status.failures,
                reconnects: status.reconnects,
            })
            .collect()
    })
}

/// How often the backends' metrics are brought up to date.
const BACKEND_METRICS_PERIOD: std::time::Duration = std::time::Duration::from_secs(5);

/// Keeps the backends' metrics up to date (every [`BACKEND_METRICS_PERIOD`], from their states):
/// `accord_backend_up` (1 or 0), and the counters `accord_backend_calls_total`,
/// `accord_backend_failures_total` and `accord_backend_reconnects_total`, each by `backend`.
async fn backend_metrics(backends: accord_server::BackendsHealth) {
    let mut ticks = tokio::time::interval(BACKEND_METRICS_PERIOD);
    loop {
        ticks.tick().await;
        for backend in backends.read() {
            let name = backend.name;
            metrics::gauge!("accord_backend_up", "backend" => name.clone()).set(if backend.up { 1.0 } else { 0.0 });
            metrics::counter!("accord_backend_calls_total", "backend" => name.clone()).absolute(backend.calls);
            metrics::counter!("accord_backend_failures_total", "backend" => name.clone()).absolute(backend.failures);
            metrics::counter!("accord_backend_reconnects_total", "backend" => name).absolute(backend.reconnects);
        }
    }
}

/// What the configuration serves, for the summary.
struct Served {
    jsonrpc_tasks: bool,
    a2a: bool,
    a2a_03: bool,
}

impl Served {
    fn of(config: &ServerConfig) -> Self {
        Self {
            jsonrpc_tasks: config.jsonrpc_tasks.is_some(),
            a2a: config.a2a.as_ref().is_some_and(|a2a| a2a.v10),
            a2a_03: config.a2a.as_ref().is_some_and(|a2a| a2a.v03),
        }
    }
}

/// `scoped skills (every face): slow needs demo:slow`, or nothing when no skill needs a scope.
fn scopes_note(agent: &Agent) -> Option<String> {
    let scoped: Vec<String> =
        agent.skills().iter().filter_map(|skill| Some(format!("{} needs {}", skill.key(), skill.scope()?))).collect();
    (!scoped.is_empty()).then(|| format!("scoped skills (every face): {}", scoped.join(", ")))
}

/// Where the gRPC binding is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GrpcServe {
    Off,
    /// On the HTTP listener.
    SamePort,
    /// On the HTTP listener and on a listener of its own at this port.
    Port(u16),
}

fn grpc_setting(args: &ServeArgs) -> Result<GrpcServe, ServeError> {
    let wanted = match (args.no_grpc, args.grpc_port) {
        (true, _) => GrpcServe::Off,
        (false, None) => GrpcServe::SamePort,
        (false, Some(port)) => GrpcServe::Port(port),
    };
    if cfg!(feature = "grpc") {
        return Ok(wanted);
    }
    match wanted {
        GrpcServe::Port(_) => Err(ServeError::usage("--grpc-port needs a build with the `grpc` cargo feature")),
        _ => Ok(GrpcServe::Off),
    }
}

/// `/x/y/` → `/x/y`; `` and `/` → ``.
fn normalize_base_path(base_path: &str) -> String {
    let trimmed = base_path.trim().trim_matches('/');
    if trimmed.is_empty() { String::new() } else { format!("/{trimmed}") }
}

/// The faces under the base path; gRPC methods at `/lf.a2a.v1.A2AService/…` whatever the base
/// path.
fn app(faces: &Faces, base_path: &str, landing: bool, grpc: bool) -> axum::Router {
    let router = faces.router();
    let app = if base_path.is_empty() {
        router
    } else if grpc {
        axum::Router::new().nest(base_path, router).merge(faces.a2a_grpc())
    } else {
        axum::Router::new().nest(base_path, router)
    };
    // The printed URL ends with `/`, which a nested router does not match: it leads to the page.
    if landing && !base_path.is_empty() {
        let page = base_path.to_owned();
        let to_page = move || std::future::ready(axum::response::Redirect::permanent(&page));
        app.route(&format!("{base_path}/"), axum::routing::get(to_page))
    } else {
        app
    }
}

async fn bind(host: &str, port: u16, flag: &str) -> Result<TcpListener, ServeError> {
    TcpListener::bind((host, port)).await.map_err(|error| {
        let what = if flag == "--port" { String::new() } else { format!(" for {flag}") };
        ServeError::failed(format!("cannot listen on {host}:{port}{what}: {error}"))
    })
}

fn local_addr(listener: &TcpListener) -> Result<SocketAddr, ServeError> {
    listener.local_addr().map_err(|error| ServeError::failed(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_paths_are_normalized() {
        assert_eq!(normalize_base_path(""), "");
        assert_eq!(normalize_base_path("/"), "");
        assert_eq!(normalize_base_path("agents/demo/"), "/agents/demo");
        assert_eq!(normalize_base_path(" /x "), "/x");
    }

    #[tokio::test]
    async fn a_program_with_an_agent_of_its_own_refuses_an_agent_file() {
        let agent = Agent::builder("own")
            .skill(
                accord_engine::Skill::builder("echo")
                    .typed(|text: String, _run| async move { Ok::<_, accord_engine::SkillError>(text) }),
            )
            .build()
            .expect("agent");
        let args = ServeArgs { config: Some("agent.toml".into()), ..ServeArgs::default() };
        let error =
            Serve::with_args(agent, args).logging(false).store(StoreSpec::Memory).bind().await.expect_err("refused");
        assert_eq!(error.kind(), super::super::ServeErrorKind::Usage);
        assert!(error.to_string().starts_with("--config agent.toml: "), "{error}");
    }
}
