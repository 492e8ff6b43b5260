"""The official Python A2A SDK calling the workshop: an MCP tool's answer as a task's artifact,
and a long tool call cancelled mid-run.

Usage: python client.py BASE_URL    Prints one PASS/FAIL line per check; exits non-zero on any failure.
"""
import asyncio
import json
import sys
import urllib.request
import uuid

from google.protobuf.json_format import MessageToDict, ParseDict

from a2a.client import ClientConfig, create_client
from a2a.types import CancelTaskRequest, GetTaskRequest, Message, SendMessageConfiguration, SendMessageRequest, TaskState

URL = sys.argv[1]
failures = 0


def check(name, ok, detail=""):
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'} workshop {name}" + ("" if ok else f": {detail}"), flush=True)


def message(skill, data):
    return ParseDict(
        {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"data": data}], "metadata": {"skillId": skill}},
        Message(),
    )


async def send(client, skill, data, immediately=False):
    request = SendMessageRequest(
        message=message(skill, data), configuration=SendMessageConfiguration(return_immediately=immediately)
    )
    events = [event async for event in client.send_message(request)]
    return next(event.task for event in events if event.WhichOneof("payload") == "task")


async def main():
    with urllib.request.urlopen(URL.rstrip("/") + "/.well-known/agent-card.json") as answer:
        card = json.load(answer)
    skills = {skill["id"]: skill for skill in card["skills"]}
    check("the MCP server's tools are the card's skills", sorted(skills) == ["bake", "convert"], str(sorted(skills)))

    client = await create_client(URL, client_config=ClientConfig(streaming=False))
    task = await send(client, "convert", {"celsius": 100})
    output = MessageToDict(task.artifacts[0].parts[0].data) if task.artifacts else {}
    check("a tool call is a completed task with the tool's answer", task.status.state == TaskState.TASK_STATE_COMPLETED
          and output.get("fahrenheit") == 212, str(task))

    started = await send(client, "bake", {"minutes": 300}, immediately=True)
    await asyncio.sleep(1.0)
    running = await client.get_task(GetTaskRequest(id=started.id))
    check("a long tool call runs as a working task", running.status.state == TaskState.TASK_STATE_WORKING, str(running.status))
    canceled = await client.cancel_task(CancelTaskRequest(id=started.id))
    check("cancelling the task cancels the tool call", canceled.status.state == TaskState.TASK_STATE_CANCELED, str(canceled.status))


asyncio.run(main())
sys.exit(1 if failures else 0)
