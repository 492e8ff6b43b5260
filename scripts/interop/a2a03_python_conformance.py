"""The official Python A2A SDK 0.3 client against `accord serve --agent conformance --a2a-03
--extended-card` with a bearer token and an API key: the card's security schemes as the 0.3
card model reads them, the authenticated extended card, and two of the 0.3 conformance kit's
scenarios (cancel a working task, continue an input-required one).

Usage: python a2a03_python_conformance.py BASE_URL BEARER_TOKEN
Prints one PASS/FAIL line per check and exits non-zero on any failure.
"""
import asyncio
import sys
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    In,
    Message,
    MessageSendConfiguration,
    Part,
    Role,
    Task,
    TaskIdParams,
    TaskState,
    TextPart,
    TransportProtocol,
)

URL = sys.argv[1]
TOKEN = sys.argv[2]
failures = 0


def check(name, ok, detail=""):
    global failures
    if not ok:
        failures += 1
    print(f"{'PASS' if ok else 'FAIL'} python-sdk-0.3 conformance {name}" + (f": {detail}" if detail and not ok else ""))


def message(message_id, task_id=None):
    return Message(
        message_id=message_id,
        role=Role.user,
        parts=[Part(root=TextPart(text="hello"))],
        task_id=task_id,
    )


async def last_task(client, msg, configuration=None):
    task = None
    async for event in client.send_message(msg, configuration=configuration):
        if isinstance(event, tuple):
            task = event[0]
    return task


async def main():
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:
        card = await A2ACardResolver(http, URL).get_agent_card()
        schemes = card.security_schemes or {}
        bearer = schemes.get("bearer")
        bearer = bearer.root if bearer is not None else None
        check(
            "the card's bearer scheme is an HTTP bearer scheme",
            isinstance(bearer, HTTPAuthSecurityScheme) and bearer.type == "http" and bearer.scheme.lower() == "bearer",
            repr(schemes),
        )
        api_key = schemes.get("apiKey")
        api_key = api_key.root if api_key is not None else None
        check(
            "the card's API key scheme is an apiKey scheme in a header",
            isinstance(api_key, APIKeySecurityScheme) and api_key.in_ == In.header and api_key.name.lower() == "x-api-key",
            repr(schemes),
        )
        check(
            "the card's security lists each scheme",
            card.security is not None and {name for requirement in card.security for name in requirement}
            == set(schemes),
            repr(card.security),
        )
        check("the card declares the extended card", card.supports_authenticated_extended_card is True)

        client = ClientFactory(
            ClientConfig(httpx_client=http, streaming=False, supported_transports=[TransportProtocol.jsonrpc])
        ).create(card)
        extended = await client.get_card()
        tck = next((skill for skill in extended.skills if skill.id == "tck"), None)
        check(
            "the authenticated extended card shows the full tck skill",
            tck is not None and "extended" in tck.tags,
            repr(extended.skills),
        )

        # Cancel a working task.
        working = await last_task(
            client,
            message(f"test-resubscribe-message-id-{uuid.uuid4()}"),
            MessageSendConfiguration(blocking=False),
        )
        ok = isinstance(working, Task) and working.status.state in (TaskState.submitted, TaskState.working)
        check("a working task", ok, repr(working))
        if ok:
            canceled = await client.cancel_task(TaskIdParams(id=working.id))
            check("tasks/cancel cancels the working task", canceled.status.state == TaskState.canceled, repr(canceled))

        # Continue an input-required one.
        waiting = await last_task(client, message(f"tck-input-required-{uuid.uuid4()}"))
        ok = isinstance(waiting, Task) and waiting.status.state == TaskState.input_required
        check("an input-required task", ok, repr(waiting))
        if ok:
            done = await last_task(client, message(f"tck-complete-task-{uuid.uuid4()}", waiting.id))
            check(
                "a follow-up completes the input-required task",
                isinstance(done, Task) and done.id == waiting.id and done.status.state == TaskState.completed,
                repr(done),
            )


asyncio.run(main())
print(f"python-sdk-0.3 conformance: {'ok' if failures == 0 else f'{failures} failed'}")
sys.exit(1 if failures else 0)
