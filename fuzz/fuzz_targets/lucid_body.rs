//! Lucid request bodies: any bytes in, read the way the Lucid face reads an invoke, stream or
//! task body (JSON, `{"input": X}` or the body itself), then checked against skill input schemas
//! derived as the demo agent derives them. Never a panic; a refusal is a 400 in the Lucid error
//! shape; and an input the schema accepts always decodes into the handler's Rust type, so a
//! client mistake cannot get past validation to fail inside a skill. The Lucid response and
//! stream bodies a client reads are decoded too, with a write → read round trip.
#![no_main]

use std::sync::LazyLock;

use accord_engine::{Agent, Skill, SkillError};
use accord_server::LucidError;
use accord_types::lucid::{ErrorBody, InvokeResponse, StreamEnvelope};
use accord_types::tasks::{TaskList, TaskUpdate, TaskView};
use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

// The demo agent's input types (crates/accord-cli/src/demo.rs), with the same schema attributes.
#[derive(Deserialize, Serialize, JsonSchema)]
struct EchoInput {
    text: String,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct SummarizeInput {
    text: String,
    #[schemars(range(min = 1, max = 100))]
    sentences: Option<u32>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct SlowInput {
    #[schemars(range(min = 0, max = 3600))]
    seconds: f64,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct TicksInput {
    #[schemars(range(min = 0, max = 1000))]
    count: Option<u32>,
}

fn skill<I: DeserializeOwned + JsonSchema + Serialize + Send + 'static>(key: &str) -> accord_engine::SkillBuilder {
    Skill::builder(key).typed(|input: I, _run| async move { Ok::<_, SkillError>(input) })
}

static AGENT: LazyLock<Agent> = LazyLock::new(|| {
    Agent::builder("fuzz")
        .skill(skill::<EchoInput>("echo"))
        .skill(skill::<SummarizeInput>("summarize"))
        .skill(skill::<SlowInput>("slow"))
        .skill(skill::<TicksInput>("ticks"))
        .build()
        .expect("the fuzz agent builds")
});

fn check_input<I: DeserializeOwned>(key: &str, input: &Value) {
    let skill = AGENT.invocable(key).expect("skill exists");
    match AGENT.check_input(skill, input.clone()) {
        Ok(valid) => {
            if let Err(error) = I::deserialize(valid.input()) {
                panic!("{key}: the schema accepts {input} but the handler cannot read it: {error}");
            }
        }
        Err(error) => {
            let error = LucidError::from(error);
            assert_eq!(error.status.as_u16(), 400, "{key}: {input} → {error:?}");
            assert_eq!(error.body.error.code, "invalid_input");
        }
    }
}

fn round_trip<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(data: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<T>(data) {
        let written = serde_json::to_vec(&value).expect("serializes");
        let again: T = serde_json::from_slice(&written).expect("reads back");
        assert_eq!(again, value);
    }
}

fuzz_target!(|data: &[u8]| {
    match accord_server::fuzzing::lucid_input(data) {
        Ok(input) => {
            check_input::<EchoInput>("echo", &input);
            check_input::<SummarizeInput>("summarize", &input);
            check_input::<SlowInput>("slow", &input);
            check_input::<TicksInput>("ticks", &input);
        }
        Err(error) => {
            assert_eq!(error.status.as_u16(), 400, "{error:?}");
            assert_eq!(error.body.error.code, "invalid_request");
        }
    }
    round_trip::<InvokeResponse>(data);
    round_trip::<StreamEnvelope>(data);
    round_trip::<ErrorBody>(data);
    round_trip::<TaskView>(data);
    round_trip::<TaskList>(data);
    round_trip::<TaskUpdate>(data);
});
