"""``ProxyApp(freeze_heap=True)`` (what ``serve`` runs): the heap is frozen once per new tool list.

Run in a child process: `gc.freeze` is process-wide and must not reach the test worker.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.test_serve import start_serve, stop_serve

from ._raw import Upstream

_CHILD = r"""
import asyncio, gc, json, sys
import httpx
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch.testing import ScriptedOpenAIServer, text
from tests.wrap._tools import chat_tools

result = {"default_threshold": list(gc.get_threshold())}
with ScriptedOpenAIServer() as server:
    # The embedded app first: once a heap is frozen, it stays so for the process.
    for mode in ("plain", "freeze"):
        out = result[mode] = {}
        server.script(text("one"), text("two"), text("three"))
        app = ProxyApp(server.base_url, freeze_heap=mode == "freeze")

        async def main():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
                for name, tools in (("first", chat_tools(70)), ("same", chat_tools(70)),
                                    ("other", chat_tools(71))):
                    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                            "tools": tools}
                    reply = await client.post("/v1/chat/completions", json=body)
                    out[name] = [reply.status_code, gc.get_freeze_count()]
            out["threshold"] = list(gc.get_threshold())
            out["indexed"] = [e.tools.catalog._index is not None for e in app._cache._entries]
            await app.aclose()

        asyncio.run(main())
print(json.dumps(result))
"""

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def child() -> dict[str, Any]:
    """What one child process saw: an embedded app, then one as ``serve`` runs it."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_heap_is_frozen_after_each_new_tool_list_and_only_then(
    child: dict[str, Any],
) -> None:
    frozen = child["freeze"]
    assert [frozen[k][0] for k in ("first", "same", "other")] == [200, 200, 200]
    first, same, other = (int(str(frozen[k][1])) for k in ("first", "same", "other"))
    assert first > 0
    assert same <= first  # not indexed again: nothing more frozen (freed ones leave)
    assert other > first  # a new list: its catalog joins the frozen heap
    assert frozen["indexed"] == [True, True]  # both catalogs' search indexes were built first
    assert frozen["threshold"][2] == 1000  # full collections a hundred times rarer


def test_an_embedded_app_leaves_the_collector_alone(
    child: dict[str, Any],
) -> None:
    plain = child["plain"]
    assert [plain[k] for k in ("first", "same", "other")] == [[200, 0], [200, 0], [200, 0]]
    assert plain["threshold"] == child["default_threshold"]  # the interpreter's, untouched


_REFUSED_CHILD = r"""
import asyncio, gc, json, socket, sys, types
import httpx
from bot_toolsearch._proxy.app import ProxyApp
from tests.proxy._raw import Upstream

def denied(conn, body):
    raw = b'{"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}'
    conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(raw), raw))

def tools(tag, responses=False):
    out = []
    for i in range(50):
        name = f"leak_{tag}_{i}"
        params = {"type": "object", "properties": {"x": {"type": "string"}}}
        if responses:
            out.append({"type": "function", "name": name, "parameters": params})
        else:
            out.append({"type": "function", "function": {"name": name, "parameters": params}})
    return out

upstream = Upstream(denied)
app = ProxyApp(upstream.url, freeze_heap=True)
user = {"role": "user", "content": "hi"}
shapes = {
    "chat": ("/v1/chat/completions", lambda n: {"model": "m", "messages": [user],
                                                 "tools": tools(n)}),
    "chat stream": ("/v1/chat/completions", lambda n: {"model": "m", "messages": [user],
                                                        "stream": True, "tools": tools(n)}),
    "responses": ("/v1/responses", lambda n: {"model": "m", "input": "hi",
                                               "tools": tools(n, True)}),
    "forwarded": ("/v1/embeddings", lambda n: {"model": "m", "input": "hi", "tools": tools(n)}),
    "refused here": ("/v1/chat/completions", lambda n: {"model": "m", "messages": "no",
                                                         "tools": tools(n)}),
}

async def main():
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        await client.post("/v1/chat/completions", json=shapes["chat"][1]("warm"))
        result = {}
        for name, (path, make) in shapes.items():
            gc.collect()
            gc.disable()
            gc.set_debug(gc.DEBUG_SAVEALL)
            statuses = set()
            for n in range(8):
                reply = await client.post(path, json=make(f"{name}{n}"))
                statuses.add(reply.status_code)
            gc.collect()
            garbage = list(gc.garbage)
            gc.garbage.clear()
            gc.set_debug(0)
            gc.enable()
            tools_left = sum(
                isinstance(o, dict) and str(o.get("name", "")).startswith("leak_")
                for o in garbage
            )
            frames = sorted({
                o.f_code.co_name for o in garbage
                if isinstance(o, types.FrameType) and "bot_toolsearch" in o.f_code.co_filename
            })
            del garbage
            result[name] = {"statuses": sorted(statuses), "tools": tools_left, "frames": frames}
    await app.aclose()
    print(json.dumps(result))

asyncio.run(main())
upstream.close()
"""


def test_refused_requests_leave_no_cycle_that_holds_their_body() -> None:
    """Issue 41, item 2: each refused request's frames (its raw body, its parsed tools) were
    kept by a cycle (a task, its exception, the traceback) that only a full collection frees,
    and ``serve`` runs those a hundred times less often: 74 MB to 3.3 GB in 40 s of keyless
    requests. Here the cycle collector is off: nothing a refused request read may be left."""
    done = subprocess.run(
        [sys.executable, "-c", _REFUSED_CHILD],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    expected = {
        "chat": [401],
        "chat stream": [401],
        "responses": [401],
        "forwarded": [401],
        "refused here": [400],
    }
    assert {name: shape["statuses"] for name, shape in result.items()} == expected
    for name, shape in result.items():
        assert shape["tools"] == 0, (name, shape)
        assert shape["frames"] == [], (name, shape)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _denied(conn: socket.socket, _: bytes) -> None:
    raw = b'{"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}'
    conn.sendall(
        b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(raw), raw)
    )


_WORDS = [
    "search",
    "send",
    "read",
    "write",
    "file",
    "user",
    "mail",
    "event",
    "order",
    "stock",
    "price",
    "report",
    "list",
]


def _flood_body(tag: str) -> bytes:
    """Just under a megabyte (the key probe's threshold): 1,600 distinct tools of a typical
    size, as the attack sent them."""
    tools = []
    for i in range(1600):
        words = " ".join(_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(30))
        props = {f"{_WORDS[(i + j) % len(_WORDS)]}_{j}": {"type": "string"} for j in range(3)}
        function = {
            "name": f"ns{i % 50}.{_WORDS[i % len(_WORDS)]}_{i}_{tag}",
            "description": words,
            "parameters": {"type": "object", "properties": props},
        }
        tools.append({"type": "function", "function": function})
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    return json.dumps(body).encode()


FLOODERS = 4
REQUESTS = 12
"""Per flooder: 48 in all, the first 16 fill the list cache (8 lists) and settle."""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="RSS read from Linux /proc")
def test_serves_rss_plateaus_under_a_flood_of_keyless_requests(tmp_path: Path) -> None:
    """Issue 41, item 2, in the attack's shape: a real ``serve`` process, four keyless clients
    sending distinct lists just under a megabyte, the upstream refusing each (401). RSS grows
    while the list cache fills, then stays flat (before: about 9 MB more a request, for good;
    74 MB to 3.3 GB in 40 s)."""
    upstream = Upstream(_denied)
    root, proc = start_serve(tmp_path, "--access-log=off", upstream=upstream.url + "/v1")
    template = _flood_body("@TAG@")
    done: list[int] = []
    samples: dict[str, float] = {}
    lock = threading.Lock()

    def flood(who: int) -> None:
        with httpx.Client(timeout=120) as client:
            for n in range(REQUESTS):
                reply = client.post(
                    f"{root}/v1/chat/completions",
                    content=template.replace(b"@TAG@", f"f{who}x{n}".encode()),
                    headers={"content-type": "application/json"},
                )
                with lock:
                    done.append(reply.status_code)
                    if len(done) == 16:
                        samples["settled"] = _rss_mb(proc.pid)

    try:
        flooders = [threading.Thread(target=flood, args=(k,)) for k in range(FLOODERS)]
        for thread in flooders:
            thread.start()
        for thread in flooders:
            thread.join(600)
        samples["end"] = _rss_mb(proc.pid)
    finally:
        stop_serve(proc)
        upstream.close()
    assert done == [401] * FLOODERS * REQUESTS
    assert samples["end"] - samples["settled"] < 64, samples  # before: about 290 MB more
