//! The command backend with real processes: small scripts written into a temporary directory,
//! an agent built from an agent file naming them, run through the engine.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use accord_backends::AgentFile;
use accord_engine::task::{
    AccessToken, Caller, MemoryStore, MemoryStoreConfig, RuntimeConfig, SendInput, SendRequest, ServiceConfig,
    TaskRuntime, TaskService, Wait,
};
use accord_engine::{Agent, EndStatus, Message, Part, Role, RunError, RunEvent, SkillError, TaskState};
use futures_util::StreamExt;
use serde_json::{Value, json};

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write script");
}

fn env() -> HashMap<&'static str, String> {
    HashMap::from([
        ("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())),
        ("ALLOWED", "yes".to_owned()),
        ("HIDDEN", "do-not-pass".to_owned()),
    ])
}

/// An agent from `skills` (TOML `[[skill]]` entries) with its files in `dir`.
fn agent(dir: &Path, skills: &str) -> Agent {
    let text = format!("[agent]\nname = \"command-test\"\n{skills}");
    let env = env();
    AgentFile::parse_with_env(&text, "command-test.toml", dir, &|name| env.get(name).cloned())
        .unwrap_or_else(|errors| panic!("{errors}"))
        .build_agent()
        .expect("agent")
}

async fn invoke(agent: &Agent, skill: &str, input: Value) -> Result<Value, RunError> {
    let valid = agent.skill(skill).expect("skill").validate_input(input).expect("valid input");
    agent.invoke(valid).await.map(|invocation| invocation.completion.output)
}

fn failure(result: Result<Value, RunError>) -> SkillError {
    match result {
        Err(RunError::Failed(error)) => error,
        other => panic!("expected a failed run, got {other:?}"),
    }
}

#[tokio::test]
async fn the_last_stdout_line_is_the_output() {
    let dir = tempfile::tempdir().expect("dir");
    write(
        dir.path(),
        "count.py",
        "import json, sys\ntext = json.load(sys.stdin)['text']\nprint(json.dumps({'words': len(text.split())}))\n",
    );
    let agent = agent(dir.path(), "[[skill]]\nid = \"count\"\ncommand = [\"python3\", \"count.py\"]\n");
    assert_eq!(invoke(&agent, "count", json!({"text": "one two three"})).await.expect("output"), json!({"words": 3}));
}

#[tokio::test]
async fn delta_lines_stream_before_the_output() {
    let dir = tempfile::tempdir().expect("dir");
    write(
        dir.path(),
        "talk.sh",
        "#!/bin/sh\necho '{\"delta\": \"Hel\"}'\n\necho '{\"delta\": \"lo\"}'\necho '{\"said\": \"Hello\"}'\n",
    );
    let agent = agent(dir.path(), "[[skill]]\nid = \"talk\"\ncommand = [\"sh\", \"talk.sh\"]\n");
    let valid = agent.skill("talk").expect("skill").validate_input(json!({})).expect("valid");
    let frames: Vec<RunEvent> = agent.stream(valid).expect("stream").map(|frame| frame.event).collect().await;
    let deltas: Vec<&str> = frames
        .iter()
        .filter_map(|event| match event {
            RunEvent::Delta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["Hel", "lo"]);
    match frames.last() {
        Some(RunEvent::End(end)) => {
            assert_eq!(end.status, EndStatus::Succeeded);
            assert_eq!(end.completion.as_ref().map(|c| &c.output), Some(&json!({"said": "Hello"})));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_non_zero_exit_fails_with_the_last_stderr_line() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "fail.sh", "echo 'warming up' >&2\necho 'no stock for this item' >&2\necho '{}'\nexit 3\n");
    let agent = agent(dir.path(), "[[skill]]\nid = \"fail\"\ncommand = [\"sh\", \"fail.sh\"]\n");
    let error = failure(invoke(&agent, "fail", json!({})).await);
    assert_eq!(error.code, "backend_error");
    assert_eq!(error.message, "the command exited with status 3: no stock for this item");
}

#[tokio::test]
async fn answers_that_break_the_contract_fail_and_rejections_reject() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "garbage.sh", "echo 'hello world'\n");
    write(dir.path(), "silent.sh", "exit 0\n");
    write(dir.path(), "early.sh", "echo '{\"a\": 1}'\necho '{\"b\": 2}'\n");
    write(dir.path(), "reject.sh", "echo '{\"rejected\": {\"message\": \"that item is not sold here\"}}'\n");
    let agent = agent(
        dir.path(),
        "[[skill]]\nid = \"garbage\"\ncommand = [\"sh\", \"garbage.sh\"]\n\
         [[skill]]\nid = \"silent\"\ncommand = [\"sh\", \"silent.sh\"]\n\
         [[skill]]\nid = \"early\"\ncommand = [\"sh\", \"early.sh\"]\n\
         [[skill]]\nid = \"reject\"\ncommand = [\"sh\", \"reject.sh\"]\n",
    );
    let error = failure(invoke(&agent, "garbage", json!({})).await);
    assert_eq!((error.code.as_str(), error.message.as_str()), ("backend_invalid_answer", "stdout line 1 is not JSON"));
    assert_eq!(failure(invoke(&agent, "silent", json!({})).await).message, "the command printed no answer");
    let error = failure(invoke(&agent, "early", json!({})).await);
    assert!(error.message.contains("line 1 is not a delta or file event"), "{error}");
    match invoke(&agent, "reject", json!({})).await {
        Err(RunError::Incomplete { status: EndStatus::Rejected, message }) => {
            assert_eq!(message.map(|m| m.text()).as_deref(), Some("that item is not sold here"));
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test]
async fn stdout_beyond_the_cap_stops_the_command() {
    let dir = tempfile::tempdir().expect("dir");
    write(
        dir.path(),
        "flood.sh",
        "while :; do echo '{\"delta\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}'; done\n",
    );
    let agent = agent(
        dir.path(),
        "[[skill]]\nid = \"flood\"\ncommand = { argv = [\"sh\", \"flood.sh\"], max_output_bytes = 100000, grace = 0.2 }\n",
    );
    let error = failure(invoke(&agent, "flood", json!({})).await);
    assert_eq!(error.code, "backend_answer_too_large", "{error}");
}

#[tokio::test]
async fn a_lot_of_stderr_is_drained_not_kept() {
    let dir = tempfile::tempdir().expect("dir");
    write(
        dir.path(),
        "noisy.py",
        "import sys\nsys.stderr.write(('z' * 100000 + '\\n') * 50)\nsys.stderr.write('last words\\n')\nprint('{\"ok\": true}')\n",
    );
    let agent = agent(dir.path(), "[[skill]]\nid = \"noisy\"\ncommand = [\"python3\", \"noisy.py\"]\n");
    assert_eq!(invoke(&agent, "noisy", json!({})).await.expect("output"), json!({"ok": true}));
}

#[tokio::test]
async fn a_timeout_stops_the_command_and_fails_the_run() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "sleepy.sh", "sleep 30\necho '{}'\n");
    let agent = agent(
        dir.path(),
        "[[skill]]\nid = \"sleepy\"\ncommand = { argv = [\"sh\", \"sleepy.sh\"], timeout = 0.5, grace = 0.5 }\n",
    );
    let started = Instant::now();
    let error = failure(invoke(&agent, "sleepy", json!({})).await);
    assert_eq!(error.code, "backend_timeout", "{error}");
    assert!(started.elapsed() < Duration::from_secs(20), "the run waited for the command");
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn cancel_sends_sigterm_then_sigkill_after_the_grace_and_reaps_the_child() {
    let dir = tempfile::tempdir().expect("dir");
    let pid_file = dir.path().join("pid");
    write(dir.path(), "stubborn.sh", "trap '' TERM\necho $$ > pid\nsleep 60\n");
    let agent = agent(
        dir.path(),
        "[[skill]]\nid = \"stubborn\"\ncommand = { argv = [\"sh\", \"stubborn.sh\"], grace = 1.5 }\n",
    );
    let valid = agent.skill("stubborn").expect("skill").validate_input(json!({})).expect("valid");
    let stream = agent.stream(valid).expect("stream");
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|text| text.trim().parse::<u32>().ok()) {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(alive(pid));
    let cancelled = Instant::now();
    drop(stream);
    // SIGTERM is ignored: the child lives on through the grace period...
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(alive(pid), "the child should outlive SIGTERM");
    // ...then SIGKILL ends it, and it is reaped (a zombie keeps its /proc entry).
    while alive(pid) {
        assert!(cancelled.elapsed() < Duration::from_secs(15), "the child {pid} was not killed and reaped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(cancelled.elapsed() >= Duration::from_millis(1400), "killed before the grace period");
}

#[tokio::test]
async fn a_command_that_obeys_sigterm_stops_at_once() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "polite.sh", "echo $$ > pid\nexec sleep 60\n");
    let agent =
        agent(dir.path(), "[[skill]]\nid = \"polite\"\ncommand = { argv = [\"sh\", \"polite.sh\"], grace = 30 }\n");
    let valid = agent.skill("polite").expect("skill").validate_input(json!({})).expect("valid");
    let stream = agent.stream(valid).expect("stream");
    let pid_file = dir.path().join("pid");
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|text| text.trim().parse::<u32>().ok()) {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let cancelled = Instant::now();
    drop(stream);
    while alive(pid) {
        assert!(cancelled.elapsed() < Duration::from_secs(10), "SIGTERM did not stop {pid}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_child_sees_only_path_the_allowed_variables_and_the_ones_set() {
    let dir = tempfile::tempdir().expect("dir");
    write(
        dir.path(),
        "env.py",
        "import json, os\nprint(json.dumps({k: os.environ.get(k) for k in ['ALLOWED', 'HIDDEN', 'SET', 'HOME']} | {'keys': sorted(os.environ)}))\n",
    );
    // The interpreter itself, not a wrapper (pyenv's shim is a shell script that sets variables).
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3");
    let python = String::from_utf8_lossy(&python.stdout).trim().to_owned();
    let agent = agent(
        dir.path(),
        &format!(
            "[[skill]]\nid = \"env\"\ncommand = {{ argv = [{python:?}, \"env.py\"], env = [\"ALLOWED\", \"UNSET_ONE\"], env_set = {{ SET = \"v-${{ALLOWED}}\" }} }}\n"
        ),
    );
    let output = invoke(&agent, "env", json!({})).await.expect("output");
    assert_eq!(output["ALLOWED"], "yes");
    assert_eq!(output["SET"], "v-yes");
    assert_eq!(output["HIDDEN"], Value::Null);
    assert_eq!(output["HOME"], Value::Null);
    // Python may add a variable or two of its own (LC_CTYPE); nothing of Accord's beyond these.
    let keys: Vec<&str> = output["keys"].as_array().expect("keys").iter().filter_map(Value::as_str).collect();
    // The run's ids are Accord's own; a direct invocation has no task, so no task id nor owner.
    let own = ["ALLOWED", "SET", "PATH", "LC_CTYPE", "ACCORD_SKILL", "ACCORD_RUN_ID"];
    assert!(keys.iter().all(|key| own.contains(key)), "{keys:?}");
    assert!(keys.contains(&"ACCORD_RUN_ID") && keys.contains(&"ACCORD_SKILL"), "{keys:?}");
}

#[tokio::test]
async fn a_resumed_task_gets_the_envelope_on_stdin() {
    let dir = tempfile::tempdir().expect("dir");
    write(
        dir.path(),
        "ask.py",
        "import json, os, sys\nbody = json.load(sys.stdin)\n\
         if 'history' not in body:\n    print(json.dumps({'input_required': {'message': 'Which colour?'}}))\n\
         else:\n    print(json.dumps({'item': body['input']['item'], 'colour': body['history'][-1]['parts'][0]['text'], \
         'ids': [os.environ.get(k) for k in ['ACCORD_TASK_ID', 'ACCORD_OWNER', 'ACCORD_SKILL']]}))\n",
    );
    let agent = agent(
        dir.path(),
        "[[skill]]\nid = \"ask\"\ninput_schema = { type = \"object\", properties = { item = { type = \"string\" } }, required = [\"item\"] }\ncommand = [\"python3\", \"ask.py\"]\n",
    );
    let store = Arc::new(MemoryStore::new(MemoryStoreConfig::default()));
    let service = TaskService::new(TaskRuntime::new(agent, store, RuntimeConfig::default()), ServiceConfig::default());
    let token = AccessToken::generate();
    let caller = Caller::owner(token.owner());
    let request = SendRequest::new(caller.clone(), SendInput::Candidates(vec![json!({"item": "scarf"})])).skill("ask");
    let task = service.send(request, Wait::Settled(Duration::from_secs(20))).await.expect("task");
    assert_eq!(task.state, TaskState::InputRequired, "{task:?}");
    let answer = Message::new(Role::User, vec![Part::Text("red".into())]);
    let request = SendRequest::new(caller, SendInput::FromMessage).follow_up(task.id.clone()).message(answer);
    let task = service.send(request, Wait::Settled(Duration::from_secs(20))).await.expect("follow-up");
    assert_eq!(task.state, TaskState::Completed, "{task:?}");
    let ids = json!([task.id.as_str(), token.owner().pseudonym(), "ask"]);
    assert_eq!(task.result.expect("result").output, json!({"item": "scarf", "colour": "red", "ids": ids}));
}

#[tokio::test]
async fn the_concurrency_limit_holds_commands_back() {
    let dir = tempfile::tempdir().expect("dir");
    // Each run records itself in a directory while it runs and reports how many it saw at once.
    write(
        dir.path(),
        "held.sh",
        "mkdir -p running\ntouch running/$$\nsleep 0.3\nn=$(ls running | wc -l)\nrm running/$$\necho \"{\\\"seen\\\": $n}\"\n",
    );
    let agent =
        agent(dir.path(), "[[skill]]\nid = \"held\"\ncommand = { argv = [\"sh\", \"held.sh\"], concurrency = 2 }\n");
    let runs = (0..6).map(|_| invoke(&agent, "held", json!({})));
    for result in futures_util::future::join_all(runs).await {
        let seen = result.expect("output")["seen"].as_u64().expect("seen");
        assert!((1..=2).contains(&seen), "{seen} commands ran at once");
    }
}

#[tokio::test]
async fn plain_jq_works_its_pretty_printed_answer_is_one_document() {
    // The real jq, without `-c`: it prints `{`, one line per key, `}`.
    let dir = tempfile::tempdir().expect("dir");
    let agent = agent(
        dir.path(),
        "[[skill]]\nid = \"jq\"\ncommand = [\"jq\", \"{words: (.text | split(\\\" \\\") | length), tags: [.text | split(\\\" \\\")[] | ascii_upcase]}\"]\n",
    );
    let output = invoke(&agent, "jq", json!({"text": "one two three"})).await.expect("output");
    assert_eq!(output, json!({"words": 3, "tags": ["ONE", "TWO", "THREE"]}));
    // jq's pretty scalars and empty containers are one line: NDJSON of one line, the same answer.
    let agent = self::agent(dir.path(), "[[skill]]\nid = \"jq\"\ncommand = [\"jq\", \".n\"]\n");
    assert_eq!(invoke(&agent, "jq", json!({"n": 7})).await.expect("output"), json!(7));
}

#[tokio::test]
async fn deltas_may_stream_before_a_pretty_printed_answer() {
    let dir = tempfile::tempdir().expect("dir");
    write(
        dir.path(),
        "pretty.py",
        "import json\nprint(json.dumps({'delta': 'working'}))\nprint(json.dumps({'delta': '...'}))\nprint(json.dumps({'said': 'done', 'list': [1, {'a': None}]}, indent=2))\n",
    );
    let agent = agent(dir.path(), "[[skill]]\nid = \"pretty\"\ncommand = [\"python3\", \"pretty.py\"]\n");
    let valid = agent.skill("pretty").expect("skill").validate_input(json!({})).expect("valid");
    let frames: Vec<RunEvent> = agent.stream(valid).expect("stream").map(|frame| frame.event).collect().await;
    let deltas: Vec<&str> = frames
        .iter()
        .filter_map(|event| match event {
            RunEvent::Delta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["working", "..."]);
    match frames.last() {
        Some(RunEvent::End(end)) => assert_eq!(
            end.completion.as_ref().map(|c| &c.output),
            Some(&json!({"said": "done", "list": [1, {"a": null}]}))
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_multi_line_stdout_that_is_not_json_fails_saying_so() {
    let dir = tempfile::tempdir().expect("dir");
    // Starts like a document, then is not JSON.
    write(dir.path(), "broken.sh", "echo '{'\necho '  \"a\": 1,'\necho '  oops'\necho '}'\n");
    // A document that never ends.
    write(dir.path(), "cut.sh", "echo '{\"delta\": \"x\"}'\necho '['\necho '  1,'\n");
    // Two pretty documents: not one document.
    write(dir.path(), "two.sh", "printf '{\\n \"a\": 1\\n}\\n{\\n \"b\": 2\\n}\\n'\n");
    // An answer line, then a document: output beyond the answer.
    write(dir.path(), "after.sh", "echo '{\"a\": 1}'\necho '{'\necho '}'\n");
    let agent = agent(
        dir.path(),
        "[[skill]]\nid = \"broken\"\ncommand = [\"sh\", \"broken.sh\"]\n\
         [[skill]]\nid = \"cut\"\ncommand = [\"sh\", \"cut.sh\"]\n\
         [[skill]]\nid = \"two\"\ncommand = [\"sh\", \"two.sh\"]\n\
         [[skill]]\nid = \"after\"\ncommand = [\"sh\", \"after.sh\"]\n",
    );
    let error = failure(invoke(&agent, "broken", json!({})).await);
    assert_eq!(error.code, "backend_invalid_answer");
    assert_eq!(
        error.message,
        "stdout is not JSON: line 1 starts a JSON document over several lines, which is invalid at stdout line 3, column 3"
    );
    let error = failure(invoke(&agent, "cut", json!({})).await);
    assert!(error.message.starts_with("stdout is not JSON: line 2 starts a JSON document"), "{error}");
    let error = failure(invoke(&agent, "two", json!({})).await);
    assert!(error.message.starts_with("stdout is not JSON: line 1 starts"), "{error}");
    assert!(error.message.ends_with("at stdout line 4, column 1"), "{error}");
    let error = failure(invoke(&agent, "after", json!({})).await);
    assert_eq!(error.message, "stdout line 1 is not a delta or file event, yet more lines follow it");
}

#[tokio::test]
async fn file_lines_and_an_answer_with_files_give_file_artifacts() {
    let dir = tempfile::tempdir().expect("dir");
    write(
        dir.path(),
        "files.py",
        "import base64, json\n\
         print(json.dumps({'delta': 'rendering'}))\n\
         print(json.dumps({'file': {'name': 'page1.txt', 'mime': 'text/plain', 'bytes_base64': base64.b64encode(b'one').decode()}}))\n\
         print(json.dumps({'output': {'pages': 2}, 'files': [{'name': 'all.pdf', 'mime': 'application/pdf', 'uri': 'https://files.example/all.pdf'}]}, indent=2))\n",
    );
    write(dir.path(), "bad.sh", "echo '{\"file\": {\"name\": \"x\", \"bytes_base64\": \"%%%\"}}'\necho '{}'\n");
    let agent = agent(
        dir.path(),
        "[[skill]]\nid = \"files\"\ncommand = [\"python3\", \"files.py\"]\n[[skill]]\nid = \"bad\"\ncommand = [\"sh\", \"bad.sh\"]\n",
    );
    let valid = agent.skill("files").expect("skill").validate_input(json!({})).expect("valid");
    let frames: Vec<RunEvent> = agent.stream(valid).expect("stream").map(|frame| frame.event).collect().await;
    let streamed: Vec<&Part> = frames
        .iter()
        .filter_map(|event| match event {
            RunEvent::Artifact { artifact, .. } => Some(&artifact.parts[0]),
            _ => None,
        })
        .collect();
    let page = Part::File {
        name: Some("page1.txt".into()),
        mime: Some("text/plain".into()),
        bytes_base64: Some("b25l".into()),
        uri: None,
    };
    assert_eq!(streamed, [&page]);
    match frames.last() {
        Some(RunEvent::End(end)) => {
            let completion = end.completion.as_ref().expect("completion");
            assert_eq!(completion.output, json!({"pages": 2}));
            assert_eq!(completion.artifacts.len(), 1);
            assert_eq!(completion.artifacts[0].artifact_id, "file-2");
            assert_eq!(
                completion.artifacts[0].parts,
                [Part::File {
                    name: Some("all.pdf".into()),
                    mime: Some("application/pdf".into()),
                    bytes_base64: None,
                    uri: Some("https://files.example/all.pdf".into()),
                }]
            );
        }
        other => panic!("{other:?}"),
    }
    let error = failure(invoke(&agent, "bad", json!({})).await);
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("backend_invalid_answer", "`file` has a `bytes_base64` that is not base64 (standard alphabet, padded)")
    );
}
