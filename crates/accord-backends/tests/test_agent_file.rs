//! The agent file: the minimal file works as written, every key is read, and every bad file
//! reports all its problems at once, one line each, naming the file, the key and the reason.

use std::collections::HashMap;
use std::path::Path;

use accord_backends::{AgentFile, Backend};
use accord_engine::{Pricing, RunError, SkillOperation};
use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};

const MINIMAL: &str = r#"[agent]
name = "shop"
description = "A shop's services behind A2A"

[[skill]]
id = "quote"
description = "Price quote for an item"
input_schema = { type = "object", properties = { item = { type = "string" } }, required = ["item"] }
http = { url = "http://127.0.0.1:${QUOTE_PORT}/quote" }

[[skill]]
id = "count"
description = "Counts the words of a text"
command = ["python3", "count.py"]
"#;

fn env(extra: &[(&'static str, &str)]) -> HashMap<&'static str, String> {
    let mut env = HashMap::from([("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()))]);
    env.extend(extra.iter().map(|(name, value)| (*name, (*value).to_owned())));
    env
}

fn parse(
    text: &str,
    dir: &Path,
    env: &HashMap<&'static str, String>,
) -> Result<AgentFile, accord_backends::FileErrors> {
    AgentFile::parse_with_env(text, "shop.toml", dir, &|name| env.get(name).cloned())
}

#[tokio::test]
async fn the_minimal_file_works_as_written() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let backend = Router::new().route(
        "/quote",
        post(|body: axum::Json<Value>| async move { axum::Json(json!({"item": body.0["item"], "price": 1200})) }),
    );
    tokio::spawn(async move { axum::serve(listener, backend).await });

    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("shop.toml"), MINIMAL).expect("write");
    std::fs::write(
        dir.path().join("count.py"),
        "import json, sys\nprint(json.dumps({'words': len(json.load(sys.stdin)['text'].split())}))\n",
    )
    .expect("write");
    let text = std::fs::read_to_string(dir.path().join("shop.toml")).expect("read");
    let file = parse(&text, dir.path(), &env(&[("QUOTE_PORT", &port.to_string())])).unwrap_or_else(|e| panic!("{e}"));
    assert!(file.serve_table().is_none() && file.payments_table().is_none() && file.scopes().is_empty());
    let agent = file.build_agent().expect("agent");
    assert_eq!(agent.name(), "shop");
    assert_eq!(agent.description(), Some("A shop's services behind A2A"));

    let quote = agent.skill("quote").expect("quote");
    assert_eq!(quote.description(), Some("Price quote for an item"));
    let output = agent.invoke(quote.validate_input(json!({"item": "lamp"})).expect("valid")).await.expect("quote");
    assert_eq!(output.completion.output, json!({"item": "lamp", "price": 1200}));
    assert!(matches!(quote.validate_input(json!({})), Err(RunError::InvalidInput { .. })));

    let count = agent.skill("count").expect("count");
    let output = agent.invoke(count.validate_input(json!({"text": "a b c d"})).expect("valid")).await.expect("count");
    assert_eq!(output.completion.output, json!({"words": 4}));
    // Without an input schema a skill takes any JSON object, and only objects.
    assert!(count.validate_input(json!({"anything": [1, 2]})).is_ok());
    assert!(matches!(count.validate_input(json!("text")), Err(RunError::InvalidInput { .. })));
}

#[test]
fn an_unset_variable_is_an_error_naming_the_key() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("count.py"), "").expect("write");
    let errors = parse(MINIMAL, dir.path(), &env(&[])).expect_err("QUOTE_PORT is unset");
    assert_eq!(errors.to_string(), "shop.toml: skill[0].http.url: environment variable QUOTE_PORT is not set");
}

#[test]
fn load_reads_a_file_and_resolves_paths_against_its_directory() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(dir.path().join("schemas")).expect("mkdir");
    std::fs::create_dir(dir.path().join("work")).expect("mkdir");
    std::fs::write(
        dir.path().join("schemas/in.json"),
        r#"{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}"#,
    )
    .expect("write");
    let script = dir.path().join("work/run.sh");
    std::fs::write(&script, "#!/bin/sh\ncat\n").expect("write");
    set_mode(&script, 0o755);
    std::fs::write(
        dir.path().join("agent.toml"),
        "[agent]\nname = \"files\"\n\n[[skill]]\nid = \"echo\"\ninput_schema_file = \"schemas/in.json\"\ncommand = { argv = [\"./run.sh\"], cwd = \"work\" }\n",
    )
    .expect("write");
    let file = AgentFile::load(dir.path().join("agent.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.skills()[0].input_schema()["required"], json!(["n"]));
    match file.skills()[0].backend() {
        Backend::Command(config) => assert_eq!(config.program(), dir.path().join("work").join("./run.sh")),
        other => panic!("{other:?}"),
    }
    let missing = AgentFile::load(dir.path().join("nope.toml")).expect_err("no file");
    assert!(missing.to_string().starts_with(&format!("{}: cannot read", dir.path().join("nope.toml").display())));
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[tokio::test]
async fn every_key_is_read() {
    let dir = tempfile::tempdir().expect("dir");
    let text = r#"
[agent]
name = "shop"
description = "Everything"
version = "2.1.0"
provider = { organization = "Shop Ltd", url = "https://shop.example" }
documentation_url = "https://shop.example/docs"
icon_url = "https://shop.example/icon.png"
cancel_grace = 3

[serve]
store = "sqlite://shop.db"
grpc-port = 0

[payments]
rail = "local"
secret = "${PAY_SECRET}"

[[skill]]
id = "quote"
description = "Price quote"
tags = ["shop", "prices"]
input_schema = { type = "object" }
output_schema = { type = "object", required = ["price"] }
price = "1000"
scope = "shop:quote"
http = { url = "https://quotes.example/q", headers = { Authorization = "Bearer ${TOKEN}" }, timeout = 2.5, concurrency = 4, max_answer_bytes = 1024 }

[[skill]]
id = "count"
price = { invoke = "10", task = "20", free = ["stream"] }
command = { argv = ["sh", "-c", "cat"], timeout = 60, grace = 2, concurrency = 3, env = ["LANG"], env_set = { MODE = "fast" }, max_output_bytes = 2048, cwd = "." }
"#;
    let env = env(&[("TOKEN", "t0k3n-value"), ("PAY_SECRET", "pay-s3cret"), ("LANG", "C")]);
    let file = parse(text, dir.path(), &env).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.serve_table().expect("serve")["store"].as_str(), Some("sqlite://shop.db"));
    assert_eq!(file.serve_table().expect("serve")["grpc-port"].as_integer(), Some(0));
    assert_eq!(file.payments_table().expect("payments")["secret"].as_str(), Some("pay-s3cret"));
    assert!(!format!("{file:?}").contains("pay-s3cret") && !format!("{file:?}").contains("t0k3n-value"));
    assert_eq!(file.scopes().into_iter().collect::<Vec<_>>(), vec![("quote".to_owned(), "shop:quote".to_owned())]);

    let quote = &file.skills()[0];
    assert_eq!(quote.tags(), ["shop", "prices"]);
    assert_eq!(quote.output_schema(), Some(&json!({"type": "object", "required": ["price"]})));
    let every = Some("1000".to_owned());
    assert_eq!(
        quote.pricing(),
        &Pricing { invoke: every.clone(), stream: every.clone(), task: every, free: Vec::new() }
    );
    let shown = format!("{:?}", quote.backend());
    assert!(shown.contains("2.5s") && shown.contains("Some(4)") && shown.contains("1024"), "{shown}");
    let count = &file.skills()[1];
    assert_eq!(count.pricing().free, vec![SkillOperation::Stream]);
    let shown = format!("{:?}", count.backend());
    for part in ["60s", "2s", "Some(3)", "2048", "\"LANG\"", "\"MODE\"", "\"PATH\""] {
        assert!(shown.contains(part), "{part} in {shown}");
    }

    let agent = file.build_agent().expect("agent");
    assert_eq!(agent.version(), "2.1.0");
    assert_eq!(agent.card_fields()["provider"], json!({"organization": "Shop Ltd", "url": "https://shop.example"}));
    assert_eq!(agent.card_fields()["documentationUrl"], "https://shop.example/docs");
    assert_eq!(agent.card_fields()["iconUrl"], "https://shop.example/icon.png");
    assert_eq!(agent.skill("quote").expect("quote").tags(), ["shop", "prices"]);

    // The command's env and env_set reach it.
    let valid = agent.skill("count").expect("count").validate_input(json!({"x": 1})).expect("valid");
    assert_eq!(agent.invoke(valid).await.expect("cat").completion.output, json!({"x": 1}));
}

#[test]
fn every_problem_is_reported_at_once_one_line_each() {
    let dir = tempfile::tempdir().expect("dir");
    let text = r#"
agnet = 1

[agent]
name = "shop"
colour = "blue"

[[skill]]
description = "no id, no backend"

[[skill]]
id = "both"
http = { url = "http://x/" }
command = ["sh"]

[[skill]]
id = "bad key"
command = ["sh"]

[[skill]]
id = "dup"
command = ["sh"]

[[skill]]
id = "dup"
command = ["sh"]

[[skill]]
id = "schema"
input_schema = { type = 5 }
command = ["sh"]

[[skill]]
id = "missing-program"
command = ["no-such-program-for-accord"]

[[skill]]
id = "url"
http = { url = "not a url" }

[[skill]]
id = "env"
http = { url = "http://${UNSET_PORT}/", headers = { Host = "x" } }

[[skill]]
id = "price"
price = "ten"
command = ["sh"]

[[skill]]
id = "types"
tags = "one"
http = { url = "http://x/", timeout = "30", concurrency = 0, retries = 3 }

[[skill]]
id = "schema-file"
output_schema_file = "nowhere.json"
command = { argv = ["./not-here.sh"] }
"#;
    let errors = parse(text, dir.path(), &env(&[])).expect_err("a bad file");
    let expected = [
        "shop.toml: skill[8].http.url: environment variable UNSET_PORT is not set",
        "shop.toml: agnet: unknown key (known here: agent, skill, mcp, a2a, serve, payments)",
        "shop.toml: agent.colour: unknown key (known here: name, description, version, provider, documentation_url, icon_url, cancel_grace, default_skill)",
        "shop.toml: skill[0].id: missing",
        "shop.toml: skill[0]: no backend: give `http = { url = ... }` or `command = [...]`",
        "shop.toml: skill[1]: two backends: give either `http` or `command`, not both",
        "shop.toml: skill[2].id: must be 1 to 128 characters of [A-Za-z0-9._-], starting with a letter or digit",
        "shop.toml: skill[4].id: skill id \"dup\" is used twice",
        "shop.toml: skill[5].input_schema: not a valid JSON Schema:",
        "shop.toml: skill[6].command[0]: program \"no-such-program-for-accord\" is not found on PATH",
        "shop.toml: skill[7].http.url: not a valid URL (relative URL without a base)",
        "shop.toml: skill[8].http.headers.Host: this header is set by Accord",
        "shop.toml: skill[9].price: the invoke price \"ten\" is not a decimal integer in the asset's smallest unit",
        "shop.toml: skill[10].tags: expected an array of strings, found a string",
        "shop.toml: skill[10].http.timeout: expected a number of seconds, found a string",
        "shop.toml: skill[10].http.concurrency: expected a positive integer",
        "shop.toml: skill[10].http.retries: unknown key (known here: url, method, headers, timeout, concurrency, max_answer_bytes)",
        "shop.toml: skill[11].output_schema_file: cannot read",
        "shop.toml: skill[11].command.argv[0]:",
    ];
    let report = errors.to_string();
    let lines: Vec<&str> = report.lines().collect();
    for want in expected {
        assert!(lines.iter().any(|line| line.starts_with(want)), "missing {want:?} in:\n{report}");
    }
    assert_eq!(lines.len(), expected.len(), "{report}");
    assert_eq!(errors.errors().len(), lines.len());
    assert!(lines.iter().all(|line| line.starts_with("shop.toml: ")));
}

#[test]
fn syntax_errors_name_the_line_and_column() {
    let errors = parse("[agent]\nname = \"x\"\nbroken = \n", Path::new("."), &env(&[])).expect_err("syntax");
    let report = errors.to_string();
    assert!(report.starts_with("shop.toml: line 3, column "), "{report}");
    assert!(report.contains("not valid TOML"), "{report}");
}

#[test]
fn the_default_skill_is_the_one_named_else_the_first() {
    let dir = tempfile::tempdir().expect("dir");
    let skills = "[[skill]]\nid = \"quote\"\nhttp = { url = \"http://127.0.0.1:1/q\" }\n\
                  [[skill]]\nid = \"count\"\ncommand = [\"sh\"]\n";
    let named = format!("[agent]\nname = \"shop\"\ndefault_skill = \"count\"\n{skills}");
    let file = parse(&named, dir.path(), &env(&[])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.default_skill(), Some("count"));
    assert!(file.default_skill_is_configured());
    assert_eq!(file.default_skill_with_tools(&["t.add".into()]).as_deref(), Some("count"));

    // Not named: the first of several, the only one of one.
    let several = format!("[agent]\nname = \"shop\"\n{skills}");
    let file = parse(&several, dir.path(), &env(&[])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((file.default_skill(), file.default_skill_is_configured()), (Some("quote"), false));
    let one = "[agent]\nname = \"shop\"\n[[skill]]\nid = \"count\"\ncommand = [\"sh\"]\n";
    assert_eq!(parse(one, dir.path(), &env(&[])).unwrap_or_else(|e| panic!("{e}")).default_skill(), Some("count"));
}

#[test]
fn a_default_skill_that_is_no_skill_of_the_file_is_an_error_listing_the_skills() {
    let dir = tempfile::tempdir().expect("dir");
    let skills = "[[skill]]\nid = \"quote\"\nhttp = { url = \"http://127.0.0.1:1/q\" }\n\
                  [[skill]]\nid = \"count\"\ncommand = [\"sh\"]\n";
    let text = format!("[agent]\nname = \"shop\"\ndefault_skill = \"echo\"\n{skills}");
    let errors = parse(&text, dir.path(), &env(&[])).expect_err("unknown default");
    assert_eq!(
        errors.to_string(),
        "shop.toml: agent.default_skill: \"echo\" is not a skill of this file (its skills: quote, count)"
    );
    // A skill with another problem is still a skill of the file: only that problem is reported.
    let text = format!(
        "[agent]\nname = \"shop\"\ndefault_skill = \"count\"\n{}",
        skills.replace("command = [\"sh\"]", "command = [\"no-such-program-for-accord\"]")
    );
    let errors = parse(&text, dir.path(), &env(&[])).expect_err("bad program");
    assert_eq!(errors.errors().len(), 1, "{errors}");
    assert_eq!(errors.errors()[0].key, "skill[1].command[0]");
    for (value, reason) in [("3", "expected a string, found an integer"), ("\" \"", "must not be empty")] {
        let text = format!("[agent]\nname = \"shop\"\ndefault_skill = {value}\n{skills}");
        let errors = parse(&text, dir.path(), &env(&[])).expect_err("bad default");
        assert_eq!(errors.to_string(), format!("shop.toml: agent.default_skill: {reason}"));
    }
}

#[tokio::test]
async fn a_default_skill_may_name_a_tool_which_build_checks() {
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp_tools.py");
    let mcp = format!("[[mcp]]\nprefix = \"t.\"\ncommand = [\"python3\", {:?}]\n", server.display().to_string());
    // Without a `[[skill]]` nor `default_skill`, the first tool.
    let file = parse(&format!("[agent]\nname = \"tools\"\n{mcp}"), Path::new("."), &env(&[])).expect("file");
    assert_eq!(file.default_skill(), None);
    let (_, tools) = file.build().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.default_skill_with_tools(&tools).as_deref(), Some("t.add"));

    let named = format!("[agent]\nname = \"tools\"\ndefault_skill = \"t.echo\"\n{mcp}");
    let file = parse(&named, Path::new("."), &env(&[])).expect("a tool's key loads");
    let (agent, tools) = file.build().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.default_skill_with_tools(&tools).as_deref(), Some("t.echo"));
    assert!(agent.skill("t.echo").is_ok());

    let wrong = format!("[agent]\nname = \"tools\"\ndefault_skill = \"t.nope\"\n{mcp}");
    let file = parse(&wrong, Path::new("."), &env(&[])).expect("checked when built");
    let errors = file.build().await.expect_err("no such tool");
    assert_eq!(
        errors.to_string(),
        "shop.toml: agent.default_skill: \"t.nope\" is not a skill of this agent (its skills: t.add, t.echo, t.slow, t.fail)"
    );
}

#[test]
fn http_methods_and_path_templates_are_checked_at_load() {
    let text = r#"
[agent]
name = "rest"

[[skill]]
id = "get"
input_schema = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
http = { url = "http://127.0.0.1:3000/items/{id}", method = "GET" }

[[skill]]
id = "no-schema"
http = { url = "http://127.0.0.1:3000/items/{id}/parts/{part}", method = "delete" }

[[skill]]
id = "not-in-schema"
input_schema = { type = "object", properties = { sku = { type = "string" } } }
http = { url = "http://127.0.0.1:3000/items/{id}", method = "PUT" }

[[skill]]
id = "bad-method"
http = { url = "http://127.0.0.1:3000/items", method = "HEAD" }

[[skill]]
id = "method-type"
http = { url = "http://127.0.0.1:3000/items", method = 1 }

[[skill]]
id = "in-host"
http = { url = "http://{host}.example/items" }

[[skill]]
id = "in-query"
http = { url = "http://127.0.0.1:3000/items?id={id}" }

[[skill]]
id = "unclosed"
http = { url = "http://127.0.0.1:3000/items/{id" }

[[skill]]
id = "bad-name"
http = { url = "http://127.0.0.1:3000/items/{the id}" }

[[skill]]
id = "twice"
http = { url = "http://127.0.0.1:3000/{id}/{id}" }
"#;
    let errors = parse(text, Path::new("."), &env(&[])).expect_err("bad templates");
    let expected = [
        "shop.toml: skill[2].http.url: the path variable `{id}` is not a property of the skill's input schema",
        "shop.toml: skill[3].http.method: expected GET, POST, PUT, PATCH or DELETE",
        "shop.toml: skill[4].http.method: expected a string such as \"GET\", found an integer",
        "shop.toml: skill[5].http.url: the variable `{host}` may stand only in the URL's path",
        "shop.toml: skill[6].http.url: the variable `{id}` may stand only in the URL's path",
        "shop.toml: skill[7].http.url: a `{` without its `}` (a path variable is written `{name}`)",
        "shop.toml: skill[8].http.url: `{the id}` is not a path variable (a name is 1 to 64 characters of [A-Za-z0-9_-])",
        "shop.toml: skill[9].http.url: the path variable `{id}` appears twice",
    ];
    assert_eq!(errors.to_string(), expected.join("\n"));

    // The good ones, alone, load with their methods and variables.
    let good = text.split("[[skill]]\nid = \"not-in-schema\"").next().expect("head");
    let file = parse(good, Path::new("."), &env(&[])).unwrap_or_else(|e| panic!("{e}"));
    for (skill, method, variables) in [
        (0, accord_backends::HttpMethod::Get, vec!["id"]),
        (1, accord_backends::HttpMethod::Delete, vec!["id", "part"]),
    ] {
        match file.skills()[skill].backend() {
            Backend::Http(config) => {
                assert_eq!(config.http_method(), method);
                assert_eq!(config.path_variables(), variables);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_file_needs_an_agent_and_a_skill() {
    let errors = parse("", Path::new("."), &env(&[])).expect_err("empty");
    assert_eq!(errors.to_string(), "shop.toml: agent: missing: the file needs an [agent] table with a `name`");
    let errors = parse("[agent]\nname = \" \"\n", Path::new("."), &env(&[])).expect_err("no skill");
    assert_eq!(
        errors.to_string(),
        "shop.toml: agent.name: must not be empty\nshop.toml: skill: missing: the file needs at least one [[skill]], [[mcp]] or [[a2a]]"
    );
}

#[test]
fn a_program_given_as_a_path_must_be_executable() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("plain.sh"), "echo {}\n").expect("write");
    set_mode(&dir.path().join("plain.sh"), 0o644);
    let text = "[agent]\nname = \"x\"\n[[skill]]\nid = \"a\"\ncommand = [\"./plain.sh\"]\n";
    let errors = parse(text, dir.path(), &env(&[])).expect_err("not executable");
    let report = errors.to_string();
    assert!(
        report.starts_with("shop.toml: skill[0].command[0]: ")
            && report.ends_with("plain.sh is not an executable file"),
        "{report}"
    );
}

#[test]
fn a_doubled_dollar_keeps_a_literal_reference() {
    let text = "[agent]\nname = \"x\"\ndescription = \"costs $${PRICE}\"\n[[skill]]\nid = \"a\"\ncommand = [\"sh\"]\n";
    let file = parse(text, Path::new("."), &env(&[])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.description(), Some("costs ${PRICE}"));
}

#[test]
fn a_bad_mcp_prefix_is_one_error_found_before_any_server_starts() {
    // The server would be `sleep`: nothing is started while the file is read.
    let text = "[agent]\nname = \"x\"\n[[mcp]]\ncommand = [\"sleep\", \"3600\"]\nprefix = \"my tools/\"\n";
    let errors = parse(text, Path::new("."), &env(&[])).expect_err("bad prefix");
    assert_eq!(
        errors.to_string(),
        "shop.toml: mcp[0].prefix: must be characters of [A-Za-z0-9._-], starting with a letter or digit, and shorter than 128 (each tool's skill key is the prefix followed by the tool's name)"
    );
    for good in ["", "t.", "files-", "v2_"] {
        let text = format!("[agent]\nname = \"x\"\n[[mcp]]\ncommand = [\"sleep\", \"1\"]\nprefix = {good:?}\n");
        parse(&text, Path::new("."), &env(&[])).unwrap_or_else(|e| panic!("{good:?}: {e}"));
    }
    let text = "[agent]\nname = \"x\"\n[[mcp]]\ncommand = [\"sleep\", \"1\"]\nprefix = \".x\"\n";
    assert!(parse(text, Path::new("."), &env(&[])).is_err(), "a prefix starting with a dot");
}

#[test]
fn invalid_mcp_entries_are_reported_without_a_false_no_skill_error() {
    let text = "[agent]\nname = \"x\"\n[[mcp]]\nprefix = \"t.\"\n[[mcp]]\nhttp = { url = \"ftp://x\" }\n";
    let errors = parse(text, Path::new("."), &env(&[])).expect_err("bad entries");
    let report = errors.to_string();
    assert!(!report.contains("needs at least one"), "{report}");
    assert!(report.contains("shop.toml: mcp[0]: no server"), "{report}");
    assert!(report.contains("shop.toml: mcp[1].http.url: not an http:// or https:// URL with a host"), "{report}");
}

#[test]
fn mcp_timeouts_and_name_are_read_and_checked() {
    let text = "[agent]\nname = \"x\"\n[[mcp]]\nname = \"\"\ncommand = [\"sleep\", \"1\"]\nstartup_timeout = 0\ntimeout = \"a\"\n";
    let report = parse(text, Path::new("."), &env(&[])).expect_err("bad values").to_string();
    assert!(report.contains("shop.toml: mcp[0].name: must not be empty"), "{report}");
    assert!(report.contains("shop.toml: mcp[0].startup_timeout: expected a positive number of seconds"), "{report}");
    assert!(report.contains("shop.toml: mcp[0].timeout: expected a number of seconds, found a string"), "{report}");
}
