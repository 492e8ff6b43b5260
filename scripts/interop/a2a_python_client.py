"""The official Python A2A SDK client against an Accord agent: every operation, checked.

Usage: python a2a_python_client.py BASE_URL BINDING   (BINDING: JSONRPC, HTTP+JSON or GRPC)
Prints one PASS/FAIL line per check and exits non-zero on any failure.
"""
import asyncio
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict, Parse

from a2a.client import ClientConfig, create_client
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError
from a2a.helpers import new_text_message
from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    StreamResponse,
    TaskPushNotificationConfig,
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


class Webhook:
    """A local webhook receiver: records each POST's headers and body."""

    def __init__(self):
        self.received = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with outer.lock:
                    outer.received.append((dict(self.headers), body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def updates(self, task_id):
        """The updates received for a task, as StreamResponse messages, with their headers."""
        out = []
        with self.lock:
            received = list(self.received)
        for headers, body in received:
            update = Parse(body.decode(), StreamResponse(), ignore_unknown_fields=True)
            which = update.WhichOneof("payload")
            if which and getattr(update, which).task_id == task_id:
                out.append((headers, update))
        return out

    async def until_completed(self, task_id, timeout=15):
        for _ in range(int(timeout / 0.1)):
            updates = self.updates(task_id)
            if any(u.WhichOneof("payload") == "status_update" and u.status_update.status.state == TaskState.TASK_STATE_COMPLETED for _, u in updates):
                return updates
            await asyncio.sleep(0.1)
        return self.updates(task_id)


def header(headers, name):
    return next((value for key, value in headers.items() if key.lower() == name), None)


async def push_checks(c):
    """Push notifications: configs created, read, listed and deleted through the SDK; deliveries
    received by a local webhook with the configured credentials."""
    hook = Webhook()
    started = [
        ev
        async for ev in c.send_message(
            SendMessageRequest(message=message('{"count": 10}', "ticks"), configuration=SendMessageConfiguration(return_immediately=True))
        )
    ]
    task = next(ev.task for ev in started if ev.WhichOneof("payload") == "task")
    config = TaskPushNotificationConfig(
        task_id=task.id,
        id="py-hook",
        url=hook.url,
        token="py-token",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="py-credentials"),
    )
    created = await c.create_task_push_notification_config(config)
    check("push: create returns the config", created.id == "py-hook" and created.task_id == task.id, str(created))
    got = await c.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task.id, id="py-hook"))
    check("push: get returns the config", got.url == hook.url and got.token == "py-token", str(got))
    listed = await c.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
    check("push: list returns the config", [cfg.id for cfg in listed.configs] == ["py-hook"], str(listed))
    updates = await hook.until_completed(task.id)
    states = [u.status_update.status.state for _, u in updates if u.WhichOneof("payload") == "status_update"]
    check("push: the webhook receives the task's completion", TaskState.TASK_STATE_COMPLETED in states, str(states))
    auth_ok = all(header(h, "authorization") == "Bearer py-credentials" for h, _ in updates)
    token_ok = all(header(h, "x-a2a-notification-token") == "py-token" for h, _ in updates)
    check("push: every delivery carries the configured Authorization and token", bool(updates) and auth_ok and token_ok)
    ids = [header(h, "x-a2a-delivery-id") for h, _ in updates]
    check("push: every delivery has its own delivery id", bool(ids) and None not in ids and len(set(ids)) == len(ids), str(ids))
    await c.delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="py-hook"))
    listed = await c.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
    check("push: delete removes the config", len(listed.configs) == 0, str(listed))

    # Inline, with the send: every update of the new task from its creation on.
    inline = SendMessageConfiguration(task_push_notification_config=TaskPushNotificationConfig(url=hook.url, token="py-inline"))
    sent = [ev async for ev in c.send_message(SendMessageRequest(message=message("pushed"), configuration=inline))]
    task = next(ev.task for ev in sent if ev.WhichOneof("payload") == "task")
    updates = await hook.until_completed(task.id)
    states = [u.status_update.status.state for _, u in updates if u.WhichOneof("payload") == "status_update"]
    check(
        "push: an inline config receives every update in order",
        states[:1] == [TaskState.TASK_STATE_SUBMITTED] and states[-1:] == [TaskState.TASK_STATE_COMPLETED],
        str(states),
    )
    hook.server.shutdown()


async def client(streaming):
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=[BINDING])
    if BINDING == "GRPC":
        import grpc  # the `grpc` extra of a2a-sdk

        # The card's gRPC url is a host:port; the SDK leaves the channel to the caller.
        config.grpc_channel_factory = grpc.aio.insecure_channel
    return await create_client(URL, client_config=config)


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

    # A long task (the demo's `ticks`, 30 s; `slow` needs a scope once the server has credentials),
    # returned at once, then cancelled.
    slow = SendMessageRequest(message=message('{"count": 300}', skill="ticks"), configuration=SendMessageConfiguration(return_immediately=True))
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

    # Progress: the demo's `ticks` streams its deltas as chunks of one artifact, before the end.
    chunks, order = [], []
    async for ev in s.send_message(SendMessageRequest(message=message('{"count": 3}', skill="ticks"))):
        kind = ev.WhichOneof("payload")
        if kind == "artifact_update" and ev.artifact_update.artifact.artifact_id == "stream":
            update = ev.artifact_update
            chunks.append(("".join(part.text for part in update.artifact.parts), update.append, update.last_chunk))
            order.append("chunk")
        elif kind == "status_update" and ev.status_update.status.state == TaskState.TASK_STATE_COMPLETED:
            order.append("completed")
    check(
        "deltas arrive as chunks of one streamed artifact before the task completes",
        len(chunks) >= 2
        and "".join(text for text, _, _ in chunks) == "tick 1tick 2tick 3"
        and [append for _, append, _ in chunks] == [False] + [True] * (len(chunks) - 1)
        and chunks[-1][2]
        and order[-1] == "completed",
        f"{chunks} {order}",
    )

    # Subscribe to a running task: the current task first; cancelling it ends the stream.
    slow = SendMessageRequest(message=message('{"count": 300}', skill="ticks"), configuration=SendMessageConfiguration(return_immediately=True))
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
    await push_checks(c)
    await error_checks(c, s, task.id)
    await c.close()
    await s.close()


async def expect_error(name, error_class, call):
    """Checks that `call` raises the SDK's exception for an A2A error (read from the ErrorInfo
    reason on gRPC and REST, the code on JSON-RPC)."""
    try:
        result = await call
    except error_class:
        check(name, True)
        return
    except Exception as error:  # noqa: BLE001 - the check reports what else came
        check(name, False, f"{type(error).__name__}: {error}")
        return
    check(name, False, f"no error: {result}")


async def error_checks(c, s, completed_id):
    await expect_error("error: a missing task is TaskNotFoundError", TaskNotFoundError, c.get_task(GetTaskRequest(id="no-such-task")))
    await expect_error(
        "error: cancelling a completed task is TaskNotCancelableError",
        TaskNotCancelableError,
        c.cancel_task(CancelTaskRequest(id=completed_id)),
    )

    async def subscribe_finished():
        return [ev async for ev in s.subscribe(SubscribeToTaskRequest(id=completed_id))]

    await expect_error(
        "error: subscribing to a finished task is UnsupportedOperationError", UnsupportedOperationError, subscribe_finished()
    )


asyncio.run(main())
print(f"python-sdk {BINDING}: {'ok' if failures == 0 else f'{failures} failed'}")
sys.exit(1 if failures else 0)
