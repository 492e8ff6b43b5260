"""The official Python A2A SDK 0.3 client against an Accord agent that fronts remote A2A agents
([[a2a]] entries of its agent file), in the 0.3 dialect: a blocking message/send to each skill
named, whose task must carry the remote agent's artifact "echo: <text>".

Usage: python a2a_front03_python_client.py ACCORD_URL JSONRPC|HTTP+JSON SKILL...
       python a2a_front03_python_client.py ACCORD_URL JSONRPC|HTTP+JSON --stream SKILL PAUSE_MS
       python a2a_front03_python_client.py ACCORD_URL JSONRPC|HTTP+JSON --ask SKILL
The client reads the card's 0.3 members and picks the 0.3 interface of that transport. With
--stream, message/stream "chunks 5" to SKILL (the Python 1.x agent's chunked answer): five
artifact-update events of one artifact (append, lastChunk as the remote agent sent them), the first
at least two of its pauses before the final status update. With --ask, message/send "ask <id>"
(the Python 1.x agent's question) leaves the task input-required with the question, and the
follow-up (the task's taskId and contextId) completes it with the follow-up's echo. Prints one PASS/FAIL line per check and
exits non-zero on any failure.
"""
import asyncio
import sys
import time
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
    TransportProtocol,
)

URL, TRANSPORT, SKILLS = sys.argv[1], sys.argv[2], sys.argv[3:]
failures = 0


def check(name, ok, detail=""):
    global failures
    if not ok:
        failures += 1
    print(f"{'PASS' if ok else 'FAIL'} python-sdk-0.3 {TRANSPORT} {name}" + (f": {detail}" if detail and not ok else ""), flush=True)


def short(value, limit=500):
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit] + "..."


def text_of(parts):
    return "".join(p.root.text for p in parts if isinstance(p.root, TextPart))


async def stream(client, skill, pause_ms):
    msg = Message(
        message_id=str(uuid.uuid4()), role=Role.user, parts=[Part(root=TextPart(text="chunks 5"))], metadata={"skillId": skill}
    )
    started = time.monotonic()
    chunks, final_at, events = [], None, []
    try:
        async for event in client.send_message(msg):
            at = time.monotonic() - started
            update = event[1] if isinstance(event, tuple) else None
            events.append((round(at, 3), type(update).__name__ if update is not None else type(event).__name__))
            if isinstance(update, TaskArtifactUpdateEvent):
                chunks.append((at, update.artifact.artifact_id, text_of(update.artifact.parts), bool(update.append), bool(update.last_chunk)))
            elif isinstance(update, TaskStatusUpdateEvent) and update.final:
                final_at = at if update.status.state == TaskState.completed else None
    except Exception as error:  # noqa: BLE001 - the check reports what came
        check(f"-> {skill}: message/stream runs to the end", False, f"{type(error).__name__}: {short(error)}")
        return
    check(f"-> {skill}: message/stream ends on a final completed status update", final_at is not None, short(events))
    check(
        f"-> {skill}: 5 artifact-update chunks of one artifact, append and lastChunk as the remote agent sent them",
        len(chunks) == 5
        and {c[1] for c in chunks} == {"chunks"}
        and "".join(c[2] for c in chunks) == "chunk 1;chunk 2;chunk 3;chunk 4;chunk 5;"
        and [c[3] for c in chunks] == [False, True, True, True, True]
        and [c[4] for c in chunks] == [False, False, False, False, True],
        short([c[1:] for c in chunks]),
    )
    check(
        f"-> {skill}: the first chunk arrives as sent, >= 2 pauses ({2 * pause_ms} ms) before the final event",
        bool(chunks) and final_at is not None and final_at - chunks[0][0] >= 2 * pause_ms / 1000,
        short(events),
    )


async def ask(client, skill):
    token = uuid.uuid4().hex[:12]

    async def send(text, task=None):
        msg = Message(
            message_id=str(uuid.uuid4()),
            role=Role.user,
            parts=[Part(root=TextPart(text=text))],
            metadata={"skillId": skill},
            task_id=task.id if task else None,
            context_id=task.context_id if task else None,
        )
        last = None
        async for event in client.send_message(msg):
            last = event[0] if isinstance(event, tuple) else event
        return last

    try:
        task = await send(f"ask {token}")
    except Exception as error:  # noqa: BLE001
        check(f"-> {skill}: 'ask' leaves the task input-required", False, f"{type(error).__name__}: {short(error)}")
        return
    question = text_of(task.status.message.parts) if isinstance(task, Task) and task.status.message else ""
    ok = isinstance(task, Task) and task.status.state == TaskState.input_required
    check(f"-> {skill}: 'ask' leaves the task input-required", ok, short(task))
    check(f"-> {skill}: the status message is the remote agent's question", question == f"What should I echo? (ask {token})", repr(question))
    if not ok:
        return
    try:
        done = await send(f"answer {token}", task)
    except Exception as error:  # noqa: BLE001
        check(f"-> {skill}: the follow-up completes the task with its echo", False, f"{type(error).__name__}: {short(error)}")
        return
    echoes = [text_of(a.parts) for a in (done.artifacts or [])] if isinstance(done, Task) else []
    check(
        f"-> {skill}: the follow-up (same taskId, contextId) completes the task with its echo",
        isinstance(done, Task) and done.id == task.id and done.status.state == TaskState.completed and f"echo: answer {token}" in echoes,
        short(done),
    )


async def main():
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, URL).get_agent_card()
        transport = TransportProtocol.http_json if TRANSPORT == "HTTP+JSON" else TransportProtocol.jsonrpc
        if SKILLS[:1] == ["--stream"]:
            streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True, supported_transports=[transport])).create(card)
            await stream(streaming, SKILLS[1], int(SKILLS[2]))
            return
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False, supported_transports=[transport])).create(card)
        if SKILLS[:1] == ["--ask"]:
            await ask(client, SKILLS[1])
            return
        for skill in SKILLS:
            text = f"hello {skill} over 0.3 {TRANSPORT} {uuid.uuid4().hex[:8]}"
            msg = Message(
                message_id=str(uuid.uuid4()), role=Role.user, parts=[Part(root=TextPart(text=text))], metadata={"skillId": skill}
            )
            name = f"-> {skill}: the remote agent's echo comes back"
            task = None
            try:
                async for event in client.send_message(msg):
                    if isinstance(event, tuple):
                        task = event[0]
                    elif isinstance(event, Message):
                        task = event
            except Exception as error:  # noqa: BLE001 - the check reports what came
                check(name, False, f"{type(error).__name__}: {short(error)}")
                continue
            echoes = [
                "".join(p.root.text for p in a.parts if isinstance(p.root, TextPart)) for a in (task.artifacts or [])
            ] if isinstance(task, Task) else []
            check(name, isinstance(task, Task) and task.status.state == TaskState.completed and f"echo: {text}" in echoes, short(task))


asyncio.run(main())
sys.exit(1 if failures else 0)
