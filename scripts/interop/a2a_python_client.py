"""The official Python A2A SDK client against an Accord agent: every operation, checked.

Usage: python a2a_python_client.py BASE_URL BINDING   (BINDING: JSONRPC or HTTP+JSON)
Prints one PASS/FAIL line per check and exits non-zero on any failure.
"""
import asyncio
import sys

from google.protobuf.json_format import MessageToDict

from a2a.client import ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)

URL, BINDING = sys.argv[1], sys.argv[2]
failures = 0


def check(name, ok, detail=""):
    global failures
    if not ok:
        failures += 1
    print(f"{'PASS' if ok else 'FAIL'} python-sdk {BINDING} {name}" + (f": {detail}" if detail and not ok else ""))


def message(text, skill=None):
    msg = new_text_message(text, role=Role.ROLE_USER)
    if skill:
        msg.metadata.update({"skillId": skill})
    return msg


async def client(streaming):
    return await create_client(URL, client_config=ClientConfig(streaming=streaming, supported_protocol_bindings=[BINDING]))


async def main():
    c = await client(False)
    # Blocking send: the default skill (echo) gets {"text": "hello"} and completes.
    events = [ev async for ev in c.send_message(SendMessageRequest(message=message("hello")))]
    tasks = [ev.task for ev in events if ev.WhichOneof("payload") == "task"]
    check("blocking send returns a task", len(tasks) == 1, str(events))
    task = tasks[0]
    check("blocking send waits for completion", task.status.state == TaskState.TASK_STATE_COMPLETED, str(task.status))
    result = [a for a in task.artifacts if a.artifact_id == "result"]
    check("the output is the result artifact", bool(result) and MessageToDict(result[0].parts[0].data).get("text") == "hello", str(task.artifacts))
    check("the context id is generated", bool(task.context_id))

    got = await c.get_task(GetTaskRequest(id=task.id, history_length=10))
    check("get returns the same task", got.id == task.id and got.status.state == TaskState.TASK_STATE_COMPLETED, str(got))
    check("history holds the user's message", any(m.role == Role.ROLE_USER for m in got.history), str(got.history))

    listed = await c.list_tasks(ListTasksRequest(page_size=100))
    check("list includes the task", any(t.id == task.id for t in listed.tasks), str(listed))

    # A slow task, returned at once, then cancelled.
    slow = SendMessageRequest(message=message('{"seconds": 30}', skill="slow"), configuration=SendMessageConfiguration(return_immediately=True))
    events = [ev async for ev in c.send_message(slow)]
    running = [ev.task for ev in events if ev.WhichOneof("payload") == "task"][0]
    check("returnImmediately answers before the end", running.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING), str(running.status))
    cancelled = await c.cancel_task(CancelTaskRequest(id=running.id))
    check("cancel returns the canceled task", cancelled.status.state == TaskState.TASK_STATE_CANCELED, str(cancelled.status))
    await c.close()

    # Streaming: the task first, then updates, ending completed.
    s = await client(True)
    kinds, states = [], []
    async for ev in s.send_message(SendMessageRequest(message=message("stream me"))):
        kind = ev.WhichOneof("payload")
        kinds.append(kind)
        if kind == "status_update":
            states.append(ev.status_update.status.state)
    check("a stream starts with the task", bool(kinds) and kinds[0] == "task", str(kinds))
    check("a stream carries the result artifact", "artifact_update" in kinds, str(kinds))
    check("a stream ends completed", bool(states) and states[-1] == TaskState.TASK_STATE_COMPLETED, str(states))

    # Subscribe to a running task: the current task first; cancelling it ends the stream.
    slow = SendMessageRequest(message=message('{"seconds": 30}', skill="slow"), configuration=SendMessageConfiguration(return_immediately=True))
    running = None
    c = await client(False)
    async for ev in c.send_message(slow):
        if ev.WhichOneof("payload") == "task":
            running = ev.task
    seen = []

    async def follow():
        async for ev in s.subscribe(SubscribeToTaskRequest(id=running.id)):
            seen.append(ev)

    follower = asyncio.create_task(follow())
    await asyncio.sleep(0.5)
    await c.cancel_task(CancelTaskRequest(id=running.id))
    await asyncio.wait_for(follower, timeout=15)
    check("subscribe starts with the current task", bool(seen) and seen[0].WhichOneof("payload") == "task", str(seen[:1]))
    last = seen[-1] if seen else None
    check(
        "subscribe ends with the cancellation",
        last is not None and last.WhichOneof("payload") == "status_update" and last.status_update.status.state == TaskState.TASK_STATE_CANCELED,
        str(last),
    )
    await c.close()
    await s.close()


asyncio.run(main())
print(f"python-sdk {BINDING}: {'ok' if failures == 0 else f'{failures} failed'}")
sys.exit(1 if failures else 0)
