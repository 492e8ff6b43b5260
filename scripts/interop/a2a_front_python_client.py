"""The official Python A2A SDK (1.x) client against an Accord agent that fronts remote A2A agents
([[a2a]] entries of its agent file), and, to read back what reached them, against those agents.

Usage (every mode prints one PASS/FAIL line per check and exits non-zero on any failure):
  a2a_front_python_client.py echo   ACCORD_URL BINDING SKILL...
      a blocking send to each skill; the remote agent's artifact "echo: <text>" comes back.
  a2a_front_python_client.py stream ACCORD_URL BINDING SKILL PAUSE_MS
      SendStreamingMessage "chunks 5": five chunks of one artifact, the first well before the end
      (at least two of the remote agent's pauses before the completed event).
  a2a_front_python_client.py ask    ACCORD_URL BINDING SKILL REMOTE_URL
      "ask <id>": the task waits for input with the remote agent's question; the follow-up (the
      task's taskId and contextId) completes it with the echo of the follow-up; the remote agent
      holds one task with both messages.
  a2a_front_python_client.py cancel ACCORD_URL BINDING SKILL REMOTE_URL
      "slow <id>" with returnImmediately, cancelled through Accord: the remote agent's own task
      (read from it with ListTasks/GetTask) ends CANCELED.
BINDING: JSONRPC, HTTP+JSON or GRPC (Accord's gRPC port, from its card). The remote agent is
always read over JSON-RPC.
"""
import asyncio
import os
import sys
import time
import uuid

from a2a.client import ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)

MODE, URL, BINDING = sys.argv[1], sys.argv[2], sys.argv[3]
ARGS = sys.argv[4:]
failures = 0


VERBOSE = bool(os.environ.get("INTEROP_VERBOSE"))  # the details of passed checks too


def check(name, ok, detail=""):
    global failures
    if not ok:
        failures += 1
    shown = detail and (not ok or VERBOSE)
    print(f"{'PASS' if ok else 'FAIL'} python-sdk {BINDING} {name}" + (f": {detail}" if shown else ""), flush=True)


def short(value, limit=500):
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit] + "..."


def message(text, skill=None, task=None):
    msg = new_text_message(text, role=Role.ROLE_USER)
    if skill:
        msg.metadata.update({"skillId": skill})
    if task is not None:
        msg.task_id = task.id
        msg.context_id = task.context_id
    return msg


def texts(parts):
    return [part.text for part in parts if part.WhichOneof("content") == "text"]


def artifact_texts(task):
    return ["".join(texts(a.parts)) for a in task.artifacts]


def state_name(state):
    return TaskState.Name(state)


async def client(url, binding, streaming=False):
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding])
    if binding == "GRPC":
        import grpc  # the `grpc` extra of a2a-sdk

        # The card's gRPC url is a host:port; the SDK leaves the channel to the caller.
        config.grpc_channel_factory = grpc.aio.insecure_channel
    return await create_client(url, client_config=config)


async def send(c, msg, return_immediately=False):
    """The task of a non-streaming send (or the message, when the answer is one)."""
    request = SendMessageRequest(message=msg, configuration=SendMessageConfiguration(return_immediately=return_immediately))
    events = [ev async for ev in c.send_message(request)]
    for ev in events:
        kind = ev.WhichOneof("payload")
        if kind == "task":
            return ev.task
        if kind == "message":
            return ev.message
    return None


async def remote_tasks_with(remote, text):
    """The remote agent's tasks whose history holds a user message with exactly this text."""
    listed = await remote.list_tasks(ListTasksRequest(page_size=100, history_length=100))
    return [t for t in listed.tasks if any("".join(texts(m.parts)) == text for m in t.history)]


async def echo(skills):
    c = await client(URL, BINDING)
    for skill in skills:
        text = f"hello {skill} over {BINDING} {uuid.uuid4().hex[:8]}"
        try:
            task = await send(c, message(text, skill))
        except Exception as error:  # noqa: BLE001 - the check reports what came
            check(f"-> {skill}: the remote agent's echo comes back", False, f"{type(error).__name__}: {short(error)}")
            continue
        ok = (
            task is not None
            and hasattr(task, "status")
            and task.status.state == TaskState.TASK_STATE_COMPLETED
            and f"echo: {text}" in artifact_texts(task)
        )
        check(f"-> {skill}: the remote agent's echo comes back", ok, short(task))
    await c.close()


async def stream(skill, pause_ms):
    s = await client(URL, BINDING, streaming=True)
    started = time.monotonic()
    chunks, completed_at, events = [], None, []
    try:
        async for ev in s.send_message(SendMessageRequest(message=message("chunks 5", skill))):
            at = time.monotonic() - started
            kind = ev.WhichOneof("payload")
            events.append((round(at, 3), kind))
            if kind == "artifact_update":
                update = ev.artifact_update
                chunks.append((at, update.artifact.artifact_id, "".join(texts(update.artifact.parts)), update.append, update.last_chunk))
            elif kind == "status_update" and ev.status_update.status.state == TaskState.TASK_STATE_COMPLETED:
                completed_at = at
    except Exception as error:  # noqa: BLE001
        check(f"-> {skill}: SendStreamingMessage runs to the end", False, f"{type(error).__name__}: {short(error)}")
        await s.close()
        return
    await s.close()
    check(f"-> {skill}: the stream ends completed", completed_at is not None, short(events))
    ids = {artifact_id for _, artifact_id, _, _, _ in chunks}
    check(
        f"-> {skill}: 5 artifact chunks of one artifact, its id, append and lastChunk as the remote agent sent them",
        len(chunks) == 5
        and ids == {"chunks"}
        and "".join(text for _, _, text, _, _ in chunks) == "chunk 1;chunk 2;chunk 3;chunk 4;chunk 5;"
        and [append for _, _, _, append, _ in chunks] == [False, True, True, True, True]
        and [last for _, _, _, _, last in chunks] == [False, False, False, False, True],
        short([c[1:] for c in chunks]),
    )
    if chunks and completed_at is not None:
        first = chunks[0][0]
        check(
            f"-> {skill}: the first chunk arrives as sent, >= 2 pauses ({2 * pause_ms} ms) before the completed event",
            completed_at - first >= 2 * pause_ms / 1000,
            f"first chunk at {first:.3f} s, completed at {completed_at:.3f} s; events {short(events)}",
        )
    else:
        check(f"-> {skill}: the first chunk arrives as sent, >= 2 pauses before the completed event", False, short(events))


async def ask(skill, remote_url):
    c = await client(URL, BINDING)
    token = uuid.uuid4().hex[:12]
    question_text, answer_text = f"ask {token}", f"answer {token}"
    task = await send(c, message(question_text, skill))
    status_text = "".join(texts(task.status.message.parts)) if task is not None and task.status.HasField("message") else ""
    ok = task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    check(f"-> {skill}: 'ask' leaves the Accord task INPUT_REQUIRED", ok, short(task))
    check(
        f"-> {skill}: the status message is the remote agent's question",
        status_text == f"What should I echo? ({question_text})",
        repr(status_text),
    )
    if not ok:
        await c.close()
        return
    done = await send(c, message(answer_text, skill, task))
    check(
        f"-> {skill}: the follow-up (same taskId, contextId) completes the task with its echo",
        done is not None
        and getattr(done, "id", None) == task.id
        and done.status.state == TaskState.TASK_STATE_COMPLETED
        and f"echo: {answer_text}" in artifact_texts(done),
        short(done),
    )
    await c.close()
    remote = await client(remote_url, "JSONRPC")
    asked = await remote_tasks_with(remote, question_text)
    answered = await remote_tasks_with(remote, answer_text)
    check(
        f"-> {skill}: the remote agent holds one task that got both messages, COMPLETED",
        len(asked) == 1 and [t.id for t in answered] == [asked[0].id] and asked[0].status.state == TaskState.TASK_STATE_COMPLETED,
        f"tasks with the question: {short([(t.id, state_name(t.status.state)) for t in asked])}; "
        f"with the answer: {short([(t.id, state_name(t.status.state)) for t in answered])}",
    )
    await remote.close()


async def cancel(skill, remote_url):
    c = await client(URL, BINDING)
    remote = await client(remote_url, "JSONRPC")
    text = f"slow {uuid.uuid4().hex[:12]}"
    task = await send(c, message(text, skill), return_immediately=True)
    ok = task is not None and task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    check(f"-> {skill}: returnImmediately answers with the running task", ok, short(task))
    if not ok:
        await c.close()
        await remote.close()
        return
    # The remote agent's task, once Accord's run has sent the message.
    found = []
    for _ in range(100):
        found = await remote_tasks_with(remote, text)
        if found:
            break
        await asyncio.sleep(0.1)
    check(f"-> {skill}: the remote agent has the task, running", len(found) == 1 and found[0].status.state in (
        TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING), short(found))
    cancelled = await c.cancel_task(CancelTaskRequest(id=task.id))
    check(f"-> {skill}: CancelTask through Accord answers CANCELED", cancelled.status.state == TaskState.TASK_STATE_CANCELED, short(cancelled.status))
    if len(found) == 1:
        state = None
        for _ in range(100):
            state = (await remote.get_task(GetTaskRequest(id=found[0].id))).status.state
            if state == TaskState.TASK_STATE_CANCELED:
                break
            await asyncio.sleep(0.1)
        check(f"-> {skill}: the remote agent's own task is CANCELED (GetTask at the remote agent)", state == TaskState.TASK_STATE_CANCELED,
              state_name(state) if state is not None else "no answer")
    await c.close()
    await remote.close()


async def main():
    if MODE == "echo":
        await echo(ARGS)
    elif MODE == "stream":
        await stream(ARGS[0], int(ARGS[1]))
    elif MODE == "ask":
        await ask(ARGS[0], ARGS[1])
    elif MODE == "cancel":
        await cancel(ARGS[0], ARGS[1])
    else:
        sys.exit(f"unknown mode {MODE}")


asyncio.run(main())
sys.exit(1 if failures else 0)
