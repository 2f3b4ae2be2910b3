"""Claude Code (``@anthropic-ai/claude-code``, ``claude -p``) through ``bot-toolsearch serve
--upstream-api messages`` (a subprocess, as a user runs it) against the strict scripted upstream,
with ``ENABLE_TOOL_SEARCH=true`` and an MCP server: its own ``ToolSearch`` answers with
``tool_reference`` blocks and sends the loaded MCP tool with ``defer_loading``, which a backend
without tool search refuses (the control test shows the strict upstream does); through the
proxy the run completes, and the upstream sees the MCP tool as an ordinary tool. A recording
relay between Claude Code and ``serve`` shows what Claude Code really sent.

Claude Code runs without a network here: no login (``ANTHROPIC_API_KEY``), its own config
folder, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` (without it, it looks up
``api.anthropic.com`` and asks the model for a session title besides the turn) and the
telemetry, error report and update variables it stands for, its connectivity probe
(``HEAD /``) to the proxy, and the proxy variables at a closed port for anything else. It is
not a Python package: ``tests/conformance/node/package.json`` pins it and `ensure` installs
it (``make node-clients`` does before the suite); the test runs the native binary of its
platform package (or ``BOT_TOOLSEARCH_CLAUDE_CODE``, a ``claude`` of the caller's)."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch.testing import (
    ModelRequest,
    ScriptedOpenAIServer,
    ScriptEntry,
    TextTurn,
    call,
    text,
)
from tests.conformance._node import ensure
from tests.conformance._relay import recording_relay
from tests.conformance._serve import Served, serving

CLAUDE_CODE = "@anthropic-ai/claude-code"
"""The npm package ``tests/conformance/node/package.json`` pins (its native binary is in a
platform package: without install scripts the wrapper package's ``claude`` is a stub)."""
TIME_SERVER = Path(sys.executable).with_name("mcp-server-time")
MCP_TOOL = "mcp__time__get_current_time"
MCP_CONNECT = 60.0
"""Seconds the scripted model keeps searching while the MCP server connects (Claude Code sends
the turn before; on an idle machine the first search finds it), one search a second."""
ANSWER = "It is noon in Oslo."
KEY = "sk-ant-test"
DEAD = "http://127.0.0.1:9"
"""Where any request of Claude Code's that is not to its base URL would go: nowhere."""
RUN = 120
"""Seconds a ``claude -p`` run may take (about 5 on an idle machine; `MCP_CONNECT` at most
waiting for the MCP server)."""

pytestmark = pytest.mark.skipif(
    not TIME_SERVER.exists(), reason="mcp-server-time (the dev extra) is not installed"
)


def _platform_packages() -> list[str]:
    """The platform packages that may hold this machine's ``claude`` (npm picks one by libc)."""
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine()
    )
    name = f"{CLAUDE_CODE}-{sys.platform}-{machine}"
    return [name, f"{name}-musl"]


@pytest.fixture
def claude() -> str:
    """The ``claude`` binary: ``BOT_TOOLSEARCH_CLAUDE_CODE`` if set, else the pinned one that
    `ensure` installs (the test skips, saying so, where Node is missing or npm has no build of
    Claude Code for this platform)."""
    given = os.environ.get("BOT_TOOLSEARCH_CLAUDE_CODE")
    if given:
        return given
    modules = ensure()
    for package in _platform_packages():
        found = modules / package / "claude"
        if found.is_file():
            return str(found)
    pytest.skip(
        f"npm installed no Claude Code binary for {sys.platform}/{platform.machine()} "
        f"(none of {', '.join(_platform_packages())} in {modules}); set "
        "BOT_TOOLSEARCH_CLAUDE_CODE to a `claude` binary to run this test"
    )


@pytest.fixture
def strict() -> Iterator[ScriptedOpenAIServer]:
    """The strict upstream with a model that searches until the MCP server is connected
    (Claude Code connects it in the background), calls its tool, then answers."""

    first_search: list[float] = []

    async def model(request: ModelRequest) -> ScriptEntry | TextTurn:
        outputs = [output for _, output in request.tool_outputs]
        if any("Europe/Oslo" in output for output in outputs):
            return text(ANSWER)
        if MCP_TOOL in request.tool_names:
            return call(MCP_TOOL, timezone="Europe/Oslo")
        first_search[:] = first_search or [time.monotonic()]
        if time.monotonic() - first_search[0] > MCP_CONNECT:
            return text("The time server never connected.")
        if outputs:
            await asyncio.sleep(1)  # give the MCP server time to connect
        return call("ToolSearch", query=f"select:{MCP_TOOL}", max_results=5)

    with ScriptedOpenAIServer(refuse_native=True, responder=model) as srv:
        yield srv


@pytest.fixture
def serve(strict: ScriptedOpenAIServer, tmp_path: Path) -> Iterator[Served]:
    """``bot-toolsearch serve --upstream-api messages`` in front of `strict`, its own search
    off (Claude Code searches its tools itself) and its access log in JSON."""
    folder = tmp_path / "serve"
    folder.mkdir()
    (folder / "config.toml").write_text("[skills]\ntool_search_enabled = false\n")
    options = ("--upstream-api=messages", "--config=config.toml", "--access-log=json")
    with serving(strict.base_url, folder, *options) as served:
        yield served


def run_claude(claude: str, base_url: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``claude -p`` with an MCP server, tool search on, at ``base_url``, in a ``home`` of its
    own; every request that is not to ``base_url`` off, and any it tried anyway sent to a
    closed port on 127.0.0.1 (the proxy variables)."""
    home.mkdir()
    mcp = {"mcpServers": {"time": {"command": str(TIME_SERVER), "args": []}}}
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": KEY,
        "ENABLE_TOOL_SEARCH": "true",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "HTTP_PROXY": DEAD,
        "HTTPS_PROXY": DEAD,
        "ALL_PROXY": DEAD,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    command = [claude, "-p", "What time is it in Oslo?", "--model", "claude-sonnet-4-5"]
    command += ["--mcp-config", json.dumps(mcp), "--allowedTools", MCP_TOOL]
    return subprocess.run(
        command, env=env, cwd=home, capture_output=True, text=True, timeout=RUN, check=False
    )


def access_log(served: Served) -> list[dict[str, Any]]:
    """The access log's lines of ``POST /v1/messages``."""
    lines = [json.loads(line) for line in served.log.read_text().splitlines() if line]
    return [line for line in lines if str(line.get("path")).startswith("/v1/messages")]


def test_claude_code_tool_search_over_a_backend_without_it(
    claude: str, strict: ScriptedOpenAIServer, serve: Served, tmp_path: Path
) -> None:
    with recording_relay(int(serve.root.rsplit(":", 1)[1])) as relay:
        done = run_claude(claude, relay.root, tmp_path / "home")
        assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        sent = [r for r in relay.requests() if r.method == "POST"]
    assert done.stdout.strip() == ANSWER

    # What Claude Code sent to serve: its own search tool, and once it searched, the loaded
    # MCP tool deferred and a tool_reference for it (what a backend without tool search refuses).
    assert sent
    assert {r.target for r in sent} == {"/v1/messages?beta=true"}
    assert all(r.headers["x-api-key"] == KEY for r in sent)
    assert all("advanced-tool-use-2025-11-20" in r.headers["anthropic-beta"] for r in sent)
    bodies = [r.json() for r in sent]
    assert all("ToolSearch" in tool_names(body) for body in bodies)
    assert not any(tool.get("type") for body in bodies for tool in body["tools"])
    assert MCP_TOOL not in tool_names(bodies[0])
    searched = [body for body in bodies if MCP_TOOL in tool_names(body)]
    assert searched
    assert all(tool(body, MCP_TOOL).get("defer_loading") is True for body in searched)
    assert all('"tool_reference"' in json.dumps(body["messages"]) for body in searched)

    # What reached the strict upstream: one request per request of Claude Code's, the MCP
    # tool an ordinary tool at the end of the list, no tool search of Anthropic's anywhere.
    requests = strict.requests
    assert len(requests) == len(sent)
    for request in requests:
        raw = json.dumps(request.body)
        for fragment in ('"defer_loading"', '"tool_reference"', "tool_search_tool_"):
            assert fragment not in raw
        assert "advanced-tool-use" not in request.headers.get("anthropic-beta", "")
        assert request.headers["x-api-key"] == KEY
    loaded = [r for r in requests if MCP_TOOL in r.tool_names]
    assert loaded
    assert all(r.tool_names[-1] == MCP_TOOL for r in loaded)
    assert any(MCP_TOOL in output for _, output in loaded[0].tool_outputs)
    assert "Europe/Oslo" in requests[-1].tool_outputs[-1][1]  # the MCP server really ran

    logged = access_log(serve)
    assert [(line["route"], line["status"]) for line in logged] == [("messages", 200)] * len(sent)


def test_claude_code_on_the_strict_backend_alone_is_refused(
    claude: str, strict: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """The control: without the proxy the strict backend refuses Claude Code's search (as a
    backend without tool search does), so the run above passes through serve or not at all."""
    done = run_claude(claude, strict.base_url.removesuffix("/v1"), tmp_path / "home")
    assert done.returncode != 0
    assert "Deferred custom tools are only supported on Anthropic models" in done.stdout


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in body["tools"]]


def tool(body: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = (tool for tool in body["tools"] if tool["name"] == name)
    return found
