"""Calls a running `accord serve` through a client generated from its own /openapi.json by
openapi-python-client: invoke `echo` on the Lucid face, `SendMessage` then `GetTask` on the A2A
HTTP+JSON binding, and an error answer parsed as the documented error model. The generated package
is importable as `accord_openapi_client` (the caller puts it on PYTHONPATH).

Usage: openapi_client.py BASE_URL. Prints one PASS/FAIL line per check; exits non-zero on any
failure.
"""

import sys
import uuid

from accord_openapi_client import Client
from accord_openapi_client.api.a2a_rest import get_task, send_message
from accord_openapi_client.api.lucid import invoke_echo
from accord_openapi_client.models import (
    EchoInput,
    InvokeEchoBody,
    Message,
    PartData,
    PartText,
    RestErrorBody,
    Role,
    SendMessageRequest,
    SendMessageResponseTask,
    Task,
)

failures = 0


def check(name, ok, detail=""):
    global failures
    if ok:
        print(f"PASS openapi-client {name}")
    else:
        failures += 1
        print(f"FAIL openapi-client {name}: {detail}")


def main(base):
    client = Client(base_url=base.rstrip("/"), raise_on_unexpected_status=True)

    # Lucid: the generated model of echo's own input, and of its own output.
    answer = invoke_echo.sync_detailed(client=client, body=InvokeEchoBody(input_=EchoInput(text="hi from openapi")))
    parsed = answer.parsed
    check("invoke echo answers 200", answer.status_code == 200, f"status {answer.status_code}: {answer.content!r}")
    output = getattr(parsed, "output", None)
    check(
        "invoke echo's output parses as the skill's output model",
        output is not None and getattr(output, "text", None) == "hi from openapi",
        f"parsed {parsed!r}",
    )

    # A2A HTTP+JSON: SendMessage (a task), then GetTask of that task.
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[PartText(text="hello over HTTP+JSON")],
    )
    sent = send_message.sync_detailed(client=client, body=SendMessageRequest(message=message), a2a_version="1.0")
    check("SendMessage answers 200", sent.status_code == 200, f"status {sent.status_code}: {sent.content!r}")
    task = sent.parsed.task if isinstance(sent.parsed, SendMessageResponseTask) else None
    check("SendMessage answers a task", isinstance(task, Task), f"parsed {sent.parsed!r}")
    if isinstance(task, Task):
        state = getattr(task.status.state, "value", task.status.state)
        check("the sent task completed", state == "TASK_STATE_COMPLETED", f"state {state}")
        got = get_task.sync_detailed(task.id, client=client, a2a_version="1.0")
        check("GetTask answers 200", got.status_code == 200, f"status {got.status_code}: {got.content!r}")
        check(
            "GetTask answers the same task",
            isinstance(got.parsed, Task) and got.parsed.id == task.id,
            f"parsed {got.parsed!r}",
        )
        data = [
            part.data
            for artifact in (got.parsed.artifacts or [])
            for part in artifact.parts
            if isinstance(part, PartData)
        ] if isinstance(got.parsed, Task) else []
        check(
            "GetTask's artifact carries echo's output",
            {"text": "hello over HTTP+JSON"} in data,
            f"data parts {data!r}",
        )

    # An error answer parses as the documented error model.
    missing = get_task.sync_detailed("no-such-task", client=client, a2a_version="1.0")
    check("GetTask of an unknown task answers 404", missing.status_code == 404, f"status {missing.status_code}")
    check(
        "the 404 parses as RestErrorBody",
        isinstance(missing.parsed, RestErrorBody) and missing.parsed.error.status == "NOT_FOUND",
        f"parsed {missing.parsed!r}",
    )
    return failures


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: openapi_client.py BASE_URL")
    sys.exit(1 if main(sys.argv[1]) else 0)
