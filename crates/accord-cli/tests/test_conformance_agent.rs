//! `accord serve --agent conformance` end to end: every scenario of the conformance kit, chosen by
//! messageId prefix, over real HTTP on the three official bindings (gRPC on the port
//! `--grpc-port` opens), plus the kit's wire habits (the
//! JSON-RPC URL with a trailing `/`, reused messageIds, snake_case params, body-less REST POSTs)
//! and the v1.0.0 error statuses.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};

mod support;
use support::Served;

fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(20)).build().expect("client")
}

fn message(id: &str, task_id: Option<&str>) -> Value {
    let mut message = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello"}]});
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    message
}

/// A JSON-RPC call the way the kit makes it: to the interface URL plus `/`.
async fn rpc(served: &Served, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": "tck", "method": method, "params": params});
    let response = http()
        .post(format!("{}/a2a/jsonrpc/", served.url))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(body.to_string())
        .send()
        .await
        .expect("response");
    assert!(response.headers()["content-type"].to_str().expect("type").contains("application/json"));
    response.json().await.expect("json")
}

async fn send(served: &Served, id: &str) -> Value {
    let body = rpc(served, "SendMessage", json!({"message": message(id, None)})).await;
    body["result"].clone()
}

/// The results of a JSON-RPC stream, to its end.
async fn stream(served: &Served, method: &str, params: Value) -> Vec<Value> {
    let body = json!({"jsonrpc": "2.0", "id": "tck", "method": method, "params": params});
    let response = http()
        .post(format!("{}/a2a/jsonrpc/", served.url))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(body.to_string())
        .send()
        .await
        .expect("response");
    sse(response).await.into_iter().map(|event| event["result"].clone()).collect()
}

async fn sse(response: reqwest::Response) -> Vec<Value> {
    let mut events = Vec::new();
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(15), body.next()).await.expect("no stall") {
        buffer.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if let Some(data) = frame.lines().find_map(|line| line.strip_prefix("data: ")) {
                events.push(serde_json::from_str(data).expect("json"));
            }
        }
    }
    events
}

fn kind(result: &Value) -> &'static str {
    ["task", "message", "statusUpdate", "artifactUpdate"].into_iter().find(|k| result.get(*k).is_some()).unwrap_or("?")
}

fn artifact(task: &Value) -> &Value {
    &task["artifacts"][0]["parts"][0]
}

#[tokio::test]
async fn every_send_scenario_behaves_as_the_kit_expects() {
    let served = Served::conformance();
    let run = "1a2b3c4d";

    let completed = send(&served, &format!("tck-complete-task-{run}")).await;
    assert_eq!(completed["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{completed}");
    assert_eq!(completed["task"]["status"]["message"]["parts"][0]["text"], "Hello from TCK");
    // The kit reuses messageIds: the same id makes another task.
    let again = send(&served, &format!("tck-complete-task-{run}")).await;
    assert_ne!(again["task"]["id"], completed["task"]["id"]);
    // Unknown prefixes complete too.
    let unknown = send(&served, "something-else").await;
    assert_eq!(unknown["task"]["status"]["state"], "TASK_STATE_COMPLETED");

    let text = send(&served, &format!("tck-artifact-text-{run}")).await;
    assert_eq!(artifact(&text["task"])["text"], "Generated text content", "{text}");

    let file = send(&served, &format!("tck-artifact-file-{run}")).await;
    let part = artifact(&file["task"]);
    assert_eq!((part["filename"].clone(), part["mediaType"].clone()), (json!("output.txt"), json!("text/plain")));
    assert!(part["raw"].as_str().is_some_and(|raw| !raw.is_empty()), "{file}");

    let url = send(&served, &format!("tck-artifact-file-url-{run}")).await;
    let part = artifact(&url["task"]);
    assert_eq!(part["url"], "https://example.com/output.txt", "{url}");
    assert_eq!(part["filename"], "output.txt");

    let data = send(&served, &format!("tck-artifact-data-{run}")).await;
    assert_eq!(artifact(&data["task"])["data"], json!({"key": "value", "count": 42}), "{data}");

    let reply = send(&served, &format!("tck-message-response-{run}")).await;
    assert_eq!(kind(&reply), "message", "{reply}");
    assert_eq!(reply["message"]["parts"][0]["text"], "Direct message response");
    assert_eq!(reply["message"]["role"], "ROLE_AGENT");

    let rejected = send(&served, &format!("tck-reject-task-{run}")).await;
    assert_eq!(rejected["task"]["status"]["state"], "TASK_STATE_REJECTED", "{rejected}");

    let waiting = send(&served, &format!("tck-input-required-{run}")).await;
    assert_eq!(waiting["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{waiting}");
    let task_id = waiting["task"]["id"].as_str().expect("id");
    let follow_up =
        rpc(&served, "SendMessage", json!({"message": message(&format!("tck-complete-task-{run}"), Some(task_id))}))
            .await;
    assert_eq!(follow_up["result"]["task"]["id"], json!(task_id));
    assert_eq!(follow_up["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{follow_up}");

    // snake_case params, as the kit sends them.
    let got = rpc(&served, "GetTask", json!({"id": task_id, "history_length": 1})).await;
    assert_eq!(got["result"]["history"].as_array().map(Vec::len), Some(1), "{got}");
    let listed = rpc(&served, "ListTasks", json!({"page_size": 2})).await;
    assert_eq!(listed["result"]["tasks"].as_array().map(Vec::len), Some(2), "{listed}");
    assert!(listed["result"]["nextPageToken"].as_str().is_some_and(|token| !token.is_empty()));
}

#[tokio::test]
async fn every_stream_scenario_behaves_as_the_kit_expects() {
    let served = Served::conformance();
    let kinds = |events: &[Value]| events.iter().map(kind).collect::<Vec<_>>();
    let last_state = |events: &[Value]| events.last().map(|event| event["statusUpdate"]["status"]["state"].clone());

    for prefix in ["tck-stream-001", "tck-stream-003", "tck-stream-ordering-001", "tck-stream-artifact-text"] {
        let events =
            stream(&served, "SendStreamingMessage", json!({"message": message(&format!("{prefix}-x"), None)})).await;
        assert_eq!(kinds(&events), ["task", "statusUpdate", "artifactUpdate", "statusUpdate"], "{prefix}: {events:?}");
        assert_eq!(events[1]["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");
        assert_eq!(events[2]["artifactUpdate"]["artifact"]["parts"][0]["text"], "Generated text content");
        assert_eq!(last_state(&events), Some(json!("TASK_STATE_COMPLETED")));
    }

    let file =
        stream(&served, "SendStreamingMessage", json!({"message": message("tck-stream-artifact-file-x", None)})).await;
    assert_eq!(file[2]["artifactUpdate"]["artifact"]["parts"][0]["filename"], "output.txt", "{file:?}");

    let only = stream(&served, "SendStreamingMessage", json!({"message": message("tck-stream-002-x", None)})).await;
    assert_eq!(kinds(&only), ["task", "statusUpdate"], "{only:?}");
    assert_eq!(last_state(&only), Some(json!("TASK_STATE_COMPLETED")));

    let chunked =
        stream(&served, "SendStreamingMessage", json!({"message": message("tck-stream-artifact-chunked-x", None)}))
            .await;
    let chunks: Vec<(Value, Value, Value)> = chunked
        .iter()
        .filter_map(|event| event.get("artifactUpdate"))
        .map(|update| {
            (update["artifact"]["parts"][0]["text"].clone(), update["append"].clone(), update["lastChunk"].clone())
        })
        .collect();
    assert_eq!(
        chunks,
        [(json!("chunk-1 "), json!(false), json!(false)), (json!("chunk-2"), json!(true), json!(true))],
        "{chunked:?}"
    );
    let task_id = chunked[0]["task"]["id"].as_str().expect("id");
    let stored = rpc(&served, "GetTask", json!({"id": task_id})).await;
    assert_eq!(stored["result"]["artifacts"][0]["parts"].as_array().map(Vec::len), Some(2), "chunks append: {stored}");

    // The resubscribe scenario stays working long enough to subscribe, then completes.
    let created = rpc(
        &served,
        "SendMessage",
        json!({"message": message("test-resubscribe-message-id-x", None), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let task_id = created["result"]["task"]["id"].as_str().expect("id");
    let followed = stream(&served, "SubscribeToTask", json!({"id": task_id})).await;
    assert_eq!(kind(&followed[0]), "task", "the first event is the current task");
    assert_eq!(followed[0]["task"]["status"]["state"], "TASK_STATE_WORKING");
    assert_eq!(last_state(&followed), Some(json!("TASK_STATE_COMPLETED")), "{followed:?}");
}

#[tokio::test]
async fn the_rest_binding_uses_the_v1_0_0_error_statuses() {
    let served = Served::conformance();
    let rest = format!("{}/a2a/rest", served.url);
    let response = http()
        .post(format!("{rest}/message:send"))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(json!({"message": message("tck-artifact-text-y", None)}).to_string())
        .send()
        .await
        .expect("response");
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().expect("type").contains("application/json"));
    let created: Value = response.json().await.expect("json");
    let task_id = created["task"]["id"].as_str().expect("id");
    assert_eq!(artifact(&created["task"])["text"], "Generated text content");

    // Cancel and subscribe are POSTs without a body, as the kit sends them.
    let cancel = http()
        .post(format!("{rest}/tasks/{task_id}:cancel"))
        .header("a2a-version", "1.0")
        .send()
        .await
        .expect("response");
    assert_eq!(cancel.status(), 409, "TaskNotCancelable is 409 in v1.0.0");
    let wrong_type = http()
        .post(format!("{rest}/message:send"))
        .header("content-type", "text/plain")
        .header("a2a-version", "1.0")
        .body("hello")
        .send()
        .await
        .expect("response");
    assert_eq!(wrong_type.status(), 415);
    let body: Value = wrong_type.json().await.expect("json");
    assert_eq!(body["error"]["details"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED");
    let future =
        http().get(format!("{rest}/tasks/{task_id}")).header("a2a-version", "99.0").send().await.expect("response");
    let body: Value = future.json().await.expect("json");
    assert_eq!(body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED");
    let missing = http().post(format!("{rest}/tasks/nope:subscribe")).header("a2a-version", "1.0").send().await;
    assert_eq!(missing.expect("response").status(), 404);
}

/// The gRPC binding as the kit reaches it: the `GRPC` interface the card lists (a `host:port`
/// on the port `--grpc-port` opened), an insecure channel, the scenarios by messageId prefix.
mod grpc {
    use super::*;
    use accord_grpc::pb;
    use accord_grpc::pb::a2a_service_client::A2aServiceClient;
    use accord_grpc::pb::stream_response::Payload;

    async fn client(served: &Served) -> A2aServiceClient<tonic::transport::Channel> {
        let card: Value = http()
            .get(format!("{}/.well-known/agent-card.json", served.url))
            .send()
            .await
            .expect("card")
            .json()
            .await
            .expect("json");
        let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
        let bindings: Vec<&str> = interfaces.iter().filter_map(|i| i["protocolBinding"].as_str()).collect();
        assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"], "the three official bindings: {card}");
        let address = interfaces[2]["url"].as_str().expect("url");
        assert!(!address.contains("://"), "a gRPC url is host:port: {address}");
        assert_ne!(format!("http://{address}"), served.url, "--grpc-port opened a port of its own");
        let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{address}")).expect("endpoint");
        A2aServiceClient::new(endpoint.connect().await.expect("an insecure channel"))
    }

    fn request<T>(message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request.metadata_mut().insert("a2a-version", "1.0".parse().expect("metadata"));
        request
    }

    fn send(id: &str, task_id: &str) -> pb::SendMessageRequest {
        let message = pb::Message {
            message_id: id.into(),
            task_id: task_id.into(),
            role: pb::Role::User as i32,
            parts: vec![pb::Part { content: Some(pb::part::Content::Text("hello".into())), ..Default::default() }],
            ..Default::default()
        };
        pb::SendMessageRequest { message: Some(message), ..Default::default() }
    }

    fn state(status: Option<&pb::TaskStatus>) -> pb::TaskState {
        pb::TaskState::try_from(status.expect("status").state).expect("a known state")
    }

    fn task(response: pb::SendMessageResponse) -> pb::Task {
        match response.payload {
            Some(pb::send_message_response::Payload::Task(task)) => task,
            other => panic!("a task, not {other:?}"),
        }
    }

    fn text(part: &pb::Part) -> &str {
        match &part.content {
            Some(pb::part::Content::Text(text)) => text,
            other => panic!("a text part, not {other:?}"),
        }
    }

    async fn events(stream: tonic::codec::Streaming<pb::StreamResponse>) -> Vec<Payload> {
        let mut stream = stream;
        let mut events = Vec::new();
        while let Some(event) = tokio::time::timeout(Duration::from_secs(15), stream.next()).await.expect("no stall") {
            events.push(event.expect("an event").payload.expect("a payload"));
        }
        events
    }

    fn kind(payload: &Payload) -> &'static str {
        match payload {
            Payload::Task(_) => "task",
            Payload::Message(_) => "message",
            Payload::StatusUpdate(_) => "statusUpdate",
            Payload::ArtifactUpdate(_) => "artifactUpdate",
        }
    }

    #[tokio::test]
    async fn every_scenario_behaves_as_the_kit_expects_over_grpc() {
        let served = Served::start(&["--agent", "conformance", "--store", "memory", "--grpc-port", "0"]);
        let mut c = client(&served).await;

        let completed =
            task(c.send_message(request(send("tck-complete-task-g", ""))).await.expect("send").into_inner());
        assert_eq!(state(completed.status.as_ref()), pb::TaskState::Completed);
        let status_message = completed.status.as_ref().and_then(|status| status.message.as_ref()).expect("message");
        assert_eq!(text(&status_message.parts[0]), "Hello from TCK");

        let artifact = task(c.send_message(request(send("tck-artifact-text-g", ""))).await.expect("send").into_inner());
        assert_eq!(text(&artifact.artifacts[0].parts[0]), "Generated text content");
        let file = task(c.send_message(request(send("tck-artifact-file-g", ""))).await.expect("send").into_inner());
        let part = &file.artifacts[0].parts[0];
        assert_eq!((part.filename.as_str(), part.media_type.as_str()), ("output.txt", "text/plain"));
        assert!(matches!(&part.content, Some(pb::part::Content::Raw(bytes)) if !bytes.is_empty()), "{part:?}");

        let reply = c.send_message(request(send("tck-message-response-g", ""))).await.expect("send").into_inner();
        let Some(pb::send_message_response::Payload::Message(reply)) = reply.payload else { panic!("a message") };
        assert_eq!((text(&reply.parts[0]), reply.role), ("Direct message response", pb::Role::Agent as i32));

        let rejected = task(c.send_message(request(send("tck-reject-task-g", ""))).await.expect("send").into_inner());
        assert_eq!(state(rejected.status.as_ref()), pb::TaskState::Rejected);

        let waiting = task(c.send_message(request(send("tck-input-required-g", ""))).await.expect("send").into_inner());
        assert_eq!(state(waiting.status.as_ref()), pb::TaskState::InputRequired);
        let resumed =
            task(c.send_message(request(send("tck-complete-task-g", &waiting.id))).await.expect("send").into_inner());
        assert_eq!(
            (resumed.id.as_str(), state(resumed.status.as_ref())),
            (waiting.id.as_str(), pb::TaskState::Completed)
        );

        let streamed = c.send_streaming_message(request(send("tck-stream-001-g", ""))).await.expect("stream");
        let streamed = events(streamed.into_inner()).await;
        let kinds: Vec<&str> = streamed.iter().map(kind).collect();
        assert_eq!(kinds, ["task", "statusUpdate", "artifactUpdate", "statusUpdate"], "{streamed:?}");

        let chunked =
            c.send_streaming_message(request(send("tck-stream-artifact-chunked-g", ""))).await.expect("stream");
        let chunks: Vec<(String, bool, bool)> = events(chunked.into_inner())
            .await
            .into_iter()
            .filter_map(|payload| match payload {
                Payload::ArtifactUpdate(update) => {
                    let artifact = update.artifact.expect("artifact");
                    Some((text(&artifact.parts[0]).to_owned(), update.append, update.last_chunk))
                }
                _ => None,
            })
            .collect();
        assert_eq!(chunks, [("chunk-1 ".to_owned(), false, false), ("chunk-2".to_owned(), true, true)]);

        let mut returning = send("test-resubscribe-message-id-g", "");
        returning.configuration = Some(pb::SendMessageConfiguration { return_immediately: true, ..Default::default() });
        let created = task(c.send_message(request(returning)).await.expect("send").into_inner());
        let subscription = c
            .subscribe_to_task(request(pb::SubscribeToTaskRequest { id: created.id.clone(), ..Default::default() }))
            .await
            .expect("subscribe");
        let followed = events(subscription.into_inner()).await;
        assert!(matches!(&followed[0], Payload::Task(task) if state(task.status.as_ref()) == pb::TaskState::Working));
        let Some(Payload::StatusUpdate(last)) = followed.last() else { panic!("ends with a status: {followed:?}") };
        assert_eq!(state(last.status.as_ref()), pb::TaskState::Completed);

        // The kit's v1.0.0 codes: UNIMPLEMENTED for an unsupported version.
        let mut future = tonic::Request::new(pb::GetTaskRequest { id: completed.id.clone(), ..Default::default() });
        future.metadata_mut().insert("a2a-version", "99.0".parse().expect("metadata"));
        assert_eq!(c.get_task(future).await.expect_err("refused").code(), tonic::Code::Unimplemented);
        let cancel = pb::CancelTaskRequest { id: completed.id.clone(), ..Default::default() };
        assert_eq!(c.cancel_task(request(cancel)).await.expect_err("refused").code(), tonic::Code::FailedPrecondition);
        let listed = c
            .list_tasks(request(pb::ListTasksRequest { page_size: Some(2), ..Default::default() }))
            .await
            .expect("list")
            .into_inner();
        assert_eq!(listed.tasks.len(), 2);
        assert!(!listed.next_page_token.is_empty());
    }
}

/// A 0.3 JSON-RPC call (no `A2A-Version`, as 0.3 clients send), with `token` as the bearer.
async fn rpc03(served: &Served, token: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": "tck-03", "method": method, "params": params});
    let mut request = http().post(format!("{}/a2a/jsonrpc/", served.url)).json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    (status, response.json().await.expect("json"))
}

fn message03(id: &str, task_id: Option<&str>) -> Value {
    let mut message = json!({"kind": "message", "messageId": id, "role": "user",
                             "parts": [{"kind": "text", "text": "hello"}]});
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    message
}

#[tokio::test]
async fn with_a2a_03_the_0_3_kit_s_scenarios_run_and_the_extended_card_is_served() {
    const TOKEN: &str = "a-conformance-token-of-some-length";
    let served = Served::start(&[
        "--agent",
        "conformance",
        "--store",
        "memory",
        "--a2a-03",
        "--extended-card",
        "--bearer-token",
        TOKEN,
    ]);
    let token = Some(TOKEN);

    // The card speaks 0.3 too, and declares the extended card.
    let card: Value = http()
        .get(format!("{}/.well-known/agent-card.json", served.url))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    assert_eq!(card["protocolVersion"], "0.3", "{card}");
    assert_eq!(card["url"], format!("{}/a2a/jsonrpc", served.url), "{card}");
    assert_eq!(card["supportsAuthenticatedExtendedCard"], true, "{card}");
    assert_eq!(card["securitySchemes"]["bearer"]["type"], "http", "{card}");

    // Cancel a working task.
    let params = json!({"message": message03("test-resubscribe-message-id-03", None),
                        "configuration": {"blocking": false}});
    let (_, started) = rpc03(&served, token, "message/send", params).await;
    assert_eq!(started["result"]["kind"], "task", "{started}");
    assert!(["submitted", "working"].contains(&started["result"]["status"]["state"].as_str().unwrap_or("")));
    let task_id = started["result"]["id"].as_str().expect("id").to_owned();
    let (_, canceled) = rpc03(&served, token, "tasks/cancel", json!({"id": task_id})).await;
    assert_eq!(canceled["result"]["status"]["state"], "canceled", "{canceled}");

    // Continue an input-required one.
    let (_, waiting) =
        rpc03(&served, token, "message/send", json!({"message": message03("tck-input-required-03", None)})).await;
    assert_eq!(waiting["result"]["status"]["state"], "input-required", "{waiting}");
    let task_id = waiting["result"]["id"].as_str().expect("id").to_owned();
    let follow_up = json!({"message": message03("tck-complete-task-03", Some(&task_id))});
    let (_, completed) = rpc03(&served, token, "message/send", follow_up).await;
    assert_eq!(completed["result"]["id"], json!(task_id), "{completed}");
    assert_eq!(completed["result"]["status"]["state"], "completed", "{completed}");

    // The extended card: refused without a credential, the full `tck` entry with one.
    let (status, anonymous) = rpc03(&served, None, "agent/getAuthenticatedExtendedCard", Value::Null).await;
    assert_eq!(status, 401, "{anonymous}");
    let (_, extended) = rpc03(&served, token, "agent/getAuthenticatedExtendedCard", Value::Null).await;
    let skill = &extended["result"]["skills"][0];
    assert_eq!(skill["id"], "tck", "{extended}");
    assert!(skill["tags"].as_array().expect("tags").contains(&json!("extended")), "{extended}");
    let rest =
        http().get(format!("{}/a2a/rest/v1/card", served.url)).bearer_auth(TOKEN).send().await.expect("response");
    assert_eq!(rest.status(), 200);
    let rest: Value = rest.json().await.expect("json");
    assert!(rest["skills"][0]["description"].as_str().expect("description").contains("tck-input-required"));

    // Without the flags: 1.0 only, and no extended card.
    let plain = Served::conformance();
    let (_, refused) = rpc03(&plain, None, "tasks/get", json!({"id": "nope"})).await;
    assert_eq!(refused["error"]["code"], -32009, "{refused}");
}

#[test]
fn the_conformance_flags_are_refused_where_they_mean_nothing() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_accord"))
            .args(["serve", "--port", "0", "--store", "memory"])
            .args(args)
            .output()
            .expect("run accord serve")
    };
    let demo = run(&["--a2a-03"]);
    assert!(!demo.status.success());
    assert!(String::from_utf8_lossy(&demo.stderr).contains("--agent conformance"), "{demo:?}");
    let anonymous = run(&["--agent", "conformance", "--extended-card"]);
    assert!(!anonymous.status.success());
    assert!(String::from_utf8_lossy(&anonymous.stderr).contains("--bearer-token"), "{anonymous:?}");
}
