"""The MCP door (issue 31): tokens of a client's first ``tools/list``, with and without search.

An official ``mcp`` client (in-process, handshake era) lists the tools of ``bot-toolsearch
mcp``'s server over the demo catalog (178 tools) and the scale catalogs of 1,000 and 10,000
real tools (``bench/_scale_catalog.py``, with the Google APIs' namespace descriptions):

- without tool search (``tool_search_enabled = false``): every tool, as a client connected to
  every server directly lists them;
- with it, ``append`` loading: ``tool_search`` alone, its description carrying the directory
  (default 4,000-token budget) and the rules;
- with it, ``bridge`` loading: the same plus the ``call_tool`` bridge.

Tokens are of the listed tools as compact JSON (``name``, ``description``, ``inputSchema``),
counted with the project's counter (o200k_base when ``bpe-openai`` is installed): what a client
turns into its model's tool list. The time is the first ``tools/list`` round trip (the index
built ahead, as ``start()`` does).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

from bot_toolsearch import BotSettings, Tool

from ._scale_catalog import load_scale_catalog, scale_namespaces
from ._table import Row

SECTION = "mcp door"
SIZES = (1_000, 10_000)
_CHUNK = 200  # tools per tokenizer call (bpe-openai refuses inputs of 1,000,000 characters)


def _count(tools: Sequence[dict[str, Any]]) -> int:
    from bot_toolsearch._core.token_count import count_text

    total = 2
    for start in range(0, len(tools), _CHUNK):
        chunk = tools[start : start + _CHUNK]
        total += count_text(json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))[1:-1])
        total += start > 0
    return total


def _handler(**arguments: Any) -> str:
    return json.dumps(arguments)


def _tools(schemas: Sequence[dict[str, Any]]) -> list[Tool]:
    return [
        Tool(
            s["function"]["name"],
            s["function"].get("description") or "",
            s["function"].get("parameters"),
            _handler,
        )
        for s in schemas
    ]


async def _first_list(
    tools: Sequence[Tool], namespaces: dict[str, str], search: bool, loading: str
) -> tuple[int, int, float]:
    """(tools listed, their tokens, seconds of the first ``tools/list``)."""
    from mcp import Client

    from bot_toolsearch._mcp.door import McpDoor
    from bot_toolsearch._mcp.server import build_server

    settings = BotSettings.model_validate(
        {
            "bot": {"hot_reload": False},
            "skills": {"tool_search_enabled": search, "tool_search_loading": loading},
            "tools": {"namespaces": namespaces},
        }
    )
    door = McpDoor(settings, tools)
    async with door, Client(build_server(door), mode="legacy") as client:
        start = time.perf_counter()
        listed = await client.list_tools()
        seconds = time.perf_counter() - start
    payload = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools]
    return len(payload), _count(payload), seconds


def _rows(label: str, tools: Sequence[Tool], namespaces: dict[str, str]) -> list[Row]:
    from bot_toolsearch._core.token_count import counter_label

    rows = []
    full_count, full, full_s = asyncio.run(_first_list(tools, namespaces, False, "append"))
    rows.append(
        Row(
            SECTION,
            f"first tools/list tokens ({label}), no tool search",
            f"{full:,}",
            f"{full_count:,} tools listed, {full_s * 1e3:.0f} ms; {counter_label()}",
        )
    )
    for loading in ("append", "bridge"):
        listed, tokens, seconds = asyncio.run(_first_list(tools, namespaces, True, loading))
        share = 100 * (1 - tokens / full) if full else 0.0
        rows.append(
            Row(
                SECTION,
                f"first tools/list tokens ({label}), door {loading}",
                f"{tokens:,}",
                f"{listed} tool{'s' * (listed != 1)} listed, {share:.1f}% fewer, "
                f"{seconds * 1e3:.0f} ms",
            )
        )
    return rows


def run() -> list[Row]:
    from bot_toolsearch._demo.catalog import demo_tools

    demo = list(demo_tools())
    rows = _rows(f"demo, {len(demo)} tools", demo, {})
    namespaces = scale_namespaces()
    for size in SIZES:
        rows += _rows(f"{size:,} tools", _tools(load_scale_catalog(size)), namespaces)
    return rows


if __name__ == "__main__":
    from ._table import render

    print(render(run()))
