"""The TypeScript MCP SDK (``@modelcontextprotocol/sdk``, pinned in ``node/package.json``)
against the MCP door, ``bot-toolsearch mcp`` over stdio (the SDK launches it), with three
code tools (``--tools``; ``node/mcp.mjs``): the directory in ``tool_search``'s description, a
load, ``tools/list_changed``, the loaded tool listed under its wire name and run. The same SDK
over streamable HTTP, and the Inspector CLI: `tests/conformance/test_node_mcp.py`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conformance._node import ensure, node_env, run_node

DOOR = [sys.executable, "-m", "bot_toolsearch", "mcp"]
CODE_TOOLS = """
from bot_toolsearch import Tool

def _schema(name):
    return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}

TOOLS = [
    Tool("text.reverse", "Reverse a text.", _schema("text"), lambda text: text[::-1]),
    Tool("weather.forecast", "Forecast for a city.", _schema("city"), lambda city: "sunny"),
    Tool("music.play", "Play a song.", _schema("song"), lambda song: "playing"),
]
"""


@pytest.fixture(autouse=True)
def _node_clients() -> None:
    """Installed before any other fixture (a skip without Node leaves no script unused)."""
    ensure()


def _tools(folder: Path) -> list[str]:
    """``--tools`` naming three code tools written into ``folder``."""
    path = folder / "code_tools.py"
    path.write_text(CODE_TOOLS)
    return ["--tools", f"{path}:TOOLS"]


def _env() -> dict[str, str]:
    """The door's environment: this checkout's package first, as the tests run it."""
    return node_env(PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


def _check(stdout: str) -> None:
    seen: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    assert seen["server"]["name"] == "bot-toolsearch"
    assert seen["first"] == ["tool_search"]
    assert "<available_deferred_tools>" in seen["directory"]
    assert "text-_-reverse" in seen["directory"]
    assert seen["found"]["loaded"] == ["text-_-reverse"]
    assert seen["second"] == ["tool_search", "text-_-reverse"]
    assert seen["reversed"] == "cba"
    assert seen["isError"] is False


def test_over_stdio(tmp_path: Path) -> None:
    done = run_node("mcp.mjs", "stdio", *DOOR, *_tools(tmp_path), env=_env())
    _check(done.stdout)
