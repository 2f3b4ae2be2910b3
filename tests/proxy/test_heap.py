"""``ProxyApp(freeze_heap=True)`` (what ``serve`` runs): the heap is frozen once per new tool list.

Run in a child process: `gc.freeze` is process-wide and must not reach the test worker.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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
