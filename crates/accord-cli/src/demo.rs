//! The demo agent `accord serve` runs. Its skills' input shapes are relied on by scripts and
//! other tools, so they only ever gain optional fields.

use std::time::Duration;

use accord_engine::{Agent, BuildError, Message, Outcome, Role, Run, RunEvent, Skill, SkillError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Input of `echo`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct EchoInput {
    /// The text to send back.
    pub text: String,
}

/// Input of `summarize`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SummarizeInput {
    /// The text to summarize.
    pub text: String,
    /// How many sentences to keep (default 2).
    #[schemars(range(min = 1, max = 100))]
    pub sentences: Option<u32>,
}

/// Output of `summarize`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SummarizeOutput {
    /// The summary.
    pub summary: String,
}

/// Input of `slow`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SlowInput {
    /// How long to sleep, in seconds.
    #[schemars(range(min = 0, max = 3600))]
    pub seconds: f64,
}

/// Output of `slow`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SlowOutput {
    /// How long it slept, in seconds.
    pub slept: f64,
}

/// Input of `ticks`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TicksInput {
    /// How many deltas to stream (default 3).
    #[schemars(range(min = 0, max = 1000))]
    pub count: Option<u32>,
    /// Milliseconds between two deltas (default 100; 0 streams them as fast as they go, as the
    /// streaming benchmark does).
    #[schemars(range(min = 0, max = 10000))]
    pub interval_ms: Option<u32>,
}

/// Output of `ticks`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TicksOutput {
    /// How many deltas were streamed.
    pub count: u32,
}

/// Input of `confirm`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConfirmInput {
    /// The question the task asks its caller.
    pub question: String,
    /// How many answers it waits for, asking again after each (default 1).
    #[schemars(range(min = 1, max = 10000))]
    pub rounds: Option<u32>,
}

/// Output of `confirm`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConfirmOutput {
    /// The question that was asked.
    pub question: String,
    /// The texts of the caller's follow-ups, in order.
    pub answers: Vec<String>,
}

/// The scope `accord serve` requires of every caller of the `slow` skill, on every face, when a
/// credential is configured (every credential holds it).
pub const SLOW_SCOPE: &str = "demo:slow";

/// The pause between two ticks.
pub const TICK: Duration = Duration::from_millis(100);

/// The asset of the demo prices.
pub const DEMO_ASSET: &str = "accord-credit";
/// The network of the demo prices.
pub const DEMO_NETWORK: &str = "accord:local";
/// Who the demo agent's prices pay.
pub const DEMO_PAY_TO: &str = "accord-demo";

/// The demo agent with prices (`accord serve --demo-prices`): `summarize` costs 1000 and `slow`
/// 500 per invocation, per stream and per task; `echo` and `ticks` stay free.
pub fn priced_agent() -> Result<Agent, BuildError> {
    build(true)
}

/// The payments the priced demo agent takes: the local development rail, in [`DEMO_ASSET`] on
/// [`DEMO_NETWORK`], paid to [`DEMO_PAY_TO`].
pub fn local_payments() -> accord_server::PaymentsConfig {
    let rail = std::sync::Arc::new(accord_payments::local::LocalRail::new());
    accord_server::PaymentsConfig::new(rail, DEMO_ASSET, DEMO_NETWORK, DEMO_PAY_TO)
}

/// The extended card of `accord serve` when a credential scheme is configured: the `slow` skill
/// in detail — how cancellation works and the scope every face asks for it, which every
/// credential of `accord serve` holds. It replaces the public card's `slow` entry.
pub fn extended_skills() -> Vec<accord_types::card::AgentSkill> {
    vec![accord_types::card::AgentSkill {
        id: "slow".into(),
        name: "slow".into(),
        description: Some(format!(
            "Sleeps for `seconds` (a number), then answers {{\"slept\": seconds}}. Cancelling the task stops it \
             at once and it answers how long it slept. It needs the scope `{SLOW_SCOPE}` on every face, \
             which your credentials hold."
        )),
        input_modes: vec!["application/json".into()],
        output_modes: vec!["application/json".into(), "text/plain".into()],
        tags: vec!["slow".into(), "cancellable".into(), SLOW_SCOPE.into()],
        extra: serde_json::Map::new(),
    }]
}

/// The demo agent: `echo`, `summarize`, `slow`, `ticks` and `confirm`.
pub fn agent() -> Result<Agent, BuildError> {
    build(false)
}

fn build(priced: bool) -> Result<Agent, BuildError> {
    // Every way of calling a priced skill is priced: invoke, stream (both skills have a stream
    // handler) and task.
    let price = |amount: &str| accord_engine::Pricing {
        invoke: priced.then(|| amount.to_owned()),
        stream: priced.then(|| amount.to_owned()),
        task: priced.then(|| amount.to_owned()),
        ..accord_engine::Pricing::default()
    };
    Agent::builder("accord-demo")
        .version(env!("CARGO_PKG_VERSION"))
        .description(
            "Accord's demo agent: echo, an extractive summarizer, a cancellable sleeper, a ticker and a question that \
             waits for its answer.",
        )
        .skill(
            Skill::builder("echo")
                .description("Returns the text it is given.")
                .typed(|input: EchoInput, _run: Run| async move { Ok::<_, SkillError>(input) }),
        )
        .skill(
            Skill::builder("summarize")
                .pricing(price("1000"))
                .description("Extractive summary: keeps the sentences that carry the text's most frequent words.")
                .typed(|input: SummarizeInput, _run: Run| async move {
                    let count = input.sentences.unwrap_or(2) as usize;
                    Ok::<_, SkillError>(SummarizeOutput { summary: crate::summarize::summarize(&input.text, count) })
                }),
        )
        .skill(
            Skill::builder("slow")
                .pricing(price("500"))
                .description("Sleeps for the given seconds; stops early when cancelled.")
                .typed(|input: SlowInput, run: Run| async move {
                    let started = tokio::time::Instant::now();
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs_f64(input.seconds)) => {}
                        () = run.cancelled() => return Err(SkillError::new("cancelled", "cancelled while sleeping")),
                    }
                    Ok(SlowOutput { slept: started.elapsed().as_secs_f64() })
                }),
        )
        .skill(
            Skill::builder("ticks")
                .description(
                    "Streams `count` deltas (default 3), one every `interval_ms` (default 100); as a task, they are the \
                     chunks of its `stream` artifact.",
                )
                .input_type::<TicksInput>()
                .output_type::<TicksOutput>()
                .handler(|run: Run| async move {
                    let input: TicksInput = run.input_as()?;
                    let count = input.count.unwrap_or(3);
                    let interval = input.interval_ms.map_or(TICK, |ms| Duration::from_millis(u64::from(ms)));
                    for tick in 0..count {
                        if tick > 0 && !interval.is_zero() {
                            tokio::select! {
                                () = tokio::time::sleep(interval) => {}
                                () = run.cancelled() => return Err(SkillError::new("cancelled", "cancelled")),
                            }
                        }
                        let last = tick + 1 == count;
                        run.emit(RunEvent::Delta { delta: format!("tick {}", tick + 1), mime: None, is_final: last })
                            .await;
                    }
                    let output = serde_json::to_value(TicksOutput { count })
                        .map_err(|error| SkillError::internal(error.to_string()))?;
                    Ok(accord_engine::Outcome::Completed(accord_engine::Completion::new(output)))
                }),
        )
        .skill(
            Skill::builder("confirm")
                .description(
                    "Asks its `question` and waits for input, `rounds` times (default 1); completes with the follow-ups' \
                     texts as its answers.",
                )
                .input_type::<ConfirmInput>()
                .output_type::<ConfirmOutput>()
                .handler(|run: Run| async move {
                    let input: ConfirmInput = run.input_as()?;
                    // The history holds the questions asked so far, each followed by its answer.
                    let history = run.task().map(|task| task.history.as_slice()).unwrap_or_default();
                    let mut answers = Vec::new();
                    for (index, message) in history.iter().enumerate() {
                        if message.role == Role::Agent {
                            let answer = history[index + 1..].iter().find(|message| message.role == Role::User);
                            answers.push(answer.map(Message::text).unwrap_or_default());
                        }
                    }
                    if answers.len() < input.rounds.unwrap_or(1).max(1) as usize {
                        return Ok(Outcome::InputRequired(Message::agent_text(input.question)));
                    }
                    let output = serde_json::to_value(ConfirmOutput { question: input.question, answers })
                        .map_err(|error| SkillError::internal(error.to_string()))?;
                    Ok(Outcome::Completed(accord_engine::Completion::new(output)))
                }),
        )
        .build()
}
