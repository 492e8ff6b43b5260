"""An official a2a-sdk (Python) echo agent on loopback, as a peer for Accord's A2A client.

Usage: a2a_python_server.py [PORT]   (or PORT in the environment; 0 or nothing = a free port)

Serves the card at /.well-known/agent-card.json, JSON-RPC at / and HTTP+JSON at /rest, and, with
A2A_PEER_GRPC=1 in the environment (needs the `grpc` extra), gRPC on a second free port, listed on
the card as a GRPC interface (host:port). Each
message becomes a task: submitted, working, an artifact "echo: <text>", completed, with a short
pause before each step so that a subscription or a cancellation right after a returnImmediately
send finds the task running (A2A_PEER_PAUSE_MS in the environment sets it; the load harness sets
0). Prints
"a2a-python-peer listening on http://127.0.0.1:<port>" once it accepts connections.

A few messages choose another behaviour by their text (scripts/interop-a2a-front uses them):
- "chunks N": N artifact chunks of one artifact (id "chunks"; append from the second on,
  lastChunk on the last), each after A2A_PEER_CHUNK_MS (default 300) ms, then completed;
- "ask ...": working, then input-required with the question "What should I echo? (<text>)"; the
  follow-up message to that task completes it with an artifact "echo: <follow-up text>";
- "slow ...": working, then 30 s (a task to cancel), then the echo.
What reached which task is read back with ListTasks (the tasks' histories).
"""

import asyncio
import os
import socket
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import new_task, new_text_part
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState


PAUSE = float(os.environ.get("A2A_PEER_PAUSE_MS", "100")) / 1000  # seconds before each step of a task
CHUNK_PAUSE = float(os.environ.get("A2A_PEER_CHUNK_MS", "300")) / 1000  # seconds before each chunk of "chunks N"


class EchoExecutor(AgentExecutor):
    """Creates the task first (the SDK requires a Task before any status update), then echoes."""

    async def execute(self, context, queue):
        text = context.get_user_input()
        current = context.current_task
        if current is None:
            await queue.enqueue_event(
                new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, history=[context.message])
            )
        updater = TaskUpdater(queue, context.task_id, context.context_id)
        words = text.split()
        if current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # The answer to "ask": the same task completes with it.
            await updater.start_work()
            await updater.add_artifact(parts=[new_text_part("echo: " + text)], name="answer")
            await updater.complete()
        elif len(words) == 2 and words[0] == "chunks" and words[1].isdigit():
            count = int(words[1])
            await updater.start_work()
            for i in range(count):
                await asyncio.sleep(CHUNK_PAUSE)
                await updater.add_artifact(
                    parts=[new_text_part(f"chunk {i + 1};")],
                    artifact_id="chunks",
                    name="chunks",
                    append=i > 0,
                    last_chunk=i == count - 1,
                )
            await updater.complete()
        elif words[:1] == ["ask"]:
            await updater.start_work()
            question = updater.new_agent_message(parts=[new_text_part(f"What should I echo? ({text})")])
            await updater.requires_input(question)
        else:
            await asyncio.sleep(PAUSE)
            await updater.start_work()
            await asyncio.sleep(30 if words[:1] == ["slow"] else PAUSE)
            await updater.add_artifact(parts=[new_text_part("echo: " + text)])
            await asyncio.sleep(PAUSE)
            await updater.complete()

    async def cancel(self, context, queue):
        await TaskUpdater(queue, context.task_id, context.context_id).cancel()


def main():
    arg = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PORT", "0")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(arg)))
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    interfaces = [
        AgentInterface(url=base + "/", protocol_binding="JSONRPC", protocol_version="1.0"),
        AgentInterface(url=base + "/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
    ]
    grpc_port = None
    if os.environ.get("A2A_PEER_GRPC") == "1":
        # A free port, picked now for the card; the gRPC server (which must be made inside the
        # event loop) binds it when it starts.
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.bind(("127.0.0.1", 0))
        grpc_port = probe.getsockname()[1]
        probe.close()
        interfaces.append(AgentInterface(url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"))
    card = AgentCard(
        name="a2a-python-peer",
        description="Echo agent on the official a2a-sdk",
        version="1.0.0",
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True),
        skills=[AgentSkill(id="echo", name="echo", description="Echoes the message", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(
        routes=create_agent_card_routes(card)
        + create_rest_routes(handler, path_prefix="/rest")
        + create_jsonrpc_routes(handler, rpc_url="/")
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))

    async def serve():
        if grpc_port is not None:
            import grpc
            from a2a.server.request_handlers.grpc_handler import GrpcHandler
            from a2a.types import a2a_pb2_grpc

            grpc_server = grpc.aio.server()
            grpc_server.add_insecure_port(f"127.0.0.1:{grpc_port}")
            a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
            await grpc_server.start()
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            print(f"a2a-python-peer listening on {base}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
