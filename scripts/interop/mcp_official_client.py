"""The official Python A2A SDK calling official MCP servers behind `accord serve --config`.

Usage: python mcp_official_client.py CHECK BASE_URL [ARGS...]   (scripts/interop-mcp runs it)

  everything URL            server-everything on stdio: the card, echo, an image as a file part,
                            progress notifications as working updates on a stream, /health
  after-kill URL            after the stdio server was SIGKILLed: a call succeeds, /health counts
                            the reconnect
  echo LABEL URL TEXT       one echo call (server-everything over streamable HTTP)
  health-ok LABEL URL NAME  /health shows backend NAME up, with no failed call
  filesystem URL PATH TEXT  server-filesystem: read_text_file of PATH gives TEXT
  time URL                  mcp-server-time: get_current_time with a timezone

Prints one PASS/FAIL line per check and exits non-zero on any failure.
"""
import asyncio
import json
import sys
import urllib.request
import uuid

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict

from a2a.client import ClientConfig, create_client
from a2a.types import Message, SendMessageRequest, TaskState

failures = 0
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def check(label, name, ok, detail=""):
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'} {label} {name}" + ("" if ok else f": {detail}"[:1500]), flush=True)


def message(skill, data):
    return ParseDict(
        {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"data": data}], "metadata": {"skillId": skill}},
        Message(),
    )


def get_json(url, path):
    with urllib.request.urlopen(url.rstrip("/") + path, timeout=10) as answer:
        return json.load(answer)


def backend(url, name):
    health = get_json(url, "/health")
    return next((b for b in health.get("backends", []) if b.get("name") == name), None), health


def result_output(task):
    """The tool's output: the data part of the task's `result` artifact (or its first artifact)."""
    artifacts = [a for a in task.artifacts if a.artifact_id == "result"] or list(task.artifacts[:1])
    for artifact in artifacts:
        for part in artifact.parts:
            if part.WhichOneof("content") == "data":
                return MessageToDict(part.data)
    return None


async def send(client, skill, data, timeout=30):
    """A blocking send; the final task."""
    request = SendMessageRequest(message=message(skill, data))

    async def run():
        return [event async for event in client.send_message(request)]

    events = await asyncio.wait_for(run(), timeout)
    tasks = [event.task for event in events if event.WhichOneof("payload") == "task"]
    if not tasks:
        raise RuntimeError(f"no task in the answer: {events}")
    return tasks[-1]


def completed(task):
    return task.status.state == TaskState.TASK_STATE_COMPLETED


def status_text(status):
    return " ".join(part.text for part in status.message.parts if part.WhichOneof("content") == "text")


async def everything(url):
    label = "everything-stdio"
    card = get_json(url, "/.well-known/agent-card.json")
    skills = sorted(skill["id"] for skill in card.get("skills", []))
    wanted = ["echo", "get-tiny-image", "trigger-long-running-operation"]
    check(label, "the server's tools are the card's skills", all(name in skills for name in wanted), str(skills))

    client = await create_client(url, client_config=ClientConfig(streaming=False))
    try:
        task = await send(client, "echo", {"message": "hello from a2a"})
        output = result_output(task)
        check(label, "echo: a completed task with the tool's text",
              completed(task) and output == {"text": "Echo: hello from a2a"}, str(task))
    except Exception as error:  # noqa: BLE001 - reported as the check's failure
        check(label, "echo: a completed task with the tool's text", False, repr(error))

    try:
        task = await send(client, "get-tiny-image", {})
        files = [
            part
            for artifact in task.artifacts
            if artifact.artifact_id != "result"
            for part in artifact.parts
            if part.WhichOneof("content") == "raw"
        ]
        image = files[0] if files else None
        check(label, "get-tiny-image: an artifact with a file part image/png holding the PNG's bytes",
              completed(task) and image is not None and image.media_type == "image/png"
              and len(image.raw) > len(PNG_MAGIC) and image.raw.startswith(PNG_MAGIC),
              f"state {task.status.state}, artifacts {[MessageToDict(a) for a in task.artifacts]}"[:1500])
        names = [a.artifact_id or a.name for a in task.artifacts]
        check(label, "get-tiny-image: the file part is in the artifact `content`",
              any((a.artifact_id == "content" or a.name == "content") and any(p.WhichOneof("content") == "raw" for p in a.parts)
                  for a in task.artifacts), str(names))
        output = result_output(task) or {}
        check(label, "get-tiny-image: the text blocks are the output",
              "Here's the image you requested:" in output.get("text", "") and "MCP logo" in output.get("text", ""), str(output))
    except Exception as error:  # noqa: BLE001
        check(label, "get-tiny-image: an artifact with a file part image/png holding the PNG's bytes", False, repr(error))
    await client.close()

    # Progress: 4 steps of 0.5 s, each a notifications/progress (progress i, total 4, no message);
    # Accord words them "i/4". The stream must show working updates with a message before the end.
    stream = await create_client(url, client_config=ClientConfig(streaming=True))
    order, progress_texts, final = [], [], None
    try:
        async def follow():
            nonlocal final
            request = SendMessageRequest(message=message("trigger-long-running-operation", {"duration": 2, "steps": 4}))
            async for event in stream.send_message(request):
                kind = event.WhichOneof("payload")
                if kind == "status_update":
                    status = event.status_update.status
                    if status.state == TaskState.TASK_STATE_WORKING and status_text(status):
                        order.append("progress")
                        progress_texts.append(status_text(status))
                    elif status.state == TaskState.TASK_STATE_COMPLETED:
                        order.append("completed")
                    else:
                        order.append(TaskState.Name(status.state))
                elif kind == "task":
                    final = event.task
                    order.append("task")
                else:
                    order.append(kind)

        await asyncio.wait_for(follow(), 30)
        ok = ("completed" in order and "progress" in order and order.index("progress") < order.index("completed")
              and len(progress_texts) >= 2)
        check(label, "trigger-long-running-operation streamed: working updates with a message before completed",
              ok, f"order {order}, messages {progress_texts}")
        check(label, "the progress messages say how far it got (progress/total)",
              any("4" in text for text in progress_texts) and progress_texts[-1] != progress_texts[0],
              str(progress_texts))
    except Exception as error:  # noqa: BLE001
        check(label, "trigger-long-running-operation streamed: working updates with a message before completed",
              False, f"{error!r}; order so far {order}")
    await stream.close()

    entry, health = backend(url, "everything")
    check(label, "GET /health lists the backend `everything` up",
          entry is not None and entry.get("up") is True and entry.get("calls", 0) >= 3, json.dumps(health))


async def after_kill(url):
    label = "everything-stdio-restart"
    client = await create_client(url, client_config=ClientConfig(streaming=False))
    # One call, no retry: Accord noticed the exit at once and restarts the server after 0.5 s, and
    # a call made while it is down restarts it first.
    try:
        task = await send(client, "echo", {"message": "after the kill"}, timeout=15)
        output = result_output(task)
        check(label, "the first call after SIGKILL of the stdio server succeeds (Accord restarted it)",
              completed(task) and output == {"text": "Echo: after the kill"}, str(task))
    except Exception as error:  # noqa: BLE001
        check(label, "the first call after SIGKILL of the stdio server succeeds (Accord restarted it)", False, repr(error))
    entry, health = backend(url, "everything")
    check(label, "GET /health shows `everything` up with reconnects >= 1",
          entry is not None and entry.get("up") is True and entry.get("reconnects", 0) >= 1, json.dumps(health))
    await client.close()


async def echo(label, url, text):
    """One echo call, no retry. The client waits 40 s, longer than the entry's call timeout, so a
    call that fails shows Accord's own answer."""
    client = await create_client(
        url, client_config=ClientConfig(streaming=False, httpx_client=httpx.AsyncClient(timeout=40))
    )
    name = f"echo {text!r}: a completed task with the tool's text"
    try:
        task = await send(client, "echo", {"message": text}, timeout=45)
        check(label, name, completed(task) and result_output(task) == {"text": f"Echo: {text}"},
              f"{TaskState.Name(task.status.state)}: {status_text(task.status)}")
    except Exception as error:  # noqa: BLE001
        check(label, name, False, repr(error))
    await client.close()


def health_ok(label, url, name):
    entry, health = backend(url, name)
    check(label, f"GET /health shows `{name}` up, with no failed call",
          entry is not None and entry.get("up") is True and entry.get("failures") == 0, json.dumps(health))


async def filesystem(url, path, text):
    label = "filesystem"
    card = get_json(url, "/.well-known/agent-card.json")
    skills = sorted(skill["id"] for skill in card.get("skills", []))
    check(label, "read_text_file is a skill of the card", "read_text_file" in skills, str(skills))
    client = await create_client(url, client_config=ClientConfig(streaming=False))
    try:
        task = await send(client, "read_text_file", {"path": path})
        output = result_output(task) or {}
        check(label, "read_text_file: a completed task with the file's text",
              completed(task) and output.get("content") == text, str(task))
    except Exception as error:  # noqa: BLE001
        check(label, "read_text_file: a completed task with the file's text", False, repr(error))
    try:
        # A path outside the allowed directory is the tool's own error: a failed task.
        task = await send(client, "read_text_file", {"path": "/etc/hostname"})
        check(label, "read_text_file outside the root: a failed task with the server's reason",
              task.status.state == TaskState.TASK_STATE_FAILED and "denied" in str(task.status).lower(), str(task.status))
    except Exception as error:  # noqa: BLE001
        check(label, "read_text_file outside the root: a failed task with the server's reason", False, repr(error))
    await client.close()


async def time_check(url):
    label = "time"
    client = await create_client(url, client_config=ClientConfig(streaming=False))
    try:
        task = await send(client, "get_current_time", {"timezone": "Asia/Tokyo"})
        output = result_output(task) or {}
        check(label, "get_current_time Asia/Tokyo: a completed task with the time there",
              completed(task) and output.get("timezone") == "Asia/Tokyo" and output.get("datetime", "").endswith("+09:00"),
              str(task))
    except Exception as error:  # noqa: BLE001
        check(label, "get_current_time Asia/Tokyo: a completed task with the time there", False, repr(error))
    await client.close()


def main():
    name, url, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if name == "everything":
        asyncio.run(everything(url))
    elif name == "after-kill":
        asyncio.run(after_kill(url))
    elif name == "echo":
        label, url, text = sys.argv[2], sys.argv[3], sys.argv[4]
        asyncio.run(echo(label, url, text))
    elif name == "health-ok":
        health_ok(sys.argv[2], sys.argv[3], sys.argv[4])
    elif name == "filesystem":
        asyncio.run(filesystem(url, args[0], args[1]))
    elif name == "time":
        asyncio.run(time_check(url))
    else:
        sys.exit(f"unknown check {name}")
    sys.exit(1 if failures else 0)


main()
