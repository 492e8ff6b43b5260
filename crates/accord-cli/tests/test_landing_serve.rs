//! `accord serve`'s landing page on a real process: on by default, off with `--no-landing`, reached
//! from the printed URL under `--base-path`, and showing the demo prices with their rail.

mod support;

use support::Served;

fn client() -> reqwest::Client {
    // Redirects are checked, not followed.
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

async fn status(client: &reqwest::Client, url: &str) -> u16 {
    client.get(url).send().await.expect("response").status().as_u16()
}

#[tokio::test]
async fn the_page_is_on_by_default_and_off_with_no_landing() {
    let client = client();
    let on = Served::start(&["--store", "memory"]);
    let page = client.get(format!("{}/", on.url)).send().await.expect("page");
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let html = page.text().await.expect("html");
    assert!(html.contains("<h1 id=\"agent-name\">accord-demo</h1>"), "{html}");
    for skill in ["echo", "summarize", "slow", "ticks", "confirm"] {
        assert!(html.contains(&format!("id=\"skill-{skill}\"")), "{skill}");
    }
    assert_eq!(status(&client, &format!("{}/favicon.svg", on.url)).await, 200);

    let off = Served::start(&["--store", "memory", "--no-landing"]);
    assert_eq!(status(&client, &format!("{}/", off.url)).await, 404);
    assert_eq!(status(&client, &format!("{}/favicon.svg", off.url)).await, 404);
    assert_eq!(status(&client, &format!("{}/.well-known/agent-card.json", off.url)).await, 200);
}

#[tokio::test]
async fn under_a_base_path_the_printed_url_leads_to_the_page() {
    let client = client();
    let served = Served::start(&["--store", "memory", "--base-path", "/agents/demo"]);
    assert!(served.url.ends_with("/agents/demo"), "{}", served.url);
    // What `accord serve` prints ends with `/`.
    let redirect = client.get(format!("{}/", served.url)).send().await.expect("response");
    assert_eq!(redirect.status(), 308);
    assert_eq!(redirect.headers()["location"], "/agents/demo");
    let html = client.get(&served.url).send().await.expect("page").text().await.expect("html");
    assert!(html.contains("data-base=\"/agents/demo\""));
    assert!(html.contains("href=\"/agents/demo/favicon.svg\""));

    let off = Served::start(&["--store", "memory", "--base-path", "/agents/demo", "--no-landing"]);
    assert_eq!(status(&client, &format!("{}/", off.url)).await, 404);
    assert_eq!(status(&client, &off.url).await, 404);
}

#[tokio::test]
async fn demo_prices_are_shown_with_their_rail() {
    let folder = std::env::temp_dir().join(format!("accord-landing-prices-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("temp folder");
    let store = format!("sqlite://{}", folder.join("tasks.db").display());
    let key = folder.join("push.key");
    let served =
        Served::start(&["--demo-prices", "--store", &store, "--push-key-file", key.to_str().expect("utf-8 path")]);
    let html = client().get(format!("{}/", served.url)).send().await.expect("page").text().await.expect("html");
    let summarize = &html[html.find("id=\"skill-summarize\"").expect("summarize")..];
    assert!(
        summarize.contains("<dd class=\"price\">invoke 1000, stream 1000, task 1000 (local on accord:local)</dd>"),
        "{summarize}"
    );
    let echo = &html[html.find("id=\"skill-echo\"").expect("echo")..];
    assert!(echo.contains("<dd class=\"price\">free</dd>"));
    drop(served);
    let _ = std::fs::remove_dir_all(&folder);
}
