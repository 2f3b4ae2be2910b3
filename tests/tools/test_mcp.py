"""MCP servers as tool sources: real third-party stdio server, streamable HTTP, failures."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from bot_toolsearch import ConfigError
from bot_toolsearch._config.settings import McpServerSettings
from bot_toolsearch._tools.mcp import MCPToolError
from bot_toolsearch.tools import MCPServerConfig, ToolRegistry

TEST_SERVER = Path(__file__).parent / "data" / "registry" / "mcp_test_server.py"
PYTHON = sys.executable


def time_server(name: str = "time") -> dict[str, Any]:
    """The third-party ``mcp-server-time`` from the package registry, over stdio."""
    return {
        "name": name,
        "command": PYTHON,
        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        "timeout": 30.0,
    }


def local_server(name: str = "local", **extra: Any) -> dict[str, Any]:
    return {"name": name, "command": PYTHON, "args": [str(TEST_SERVER)], "timeout": 30.0, **extra}


@pytest.fixture
def http_url() -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1 (a socket bound before it starts)."""
    spec = importlib.util.spec_from_file_location("_mcp_http_test_server", TEST_SERVER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        module.server.streamable_http_app(), log_level="warning", ws="none", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.fixture
async def registry_factory() -> AsyncIterator[Any]:
    made: list[ToolRegistry] = []

    async def make(*servers: dict[str, Any], **kwargs: Any) -> ToolRegistry:
        kwargs.setdefault("mcp_backoff", (0.05, 0.2))
        registry = ToolRegistry(mcp_servers=servers, **kwargs)
        made.append(registry)
        await registry.start()
        return registry

    yield make
    for registry in made:
        await registry.aclose()


# --- configuration ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        pytest.param({"name": "x"}, "tools.mcp_servers[x]", id="no-transport"),
        pytest.param(
            {"name": "x", "command": "a", "url": "http://h"},
            "tools.mcp_servers[x]",
            id="both-transports",
        ),
        pytest.param({"name": "a.b", "command": "a"}, "tools.mcp_servers.name", id="dotted-name"),
        pytest.param({"name": "x", "url": "ftp://h"}, "tools.mcp_servers[x].url", id="bad-url"),
        pytest.param(
            {"name": "x", "command": "a", "timeout": 0},
            "tools.mcp_servers[x].timeout",
            id="zero-timeout",
        ),
        pytest.param(
            {"name": "x", "command": "a", "colour": 1}, "tools.mcp_servers", id="unknown-key"
        ),
    ],
)
def test_invalid_server_entries_raise_config_error(entry: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        MCPServerConfig.coerce(entry)
    assert info.value.key == key


def test_duplicate_server_names_raise() -> None:
    with pytest.raises(ConfigError, match="more than once"):
        ToolRegistry(mcp_servers=[{"name": "a", "command": "x"}, {"name": "a", "url": "http://h"}])


def test_settings_entries_are_accepted() -> None:
    settings = McpServerSettings(name="t", command="srv", args=("-v",), env={"K": "V"})
    config = MCPServerConfig.coerce(settings)
    assert (config.name, config.command, config.args, dict(config.env)) == (
        "t",
        "srv",
        ("-v",),
        {"K": "V"},
    )
    assert config.transport == "stdio"
    assert MCPServerConfig.coerce({"name": "h", "url": "http://127.0.0.1:1/mcp"}).transport == (
        "streamable-http"
    )


# --- a real third-party server ----------------------------------------------------------


async def test_mcp_server_time_tools_join_and_calls_are_forwarded(registry_factory: Any) -> None:
    registry = await registry_factory(time_server())
    snap = registry.snapshot()
    assert {"time.get_current_time", "time.convert_time"} <= set(snap.tools)
    assert snap.sources["time.get_current_time"] == "mcp:time"
    assert "time.get_current_time" in snap.catalog
    tool = snap.tools["time.get_current_time"]
    assert "timezone" in tool.parameters["properties"]

    result = json.loads(await tool.invoke({"timezone": "UTC"}))
    assert result["timezone"] == "UTC"

    with pytest.raises(MCPToolError, match=r"reported an error.*Invalid timezone"):
        await tool.invoke({"timezone": "Nowhere/Nothing"})


async def test_streamable_http_server(registry_factory: Any, http_url: str) -> None:
    registry = await registry_factory({"name": "web", "url": http_url, "timeout": 30.0})
    snap = registry.snapshot()
    assert {"web.echo", "web.fail", "web.crash", "web.nap"} <= set(snap.tools)
    assert snap.sources["web.echo"] == "mcp:web"
    assert await snap.tools["web.echo"].invoke({"text": "hi"}) == "echo: hi"
    with pytest.raises(MCPToolError, match=r"web\.fail reported an error"):
        await snap.tools["web.fail"].invoke({"reason": "boom"})


# --- failures cost only the failing server's tools --------------------------------------


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        pytest.param({"command": "/nonexistent/mcp-server"}, "No such file", id="missing-command"),
        pytest.param({"command": PYTHON, "args": ["-c", "pass"]}, "closed", id="exits-at-once"),
        pytest.param(
            {"command": PYTHON, "args": ["-c", "import time; time.sleep(120)"], "timeout": 0.5},
            "no answer within 0.5 s",
            id="hangs",
        ),
    ],
)
async def test_a_failing_server_costs_only_its_own_tools(
    registry_factory: Any, entry: dict[str, Any], error: str
) -> None:
    # A long back-off keeps the first failure in place, so its reason is always checked.
    registry = await registry_factory(
        {"name": "bad", **entry}, time_server(), mcp_backoff=(60.0, 60.0)
    )
    snap = registry.snapshot()
    assert not any(name.startswith("bad.") for name in snap.tools)
    assert "time.get_current_time" in snap.tools
    state, reason = registry.mcp_status["bad"]
    assert state == "failed"
    assert reason is not None
    assert error in reason
    assert registry.mcp_status["time"][0] == "ready"


async def test_a_dying_server_drops_out_and_is_restarted(registry_factory: Any) -> None:
    registry = await registry_factory(local_server())
    first = registry.snapshot()
    assert "local.echo" in first.tools
    swaps: list[frozenset[str]] = []
    registry.subscribe(lambda snap: swaps.append(frozenset(snap.tools)))
    with pytest.raises(MCPToolError, match="unavailable"):
        await first.tools["local.crash"].invoke({})

    # Every swap is recorded, so the drop is seen even when the restart follows at once.
    dropped = await registry.wait_for_generation(first.generation + 1, timeout=30)
    back = dropped
    if "local.echo" not in dropped.tools:
        back = await registry.wait_for_generation(dropped.generation + 1, timeout=30)
    assert "local.echo" in back.tools
    assert "local.echo" not in swaps[0]
    # The old snapshot's tool talks to the live connection, so it works again too.
    assert await first.tools["local.echo"].invoke({"text": "again"}) == "echo: again"


async def test_a_hanging_call_times_out(registry_factory: Any) -> None:
    registry = await registry_factory(local_server(call_timeout=0.3))
    tools = registry.snapshot().tools
    with pytest.raises(MCPToolError, match=r"timed out after 0\.3 s"):
        await tools["local.nap"].invoke({"seconds": 20})


async def test_removed_server_fails_clearly_for_a_running_ask(registry_factory: Any) -> None:
    registry = await registry_factory(local_server())
    old = registry.snapshot()
    snap = await registry.reconfigure(mcp_servers=[time_server()])
    assert not any(name.startswith("local.") for name in snap.tools)
    assert "time.convert_time" in snap.tools
    assert snap.generation > old.generation
    with pytest.raises(MCPToolError, match=r"unavailable .*removed"):
        await old.tools["local.echo"].invoke({"text": "x"})


async def test_reconfigure_keeps_unchanged_sessions(registry_factory: Any) -> None:
    registry = await registry_factory(local_server())
    before = registry.snapshot()
    after = await registry.reconfigure(mcp_servers=[local_server()])
    assert after is before  # same entry, same session: nothing observable changed
    assert registry.mcp_status["local"][0] == "ready"


async def test_mcp_and_folder_tools_merge_code_first(registry_factory: Any, tmp_path: Path) -> None:
    folder = tmp_path / "local" / "echo"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"description": "a folder tool"}))
    (folder / "handler.py").write_text("def execute(**kw):\n    return 'folder'\n")
    registry = await registry_factory(local_server(), dirs=[tmp_path])
    snap = registry.snapshot()
    # The folder tool local.echo came first; the MCP tool of the same name is skipped.
    assert snap.sources["local.echo"].startswith("folder:")
    assert snap.sources["local.fail"] == "mcp:local"


async def test_a_server_that_failed_to_start_joins_once_a_retry_succeeds(
    registry_factory: Any, tmp_path: Path
) -> None:
    script = tmp_path / "late_server.py"  # missing at first: the process exits at once
    registry = await registry_factory(
        {"name": "late", "command": PYTHON, "args": [str(script)], "timeout": 30.0}
    )
    first = registry.snapshot()
    assert not any(name.startswith("late.") for name in first.tools)
    assert registry.mcp_status["late"][0] in {"failed", "connecting"}

    script.write_text(TEST_SERVER.read_text(encoding="utf-8"), encoding="utf-8")
    snap = await registry.wait_for_generation(first.generation + 1, timeout=60)
    assert "late.echo" in snap.tools
    assert registry.mcp_status["late"][0] == "ready"
    assert await snap.tools["late.echo"].invoke({"text": "up"}) == "echo: up"


async def test_a_servers_instructions_describe_its_namespace(registry_factory: Any) -> None:
    registry = await registry_factory(local_server())
    snap = registry.snapshot()
    assert snap.namespaces == {"local": "Registry test server: echo and slow tools."}
