//! The landing page over real HTTP: the page, its assets and icon with their types, caching and
//! security headers; what the page shows from the card; escaping; the page with the Lucid face or
//! tasks turned off; and the page turned off.

use std::sync::Arc;

use accord_client::accord_card::{Algorithm, PrivateKey};
use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Pricing, Run, Skill};
use accord_server::{AgentRouterExt, ServerConfig, SignedCardConfig};
use accord_test_support::TestServer;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

async fn echo(run: Run) -> Result<Outcome, accord_engine::SkillError> {
    Ok(Outcome::Completed(Completion::new(run.input().clone())))
}

fn agent() -> Agent {
    Agent::builder("landing-test")
        .version("3.1.4")
        .description("An agent for landing page tests")
        .skill(
            Skill::builder("echo")
                .description("Says it back")
                .tag("demo")
                .input_schema(
                    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                )
                .output_schema(json!({"type": "object", "properties": {"echoed": {"type": "string"}}}))
                .invoke(echo),
        )
        .skill(Skill::builder("ticks").description("Streams only").stream(echo))
        .skill(
            Skill::builder("pricey")
                .pricing(Pricing { invoke: Some("1000".into()), task: Some("1500".into()), ..Pricing::default() })
                .invoke(echo),
        )
        .build()
        .expect("agent")
}

fn with_tasks(agent: &Agent) -> ServerConfig {
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    ServerConfig::default().tasks(runtime)
}

async fn serve(agent: &Agent, config: ServerConfig) -> TestServer {
    TestServer::start(agent.router_with(config)).await
}

async fn get(url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("response")
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers.get(name).unwrap_or_else(|| panic!("no {name} header")).to_str().expect("ASCII header")
}

fn assert_secured(headers: &HeaderMap) {
    assert_eq!(header(headers, "content-security-policy"), CSP);
    assert_eq!(header(headers, "x-content-type-options"), "nosniff");
    assert_eq!(header(headers, "referrer-policy"), "no-referrer");
}

/// The value of the first `attribute="…"` that follows `marker` in `html`.
fn attribute_after<'a>(html: &'a str, marker: &str, attribute: &str) -> &'a str {
    let from = html.find(marker).unwrap_or_else(|| panic!("{marker} in the page"));
    let rest = &html[from..];
    let start = rest.find(&format!("{attribute}=\"")).expect("attribute") + attribute.len() + 2;
    let end = rest[start..].find('"').expect("closing quote");
    &rest[start..start + end]
}

/// The skills the page hands its script.
fn skills_data(html: &str) -> Value {
    let marker = "<script type=\"application/json\" id=\"skills-data\">";
    let start = html.find(marker).expect("the skills data block") + marker.len();
    let end = html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..start + end]).expect("JSON")
}

#[tokio::test]
async fn the_page_shows_the_card_and_each_skill_with_security_headers() {
    let agent = agent();
    let server = serve(&agent, with_tasks(&agent)).await;
    let response = get(&server.url("/"), &[]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(response.headers(), "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(response.headers(), "cache-control"), "no-cache");
    assert_secured(response.headers());
    let html = response.text().await.expect("html");

    assert!(html.contains("<h1 id=\"agent-name\">landing-test</h1>"), "{html}");
    assert!(html.contains("An agent for landing page tests"));
    assert!(html.contains("<span id=\"agent-version\">3.1.4</span>"));
    // The card as the card route serves it, for this origin.
    let card: Value = get(&server.url("/.well-known/agent-card.json"), &[]).await.json().await.expect("card");
    let marker = "<summary>The card as served (JSON)</summary>\n<pre><code>";
    let start = html.find(marker).expect("the raw card view") + marker.len();
    let end = html[start..].find("</code>").expect("its end");
    let shown = html[start..start + end].replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">");
    let shown: Value = serde_json::from_str(&shown.replace("&#39;", "'").replace("&amp;", "&")).expect("JSON");
    assert_eq!(shown, card, "the raw card view is the served card");
    for interface in card["supportedInterfaces"].as_array().expect("interfaces") {
        let url = interface["url"].as_str().expect("url");
        assert!(html.contains(&format!("<td><code>{url}</code></td>")), "{url} is listed");
    }
    // Each skill with its description, schemas, price and bindings.
    assert!(html.contains("<article class=\"skill\" id=\"skill-echo\""));
    assert!(html.contains("Says it back"));
    assert!(html.contains("&quot;echoed&quot;"), "the output schema is shown");
    let origin = &server.origin;
    assert!(html.contains(&format!("Lucid invoke: <code>POST {origin}/entrypoints/echo/invoke</code>")));
    assert!(!html.contains("/entrypoints/echo/stream"), "echo does not stream");
    assert!(html.contains(&format!("Lucid stream: <code>POST {origin}/entrypoints/ticks/stream</code>")));
    assert!(!html.contains("/entrypoints/ticks/invoke"), "ticks only streams");
    assert!(html.contains(&format!("A2A JSON-RPC: <code>{origin}/a2a/jsonrpc</code>")));
    assert!(html.contains(&format!("A2A HTTP+JSON: <code>{origin}/a2a/rest</code>")));
    assert!(html.contains(&format!("JSON-RPC tasks: <code>{origin}/a2a/tasks</code>")));
    assert!(html.contains("<dd class=\"price\">invoke 1000, task 1500</dd>"), "{html}");
    assert!(html.contains("<dd class=\"price\">free</dd>"));
    // What the script gets: the operations the engine has for each skill.
    let skills = skills_data(&html);
    assert_eq!(skills[0]["key"], "echo");
    assert_eq!(skills[0]["inputSchema"]["required"], json!(["text"]));
    assert_eq!(
        (&skills[0]["invoke"], &skills[0]["stream"], &skills[0]["task"]),
        (&json!(true), &json!(false), &json!(true))
    );
    assert_eq!(
        (&skills[1]["invoke"], &skills[1]["stream"], &skills[1]["task"]),
        (&json!(false), &json!(true), &json!(false))
    );
    assert_eq!(skills[2]["priced"], true);
    assert!(html.contains("data-lucid=\"on\" data-tasks=\"on\""));
    assert!(html.contains("<div id=\"task-panel\""));
    assert!(!html.contains("signed-card-link"), "no signed card is configured");
    // No inline script or style: the policy would block them.
    assert!(!html.contains("<style") && !html.contains(" style=") && !html.contains(" onclick="));
    assert_eq!(html.matches("<script").count(), 2, "the page's script and the JSON data block");
}

#[tokio::test]
async fn assets_and_icon_are_served_with_their_types_and_caching() {
    let agent = agent();
    let server = serve(&agent, with_tasks(&agent)).await;
    let html = get(&server.url("/"), &[]).await.text().await.expect("html");
    let script = attribute_after(&html, "<script src=", "src").to_owned();
    let style = attribute_after(&html, "<link rel=\"stylesheet\"", "href").to_owned();
    let icon = attribute_after(&html, "<link rel=\"icon\"", "href").to_owned();
    assert!(script.starts_with("/assets/landing.") && script.ends_with(".js"), "{script}");
    assert!(style.starts_with("/assets/landing.") && style.ends_with(".css"), "{style}");
    assert_eq!(icon, "/favicon.svg");

    for (path, content_type, marker) in [
        (script.as_str(), "text/javascript; charset=utf-8", "'use strict';"),
        (style.as_str(), "text/css; charset=utf-8", ":root {"),
    ] {
        let response = get(&server.url(path), &[]).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(header(response.headers(), "content-type"), content_type);
        assert_eq!(header(response.headers(), "cache-control"), "public, max-age=31536000, immutable");
        assert_secured(response.headers());
        let etag = header(response.headers(), "etag").to_owned();
        // The name carries the content's hash: the first 64 bits of the entity tag.
        assert!(path.contains(&etag[1..17]), "{path} names {etag}");
        assert!(response.text().await.expect("text").contains(marker));
        let again = get(&server.url(path), &[("if-none-match", &etag)]).await;
        assert_eq!(again.status(), 304);
        assert!(again.bytes().await.expect("body").is_empty());
    }

    let icon = get(&server.url("/favicon.svg"), &[]).await;
    assert_eq!(icon.status(), 200);
    assert_eq!(header(icon.headers(), "content-type"), "image/svg+xml");
    assert_eq!(header(icon.headers(), "cache-control"), "public, max-age=86400");
    assert_secured(icon.headers());
    assert!(icon.text().await.expect("svg").starts_with("<svg "));

    // An asset name the page does not use, or an old hash, is not found.
    for path in ["/assets/landing.js", "/assets/landing.0000000000000000.js", "/assets/..%2Fpage.rs"] {
        let missing = get(&server.url(path), &[]).await;
        assert_eq!(missing.status(), 404, "{path}");
        assert_secured(missing.headers());
    }
}

#[tokio::test]
async fn head_and_conditional_get_of_the_page() {
    let agent = agent();
    let server = serve(&agent, with_tasks(&agent)).await;
    let head = reqwest::Client::new().head(server.url("/")).send().await.expect("head");
    assert_eq!(head.status(), 200);
    assert_eq!(header(head.headers(), "content-type"), "text/html; charset=utf-8");
    assert_secured(head.headers());
    let etag = header(head.headers(), "etag").to_owned();
    assert!(head.bytes().await.expect("body").is_empty());

    let page = get(&server.url("/"), &[]).await;
    assert_eq!(header(page.headers(), "etag"), etag, "HEAD and GET agree");
    let unchanged = get(&server.url("/"), &[("if-none-match", &etag)]).await;
    assert_eq!(unchanged.status(), 304);
    assert_secured(unchanged.headers());
    let other = get(&server.url("/"), &[("if-none-match", "\"0123\"")]).await;
    assert_eq!(other.status(), 200);
    // The page follows the origin: another host is another page, with another tag.
    let forwarded =
        get(&server.url("/"), &[("x-forwarded-host", "agent.example.com"), ("x-forwarded-proto", "https")]).await;
    assert_ne!(header(forwarded.headers(), "etag"), etag);
    assert!(
        forwarded.text().await.expect("html").contains("<td><code>https://agent.example.com/a2a/jsonrpc</code></td>")
    );

    let post = reqwest::Client::new().post(server.url("/")).send().await.expect("post");
    assert_eq!(post.status(), 405, "the page is read-only");
}

#[tokio::test]
async fn every_value_from_the_agent_is_escaped() {
    let hostile = "<script>alert(\"x\")</script><img src=x onerror='y'>";
    let agent = Agent::builder("<b>bold</b> & co")
        .version("1.0.0\"><script>")
        .description(hostile)
        .skill(
            Skill::builder("echo")
                .description(hostile)
                .tag("</script>")
                .input_schema(
                    json!({"type": "object", "properties": {"text": {"type": "string", "description": hostile}}}),
                )
                .invoke(echo),
        )
        .build()
        .expect("agent");
    let server = serve(&agent, with_tasks(&agent)).await;
    let html = get(&server.url("/"), &[]).await.text().await.expect("html");
    assert!(!html.contains("<script>"), "{html}");
    assert!(!html.contains("<img src=x"));
    assert!(!html.contains("<b>bold"));
    assert_eq!(html.matches("</script>").count(), 2, "only the page's own two script elements end");
    assert!(html.contains("&lt;b&gt;bold&lt;/b&gt; &amp; co"));
    assert!(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=&#39;y&#39;&gt;"));
    assert!(html.contains("1.0.0&quot;&gt;&lt;script&gt;"));
    // The data block still carries the values intact for the script.
    let skills = skills_data(&html);
    assert_eq!(skills[0]["inputSchema"]["properties"]["text"]["description"], hostile);
}

#[tokio::test]
async fn the_page_says_when_the_lucid_face_or_tasks_are_off() {
    let agent = agent();
    // Lucid off: no try-it forms and no task panel, and the page says why.
    let server = serve(&agent, with_tasks(&agent).lucid(false)).await;
    let html = get(&server.url("/"), &[]).await.text().await.expect("html");
    assert!(html.contains("id=\"lucid-off\""), "{html}");
    assert!(html.contains("id=\"tasks-off\""));
    assert!(!html.contains("data-try=") && !html.contains("id=\"task-panel\""));
    assert!(html.contains("data-lucid=\"off\" data-tasks=\"off\""));
    assert!(!html.contains("/entrypoints/"), "no Lucid binding is offered");
    assert!(html.contains("A2A JSON-RPC: <code>"), "the official faces still run the skills");
    let script = attribute_after(&html, "<script src=", "src").to_owned();
    assert_eq!(get(&server.url(&script), &[]).await.status(), 200);

    // No task runtime: the forms invoke and stream, but offer no task.
    let server = serve(&agent, ServerConfig::default()).await;
    let html = get(&server.url("/"), &[]).await.text().await.expect("html");
    assert!(html.contains("id=\"tasks-off\"") && html.contains("Tasks are not enabled on this agent"));
    assert!(html.contains("data-try=\"echo\""));
    assert!(!html.contains("id=\"lucid-off\""));
    let skills = skills_data(&html);
    assert!(skills.as_array().expect("skills").iter().all(|skill| skill["task"] == false), "{skills}");
    assert!(!html.contains("Lucid task:"));
}

#[tokio::test]
async fn landing_false_serves_no_page_icon_or_assets() {
    let agent = agent();
    let on = serve(&agent, with_tasks(&agent)).await;
    let html = get(&on.url("/"), &[]).await.text().await.expect("html");
    let script = attribute_after(&html, "<script src=", "src").to_owned();

    let off = serve(&agent, with_tasks(&agent).landing(false)).await;
    for path in ["/", "/favicon.svg", script.as_str()] {
        assert_eq!(get(&off.url(path), &[]).await.status(), 404, "{path}");
    }
    // The other faces are unaffected.
    assert_eq!(get(&off.url("/.well-known/agent-card.json"), &[]).await.status(), 200);
    assert_eq!(get(&off.url("/health"), &[]).await.status(), 200);
}

#[tokio::test]
async fn under_a_base_path_the_page_links_stay_under_it() {
    let agent = agent();
    let app = axum::Router::new().nest("/agents/one", agent.router_with(with_tasks(&agent)));
    let server = TestServer::start(app).await;
    let response = get(&server.url("/agents/one"), &[]).await;
    assert_eq!(response.status(), 200);
    let html = response.text().await.expect("html");
    assert!(html.contains("data-base=\"/agents/one\""));
    let script = attribute_after(&html, "<script src=", "src").to_owned();
    assert!(script.starts_with("/agents/one/assets/"), "{script}");
    assert_eq!(get(&server.url(&script), &[]).await.status(), 200);
    assert_eq!(attribute_after(&html, "<link rel=\"icon\"", "href"), "/agents/one/favicon.svg");
    assert_eq!(get(&server.url("/agents/one/favicon.svg"), &[]).await.status(), 200);
    let origin = &server.origin;
    assert!(html.contains(&format!("Lucid invoke: <code>POST {origin}/agents/one/entrypoints/echo/invoke</code>")));
    assert!(html.contains("href=\"/agents/one/.well-known/agent-card.json\""));
}

#[tokio::test]
async fn a_signed_card_is_linked_and_viewable() {
    let agent = agent();
    let key = Arc::new(PrivateKey::generate(Algorithm::Ed25519).expect("key"));
    let signed = SignedCardConfig::new(key, "agent.example.com", "landing-bot").expect("signed card config");
    let server = serve(&agent, with_tasks(&agent).signed_card(signed)).await;
    let html = get(&server.url("/"), &[]).await.text().await.expect("html");
    let link = attribute_after(&html, "id=\"signed-card-link\"", "href").to_owned();
    assert_eq!(link, "/.well-known/agent-card.signed.json");
    assert_eq!(attribute_after(&html, "<details id=\"card-signed\"", "data-src"), link);
    let envelope: Value = get(&server.url(&link), &[]).await.json().await.expect("envelope");
    assert!(envelope["signature"].is_object() || envelope["signature"].is_string(), "{envelope}");
}
