"""Third-party MCP servers (mcp-server-git on a temporary repo, mcp-server-fetch on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch._tools.mcp import MCPToolError
from bot_toolsearch.testing import ScriptedOpenAIServer, call
from bot_toolsearch.tools import ToolRegistry
from tests.conftest import BotFactory

PYTHON = sys.executable
TIMEOUT = 30.0
# Neither the user's nor the system's git configuration may change what the server reports.
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

PAGE = """<!doctype html>
<html><head><title>Loopback page</title></head><body>
<nav><a href="/">Home</a></nav>
<article><h1>Tides of the Loopback Sea</h1>
<p>The loopback sea has <strong>two tides</strong> a day, and each one is recorded by the
harbour office in a ledger kept since 1887.</p>
<p>Sailors read the ledger before leaving: <a href="/ledger">the ledger page</a> lists every
tide.</p>
<ul><li>Morning tide: 06:40</li><li>Evening tide: 19:05</li></ul>
</article></body></html>
"""


def git_server(repository: Path | None = None, name: str = "git") -> dict[str, Any]:
    """The third-party ``mcp-server-git``, optionally confined to one repository."""
    args = ["-m", "mcp_server_git"]
    if repository is not None:
        args += ["--repository", str(repository)]
    return {"name": name, "command": PYTHON, "args": args, "env": GIT_ENV, "timeout": TIMEOUT}


def fetch_server(*options: str, name: str = "fetch") -> dict[str, Any]:
    """The third-party ``mcp-server-fetch``.

    Its PATH holds only the venv's scripts: with Node.js on PATH, the server's article
    extractor (readabilipy) runs ``npm install`` on first use, which is a network access
    outside 127.0.0.1 and would make the markdown depend on the machine.
    """
    return {
        "name": name,
        "command": PYTHON,
        "args": ["-m", "mcp_server_fetch", *options],
        "env": {"PATH": str(Path(PYTHON).parent)},
        "timeout": TIMEOUT,
    }


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        timeout=TIMEOUT,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on branch ``main`` with two commits, a modified file and an untracked one."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "tracked.txt").write_text("first line\n", encoding="utf-8")
    git(path, "add", "tracked.txt")
    git(path, "commit", "-q", "-m", "Add tracked.txt")
    (path / "notes.md").write_text("# notes\n", encoding="utf-8")
    git(path, "add", "notes.md")
    git(path, "commit", "-q", "-m", "Write the notes")
    (path / "tracked.txt").write_text("first line\nsecond line\n", encoding="utf-8")
    (path / "scratch.txt").write_text("not added\n", encoding="utf-8")
    return path


@dataclass
class Site:
    """A small site on 127.0.0.1; ``paths`` records every request, in arrival order."""

    base_url: str
    robots: str | None
    paths: list[str] = field(default_factory=list)


def serve_site(robots: str | None = None) -> Iterator[Site]:
    """Serve ``/page.html`` (and ``/robots.txt`` when given) until the generator is closed."""
    site: Site

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.paths.append(self.path)
            if self.path == "/page.html":
                self._reply(200, "text/html; charset=utf-8", PAGE)
            elif self.path == "/robots.txt" and site.robots is not None:
                self._reply(200, "text/plain", site.robots)
            else:
                self._reply(404, "text/plain", "not found")

        def _reply(self, status: int, kind: str, text: str) -> None:
            body = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test reads site.paths instead of a log on stderr

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site = Site(f"http://127.0.0.1:{httpd.server_address[1]}", robots)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=TIMEOUT)


@pytest.fixture
def site() -> Iterator[Site]:
    yield from serve_site()


@pytest.fixture
def forbidding_site() -> Iterator[Site]:
    yield from serve_site(robots="User-agent: *\nDisallow: /\n")


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound (so nobody else takes it), never
    listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
async def registry_factory() -> AsyncIterator[Any]:
    made: list[ToolRegistry] = []

    async def make(*servers: dict[str, Any]) -> ToolRegistry:
        registry = ToolRegistry(mcp_servers=servers, mcp_backoff=(0.05, 0.2))
        made.append(registry)
        await registry.start()
        for server in servers:
            assert registry.mcp_status[server["name"]] == ("ready", None)
        return registry

    yield make
    for registry in made:
        await registry.aclose()  # terminates the servers' subprocesses


# --- mcp-server-git ---------------------------------------------------------------------


async def test_git_tools_join_the_catalog_and_report_the_real_repository(
    registry_factory: Any, repo: Path
) -> None:
    registry = await registry_factory(git_server(repo))
    snap = registry.snapshot()
    names = {name for name in snap.tools if name.startswith("git.")}
    assert {"git.git_status", "git.git_log", "git.git_diff_unstaged", "git.git_show"} <= names
    assert all(snap.sources[name] == "mcp:git" for name in names)
    assert all(name in snap.catalog for name in names)
    assert "repo_path" in snap.tools["git.git_status"].parameters["properties"]

    status = await snap.tools["git.git_status"].invoke({"repo_path": str(repo)})
    assert "On branch main" in status
    assert "modified:   tracked.txt" in status
    assert "scratch.txt" in status
    assert "notes.md" not in status  # committed and unchanged

    log = await snap.tools["git.git_log"].invoke({"repo_path": str(repo)})
    assert log.index("Write the notes") < log.index("Add tracked.txt")  # newest first

    diff = await snap.tools["git.git_diff_unstaged"].invoke({"repo_path": str(repo)})
    assert "+second line" in diff


async def test_a_failed_git_call_is_a_clear_error_and_the_server_stays_usable(
    registry_factory: Any, repo: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    registry = await registry_factory(git_server(), git_server(repo, name="confined"))
    tools = registry.snapshot().tools

    with pytest.raises(MCPToolError) as info:
        await tools["git.git_status"].invoke({"repo_path": str(plain)})
    message = str(info.value)
    assert message.startswith("MCP tool git.git_status reported an error:")
    assert str(plain) in message
    assert registry.mcp_status["git"] == ("ready", None)
    status = await tools["git.git_status"].invoke({"repo_path": str(repo)})
    assert "modified:   tracked.txt" in status

    # A server confined to one repository refuses another path, and still serves its own.
    with pytest.raises(MCPToolError, match=r"confined\.git_status reported an error.*outside"):
        await tools["confined.git_status"].invoke({"repo_path": str(plain)})
    assert "scratch.txt" in await tools["confined.git_status"].invoke({"repo_path": str(repo)})


async def test_a_bot_searches_loads_and_calls_git_status(
    registry_factory: Any,
    repo: Path,
    tmp_path: Path,
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
) -> None:
    registry = await registry_factory(git_server())
    plain = tmp_path / "plain"
    plain.mkdir()
    server.script(
        call("tool_search", id="s1", query="git working tree status"),
        [
            call("git-_-git_status", id="g1", repo_path=str(repo)),
            call("git-_-git_status", id="g2", repo_path=str(plain)),
        ],
        call("git-_-git_status", id="g3", repo_path=str(repo)),
        call("end"),
    )
    async with make_bot(registry) as bot:
        result = await bot.ask("What is uncommitted in my repository?")

    assert any("git.git_status" in text for text in server.requests[0].system_texts)
    assert "git-_-git_status" not in server.requests[0].tool_names  # deferred until loaded
    found = json.loads(dict(server.requests[1].tool_outputs)["s1"])
    assert "git.git_status" in found["loaded"]
    assert "git-_-git_status" in server.requests[1].tool_names

    outputs = dict(server.requests[2].tool_outputs)
    assert outputs["g1"].startswith("Repository status:")
    assert "modified:   tracked.txt" in outputs["g1"]
    assert "scratch.txt" in outputs["g1"]
    assert "git.git_status" in outputs["g2"]
    assert str(plain) in outputs["g2"]
    assert "modified:   tracked.txt" in dict(server.requests[3].tool_outputs)["g3"]
    ran = {c.id: c.outcome for r in result.trace for c in r.calls if c.name == "git.git_status"}
    assert ran["g1"] == ran["g3"] == "ran"
    assert ran["g2"] == "failed"


# --- mcp-server-fetch -------------------------------------------------------------------


async def test_fetch_returns_a_local_page_as_markdown(registry_factory: Any, site: Site) -> None:
    registry = await registry_factory(fetch_server("--ignore-robots-txt", "--allow-private-ips"))
    snap = registry.snapshot()
    assert snap.sources["fetch.fetch"] == "mcp:fetch"
    assert "url" in snap.tools["fetch.fetch"].parameters["required"]

    url = f"{site.base_url}/page.html"
    text = await snap.tools["fetch.fetch"].invoke({"url": url})
    assert url in text.splitlines()[0]
    # The extracted article, as markdown: heading, paragraphs (unwrapped), a bulleted list.
    assert "\n# Tides of the Loopback Sea\n" in text
    assert "The loopback sea has two tides a day, and each one is recorded by the harbour" in text
    assert "* Morning tide: 06:40\n* Evening tide: 19:05" in text
    assert "<" not in text
    assert site.paths == ["/page.html"]  # robots.txt ignored as asked

    raw = await snap.tools["fetch.fetch"].invoke({"url": url, "raw": True})
    assert "<strong>two tides</strong>" in raw


async def test_a_failed_fetch_is_a_clear_error_and_the_server_stays_usable(
    registry_factory: Any, site: Site, closed_port: int
) -> None:
    registry = await registry_factory(
        fetch_server("--ignore-robots-txt", "--allow-private-ips"),
        fetch_server(name="public"),  # the default refuses loopback addresses
    )
    tools = registry.snapshot().tools

    dead = f"http://127.0.0.1:{closed_port}/page.html"
    with pytest.raises(MCPToolError) as info:
        await tools["fetch.fetch"].invoke({"url": dead})
    message = str(info.value)
    assert message.startswith("MCP tool fetch.fetch reported an error:")
    assert f"Failed to fetch {dead}" in message
    assert registry.mcp_status["fetch"] == ("ready", None)
    page = await tools["fetch.fetch"].invoke({"url": f"{site.base_url}/page.html"})
    assert "# Tides of the Loopback Sea" in page

    with pytest.raises(MCPToolError, match=r"public\.fetch reported an error.*--allow-private-ips"):
        await tools["public.fetch"].invoke({"url": f"{site.base_url}/page.html"})
    assert site.paths == ["/page.html"]  # the refused fetch never reached the site


async def test_fetch_honours_a_local_robots_txt(
    registry_factory: Any, forbidding_site: Site
) -> None:
    registry = await registry_factory(fetch_server("--allow-private-ips"))
    fetch = registry.snapshot().tools["fetch.fetch"]
    with pytest.raises(MCPToolError, match=r"fetch\.fetch reported an error.*robots\.txt"):
        await fetch.invoke({"url": f"{forbidding_site.base_url}/page.html"})
    assert forbidding_site.paths == ["/robots.txt"]  # the page itself was never requested
