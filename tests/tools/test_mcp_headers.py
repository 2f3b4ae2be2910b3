"""HTTP MCP servers with ``headers`` (issue 32): the documented config of docs/tools.md run
against real servers (the third-party ``mcp-server-time`` over stdio, and a streamable-HTTP
server on 127.0.0.1 that refuses a request without the right token), secrets read from
``${env:NAME}`` references and never logged."""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer

from bot_toolsearch import ConfigError
from bot_toolsearch.config import load_settings
from bot_toolsearch.tools import MCPServerConfig, ToolRegistry
from tests._cli_runner import run_cli
from tests.test_readme import python_blocks

REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token-4f9a"  # what the server expects; must never reach a log line
MCP_SECTION = "docs/tools.md: ### "


class _Server:
    """A real MCP server over streamable HTTP whose ASGI app answers 401 without the token."""

    def __init__(self) -> None:
        mcp = MCPServer("docs-test", instructions="Docs test server: search the docs.")

        @mcp.tool()
        def lookup(topic: str) -> str:
            """Look a topic up in the docs."""
            return f"docs on {topic}"

        inner = mcp.streamable_http_app()
        self.seen: list[dict[str, str]] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
                self.seen.append(headers)
                if headers.get("authorization") != f"Bearer {TOKEN}":
                    await send({"type": "http.response.start", "status": 401, "headers": []})
                    await send({"type": "http.response.body", "body": b"unauthorized"})
                    return
            await inner(scope, receive, send)

        self.app = app


@pytest.fixture
def server() -> Iterator[tuple[str, _Server]]:
    state = _Server()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = uvicorn.Config(state.app, log_level="warning", ws="none", lifespan="on")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/mcp", state
    finally:
        uv.should_exit = True
        thread.join(timeout=30)
        sock.close()


def documented_config(url: str) -> str:
    """The TOML blocks of docs/tools.md's MCP section, pointed at this machine's servers."""
    blocks = [code for heading, code in python_blocks("toml") if heading.startswith(MCP_SECTION)]
    assert len(blocks) == 2, blocks
    text = "\n".join(blocks)
    venv = "/absolute/path/to/.venv/bin/"
    assert f'command = "{venv}mcp-server-time"' in text
    assert 'url = "http://127.0.0.1:9000/mcp"' in text
    # The venv's own console script, installed by `pip install mcp-server-time` (the dev set).
    text = text.replace(venv, f"{Path(sys.executable).parent}/")
    return text.replace("http://127.0.0.1:9000/mcp", url)


def test_the_documented_servers_load_with_the_token_from_the_environment(
    tmp_path: Path, server: tuple[str, _Server]
) -> None:
    url, state = server
    (tmp_path / "config.toml").write_text(documented_config(url), encoding="utf-8")
    env = {"DOCS_MCP_TOKEN": TOKEN}
    listed = run_cli("catalog", "list", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {tuple(line.split()[:2]) for line in listed.stdout.splitlines()}
    assert {("mcp:time", "time.get_current_time"), ("mcp:docs", "docs.lookup")} <= rows
    assert state.seen
    assert all(h.get("authorization") == f"Bearer {TOKEN}" for h in state.seen)
    assert all(h.get("x-team") == "bots" for h in state.seen)
    found = run_cli("search", "current time", cwd=tmp_path, env=env)
    assert "time.get_current_time" in found.stdout, found.stderr
    valid = run_cli("config", "validate", cwd=tmp_path, env=env)
    assert (valid.returncode, valid.stdout) == (0, "config.toml: OK\n"), valid.stderr
    for done in (listed, found, valid):
        assert TOKEN not in done.stdout + done.stderr


def test_an_unset_variable_or_a_wrong_token_leaves_the_server_unavailable(
    tmp_path: Path, server: tuple[str, _Server]
) -> None:
    url, state = server
    (tmp_path / "config.toml").write_text(documented_config(url), encoding="utf-8")
    unset = run_cli("catalog", "list", cwd=tmp_path)
    assert unset.returncode == 1
    assert "'docs'" in unset.stderr
    assert "environment variable DOCS_MCP_TOKEN is not set" in unset.stderr
    assert "time.get_current_time" in unset.stdout  # the other server's tools still load
    assert state.seen == []  # nothing was sent without the token
    wrong = run_cli("catalog", "list", cwd=tmp_path, env={"DOCS_MCP_TOKEN": "wrong-token-x"})
    assert wrong.returncode == 1
    assert "'docs'" in wrong.stderr
    assert "wrong-token-x" not in wrong.stdout + wrong.stderr
    assert state.seen  # it was asked, and refused


async def test_header_values_never_reach_a_log_line(
    server: tuple[str, _Server], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, state = server
    monkeypatch.setenv("DOCS_MCP_TOKEN", TOKEN)
    entry = {
        "name": "docs",
        "url": url,
        "headers": {"Authorization": "Bearer ${env:DOCS_MCP_TOKEN}"},
    }
    with caplog.at_level(logging.DEBUG):
        registry = ToolRegistry(mcp_servers=[entry], mcp_backoff=(0.05, 0.2))
        await registry.start()
        try:
            tool = registry.snapshot().tools["docs.lookup"]
            assert await tool.invoke({"topic": "headers"}) == "docs on headers"
        finally:
            await registry.aclose()
        config = MCPServerConfig.coerce({**entry, "headers": {"Authorization": TOKEN}})
        logging.getLogger("test").debug("config: %r", config)  # a repr in a log line
    assert state.seen
    assert caplog.records
    assert all(TOKEN not in record.getMessage() for record in caplog.records)
    assert TOKEN not in repr(config)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        pytest.param(
            {"headers": {"Authorization": "Bearer ${DOCS_MCP_TOKEN}"}}, "${env:NAME}", id="bare-ref"
        ),
        pytest.param({"headers": {"Bad Name": "x"}}, "header name 'Bad Name'", id="name"),
        pytest.param({"headers": {"X-A": "a\r\nX-B: b"}}, "line break", id="crlf"),
        pytest.param(
            {"url": None, "command": "x", "headers": {"X-A": "a"}},
            "'headers' apply only to a 'url' server",
            id="stdio",
        ),
    ],
)
def test_bad_headers_are_refused_when_the_file_is_loaded(
    tmp_path: Path, entry: dict[str, Any], message: str
) -> None:
    server = {"name": "docs", "url": "http://127.0.0.1:9/mcp", **entry}
    server = {k: v for k, v in server.items() if v is not None}
    lines = [f"{k} = {json.dumps(v)}" for k, v in server.items() if k != "headers"]
    headers = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in server["headers"].items())
    lines.append(f"headers = {{ {headers} }}")
    path = tmp_path / "config.toml"
    path.write_text("[[tools.mcp_servers]]\n" + "\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tools\.mcp_servers") as caught:
        load_settings(path, env={})
    assert message in str(caught.value)
    with pytest.raises(ConfigError) as direct:
        MCPServerConfig.coerce(server)
    assert message in str(direct.value)
