"""An official a2a-sdk 0.3 (Python) echo agent on loopback: a 0.3-only peer for Accord's client.

Usage: a2a03_python_server.py [PORT]   (0 or nothing = a free port)

Serves a 0.3 card (`url`, `preferredTransport: JSONRPC`, `additionalInterfaces` with the REST
interface; no `supportedInterfaces`) at /.well-known/agent-card.json, 0.3 JSON-RPC at / and 0.3
HTTP+JSON under /rest (/rest/v1/message:send, …). Each message becomes a task: submitted,
working, an artifact "echo: <text>", completed, with a short pause before each step so that a
cancellation or subscription right after a non-blocking send finds the task running. Prints
"a2a03-python-peer listening on http://127.0.0.1:<port>" once it accepts connections.
"""

import asyncio
import socket
import sys

import uvicorn

from a2a.server.agent_execution import AgentExecutor
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TextPart
from a2a.utils import new_task

PAUSE = 0.1  # seconds before each step of a task


class EchoExecutor(AgentExecutor):
    """Creates the task first, then echoes the message's text as an artifact."""

    async def execute(self, context, queue):
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await queue.enqueue_event(task)
        updater = TaskUpdater(queue, task.id, task.context_id)
        await asyncio.sleep(PAUSE)
        await updater.start_work()
        await asyncio.sleep(PAUSE)
        await updater.add_artifact([Part(root=TextPart(text="echo: " + context.get_user_input()))])
        await asyncio.sleep(PAUSE)
        await updater.complete()

    async def cancel(self, context, queue):
        task = context.current_task
        await TaskUpdater(queue, task.id, task.context_id).cancel()


def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="a2a03-python-peer",
        description="Echo agent on the official a2a-sdk 0.3",
        version="1.0.0",
        url=base + "/",
        preferred_transport="JSONRPC",
        additional_interfaces=[
            AgentInterface(url=base + "/", transport="JSONRPC"),
            AgentInterface(url=base + "/rest", transport="HTTP+JSON"),
        ],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        capabilities=AgentCapabilities(streaming=True),
        skills=[AgentSkill(id="echo", name="echo", description="Echoes the message", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore())
    app = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build(rpc_url="/rest")
    A2AStarletteApplication(agent_card=card, http_handler=handler).add_routes_to_app(app, rpc_url="/")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))

    async def serve():
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            print(f"a2a03-python-peer listening on {base}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
