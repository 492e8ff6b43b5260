"""An MCP server written with the official Python MCP SDK (`mcp`, FastMCP), on stdio: its
tools become the skills of an A2A agent through `accord serve --config agent.toml`."""
import asyncio

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

server = FastMCP("workshop")


class Conversion(BaseModel):
    celsius: float
    fahrenheit: float


@server.tool()
def convert(celsius: float) -> Conversion:
    """Converts a temperature from Celsius to Fahrenheit."""
    # A typed result is the tool's structured content (and its outputSchema): the task's artifact.
    return Conversion(celsius=celsius, fahrenheit=celsius * 9 / 5 + 32)


@server.tool()
async def bake(minutes: int, ctx: Context) -> str:
    """Bakes for the given minutes (each a tenth of a second here), reporting progress."""
    for minute in range(minutes):
        await ctx.report_progress(minute + 1, minutes, f"minute {minute + 1} of {minutes}")
        await asyncio.sleep(0.1)
    return f"baked for {minutes} minutes"


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        # Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio.
        server.settings.host = "127.0.0.1"
        server.settings.port = int(sys.argv[2])
        server.run("streamable-http")
    else:
        server.run()
