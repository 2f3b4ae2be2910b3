"""The MCP door (``bot-toolsearch mcp --http``) driven by the real Node MCP clients pinned in
``node/package.json``: the official TypeScript SDK (``@modelcontextprotocol/sdk``, handshake
era, ``node/mcp_client.mjs``) and the MCP Inspector's CLI (``@modelcontextprotocol/inspector-cli``),
which opens a new session for every command."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance._node import RUN_TIMEOUT, ensure, node_env, run_node
from tests.mcp.conftest import write_config
from tests.mcp.test_server import _start_door

INSPECTOR = Path("@modelcontextprotocol") / "inspector-cli" / "build" / "cli.js"


def _door(tmp_path: Path, loading: str, *extra: str) -> Iterator[str]:
    config = write_config(tmp_path, loading, upstream=False)
    if extra:
        config.write_text(config.read_text() + "\n".join(extra) + "\n")
    for _ in range(3):
        started = _start_door(config, tmp_path)
        if started is not None:
            break
    else:
        raise AssertionError("bot-toolsearch mcp --http did not start")
    process, url = started
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def append_door(tmp_path: Path) -> Iterator[str]:
    """The door over the tests' tool folders (``notes.secret`` denied), ``append`` loading."""
    ensure()
    yield from _door(tmp_path, "append")


@pytest.fixture
def bridge_door(tmp_path: Path) -> Iterator[str]:
    """The same door under ``bridge`` loading."""
    ensure()
    yield from _door(tmp_path, "bridge")


def test_the_typescript_sdk_loads_through_list_changed(append_door: str) -> None:
    done = run_node("mcp_client.mjs", append_door)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["first"] == ["tool_search"]
    assert result["loaded"] == ["notes-_-shout"]
    assert result["changed"] >= 1  # before the search's result, on its own stream
    assert result["after"] == ["tool_search", "notes-_-shout"]
    assert result["ran"] == ["HI", False]
    text, is_error = result["hidden"]
    assert is_error
    assert "no tool named notes.secret" in text


def _inspector(url: str, *args: str) -> Any:
    """One Inspector CLI command (``mcp-inspector-cli --cli URL ...``: its own session): its
    printed JSON result."""
    cli = ensure() / INSPECTOR
    done = subprocess.run(
        ["node", str(cli), "--cli", url, "--transport", "http", *args],
        # It finds its own package.json by a path relative to the working directory.
        cwd=cli.parent,
        env=node_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"inspector exited {done.returncode}:\n{done.stderr}"
    return json.loads(done.stdout)


def test_the_inspector_cli_searches_in_one_command_and_calls_in_the_next(
    bridge_door: str,
) -> None:
    listed = _inspector(bridge_door, "--method", "tools/list")
    assert [t["name"] for t in listed["tools"]] == ["tool_search", "call_tool"]
    found = _inspector(
        bridge_door,
        *("--method", "tools/call", "--tool-name", "tool_search"),
        *("--tool-arg", "query=select:notes.shout"),
    )
    schema = json.loads(found["content"][0]["text"])["tools"][0]
    assert schema["name"] == "notes-_-shout"
    called = _inspector(
        bridge_door,
        *("--method", "tools/call", "--tool-name", "call_tool"),
        *("--tool-arg", "name=notes.shout", 'arguments={"text": "hi"}'),
    )
    assert called["content"][0]["text"] == "HI"
    assert not called.get("isError")
    wrong = _inspector(
        bridge_door,
        *("--method", "tools/call", "--tool-name", "call_tool"),
        *("--tool-arg", "name=notes.shout", 'arguments={"text": 5}'),
    )
    assert wrong["isError"]
    assert "The schema of notes-_-shout" in wrong["content"][0]["text"]
