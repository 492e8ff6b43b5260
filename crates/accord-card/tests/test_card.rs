//! Card building and validation: the blamejs schema, its error codes and their order, and the
//! identity card of an Accord agent.

use accord_card::{
    Card, CardError, CardErrorCode, CardOptions, Endpoint, card_from_agent_card, card_problems, create_card,
    validate_card_value,
};
use accord_types::AgentCard;
use serde_json::{Value, json};

fn options() -> CardOptions {
    CardOptions::new("agent.example.com", "ops-bot-1").capability("chat.respond")
}

fn code_of(result: Result<Card, CardError>) -> &'static str {
    result.expect_err("expected an error").code().as_str()
}

#[test]
fn create_card_fills_defaults_like_create_card_in_blamejs() {
    let card = create_card(options()).expect("card");
    assert_eq!(card.version, "1.0.0");
    assert_eq!(card.capabilities, vec!["chat.respond"]);
    assert_eq!(card.endpoints, None);
    assert_eq!(
        card.to_value(),
        json!({
            "issuer": "agent.example.com", "agentId": "ops-bot-1", "version": "1.0.0", "capabilities": ["chat.respond"]
        })
    );
    // An empty version also defaults, and no capabilities at all is allowed.
    let bare = create_card(CardOptions::new("i", "a").version("")).expect("card");
    assert_eq!(bare.version, "1.0.0");
    assert!(bare.capabilities.is_empty());
    assert_eq!(create_card(options().version("2.1")).expect("card").version, "2.1");
}

#[test]
fn missing_issuer_or_agent_id_is_missing_field() {
    // blamejs's own test: createCard({issuer: "x"}) fails with a2a/missing-field.
    let only_issuer = CardOptions { issuer: Some("x".into()), ..CardOptions::default() };
    let error = create_card(only_issuer).expect_err("expected an error");
    assert_eq!(error, CardError::MissingField { field: "agentId" });
    assert_eq!(error.code(), CardErrorCode::MissingField);
    assert_eq!(error.to_string(), "a2a/missing-field: card.agentId is required");
    assert_eq!(
        create_card(CardOptions::default()).expect_err("expected an error"),
        CardError::MissingField { field: "issuer" }
    );
}

#[test]
fn identifiers_must_match_the_pattern() {
    for bad in ["", "has space", "ünï", "a\tb", &"a".repeat(257)] {
        assert_eq!(code_of(create_card(CardOptions::new(bad, "ok").capability("c"))), "a2a/bad-field", "{bad:?}");
        assert_eq!(code_of(create_card(CardOptions::new("ok", bad).capability("c"))), "a2a/bad-field", "{bad:?}");
    }
    let long = "a".repeat(256);
    assert!(create_card(CardOptions::new(long.as_str(), "urn:x/y_z-1.2")).is_ok());
}

#[test]
fn version_must_be_semver_without_build_metadata() {
    for good in ["1.0", "1.0.0", "1.2.3-rc.1"] {
        assert!(create_card(options().version(good)).is_ok(), "{good}");
    }
    for bad in ["1", "v1.0.0", "1.0.0+build", "1.0.0.0", "latest"] {
        let error = create_card(options().version(bad)).expect_err("expected an error");
        assert!(matches!(&error, CardError::BadField { field, .. } if field == "version"), "{bad}: {error}");
    }
}

#[test]
fn capabilities_are_1_to_128_utf16_units() {
    assert!(create_card(options().capability("x".repeat(128))).is_ok());
    assert_eq!(code_of(create_card(options().capability("x".repeat(129)))), "a2a/bad-field");
    assert_eq!(code_of(create_card(options().capability(""))), "a2a/bad-field");
    // 64 emoji are 128 UTF-16 code units; 65 are too many although they are only 65 characters.
    assert!(create_card(options().capability("😀".repeat(64))).is_ok());
    let error = create_card(options().capability("😀".repeat(65))).expect_err("expected an error");
    assert_eq!(
        error,
        CardError::BadField { field: "capabilities[1]".into(), problem: "must be a string of 1-128 characters" }
    );
}

#[test]
fn endpoints_are_https_or_http_on_a_loopback_host() {
    let card = create_card(
        options()
            .endpoint("https://agent.example.com/a2a")
            .endpoint("http://localhost:8080/")
            .endpoint("http://[::1]/"),
    )
    .expect("card");
    assert_eq!(card.endpoints.as_ref().map(Vec::len), Some(3));
    for (url, insecure) in [
        ("http://localhost.evil/", true),
        ("http://127.0.0.1.evil.com/", true),
        ("http://agent.example.com/", true),
        ("ftp://localhost/", true),
        ("not a url", true),
        ("http://127.0.0.1:9/", false),
    ] {
        let result = create_card(options().endpoint("https://ok.example/").endpoint(url));
        if insecure {
            assert_eq!(result.expect_err("expected an error"), CardError::InsecureEndpoint { index: 1 }, "{url}");
        } else {
            assert!(result.is_ok(), "{url}");
        }
    }
    // Extra endpoint members are kept.
    let mut endpoint = Endpoint::new("https://a.example/");
    endpoint.extra.insert("binding".into(), json!("JSONRPC"));
    let card = create_card(CardOptions { endpoints: Some(vec![endpoint]), ..options() }).expect("card");
    assert_eq!(card.to_value()["endpoints"], json!([{"url": "https://a.example/", "binding": "JSONRPC"}]));
    // An empty list is kept, as in blamejs (an empty array is truthy).
    let empty = create_card(CardOptions { endpoints: Some(vec![]), ..options() }).expect("card");
    assert_eq!(empty.to_value()["endpoints"], json!([]));
}

#[test]
fn falsy_optional_members_are_left_out() {
    let card = create_card(options().policies(json!(false)).contact(json!("")).metadata(Value::Null)).expect("card");
    assert_eq!((card.policies, card.contact, card.metadata), (None, None, None));
    let card =
        create_card(options().policies(json!({"retention": 30})).contact(json!([])).metadata(json!({}))).expect("card");
    assert_eq!(card.policies, Some(json!({"retention": 30})));
    assert_eq!(card.contact, Some(json!([])));
    assert_eq!(card.metadata, Some(json!({})));
}

#[test]
fn validation_order_and_codes_follow_blamejs() {
    let valid = json!({"issuer": "i", "agentId": "a", "capabilities": [], "version": "1.0"});
    assert_eq!(validate_card_value(&valid), Ok(()));
    let with = |patch: Value| {
        let mut card = valid.clone();
        for (key, value) in patch.as_object().expect("object") {
            if value.is_null() && key.starts_with('-') {
                card.as_object_mut().expect("object").remove(&key[1..]);
            } else {
                card[key] = value.clone();
            }
        }
        validate_card_value(&card).err().map(|error| error.to_string())
    };
    let cases = [
        (json!({"issuer": null}), "a2a/missing-field: card.issuer is required"),
        (json!({"-version": null, "issuer": 5}), "a2a/missing-field: card.version is required"),
        (json!({"-capabilities": null, "-version": null}), "a2a/missing-field: card.capabilities is required"),
        (json!({"issuer": 5, "version": "x"}), "a2a/bad-field: card.issuer must match [a-zA-Z0-9._:/-]{1,256}"),
        (json!({"agentId": "", "version": "x"}), "a2a/bad-field: card.agentId must match [a-zA-Z0-9._:/-]{1,256}"),
        (
            json!({"version": 1, "capabilities": "x"}),
            "a2a/bad-field: card.version must be semver (MAJOR.MINOR[.PATCH][-PRE], at most 64 characters)",
        ),
        (json!({"capabilities": "x", "endpoints": 5}), "a2a/bad-field: card.capabilities must be an array"),
        (
            json!({"capabilities": ["ok", 7]}),
            "a2a/bad-field: card.capabilities[1] must be a string of 1-128 characters",
        ),
        (json!({"endpoints": null}), "a2a/bad-field: card.endpoints must be an array"),
        (json!({"endpoints": [{"url": 5}]}), "a2a/bad-field: card.endpoints[0] must be an object with a string url"),
        (json!({"endpoints": ["https://x/"]}), "a2a/bad-field: card.endpoints[0] must be an object with a string url"),
        (
            json!({"endpoints": [{"url": "https://x/"}, {"url": "http://localhost.evil"}]}),
            "a2a/insecure-endpoint: card.endpoints[1].url must be https (or http on localhost, 127.0.0.1 or [::1])",
        ),
    ];
    for (patch, expected) in cases {
        assert_eq!(with(patch.clone()).as_deref(), Some(expected), "{patch}");
    }
    for not_an_object in [json!([]), json!("card"), json!(null), json!(1)] {
        assert_eq!(validate_card_value(&not_an_object), Err(CardError::BadCard), "{not_an_object}");
    }
    // Unknown members and unchecked free-form members are fine.
    assert_eq!(with(json!({"policies": 5, "contact": "x", "metadata": [1], "somethingElse": true})), None);
}

#[test]
fn card_problems_lists_every_problem() {
    let card = json!({
        "issuer": "bad issuer", "capabilities": ["", "ok", 3], "version": "one",
        "endpoints": [{"url": "http://example.com"}, {}, {"url": "https://fine.example"}]
    });
    let codes: Vec<String> = card_problems(&card).iter().map(ToString::to_string).collect();
    assert_eq!(
        codes,
        vec![
            "a2a/missing-field: card.agentId is required",
            "a2a/bad-field: card.issuer must match [a-zA-Z0-9._:/-]{1,256}",
            "a2a/bad-field: card.version must be semver (MAJOR.MINOR[.PATCH][-PRE], at most 64 characters)",
            "a2a/bad-field: card.capabilities[0] must be a string of 1-128 characters",
            "a2a/bad-field: card.capabilities[2] must be a string of 1-128 characters",
            "a2a/insecure-endpoint: card.endpoints[0].url must be https (or http on localhost, 127.0.0.1 or [::1])",
            "a2a/bad-field: card.endpoints[1] must be an object with a string url",
        ]
    );
    assert!(card_problems(&json!({"issuer": "i", "agentId": "a", "capabilities": [], "version": "1.0"})).is_empty());
    assert_eq!(card_problems(&json!([])), vec![CardError::BadCard]);
}

#[test]
fn unknown_members_survive_a_round_trip() {
    let input = json!({
        "issuer": "i", "agentId": "a", "capabilities": ["c"], "version": "1.0",
        "endpoints": [{"url": "https://x/", "binding": "JSONRPC"}], "x-extension": {"k": 1}
    });
    let card: Card = serde_json::from_value(input.clone()).expect("card");
    assert_eq!(card.extra.get("x-extension"), Some(&json!({"k": 1})));
    assert_eq!(card.to_value(), input);
    assert_eq!(card.validate(), Ok(()));
}

fn agent(value: Value) -> AgentCard {
    serde_json::from_value(value).expect("agent card")
}

#[test]
fn identity_card_of_an_accord_agent() {
    let accord_agent = agent(json!({
        "name": "Echo agent", "version": "0.3.1", "url": "https://echo.example/",
        "supportedInterfaces": [
            {"url": "https://echo.example/lucid", "protocolBinding": "https://accord.dev/bindings/lucid"},
            {"url": "https://echo.example/a2a", "protocolBinding": "JSONRPC"},
            {"url": "https://echo.example/a2a", "protocolBinding": "HTTP+JSON"}
        ],
        "skills": [{"id": "echo", "name": "echo"}, {"id": "summarize.text", "name": "summarize"}]
    }));
    let card = card_from_agent_card(&accord_agent, "echo.example", "echo").expect("card");
    assert_eq!(card.issuer, "echo.example");
    assert_eq!(card.agent_id, "echo");
    assert_eq!(card.version, "0.3.1");
    assert_eq!(card.capabilities, vec!["echo", "summarize.text"]);
    let urls: Vec<&str> = card.endpoints.iter().flatten().map(|endpoint| endpoint.url.as_str()).collect();
    assert_eq!(urls, vec!["https://echo.example/lucid", "https://echo.example/a2a"]);

    // No interfaces: the agent's url; nothing at all: no endpoints; no version: the default.
    let only_url =
        card_from_agent_card(&agent(json!({"name": "x", "url": "http://127.0.0.1:8080/"})), "i", "a").expect("card");
    assert_eq!(only_url.endpoints, Some(vec![Endpoint::new("http://127.0.0.1:8080/")]));
    assert_eq!(only_url.version, "1.0.0");
    assert!(only_url.capabilities.is_empty());
    let bare = card_from_agent_card(&agent(json!({"name": "x"})), "i", "a").expect("card");
    assert_eq!(bare.endpoints, None);

    // A server bound to every interface does not get a card that advertises plain http there.
    let wildcard = card_from_agent_card(&agent(json!({"name": "x", "url": "http://0.0.0.0:8080/"})), "i", "a");
    assert_eq!(wildcard.expect_err("expected an error"), CardError::InsecureEndpoint { index: 0 });
}
