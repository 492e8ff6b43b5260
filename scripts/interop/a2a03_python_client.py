"""The official Python A2A SDK 0.3 client against an Accord agent, in the 0.3 dialect.

Usage: python a2a03_python_client.py BASE_URL [JSONRPC|HTTP+JSON]
The client resolves the card, picks the 0.3 interface of the transport asked for (default
JSONRPC) from the card's 0.3 members (`url`, `preferredTransport`, `additionalInterfaces`), and
drives send, stream, get, cancel, resubscribe and the push config operations. Prints one
PASS/FAIL line per check and exits non-zero on any failure.
"""
import asyncio
import sys
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.types import (
    DataPart,
    GetTaskPushNotificationConfigParams,
    Message,
    MessageSendConfiguration,
    Part,
    PushNotificationAuthenticationInfo,
    PushNotificationConfig,
    Role,
    Task,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
    TransportProtocol,
)

URL = sys.argv[1]
TRANSPORT = sys.argv[2] if len(sys.argv) > 2 else "JSONRPC"
REST = TRANSPORT == "HTTP+JSON"
failures = 0


def check(name, ok, detail=""):
    global failures
    if not ok:
        failures += 1
    print(f"{'PASS' if ok else 'FAIL'} python-sdk-0.3 {TRANSPORT} {name}" + (f": {detail}" if detail and not ok else ""))


def message(skill, data):
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.user,
        parts=[Part(root=DataPart(data=data))],
        metadata={"skillId": skill},
    )


async def first_task(client, msg, configuration=None):
    """The task (last state seen) of a non-streaming send."""
    task = None
    async for event in client.send_message(msg, configuration=configuration):
        if isinstance(event, tuple):
            task = event[0]
        elif isinstance(event, Message):
            return event
    return task


async def main():
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, URL).get_agent_card()
        check("the card reads as a 0.3 card", card.url.endswith("/a2a/jsonrpc"), card.url)
        check("the card prefers JSON-RPC", card.preferred_transport == "JSONRPC", str(card.preferred_transport))
        rest_urls = [i.url for i in card.additional_interfaces or [] if i.transport == "HTTP+JSON"]
        check("the card lists the 0.3 HTTP+JSON interface", any(u.endswith("/a2a/rest") for u in rest_urls), repr(rest_urls))

        transports = [TransportProtocol.http_json if REST else TransportProtocol.jsonrpc]
        blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False, supported_transports=transports)).create(card)
        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True, supported_transports=transports)).create(card)

        # message/send, blocking.
        task = await first_task(blocking, message("echo", {"text": "hello 0.3"}))
        ok = isinstance(task, Task) and task.status.state == TaskState.completed
        check("message/send completes the task", ok, repr(task))
        if not ok:
            return
        artifact = task.artifacts[0].parts[0].root if task.artifacts else None
        check(
            "the result is a data part",
            isinstance(artifact, DataPart) and artifact.data == {"text": "hello 0.3"},
            repr(artifact),
        )
        check("the history keeps the user message", task.history and task.history[0].role == Role.user)

        # tasks/get, with historyLength.
        got = await blocking.get_task(TaskQueryParams(id=task.id, history_length=0))
        check("tasks/get reads the task", got.id == task.id and got.status.state == TaskState.completed, repr(got))
        check("tasks/get honours historyLength", not got.history, repr(got.history))

        # A text message, sent as text: the skill reads it as its input.
        text_msg = Message(
            message_id=str(uuid.uuid4()), role=Role.user, parts=[Part(root=TextPart(text="plain words"))]
        )
        task = await first_task(blocking, text_msg)
        check("a text part is the echo skill's text", task and task.status.state == TaskState.completed, repr(task))

        # message/stream: the task, updates, and a final status update.
        events = []
        async for event in streaming.send_message(message("echo", {"text": "streamed"})):
            events.append(event)
        updates = [update for (_, update) in events if update is not None]
        final = [u for u in updates if isinstance(u, TaskStatusUpdateEvent) and u.final]
        check("message/stream ends on a final status update", len(final) == 1 and updates[-1] is final[0], repr(updates))
        check("the stream's last state is completed", bool(final) and final[0].status.state == TaskState.completed)

        # A running task: resubscribe, then cancel it.
        slow = await first_task(blocking, message("slow", {"seconds": 30}), MessageSendConfiguration(blocking=False))
        ok = isinstance(slow, Task) and slow.status.state in (TaskState.submitted, TaskState.working)
        check("blocking: false returns at once", ok, repr(slow))
        if not ok:
            return

        async def watch():
            seen = []
            async for event in streaming.resubscribe(TaskIdParams(id=slow.id)):
                seen.append(event)
            return seen

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.5)

        # Push configs on the running task.
        config = PushNotificationConfig(
            id="hook-1",
            url="http://127.0.0.1:9/webhook",
            token="tok-1",
            authentication=PushNotificationAuthenticationInfo(schemes=["Bearer"], credentials="secret"),
        )
        saved = await blocking.set_task_callback(TaskPushNotificationConfig(task_id=slow.id, push_notification_config=config))
        check(
            "tasks/pushNotificationConfig/set keeps the config",
            saved.task_id == slow.id and saved.push_notification_config.url == config.url,
            repr(saved),
        )
        fetched = await blocking.get_task_callback(
            GetTaskPushNotificationConfigParams(id=slow.id, push_notification_config_id="hook-1")
        )
        check(
            "tasks/pushNotificationConfig/get reads it back",
            fetched.push_notification_config.id == "hook-1"
            and fetched.push_notification_config.authentication.schemes == ["Bearer"],
            repr(fetched),
        )

        # No authentication scheme (0.3 allows an empty list; over REST it is `authentication: {}`):
        # kept, and read back without authentication.
        open_hook = PushNotificationConfig(
            id="hook-open",
            url="http://127.0.0.1:9/open",
            authentication=PushNotificationAuthenticationInfo(schemes=[]),
        )
        try:
            await blocking.set_task_callback(TaskPushNotificationConfig(task_id=slow.id, push_notification_config=open_hook))
            fetched = await blocking.get_task_callback(
                GetTaskPushNotificationConfigParams(id=slow.id, push_notification_config_id="hook-open")
            )
            check(
                "a push config without an authentication scheme is kept",
                fetched.push_notification_config.url == open_hook.url
                and fetched.push_notification_config.authentication is None,
                repr(fetched),
            )
        except Exception as error:  # noqa: BLE001 - any failure is one FAIL line
            check("a push config without an authentication scheme is kept", False, repr(error))

        canceled = await blocking.cancel_task(TaskIdParams(id=slow.id))
        check("tasks/cancel cancels", canceled.status.state == TaskState.canceled, repr(canceled))
        try:
            seen = await asyncio.wait_for(watcher, 10)
            last = seen[-1][1] if seen and isinstance(seen[-1], tuple) else None
            check(
                "tasks/resubscribe ends with the final canceled update",
                isinstance(last, TaskStatusUpdateEvent) and last.final and last.status.state == TaskState.canceled,
                repr(seen),
            )
        except Exception as error:  # noqa: BLE001 - any failure is one FAIL line
            check("tasks/resubscribe ends with the final canceled update", False, repr(error))

        # Errors in the 0.3 shape (over REST, the SDK reads the HTTP status).
        try:
            await blocking.get_task(TaskQueryParams(id="no-such-task"))
            check("an unknown task is TaskNotFoundError", False, "no error")
        except A2AClientJSONRPCError as error:
            check("an unknown task is TaskNotFoundError", error.error.code == -32001, repr(error.error))
        except A2AClientHTTPError as error:
            check("an unknown task is TaskNotFoundError", REST and error.status_code == 404, repr(error))
        try:
            await blocking.cancel_task(TaskIdParams(id=slow.id))
            check("cancelling a canceled task is TaskNotCancelableError", False, "no error")
        except A2AClientJSONRPCError as error:
            check("cancelling a canceled task is TaskNotCancelableError", error.error.code == -32002, repr(error.error))
        except A2AClientHTTPError as error:
            check("cancelling a canceled task is TaskNotCancelableError", REST and error.status_code == 409, repr(error))


async def stream_error(events):
    """The error a stream ends with (None when it ends without one)."""
    try:
        async for _ in events:
            pass
    except Exception as error:  # noqa: BLE001 - the error is what is checked
        return error
    return None


async def streaming_errors():
    """Errors of the streaming methods reach the client as the real error: on 0.3 JSON-RPC inside
    the event stream (TaskNotFoundError), on 0.3 REST as the HTTP status (404)."""
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, URL).get_agent_card()
        transports = [TransportProtocol.http_json if REST else TransportProtocol.jsonrpc]
        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True, supported_transports=transports)).create(card)
        follow_up = Message(
            message_id=str(uuid.uuid4()),
            role=Role.user,
            parts=[Part(root=TextPart(text="more"))],
            task_id="no-such-task",
        )
        error = await stream_error(streaming.send_message(follow_up))
        if REST:
            check(
                "message:stream on an unknown task is the HTTP 404",
                isinstance(error, A2AClientHTTPError) and error.status_code == 404,
                repr(error),
            )
            return
        check(
            "message/stream on an unknown task is TaskNotFoundError",
            isinstance(error, A2AClientJSONRPCError) and error.error.code == -32001,
            repr(error),
        )
        error = await stream_error(streaming.resubscribe(TaskIdParams(id="no-such-task")))
        check(
            "tasks/resubscribe on an unknown task is TaskNotFoundError",
            isinstance(error, A2AClientJSONRPCError)
            and error.error.code == -32001
            and error.error.message == "Task not found",
            repr(error),
        )


asyncio.run(main())
asyncio.run(streaming_errors())
print(f"python-sdk-0.3 {TRANSPORT}: {'ok' if failures == 0 else f'{failures} failed'}")
sys.exit(1 if failures else 0)
