"""A small MCP server on stdio (newline-delimited JSON-RPC), written against the protocol
directly, for the tests of the MCP backend.

Tools: `add` (structured content), `echo` (text), `slow` (progress notifications every 0.1 s for
`seconds`; honours notifications/cancelled), `fail` (isError). With MCP_BAD_TOOL set, a tool
whose name is not a valid skill key is listed too; with MCP_TASK_TOOL, a tool that requires MCP
tasks (`execution.taskSupport: "required"`). A cancellation received is appended to the
file MCP_CANCELLED_FILE (when set) as one JSON line. With MCP_EXIT_AFTER (seconds), the server
exits that long after each `initialize`. With MCP_HINT_TOOLS, `peek` (read-only) and `charge`
(destructive, not idempotent) are listed too: each notes its call in MCP_CALLS_FILE, then sleeps
`seconds`.
"""
import json
import os
import sys
import threading
import time

lock = threading.Lock()
cancelled = set()


def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def number(description):
    return {"type": "number", "description": description}


TOOLS = [
    {"name": "add", "description": "Adds two numbers",
     "inputSchema": {"type": "object", "properties": {"a": number("a"), "b": number("b")}, "required": ["a", "b"]},
     "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}},
    {"name": "echo", "description": "Says the text back",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "slow", "description": "Takes its time, reporting progress",
     "inputSchema": {"type": "object", "properties": {"seconds": number("how long")}, "required": ["seconds"]}},
    {"name": "fail", "description": "Always fails", "inputSchema": {"type": "object"}},
]
if os.environ.get("MCP_TASK_TOOL"):
    TOOLS.append({"name": "render", "description": "Needs MCP tasks", "inputSchema": {"type": "object"},
                  "execution": {"taskSupport": "required"}})
if os.environ.get("MCP_HINT_TOOLS"):
    # Two tools that take `seconds` and note each call in MCP_CALLS_FILE: one that only reads, one
    # with side effects that must not happen twice.
    timed = {"type": "object", "properties": {"seconds": number("how long")}, "required": ["seconds"]}
    TOOLS.append({"name": "peek", "description": "Reads, slowly", "inputSchema": timed,
                  "annotations": {"readOnlyHint": True}})
    TOOLS.append({"name": "charge", "description": "Charges, slowly", "inputSchema": timed,
                  "annotations": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False}})
if os.environ.get("MCP_BAD_TOOL"):
    TOOLS.append({"name": "bad name!", "description": "Not a skill key", "inputSchema": {"type": "object"}})


def call(request_id, params):
    name, arguments = params["name"], params.get("arguments") or {}
    token = (params.get("_meta") or {}).get("progressToken")
    if name == "add":
        total = arguments["a"] + arguments["b"]
        result = {"content": [{"type": "text", "text": str(total)}], "structuredContent": {"sum": total}}
    elif name == "echo":
        result = {"content": [{"type": "text", "text": arguments["text"]}]}
    elif name in ("peek", "charge"):
        with open(os.environ["MCP_CALLS_FILE"], "a") as calls:
            calls.write(name + "\n")
        time.sleep(arguments["seconds"])
        result = {"content": [{"type": "text", "text": f"{name} done"}]}
    elif name == "fail":
        result = {"content": [{"type": "text", "text": "the tool failed on purpose"}], "isError": True}
    elif name == "slow":
        steps = int(arguments["seconds"] * 10)
        for step in range(steps):
            if request_id in cancelled:
                return  # a cancelled request gets no answer
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": step + 1, "total": steps,
                                 "message": f"step {step + 1} of {steps}"}})
            time.sleep(0.1)
        result = {"content": [{"type": "text", "text": "done"}]}
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"no tool {name}"}})
        return
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


for line in sys.stdin:
    if not line.strip():
        continue
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize" and os.environ.get("MCP_EXIT_AFTER"):
        # A crash loop: the server dies this long after each start.
        threading.Timer(float(os.environ["MCP_EXIT_AFTER"]), lambda: os._exit(1)).start()
    if method == "initialize":
        version = message["params"].get("protocolVersion", "2025-06-18")
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": version, "capabilities": {"tools": {}},
            "serverInfo": {"name": "test-tools", "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        threading.Thread(target=call, args=(request_id, message["params"]), daemon=True).start()
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    elif method == "notifications/cancelled":
        cancelled.add(message["params"].get("requestId"))
        marker = os.environ.get("MCP_CANCELLED_FILE")
        if marker:
            with open(marker, "a") as out:
                out.write(json.dumps(message["params"]) + "\n")
    elif request_id is not None:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})
