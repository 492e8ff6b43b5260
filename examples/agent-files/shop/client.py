"""The official Python A2A SDK (`a2a-sdk`) calling the shop as an A2A agent.

Usage: python client.py BASE_URL [TASK_ID]
Without TASK_ID: asks for a quote as a durable task (returnImmediately, then GetTask until it
ends), counts words, and asks for an item the shop does not sell; prints the quote task's id last.
With TASK_ID: reads that task again (after a restart of the server, say).
Prints one PASS/FAIL line per check and exits non-zero on any failure.
"""
import asyncio
import json
import sys
import urllib.request
import uuid

from google.protobuf.json_format import MessageToDict, ParseDict

from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, Message, SendMessageConfiguration, SendMessageRequest, TaskState

URL = sys.argv[1]
failures = 0


def check(name, ok, detail=""):
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'} shop {name}" + ("" if ok else f": {detail}"), flush=True)


def message(skill, data):
    """A user message whose data part is the skill's input, naming the skill in its metadata."""
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


async def until_done(client, task_id):
    ends = {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED}
    for _ in range(200):
        task = await client.get_task(GetTaskRequest(id=task_id))
        if task.status.state in ends:
            return task
        await asyncio.sleep(0.05)
    return task


def output(task):
    return MessageToDict(task.artifacts[0].parts[0].data) if task.artifacts else None


async def main():
    client = await create_client(URL, client_config=ClientConfig(streaming=False))
    if len(sys.argv) > 2:
        task = await client.get_task(GetTaskRequest(id=sys.argv[2]))
        check("the task is still there after a restart", task.status.state == TaskState.TASK_STATE_COMPLETED
              and output(task).get("price") == 8, str(task))
        return
    with urllib.request.urlopen(URL.rstrip("/") + "/.well-known/agent-card.json") as answer:
        card = json.load(answer)
    skills = [skill["id"] for skill in card["skills"]]
    check("the card lists the file's skills", skills == ["quote", "count"], str(skills))

    started = await send(client, "quote", {"item": "tea", "quantity": 2}, immediately=True)
    check("a durable task is returned at once", bool(started.id), str(started))
    task = await until_done(client, started.id)
    check("the HTTP skill's answer is the task's artifact", task.status.state == TaskState.TASK_STATE_COMPLETED
          and output(task).get("price") == 8 and output(task).get("task") == task.id, str(task))

    counted = await send(client, "count", {"text": "the quick brown fox"})
    check("the command skill counts", output(counted) == {"words": 4.0}, str(counted))

    refused = await send(client, "quote", {"item": "caviar"})
    reason = MessageToDict(refused.status.message) if refused.status.HasField("message") else {}
    check("a 4xx from the service rejects the task with its message",
          refused.status.state == TaskState.TASK_STATE_REJECTED and "not sold here" in str(reason), str(refused))
    print(f"task {started.id}")


asyncio.run(main())
sys.exit(1 if failures else 0)
