//! What each route does, as OpenAPI operations: the faces mount their routes with these
//! ([`super::Routes::route`]), so the document is made from the same tables as the routers.

use accord_engine::{Agent, Skill};
use accord_payments::Operation as Paid;
use accord_types::a2a;
use accord_types::lucid::{EntrypointsResponse, ErrorBody, HealthResponse, InvokeResponse, StreamEnvelope};
use accord_types::tasks::{CreateTaskRequest, TaskCapability, TaskList, TaskUpdate, TaskView};
use serde_json::{Value, json};

use super::{Operation, SchemaSource, inline, schema_of};

const CARDS: &str = "cards";
const LUCID: &str = "lucid";
const LUCID_TASKS: &str = "lucid-tasks";
const JSONRPC_TASKS: &str = "jsonrpc-tasks";
const A2A_JSONRPC: &str = "a2a-jsonrpc";
const A2A_REST: &str = "a2a-rest";
const LANDING: &str = "landing";

/// `GET /openapi.json`.
pub(crate) fn openapi() -> Vec<Operation> {
    vec![Operation::get("getOpenApi", "This OpenAPI document").at(super::OPENAPI_PATH).tag(CARDS).public().json(
        200,
        "The OpenAPI 3.1 document of the routes this agent serves",
        inline(json!({"type": "object"})),
    )]
}

/// A card route (`id` names it: the card and its legacy path are two operations).
pub(crate) fn card(id: &str, summary: &str) -> Vec<Operation> {
    vec![
        Operation::get(id, summary)
            .tag(CARDS)
            .public()
            .json(200, "The agent card", SchemaSource::of::<accord_types::AgentCard>())
            .error(
                "304",
                "Not modified since the validators sent (`If-None-Match`, `If-Modified-Since`)",
                inline(json!({})),
            ),
    ]
}

/// The signed card envelope's route(s).
pub(crate) fn signed_card(id: &str) -> Vec<Operation> {
    vec![
        Operation::get(id, "The signed card envelope")
            .tag(CARDS)
            .public()
            .json(200, "The card signed over its RFC 8785 form", inline(json!({"type": "object"})))
            .error("default", "An error", SchemaSource::of::<ErrorBody>()),
    ]
}

/// `GET /`: the landing page.
pub(crate) fn landing_page() -> Vec<Operation> {
    vec![
        Operation::get("getLandingPage", "The landing page: the agent, its card and skills, try-it forms")
            .tag(LANDING)
            .public()
            .text(200, "The page", "text/html")
            .error("304", "Not modified since the entity tag sent (`If-None-Match`)", inline(json!({}))),
    ]
}

/// `GET /favicon.svg`.
pub(crate) fn favicon() -> Vec<Operation> {
    vec![
        Operation::get("getFavicon", "The agent's icon")
            .tag(LANDING)
            .public()
            .text(200, "The icon", "image/svg+xml")
            .error("304", "Not modified since the entity tag sent (`If-None-Match`)", inline(json!({}))),
    ]
}

/// `GET /assets/{name}`: the landing page's script and style sheet, by their hashed names.
pub(crate) fn landing_asset() -> Vec<Operation> {
    vec![
        Operation::get("getLandingAsset", "The landing page's script or style sheet")
            .tag(LANDING)
            .public()
            .path_param("name", "The asset's name as the page links it (its content hash included)")
            .text(200, "The script (`text/javascript`) or style sheet (`text/css`)", "text/plain")
            .error("304", "Not modified since the entity tag sent (`If-None-Match`)", inline(json!({})))
            .error("404", "No asset has this name", inline(json!({}))),
    ]
}

/// `GET /metrics`.
#[cfg(feature = "prometheus")]
pub(crate) fn metrics() -> Vec<Operation> {
    vec![Operation::get("getMetrics", "Metrics in the Prometheus text exposition format").tag(CARDS).public().text(
        200,
        "The metric families (docs/observability.md)",
        "text/plain",
    )]
}

/// `GET /health`.
pub(crate) fn health() -> Vec<Operation> {
    vec![
        Operation::get("getHealth", "Whether the agent answers and takes work")
            .tag(CARDS)
            .public()
            .json(200, "The agent answers", SchemaSource::of::<HealthResponse>())
            .json(503, "The agent drains before a stop: send it no more work", SchemaSource::of::<HealthResponse>()),
    ]
}

/// `GET /entrypoints`.
pub(crate) fn entrypoints() -> Vec<Operation> {
    vec![
        Operation::get("listEntrypoints", "The skills")
            .tag(LUCID)
            .json(200, "One item per skill", SchemaSource::of::<EntrypointsResponse>())
            .error("default", "An error", SchemaSource::of::<ErrorBody>()),
    ]
}

/// A component name for a skill's schema: the key with anything outside `[A-Za-z0-9._-]` as `_`.
fn component(skill: &Skill, which: &str) -> String {
    let key: String = skill
        .key()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .collect();
    format!("{key}.{which}")
}

/// An operation id part for a skill: its key in `snake_case`-ish ASCII.
fn op_name(skill: &Skill) -> String {
    skill.key().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// Every skill's input and output schema, by component name.
pub(crate) fn skill_schemas(agent: &Agent) -> Vec<(String, Value)> {
    let mut schemas = Vec::new();
    for skill in agent.skills() {
        schemas.push((component(skill, "input"), skill.input_schema().clone()));
        if let Some(output) = skill.output_schema() {
            schemas.push((component(skill, "output"), output.clone()));
        }
    }
    schemas
}

/// The Lucid body of a skill: `{"input": X}`, X the skill's input.
fn input_body(skill: &Skill) -> SchemaSource {
    let input = reference(&component(skill, "input"));
    inline(json!({
        "type": "object",
        "properties": { "input": input },
        "required": ["input"],
        "description": "The skill's input under `input` (a body without `input` is read as the input itself)",
    }))
}

fn priced(skill: &Skill, operation: Paid) -> bool {
    crate::payments::priced_operations(skill).iter().any(|(priced, _)| *priced == operation)
}

fn payment_required(operation: Operation) -> Operation {
    operation.error(
        "402",
        "Payment required: the rail's challenge (body and headers depend on the rail)",
        inline(json!({"type": "object"})),
    )
}

fn lucid_errors(operation: Operation) -> Operation {
    operation.error("400", "Invalid request or input", SchemaSource::of::<ErrorBody>()).error(
        "default",
        "An error",
        SchemaSource::of::<ErrorBody>(),
    )
}

/// `POST /entrypoints/{key}/invoke`: one path per skill that can be invoked.
pub(crate) fn invoke(agent: &Agent) -> Vec<Operation> {
    agent
        .skills()
        .iter()
        .filter(|skill| skill.is_invocable())
        .map(|skill| {
            let output = skill.output_schema().map(|_| reference(&component(skill, "output")));
            let answer = SchemaSource::with(move |generator| {
                // The generic answer, its `output` the skill's own.
                let _ = schema_of::<InvokeResponse>(generator);
                let mut schema = generator.definitions().get("InvokeResponse").cloned().unwrap_or_else(|| json!({}));
                if let (Some(output), Some(properties)) =
                    (&output, schema.get_mut("properties").and_then(Value::as_object_mut))
                {
                    properties.insert("output".into(), output.clone());
                }
                if let Some(object) = schema.as_object_mut() {
                    object.remove("title");
                }
                schema
            });
            let operation = Operation::post(format!("invoke_{}", op_name(skill)), format!("Run `{}`", skill.key()))
                .at(format!("/entrypoints/{}/invoke", skill.key()))
                .tag(LUCID)
                .header("Idempotency-Key", false, "Replays the first answer to a repeated request")
                .json_body(input_body(skill))
                .json(200, "The skill's output", answer);
            let operation = if priced(skill, Paid::Invoke) { payment_required(operation) } else { operation };
            lucid_errors(operation)
        })
        .collect()
}

/// `POST /entrypoints/{key}/stream`: one path per skill that streams.
pub(crate) fn stream(agent: &Agent) -> Vec<Operation> {
    agent
        .skills()
        .iter()
        .filter(|skill| skill.is_streaming())
        .map(|skill| {
            let operation = Operation::post(format!("stream_{}", op_name(skill)), format!("Stream `{}`", skill.key()))
                .at(format!("/entrypoints/{}/stream", skill.key()))
                .tag(LUCID)
                .json_body(input_body(skill))
                .events("`run-start`, the run's events, then `run-end`", SchemaSource::of::<StreamEnvelope>());
            let operation = if priced(skill, Paid::Stream) { payment_required(operation) } else { operation };
            lucid_errors(operation)
        })
        .collect()
}

const TOKEN: &str = "Task-Access-Token";

/// `POST /tasks` and `GET /tasks`.
pub(crate) fn lucid_tasks(agent: &Agent) -> Vec<Operation> {
    let create = Operation::post("createTask", "Start a task")
        .tag(LUCID_TASKS)
        .header(TOKEN, false, "The task's owner token (20 to 256 characters); a fresh one is made when absent")
        .header("Idempotency-Key", false, "For paid tasks: retries of one payment")
        .json_body(SchemaSource::of::<CreateTaskRequest>())
        .json(200, "The task's capability: its id and access token", SchemaSource::of::<TaskCapability>());
    let create =
        if agent.skills().iter().any(|skill| priced(skill, Paid::Task)) { payment_required(create) } else { create };
    let list = Operation::get("listTasks", "The caller's tasks, newest first")
        .tag(LUCID_TASKS)
        .header(TOKEN, true, "The owner token")
        .query("contextId", "Only tasks of this context", json!({"type": "string"}))
        .query("status", "Comma-separated statuses (running, completed, failed, cancelled)", json!({"type": "string"}))
        .query("limit", "Page size, 0 to 1000 (default 50)", json!({"type": "integer", "minimum": 0, "maximum": 1000}))
        .query("offset", "Tasks to skip (default 0)", json!({"type": "integer", "minimum": 0}))
        .json(200, "A page of tasks", SchemaSource::of::<TaskList>());
    vec![lucid_errors(create), lucid_errors(list)]
}

fn lucid_task(operation: Operation) -> Operation {
    lucid_errors(operation.tag(LUCID_TASKS).path_param("id", "The task id").header(TOKEN, true, "The owner token"))
        .error("404", "No such task for this owner", SchemaSource::of::<ErrorBody>())
}

/// `GET /tasks/{id}`.
pub(crate) fn lucid_task_get() -> Vec<Operation> {
    vec![lucid_task(Operation::get("getTask", "Read a task").json(200, "The task", SchemaSource::of::<TaskView>()))]
}

/// `POST /tasks/{id}/cancel`.
pub(crate) fn lucid_task_cancel() -> Vec<Operation> {
    vec![lucid_task(Operation::post("cancelTask", "Cancel a task").json(
        200,
        "The task after cancelling",
        SchemaSource::of::<TaskView>(),
    ))]
}

/// `GET /tasks/{id}/subscribe`.
pub(crate) fn lucid_task_subscribe() -> Vec<Operation> {
    vec![lucid_task(
        Operation::get("subscribeTask", "A task's updates")
            .header("Last-Event-ID", false, "Resume after this event")
            .events(
                "`statusUpdate`, `resultUpdate` and `error` events until the task ends",
                SchemaSource::of::<TaskUpdate>(),
            ),
    )]
}

/// The JSON-RPC tasks endpoint (`tasks/send|get|cancel`), one POST operation.
pub(crate) fn jsonrpc_tasks() -> Vec<Operation> {
    vec![
        Operation::post("jsonRpcTasks", "JSON-RPC 2.0 tasks: `tasks/send`, `tasks/get`, `tasks/cancel`")
            .tag(JSONRPC_TASKS)
            .json_body(SchemaSource::of::<accord_types::jsonrpc::Request>())
            .json(200, "A JSON-RPC response (errors too)", SchemaSource::of::<accord_types::jsonrpc::Response>()),
    ]
}

/// The A2A JSON-RPC binding, one POST operation (`slashed`: its trailing-slash form).
pub(crate) fn a2a_jsonrpc(slashed: bool) -> Vec<Operation> {
    let (id, summary) = if slashed {
        ("a2aJsonRpcSlash", "The A2A v1.0 JSON-RPC binding (the same endpoint, with a trailing `/`)")
    } else {
        (
            "a2aJsonRpc",
            "The A2A v1.0 JSON-RPC binding: `SendMessage`, `GetTask`, … (streaming methods answer with server-sent events)",
        )
    };
    vec![
        a2a_headers(Operation::post(id, summary))
            .tag(A2A_JSONRPC)
            .json_body(SchemaSource::of::<a2a::JsonRpcRequest>())
            .json(200, "A JSON-RPC response (errors too)", SchemaSource::of::<accord_types::jsonrpc::Response>()),
    ]
}

fn a2a_headers(operation: Operation) -> Operation {
    operation.header("A2A-Version", false, "The protocol version the client speaks (`1.0`)").header(
        "A2A-Extensions",
        false,
        "Extensions the client activates (comma-separated URIs)",
    )
}

fn rest(operation: Operation) -> Operation {
    a2a_headers(operation.tag(A2A_REST)).error(
        "default",
        "A `google.rpc.Status` error",
        SchemaSource::of::<a2a::RestErrorBody>(),
    )
}

/// `POST /message:send`.
pub(crate) fn rest_send() -> Vec<Operation> {
    vec![rest(
        Operation::post("SendMessage", "Send a message: a task, or a direct reply")
            .json_body(SchemaSource::of::<a2a::SendMessageRequest>())
            .json(200, "The task or the reply", SchemaSource::of::<a2a::SendMessageResponse>()),
    )]
}

/// `POST /message:stream`.
pub(crate) fn rest_stream() -> Vec<Operation> {
    vec![rest(
        Operation::post("SendStreamingMessage", "Send a message and stream the task's updates")
            .json_body(SchemaSource::of::<a2a::SendMessageRequest>())
            .events("One `StreamResponse` per event", SchemaSource::of::<a2a::StreamResponse>()),
    )]
}

/// `GET /tasks`.
pub(crate) fn rest_list() -> Vec<Operation> {
    vec![rest(Operation::get("ListTasks", "The caller's tasks").query_of::<a2a::ListTasksRequest>(&["tenant"]).json(
        200,
        "A page of tasks",
        SchemaSource::of::<a2a::ListTasksResponse>(),
    ))]
}

/// `/tasks/{task}`, `/tasks/{task}:cancel` and `/tasks/{task}:subscribe`: one route.
pub(crate) fn rest_task() -> Vec<Operation> {
    let task = |operation: Operation| rest(operation.path_param("task", "The task id"));
    let subscribe = |operation: Operation| {
        task(operation.at("/tasks/{task}:subscribe"))
            .header("Last-Event-ID", false, "Resume after this event")
            .events("The task, then one `StreamResponse` per update", SchemaSource::of::<a2a::StreamResponse>())
    };
    vec![
        task(
            Operation::get("GetTask", "Read a task")
                .at("/tasks/{task}")
                .query_of::<a2a::GetTaskRequest>(&["tenant", "id"])
                .json(200, "The task", SchemaSource::of::<a2a::Task>()),
        ),
        task(Operation::post("CancelTask", "Cancel a task").at("/tasks/{task}:cancel").json(
            200,
            "The task after cancelling",
            SchemaSource::of::<a2a::Task>(),
        )),
        subscribe(Operation::get("SubscribeToTask", "A task's updates")),
        subscribe(Operation::post("SubscribeToTaskPost", "A task's updates (POST form)")),
    ]
}

/// `POST|GET /tasks/{task}/pushNotificationConfigs`.
pub(crate) fn rest_push_configs() -> Vec<Operation> {
    let task = |operation: Operation| rest(operation.path_param("task", "The task id"));
    vec![
        task(
            Operation::post("CreateTaskPushNotificationConfig", "Register a webhook for a task")
                .json_body(SchemaSource::of::<a2a::TaskPushNotificationConfig>())
                .json(200, "The stored configuration", SchemaSource::of::<a2a::TaskPushNotificationConfig>()),
        ),
        task(
            Operation::get("ListTaskPushNotificationConfigs", "A task's webhooks")
                .query_of::<a2a::ListTaskPushNotificationConfigsRequest>(&["tenant", "taskId"])
                .json(
                    200,
                    "A page of configurations",
                    SchemaSource::of::<a2a::ListTaskPushNotificationConfigsResponse>(),
                ),
        ),
    ]
}

/// `GET|DELETE /tasks/{task}/pushNotificationConfigs/{config}`.
pub(crate) fn rest_push_config() -> Vec<Operation> {
    let config = |operation: Operation| {
        rest(operation.path_param("task", "The task id").path_param("config", "The configuration id"))
    };
    vec![
        config(Operation::get("GetTaskPushNotificationConfig", "Read a webhook configuration").json(
            200,
            "The configuration",
            SchemaSource::of::<a2a::TaskPushNotificationConfig>(),
        )),
        config(Operation::delete("DeleteTaskPushNotificationConfig", "Remove a webhook configuration").json(
            200,
            "Removed",
            SchemaSource::of::<a2a::Empty>(),
        )),
    ]
}

/// `GET /extendedAgentCard`.
pub(crate) fn rest_extended_card() -> Vec<Operation> {
    vec![rest(Operation::get("GetExtendedAgentCard", "The card for an authenticated caller").json(
        200,
        "The extended card",
        SchemaSource::of::<accord_types::AgentCard>(),
    ))]
}

/// An operation of the A2A 0.3 HTTP+JSON binding (bodies in the 0.3 proto's ProtoJSON).
fn v03_rest(operation: Operation) -> Operation {
    operation
        .tag(A2A_REST)
        .header("A2A-Version", false, "Absent or `0.3` (with `1.0`, the path is the 1.0 binding's for the tenant `v1`)")
        .header("X-A2A-Extensions", false, "Extensions the client activates (comma-separated URIs)")
        .error("default", "A 0.3 error: `{code, message, data}`", inline(v03_error_schema()))
}

fn v03_error_schema() -> Value {
    json!({"type": "object", "required": ["code", "message"], "properties": {
        "code": {"type": "integer"}, "message": {"type": "string"}, "data": {}}})
}

fn v03_object(description: &str) -> SchemaSource {
    inline(json!({"type": "object", "description": description}))
}

/// `POST /v1/message:send` (0.3).
pub(crate) fn v03_rest_send() -> Vec<Operation> {
    vec![v03_rest(
        Operation::post("SendMessageV03", "A2A 0.3: send a message")
            .json_body(v03_object("A 0.3 proto `SendMessageRequest`"))
            .json(200, "The task or the reply", v03_object("A 0.3 proto `SendMessageResponse`")),
    )]
}

/// `POST /v1/message:stream` (0.3).
pub(crate) fn v03_rest_stream() -> Vec<Operation> {
    vec![v03_rest(
        Operation::post("SendStreamingMessageV03", "A2A 0.3: send a message and stream the task's updates")
            .json_body(v03_object("A 0.3 proto `SendMessageRequest`"))
            .events("One 0.3 proto `StreamResponse` per event", v03_object("A 0.3 proto `StreamResponse`")),
    )]
}

/// `/v1/tasks/{task}`, `…:cancel` and `…:subscribe` (0.3): one route.
pub(crate) fn v03_rest_task() -> Vec<Operation> {
    let task = |operation: Operation| v03_rest(operation.path_param("task", "The task id"));
    let subscribe = |operation: Operation| {
        task(operation.at("/v1/tasks/{task}:subscribe"))
            .header("Last-Event-ID", false, "Resume after this event")
            .events("One 0.3 proto `StreamResponse` per event", v03_object("A 0.3 proto `StreamResponse`"))
    };
    vec![
        task(
            Operation::get("GetTaskV03", "A2A 0.3: read a task")
                .at("/v1/tasks/{task}")
                .query("historyLength", "At most this many recent messages", json!({"type": "integer"}))
                .json(200, "The task", v03_object("A 0.3 proto `Task`")),
        ),
        task(Operation::post("CancelTaskV03", "A2A 0.3: cancel a task").at("/v1/tasks/{task}:cancel").json(
            200,
            "The task after cancelling",
            v03_object("A 0.3 proto `Task`"),
        )),
        subscribe(Operation::get("SubscribeToTaskV03", "A2A 0.3: a task's updates")),
        subscribe(Operation::post("SubscribeToTaskPostV03", "A2A 0.3: a task's updates (POST form)")),
    ]
}

/// `POST|GET /v1/tasks/{task}/pushNotificationConfigs` (0.3).
pub(crate) fn v03_rest_push_configs() -> Vec<Operation> {
    let task = |operation: Operation| v03_rest(operation.path_param("task", "The task id"));
    vec![
        task(
            Operation::post("CreateTaskPushNotificationConfigV03", "A2A 0.3: register a webhook for a task")
                .json_body(v03_object(
                    "A 0.3 proto `CreateTaskPushNotificationConfigRequest` or `TaskPushNotificationConfig`",
                ))
                .json(200, "The stored configuration", v03_object("A 0.3 proto `TaskPushNotificationConfig`")),
        ),
        task(Operation::get("ListTaskPushNotificationConfigsV03", "A2A 0.3: a task's webhooks").json(
            200,
            "Every configuration",
            v03_object("A 0.3 proto `ListTaskPushNotificationConfigResponse`"),
        )),
    ]
}

/// `GET|DELETE /v1/tasks/{task}/pushNotificationConfigs/{config}` (0.3).
pub(crate) fn v03_rest_push_config() -> Vec<Operation> {
    let config = |operation: Operation| {
        v03_rest(operation.path_param("task", "The task id").path_param("config", "The configuration id"))
    };
    vec![
        config(Operation::get("GetTaskPushNotificationConfigV03", "A2A 0.3: read a webhook configuration").json(
            200,
            "The configuration",
            v03_object("A 0.3 proto `TaskPushNotificationConfig`"),
        )),
        config(
            Operation::delete("DeleteTaskPushNotificationConfigV03", "A2A 0.3: remove a webhook configuration").json(
                200,
                "Removed",
                v03_object("Empty"),
            ),
        ),
    ]
}

/// `GET /v1/card` (0.3).
pub(crate) fn v03_rest_card() -> Vec<Operation> {
    vec![v03_rest(
        Operation::get("GetAuthenticatedExtendedCardV03", "A2A 0.3: the card for an authenticated caller").json(
            200,
            "The extended card",
            SchemaSource::of::<accord_types::AgentCard>(),
        ),
    )]
}
