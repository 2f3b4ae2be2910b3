"""A tiny MCP server for the registry tests: stdio by default, streamable HTTP with --port."""

from __future__ import annotations

import argparse
import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("registry-test", instructions="Registry test server: echo and slow tools.")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ValueError(reason)


@server.tool()
def crash() -> str:
    """Kill the server process at once."""
    os._exit(3)


@server.tool()
def nap(seconds: float) -> str:
    """Block for a while (a hanging call)."""
    time.sleep(seconds)
    return "awake"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    options = parser.parse_args()
    if options.port is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.port)
