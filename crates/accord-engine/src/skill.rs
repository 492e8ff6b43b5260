//! Skills (entrypoints): a key, schemas and handlers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{BuildError, RunError};
use crate::model::Issue;
pub use crate::model::SkillError;
use crate::run::{Completion, Outcome, Run};
use crate::schema::Schema;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Runs a skill. Implemented for every `Fn(Run) -> impl Future<Output = Result<Outcome,
/// SkillError>>`, so a closure or an `async fn` is a handler.
pub trait Handler: Send + Sync + 'static {
    /// Runs the skill once.
    fn call(&self, run: Run) -> BoxFuture<Result<Outcome, SkillError>>;

    /// Told when a task of this skill is cancelled while it waits for its caller (input or
    /// authorization required) and one of its runs saved a state ([`Run::save_state`]): no run
    /// is in progress to see the cancellation, so a handler that keeps something of the task
    /// outside Accord (a remote agent's task) releases it here. `task` is the task as
    /// cancelled, with [`Task::backend_state`](crate::task::Task::backend_state). The
    /// cancellation is recorded before this is called and stands whatever it does; it runs in
    /// the background on the worker that took the cancel, once. Default: nothing.
    fn waiting_task_cancelled(&self, task: crate::model::Task) -> BoxFuture<()> {
        let _ = task;
        Box::pin(async {})
    }
}

impl<F, Fut> Handler for F
where
    F: Fn(Run) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Outcome, SkillError>> + Send + 'static,
{
    fn call(&self, run: Run) -> BoxFuture<Result<Outcome, SkillError>> {
        Box::pin(self(run))
    }
}

/// A way of calling a skill; each is priced on its own (see [`Pricing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkillOperation {
    /// A direct invocation: the Lucid `invoke` route.
    Invoke,
    /// A stream: the Lucid `stream` route.
    Stream,
    /// A task, on any face that starts tasks (Lucid tasks, JSON-RPC tasks, both A2A bindings).
    Task,
}

impl SkillOperation {
    /// Every operation.
    pub const ALL: [Self; 3] = [Self::Invoke, Self::Stream, Self::Task];

    /// `invoke`, `stream` or `task`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invoke => "invoke",
            Self::Stream => "stream",
            Self::Task => "task",
        }
    }
}

/// What a skill costs, per way of calling it: amounts in the smallest unit of the agent's payment
/// asset, as decimal integer strings (`"10000"`). Which asset, network and payee — and which
/// payment rail collects — is the server's configuration.
///
/// A skill without any amount is free. A skill with one must price every way it can be called
/// ([`Skill::operations`]) or name it in [`Pricing::free`]: an operation left out by mistake would
/// run the skill for nothing, so the agent is refused when it is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pricing {
    /// The price of a direct invocation.
    pub invoke: Option<String>,
    /// The price of a stream.
    pub stream: Option<String>,
    /// The price of a task.
    pub task: Option<String>,
    /// The operations of a priced skill that are free on purpose.
    pub free: Vec<SkillOperation>,
}

impl Pricing {
    /// Whether any operation is priced.
    pub fn is_priced(&self) -> bool {
        self.invoke.is_some() || self.stream.is_some() || self.task.is_some()
    }

    /// The amount `operation` costs, if it is priced.
    pub fn amount(&self, operation: SkillOperation) -> Option<&str> {
        match operation {
            SkillOperation::Invoke => self.invoke.as_deref(),
            SkillOperation::Stream => self.stream.as_deref(),
            SkillOperation::Task => self.task.as_deref(),
        }
    }

    fn check(&self) -> Result<(), String> {
        for operation in SkillOperation::ALL {
            if let Some(amount) = self.amount(operation) {
                let name = operation.as_str();
                let digits = !amount.is_empty() && amount.bytes().all(|byte| byte.is_ascii_digit());
                if !digits || (amount.len() > 1 && amount.starts_with('0')) {
                    return Err(format!(
                        "the {name} price {amount:?} is not a decimal integer in the asset's smallest unit"
                    ));
                }
                if self.free.contains(&operation) {
                    return Err(format!("the {name} is both priced ({amount}) and listed as free"));
                }
            }
        }
        Ok(())
    }

    /// Refuses a priced skill that can be called some way that is neither priced nor free on
    /// purpose.
    fn check_covers(&self, operations: &[SkillOperation]) -> Result<(), String> {
        if !self.is_priced() {
            return Ok(());
        }
        match operations.iter().find(|operation| self.amount(**operation).is_none() && !self.free.contains(operation)) {
            None => Ok(()),
            Some(operation) => {
                let name = operation.as_str();
                Err(format!(
                    "the skill is priced, but its {name} is neither priced nor listed in `Pricing::free`, so a caller \
                     could run it for nothing that way: set `Pricing::{name}` or list `SkillOperation::{operation:?}` \
                     in `Pricing::free`"
                ))
            }
        }
    }
}

/// A skill of an agent (an "entrypoint" in the Lucid profile).
///
/// Cloning copies its settings and shares its handlers and compiled schemas.
#[derive(Clone)]
pub struct Skill {
    pub(crate) pricing: Pricing,
    pub(crate) scope: Option<Arc<str>>,
    pub(crate) safe_to_repeat: bool,
    pub(crate) key: Arc<str>,
    pub(crate) description: Option<String>,
    pub(crate) tags: Vec<String>,
    pub(crate) listing: Listing,
    pub(crate) input_schema: Schema,
    pub(crate) output_schema: Option<Schema>,
    pub(crate) invoke: Option<Arc<dyn Handler>>,
    pub(crate) stream: Option<Arc<dyn Handler>>,
    pub(crate) input_decoder: Option<InputDecoder>,
}

/// What the card says of a skill beyond its key, description and tags: a display name, example
/// prompts and media types. Empty for most skills (the card then shows the key and JSON); a
/// skill that stands for another agent's (a remote A2A skill) carries that agent's.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    name: Option<String>,
    examples: Vec<String>,
    input_modes: Vec<String>,
    output_modes: Vec<String>,
}

/// Checks that an input decodes into a typed handler's Rust type. A JSON Schema derived from a
/// type admits a little more than serde reads (`2.0` is a JSON Schema integer, not a `u32`), so
/// without this such input passed validation and then failed inside the skill as a server error.
pub(crate) type InputDecoder = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

impl std::fmt::Debug for Skill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skill")
            .field("key", &self.key)
            .field("invocable", &self.invoke.is_some())
            .field("streaming", &self.stream.is_some())
            .finish_non_exhaustive()
    }
}

/// Input that passed a skill's input schema, ready to run. Only
/// [`Skill::validate_input`] makes one, so a run can never start on unchecked input.
#[derive(Debug, Clone)]
pub struct ValidInput {
    pub(crate) skill: Arc<Skill>,
    pub(crate) input: Value,
}

impl ValidInput {
    /// The skill the input is for.
    pub fn skill(&self) -> &Arc<Skill> {
        &self.skill
    }

    /// The input.
    pub fn input(&self) -> &Value {
        &self.input
    }
}

impl Skill {
    /// Starts building a skill.
    pub fn builder(key: impl Into<String>) -> SkillBuilder {
        SkillBuilder {
            pricing: Pricing::default(),
            scope: None,
            safe_to_repeat: true,
            key: key.into(),
            description: None,
            tags: Vec::new(),
            listing: Listing::default(),
            input_schema: None,
            output_schema: None,
            invoke: None,
            stream: None,
            input_decoder: None,
        }
    }

    /// What the skill costs.
    pub fn pricing(&self) -> &Pricing {
        &self.pricing
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The scope a caller must hold to run the skill, if it needs one
    /// ([`SkillBuilder::scope`], [`Agent::with_skill_scope`](crate::Agent::with_skill_scope)).
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Whether a task of the skill interrupted by the stop of its worker (a crash, a restart) may
    /// run the skill again from the start ([`SkillBuilder::safe_to_repeat`]); if not, the task
    /// that recovery finds ends `failed` with the retryable code `interrupted` and the caller
    /// decides — unless its run saved a state to go on from ([`Run::save_state`]).
    pub fn is_safe_to_repeat(&self) -> bool {
        self.safe_to_repeat
    }

    /// Whether `caller` may run the skill: always when it needs no scope, otherwise only when
    /// the caller holds the scope (an anonymous caller holds none). Every way of running a skill
    /// asks this — a direct invocation or stream, a new task, a follow-up to a waiting task — on
    /// every face; a refusal is [`RunError::ScopeRequired`], and an audit event
    /// (`skill.scope_denied`, target `accord::audit`) names the skill, the scope, the face and a
    /// short tag of the caller's owner.
    pub fn permits(&self, caller: &crate::task::Caller) -> Result<(), RunError> {
        let Some(scope) = &self.scope else { return Ok(()) };
        if caller.has_scope(scope) {
            return Ok(());
        }
        tracing::warn!(
            target: "accord::audit",
            event = "skill.scope_denied",
            skill = %self.key,
            scope = %scope,
            face = crate::observe::current_face().unwrap_or("none"),
            anonymous = caller.is_anonymous(),
            owner = %crate::observe::owner_tag(caller.owner_hash()),
        );
        Err(RunError::ScopeRequired { key: self.key.to_string(), scope: scope.to_string() })
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Free-form tags.
    pub fn tags(&self) -> &[String] {
        &self.tags
    }

    /// The display name the card shows, when one was given (else the card shows the key).
    pub fn name(&self) -> Option<&str> {
        self.listing.name.as_deref()
    }

    /// Example prompts, for the card.
    pub fn examples(&self) -> &[String] {
        &self.listing.examples
    }

    /// The media types the skill accepts, for the card (empty: the card's JSON default).
    pub fn input_modes(&self) -> &[String] {
        &self.listing.input_modes
    }

    /// The media types the skill produces, for the card (empty: the card's default).
    pub fn output_modes(&self) -> &[String] {
        &self.listing.output_modes
    }

    /// The input JSON Schema.
    pub fn input_schema(&self) -> &Value {
        self.input_schema.source()
    }

    /// The output JSON Schema, when the skill declares one.
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref().map(Schema::source)
    }

    /// Whether the skill can be invoked directly.
    pub fn is_invocable(&self) -> bool {
        self.invoke.is_some()
    }

    /// Whether the skill can stream.
    pub fn is_streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// The ways the skill can be called: invoke and task with an invoke handler (a task runs the
    /// invoke handler), stream with a stream handler.
    pub fn operations(&self) -> Vec<SkillOperation> {
        operations(self.invoke.is_some(), self.stream.is_some())
    }

    /// Checks input against the input schema.
    pub fn validate_input(self: &Arc<Self>, input: Value) -> Result<ValidInput, RunError> {
        self.input_schema.check(&input).map_err(|issues| RunError::InvalidInput { issues })?;
        if let Some(decode) = &self.input_decoder
            && let Err(message) = decode(&input)
        {
            let issue = Issue { code: "type".into(), path: Vec::new(), message };
            return Err(RunError::InvalidInput { issues: vec![issue] });
        }
        Ok(ValidInput { skill: Arc::clone(self), input })
    }

    /// Checks a handler's output against the output schema, when there is one.
    pub(crate) fn check_output(&self, output: &Value) -> Result<(), Vec<Issue>> {
        match &self.output_schema {
            Some(schema) => schema.check(output),
            None => Ok(()),
        }
    }
}

/// Builds a [`Skill`]; finish it by handing it to [`crate::AgentBuilder::skill`].
#[must_use]
pub struct SkillBuilder {
    pricing: Pricing,
    scope: Option<Arc<str>>,
    safe_to_repeat: bool,
    key: String,
    description: Option<String>,
    tags: Vec<String>,
    listing: Listing,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    invoke: Option<Arc<dyn Handler>>,
    stream: Option<Arc<dyn Handler>>,
    input_decoder: Option<InputDecoder>,
}

impl std::fmt::Debug for SkillBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillBuilder").field("key", &self.key).finish_non_exhaustive()
    }
}

/// The schema of a Rust type, as JSON Schema 2020-12.
fn schema_of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Bool(true))
}

impl SkillBuilder {
    /// What the skill costs (checked when the agent is built: amounts must be decimal integers).
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = pricing;
        self
    }

    /// What the skill does.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Whether running the skill twice for one task does no harm (default `true`: a Rust skill is
    /// expected to be written so). A task interrupted by the stop of its worker is run again from
    /// the start by recovery only when this holds; otherwise it ends `failed` with the retryable
    /// code `interrupted`, so that a skill with side effects (a payment, a message sent) is never
    /// called a second time behind its caller's back. A task whose run saved a state
    /// ([`Run::save_state`]) is run again either way: its handler goes on from that state.
    pub fn safe_to_repeat(mut self, safe: bool) -> Self {
        self.safe_to_repeat = safe;
        self
    }

    /// Requires callers to hold `scope` to run the skill, on every face ([`Skill::permits`]).
    /// An empty scope requires nothing.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        let scope = scope.into();
        self.scope = if scope.is_empty() { None } else { Some(scope.into()) };
        self
    }

    /// Adds a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// The display name the card shows (default: the key).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.listing.name = Some(name.into());
        self
    }

    /// Adds an example prompt, for the card.
    pub fn example(mut self, example: impl Into<String>) -> Self {
        self.listing.examples.push(example.into());
        self
    }

    /// The media types the skill accepts, as the card lists them (default: JSON). Only what the
    /// card says: the input is still read and checked as for every skill.
    pub fn input_modes<I, S>(mut self, modes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.listing.input_modes = modes.into_iter().map(Into::into).collect();
        self
    }

    /// The media types the skill produces, as the card lists them (default: JSON and text).
    pub fn output_modes<I, S>(mut self, modes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.listing.output_modes = modes.into_iter().map(Into::into).collect();
        self
    }

    /// The input schema, given as JSON. Without one, any JSON input is accepted.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// The output schema, given as JSON. Without one, outputs are not checked.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The input schema, derived from a Rust type.
    pub fn input_type<T: JsonSchema>(self) -> Self {
        self.input_schema(schema_of::<T>())
    }

    /// The output schema, derived from a Rust type.
    pub fn output_type<T: JsonSchema>(self) -> Self {
        self.output_schema(schema_of::<T>())
    }

    /// The handler for direct invocation.
    pub fn invoke(mut self, handler: impl Handler) -> Self {
        self.invoke = Some(Arc::new(handler));
        self
    }

    /// The handler for streaming.
    pub fn stream(mut self, handler: impl Handler) -> Self {
        self.stream = Some(Arc::new(handler));
        self
    }

    /// One handler for both direct invocation and streaming; its events reach stream callers.
    pub fn handler(mut self, handler: impl Handler) -> Self {
        let handler: Arc<dyn Handler> = Arc::new(handler);
        self.invoke = Some(Arc::clone(&handler));
        self.stream = Some(handler);
        self.input_decoder = None;
        self
    }

    /// A typed handler for both invocation and streaming: the input and output schemas are
    /// derived from `I` and `O`, the input is decoded into `I` and the output encoded from `O`.
    pub fn typed<I, O, F, Fut>(self, handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        F: Fn(I, Run) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, SkillError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let mut builder = self.input_type::<I>().output_type::<O>().handler(move |run: Run| {
            let handler = Arc::clone(&handler);
            async move {
                let input: I = run.input_as()?;
                let output = handler(input, run).await?;
                let output = serde_json::to_value(output)
                    .map_err(|error| SkillError::internal(format!("output does not encode: {error}")))?;
                Ok(Outcome::Completed(Completion::new(output)))
            }
        });
        builder.input_decoder = Some(Arc::new(|input: &Value| {
            I::deserialize(input).map(drop).map_err(|error| format!("input does not decode: {error}"))
        }));
        builder
    }

    pub(crate) fn build(self) -> Result<Skill, BuildError> {
        if !valid_key(&self.key) {
            return Err(BuildError::InvalidSkillKey { key: self.key });
        }
        if self.invoke.is_none() && self.stream.is_none() {
            return Err(BuildError::NoHandler { key: self.key });
        }
        let covered = operations(self.invoke.is_some(), self.stream.is_some());
        if let Err(reason) = self.pricing.check().and_then(|()| self.pricing.check_covers(&covered)) {
            return Err(BuildError::InvalidPrice { key: self.key, reason });
        }
        let compile = |schema: Value, key: &str| {
            Schema::compile(schema).map_err(|reason| BuildError::InvalidSchema { key: key.to_owned(), reason })
        };
        let input_schema = compile(self.input_schema.unwrap_or_else(|| serde_json::json!({})), &self.key)?;
        let output_schema = match self.output_schema {
            Some(schema) => Some(compile(schema, &self.key)?),
            None => None,
        };
        Ok(Skill {
            pricing: self.pricing,
            scope: self.scope,
            safe_to_repeat: self.safe_to_repeat,
            key: self.key.into(),
            description: self.description,
            tags: self.tags,
            listing: self.listing,
            input_schema,
            output_schema,
            invoke: self.invoke,
            stream: self.stream,
            input_decoder: self.input_decoder,
        })
    }
}

fn operations(invoke: bool, stream: bool) -> Vec<SkillOperation> {
    let mut operations = Vec::new();
    if invoke {
        operations.push(SkillOperation::Invoke);
    }
    if stream {
        operations.push(SkillOperation::Stream);
    }
    if invoke {
        operations.push(SkillOperation::Task);
    }
    operations
}

/// Skill keys appear in URL paths and JSON-RPC params, so they are kept to a safe alphabet.
fn valid_key(key: &str) -> bool {
    let bytes = key.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_kept_to_a_url_safe_alphabet() {
        assert!(valid_key("echo"));
        assert!(valid_key("a.b_c-1"));
        assert!(!valid_key(""));
        assert!(!valid_key("-x"));
        assert!(!valid_key("a/b"));
        assert!(!valid_key("a b"));
        assert!(!valid_key(&"x".repeat(129)));
    }

    fn skill(pricing: Pricing) -> SkillBuilder {
        Skill::builder("work").pricing(pricing)
    }

    fn invoke_only(pricing: Pricing) -> SkillBuilder {
        skill(pricing).invoke(|_run: Run| async { Ok(Outcome::Completed(Completion::new(Value::Null))) })
    }

    fn both(pricing: Pricing) -> SkillBuilder {
        skill(pricing).handler(|_run: Run| async { Ok(Outcome::Completed(Completion::new(Value::Null))) })
    }

    fn priced(invoke: bool, stream: bool, task: bool) -> Pricing {
        let amount = |on: bool| on.then(|| "10".to_owned());
        Pricing { invoke: amount(invoke), stream: amount(stream), task: amount(task), free: Vec::new() }
    }

    fn refusal(builder: SkillBuilder) -> String {
        match builder.build() {
            Err(BuildError::InvalidPrice { reason, .. }) => reason,
            Err(other) => panic!("refused for another reason: {other}"),
            Ok(_) => panic!("built"),
        }
    }

    #[test]
    fn a_priced_skill_prices_or_frees_every_way_it_can_be_called() {
        // The stream route of an invoke-and-stream skill priced per invoke and task is refused.
        let reason = refusal(both(priced(true, false, true)));
        assert!(reason.contains("stream is neither priced nor listed"), "{reason}");
        // A task runs the invoke handler: pricing the task alone leaves invoke open.
        let reason = refusal(invoke_only(priced(false, false, true)));
        assert!(reason.contains("invoke is neither priced"), "{reason}");
        let reason = refusal(invoke_only(priced(true, false, false)));
        assert!(reason.contains("task is neither priced"), "{reason}");

        // Every way priced, or the rest free on purpose, builds.
        assert!(both(priced(true, true, true)).build().is_ok());
        let free_stream = Pricing { free: vec![SkillOperation::Stream], ..priced(true, false, true) };
        assert!(both(free_stream).build().is_ok());
        // An invoke-only skill cannot stream: its stream needs no price.
        assert!(invoke_only(priced(true, false, true)).build().is_ok());
        // Unpriced skills need nothing.
        assert!(both(Pricing::default()).build().is_ok());
        assert_eq!(both(Pricing::default()).build().expect("skill").operations(), SkillOperation::ALL);

        // Priced and free at once is a contradiction.
        let both_ways = Pricing { free: vec![SkillOperation::Invoke], ..priced(true, true, true) };
        assert!(refusal(both(both_ways)).contains("both priced"));
    }

    #[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
    struct Count {
        #[schemars(range(min = 1, max = 100))]
        count: Option<u32>,
    }

    /// Found by the `lucid_body` fuzz target: `2.0` passes the schema derived from `u32` but does
    /// not decode into it; it must be refused as invalid input, not fail inside the skill.
    #[test]
    fn typed_input_the_schema_admits_but_serde_cannot_read_is_invalid_input() {
        let skill = Arc::new(
            Skill::builder("count")
                .typed(|input: Count, _run| async move { Ok::<_, SkillError>(input) })
                .build()
                .expect("skill"),
        );
        match skill.validate_input(serde_json::json!({"count": 2.0})) {
            Err(RunError::InvalidInput { issues }) => assert!(issues[0].message.contains("u32"), "{issues:?}"),
            other => panic!("expected invalid input, got {other:?}"),
        }
        assert!(skill.validate_input(serde_json::json!({"count": 2})).is_ok());
        // A plain handler with the same schema keeps the schema's reading.
        let plain = Arc::new(
            Skill::builder("plain")
                .input_type::<Count>()
                .handler(
                    |_run: Run| async move { Ok::<_, SkillError>(Outcome::Completed(Completion::new(Value::Null))) },
                )
                .build()
                .expect("skill"),
        );
        assert!(plain.validate_input(serde_json::json!({"count": 2.0})).is_ok());
    }
}
