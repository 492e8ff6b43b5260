"""An MCP server written with the official Python MCP SDK (FastMCP), for the tests of the MCP
backend that need a real SDK: on stdio, or on streamable HTTP with `--http PORT`.

Tools: `add` (structured content), `whoami` (the clientInfo the client gave in `initialize`),
`picture` (a PNG image beside a text), `nap` (sleeps `seconds`), `pid` (the server's process id).
"""
import asyncio
import base64
import os
import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ImageContent, TextContent
from pydantic import BaseModel

server = FastMCP("fastmcp-tools", log_level="WARNING")

# The 8-byte PNG signature and an IHDR start: a few bytes of PNG.
PNG = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])


class Sum(BaseModel):
    sum: int


@server.tool()
def add(a: int, b: int) -> Sum:
    """Adds two numbers."""
    return Sum(sum=a + b)


@server.tool()
def whoami(ctx: Context) -> dict:
    """The client's name and version, as it introduced itself."""
    info = ctx.session.client_params.clientInfo
    return {"name": info.name, "version": info.version}


@server.tool()
def picture() -> list:
    """A tiny PNG, with a caption."""
    return [TextContent(type="text", text="a picture"),
            ImageContent(type="image", data=base64.b64encode(PNG).decode(), mimeType="image/png")]


@server.tool()
async def nap(seconds: float) -> str:
    """Sleeps, then says so."""
    await asyncio.sleep(seconds)
    return "rested"


@server.tool()
def pid() -> dict:
    """The server's process id."""
    return {"pid": os.getpid()}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.settings.host = "127.0.0.1"
        server.settings.port = int(sys.argv[2])
        server.run("streamable-http")
    else:
        server.run()
