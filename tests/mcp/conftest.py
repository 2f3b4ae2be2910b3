"""Fixtures of the MCP door's tests: a config with folder tools and real upstream servers."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch._config.file import load_settings
from bot_toolsearch._mcp.door import McpDoor

PYTHON = sys.executable
CHANGING = Path(__file__).parent / "data" / "changing_server.py"


def write_folder_tool(root: Path, namespace: str, name: str, description: str, body: str) -> None:
    """A tool folder ``root/namespace/name`` taking one string ``text``."""
    folder = root / namespace / name
    folder.mkdir(parents=True)
    function = {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text."}},
            "required": ["text"],
        },
    }
    (folder / "config.json").write_text(json.dumps({"type": "function", "function": function}))
    (folder / "handler.py").write_text(f"def execute(text):\n    return {body}\n")


def write_config(
    tmp_path: Path, loading: str = "append", *, upstream: bool = True, **extra: str
) -> Path:
    """A config: notes.* folder tools (notes.secret denied), and with ``upstream`` the
    third-party mcp-server-time and the changing upstream server; tool search on with
    ``loading``."""
    tools = tmp_path / "tools"
    write_folder_tool(tools, "notes", "shout", "Shout a note in capitals.", "text.upper()")
    write_folder_tool(tools, "notes", "secret", "Reveal the secret note.", "'the secret'")
    write_folder_tool(tools, "notes", "boom", "A note that explodes.", "1 / 0")
    lines = [
        "[bot]",
        f"hot_reload = {extra.pop('hot_reload', 'false')}",
        "[skills]",
        "tool_search_enabled = true",
        f'tool_search_loading = "{loading}"',
        *(f"{k} = {v}" for k, v in extra.items()),
        "[tools]",
        'dirs = ["tools"]',
        'deny = ["notes.secret"]',
    ]
    servers = [
        "[[tools.mcp_servers]]",
        'name = "time"',
        f"command = {json.dumps(PYTHON)}",
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]',
        "timeout = 30.0",
        "[[tools.mcp_servers]]",
        'name = "up"',
        f"command = {json.dumps(PYTHON)}",
        f"args = [{json.dumps(str(CHANGING))}]",
        "timeout = 30.0",
    ]
    if upstream:
        lines += servers
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
async def door_factory() -> AsyncIterator[Callable[..., Any]]:
    """Doors over a written config, closed after the test."""
    made: list[McpDoor] = []

    async def make(config: Path) -> McpDoor:
        door = McpDoor(load_settings(config), base_dir=config.parent)
        made.append(door)
        await door.start()
        return door

    yield make
    for door in made:
        await door.aclose()
