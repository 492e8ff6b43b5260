//! The landing page: what a person who opens the agent's URL in a browser sees. `GET /` renders,
//! on the server, the agent's name, description and version, its card (raw, and a link to the
//! signed envelope when one is configured) and each skill with its schemas, prices and the
//! bindings it is reachable on — all read from the card the card routes serve, so the page never
//! says something the card does not. One script, loaded from the page's own origin, adds a try-it
//! form per skill and a task panel; without it the page still reads.
//!
//! The assets (script, style sheet, icon) are compiled into the binary. The script and the style
//! sheet are served under names that carry a hash of their content, so they can be cached for a
//! year; the page and the icon carry an entity tag and are revalidated. Every answer of this
//! module carries a content security policy that admits only the page's own assets.
//!
//! This module owns those routes and the page's markup; it starts no run and reads no task: the
//! page's script calls the Lucid routes like any other client.

use std::sync::{Arc, LazyLock};

use axum::extract::{OriginalUri, Path};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::card::{entity_tag, if_none_match};
use crate::{AppState, State};

mod page;

/// Where the page's script and style sheet are served, relative to the agent's base path.
pub(crate) const ASSETS_PATH: &str = "/assets";

/// The page's content security policy: its own script, style sheet, icon and API calls, and
/// nothing else — no inline script or style, no framing, no other origin.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The page depends on these request headers (through the card's URLs), as the card does.
const VARY: &str = "host, x-forwarded-host, x-forwarded-proto";

/// One asset compiled into the binary.
pub(crate) struct Asset {
    /// The name it is served under: its stem, the first 64 bits of its SHA-256, its extension.
    pub(crate) name: String,
    content_type: &'static str,
    body: &'static [u8],
    etag: String,
}

impl Asset {
    fn new(stem: &str, extension: &str, content_type: &'static str, body: &'static [u8]) -> Self {
        let etag = entity_tag(body);
        let name = format!("{stem}.{}.{extension}", &etag[1..17]);
        Self { name, content_type, body, etag }
    }
}

/// The page's script and style sheet, by their hashed names.
pub(crate) static SCRIPT: LazyLock<Asset> =
    LazyLock::new(|| Asset::new("landing", "js", "text/javascript; charset=utf-8", include_bytes!("page.js")));
pub(crate) static STYLE: LazyLock<Asset> =
    LazyLock::new(|| Asset::new("landing", "css", "text/css; charset=utf-8", include_bytes!("page.css")));
static FAVICON: LazyLock<Asset> =
    LazyLock::new(|| Asset::new("favicon", "svg", "image/svg+xml", include_bytes!("favicon.svg")));

/// The landing routes: `/`, `/favicon.svg` and the assets under [`ASSETS_PATH`], each with its
/// entry of the OpenAPI document.
pub(crate) fn routes(state: Arc<AppState>) -> crate::openapi::Routes {
    use crate::openapi::describe;
    let with = |handler: axum::routing::MethodRouter<Arc<AppState>>| handler.with_state(Arc::clone(&state));
    crate::openapi::Routes::new()
        .route("/", with(get(landing_page)), describe::landing_page())
        .route("/favicon.svg", with(get(favicon)), describe::favicon())
        .route(&format!("{ASSETS_PATH}/{{name}}"), with(get(asset)), describe::landing_asset())
}

async fn landing_page(
    axum::extract::State(state): State,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Response {
    // The route is the agent's root: whatever precedes it is the base path the router is mounted
    // under, and the page's links keep it.
    let base_path = uri.path().trim_end_matches('/');
    let base_url = format!("{}{base_path}", crate::card::origin(&headers, &uri));
    let card = state.card.build(&base_url);
    let served = crate::card::served_card(&state, &base_url).unwrap_or(serde_json::Value::Null);
    let html = page::render(&page::PageInput {
        card: &card,
        served: &served,
        agent: &state.agent,
        base_path,
        lucid: state.config.lucid,
        tasks: state.config.lucid && state.tasks.is_some(),
        signed_card: state.config.signed_card.is_some(),
    });
    let etag = entity_tag(html.as_bytes());
    let mut response = if if_none_match(&headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
    };
    let response_headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response_headers.insert(header::ETAG, value);
    }
    // Revalidated on every visit: the page follows the agent's configuration and the request's
    // origin, and revalidating costs a 304.
    response_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response_headers.insert(header::VARY, HeaderValue::from_static(VARY));
    secure(response)
}

async fn favicon(headers: HeaderMap) -> Response {
    serve_asset(&FAVICON, &headers, "public, max-age=86400")
}

async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    match [&*SCRIPT, &*STYLE].into_iter().find(|asset| asset.name == name) {
        // The name changes with the content: a cached copy can never be stale.
        Some(asset) => serve_asset(asset, &headers, "public, max-age=31536000, immutable"),
        None => secure(
            (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "Not found\n")
                .into_response(),
        ),
    }
}

fn serve_asset(asset: &Asset, headers: &HeaderMap, cache_control: &'static str) -> Response {
    let mut response = if if_none_match(headers, &asset.etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, asset.content_type)], asset.body).into_response()
    };
    let response_headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&asset.etag) {
        response_headers.insert(header::ETAG, value);
    }
    response_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    secure(response)
}

/// Adds the headers every landing answer carries: the content security policy, no MIME sniffing,
/// no referrer.
fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}
