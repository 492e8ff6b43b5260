"""The official Python A2A SDK 0.3 client against an Accord agent that fronts remote A2A agents
([[a2a]] entries of its agent file), in the 0.3 dialect: a blocking message/send to each skill
named, whose task must carry the remote agent's artifact "echo: <text>".

Usage: python a2a_front03_python_client.py ACCORD_URL JSONRPC|HTTP+JSON SKILL...
The client reads the card's 0.3 members and picks the 0.3 interface of that transport. Prints one
PASS/FAIL line per skill and exits non-zero on any failure.
"""
import asyncio
import sys
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, Task, TaskState, TextPart, TransportProtocol

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


async def main():
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, URL).get_agent_card()
        transport = TransportProtocol.http_json if TRANSPORT == "HTTP+JSON" else TransportProtocol.jsonrpc
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False, supported_transports=[transport])).create(card)
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
