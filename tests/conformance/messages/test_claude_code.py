"""Claude Code (``@anthropic-ai/claude-code``, ``claude -p``) through ``serve``'s Messages door
against the strict scripted upstream, with ``ENABLE_TOOL_SEARCH=true`` and an MCP server: its
own ``ToolSearch`` answers with ``tool_reference`` blocks and sends the loaded MCP tool with
``defer_loading``, which a backend without tool search refuses; through the proxy the run
completes, and the upstream sees the MCP tool as an ordinary tool.

Claude Code runs without a network here (no login: ``ANTHROPIC_API_KEY``; telemetry, error
reports and updates off by its own variables; its connectivity probe goes to the proxy). It
is not a Python package: ``tests/conformance/node/package.json`` pins it and `ensure` installs
it (``make node-clients`` does before the suite), and the test runs the native binary of its
platform package (or ``BOT_TOOLSEARCH_CLAUDE_CODE``, a ``claude`` of the caller's).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._config.settings import SkillsSettings
from bot_toolsearch.testing import (
    ModelRequest,
    ScriptedOpenAIServer,
    ScriptEntry,
    TextTurn,
    call,
    text,
)
from tests.conformance._node import ensure

CLAUDE_CODE = "@anthropic-ai/claude-code"
"""The npm package ``tests/conformance/node/package.json`` pins (its native binary is in a
platform package: without install scripts the wrapper package's ``claude`` is a stub)."""
TIME_SERVER = Path(sys.executable).with_name("mcp-server-time")
MCP_TOOL = "mcp__time__get_current_time"
_SEARCHES = 20
"""Most ``ToolSearch`` calls the scripted model makes while the MCP server connects."""

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
def settings() -> BotSettings:
    """Claude Code searches its own tools: the proxy makes its search work upstream."""
    return BotSettings(skills=SkillsSettings(tool_search_enabled=False))


@pytest.fixture
def strict() -> Iterator[ScriptedOpenAIServer]:
    """The strict upstream with a model that searches until the MCP server is connected
    (Claude Code connects it in the background), calls its tool, then answers."""

    async def model(request: ModelRequest) -> ScriptEntry | TextTurn:
        outputs = [output for _, output in request.tool_outputs]
        if any("Europe/Oslo" in output for output in outputs):
            return text("It is noon in Oslo.")
        if MCP_TOOL in request.tool_names:
            return call(MCP_TOOL, timezone="Europe/Oslo")
        if len(outputs) >= _SEARCHES:
            return text("The time server never connected.")
        if outputs:
            await asyncio.sleep(0.5)  # give the MCP server time to connect
        return call("ToolSearch", query=f"select:{MCP_TOOL}", max_results=5)

    with ScriptedOpenAIServer(refuse_native=True, responder=model) as srv:
        yield srv


def test_claude_code_tool_search_over_a_backend_without_it(
    claude: str, strict: ScriptedOpenAIServer, proxy_root: str, tmp_path: Path
) -> None:
    home = tmp_path
    mcp = {"mcpServers": {"time": {"command": str(TIME_SERVER), "args": []}}}
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": proxy_root,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ENABLE_TOOL_SEARCH": "true",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    done = subprocess.run(
        [
            claude,
            "-p",
            "What time is it in Oslo?",
            "--model",
            "claude-sonnet-4-5",
            "--mcp-config",
            json.dumps(mcp),
            "--allowedTools",
            MCP_TOOL,
        ],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "It is noon in Oslo." in done.stdout
    requests = strict.requests
    for request in requests:
        raw = json.dumps(request.body)
        assert "defer_loading" not in raw
        assert '"tool_reference"' not in raw
    assert MCP_TOOL not in requests[0].tool_names
    loaded = [r for r in requests if MCP_TOOL in r.tool_names]
    assert loaded  # loaded by the client's own search, as an ordinary tool
    assert any(MCP_TOOL in output for _, output in loaded[0].tool_outputs)
    assert "Europe/Oslo" in requests[-1].tool_outputs[-1][1]  # the MCP server really ran
