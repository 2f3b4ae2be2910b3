"""The wrapper builds a tool list's keyword index once the upstream has accepted a call with
it (2xx), in the ``index`` pool, with the configured namespace descriptions, so no keyword
search builds it; a call the upstream refuses (401) builds no index and embeds nothing; the
async client indexes a new list in a pool, never on the event loop; a config reload that
changes the descriptions builds the cached lists' new indexes in the reload thread."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.index import SearchIndex
from bot_toolsearch._services.indexing import index_built
from bot_toolsearch._services.threads import POOLS
from bot_toolsearch._wrap.caller_tools import ToolsCache
from bot_toolsearch._wrap.client import engine_of
from bot_toolsearch._wrap.plan import Pending, setup
from bot_toolsearch.testing import ScriptedOpenAIServer, call, error, text
from tests._helpers import write_config

from ._tools import chat_tools

TIMEOUT = 10.0
USER = {"role": "user", "content": "Where is the stock?"}
NAMESPACES = {"inventory": "Warehouse stock levels."}
SETTINGS = BotSettings.model_validate(
    {"skills": {"tool_search_enabled": True}, "tools": {"namespaces": NAMESPACES}}
)


def dotted_tools() -> list[dict[str, Any]]:
    """The test list with its warehouse tools in the ``inventory`` namespace."""
    tools = chat_tools()
    for tool in tools[5:]:
        tool["function"]["name"] = tool["function"]["name"].replace("inventory_", "inventory.")
    return tools


def indexes(catalog: ToolCatalog) -> list[SearchIndex]:
    """Every search index the catalog holds (private state, read only)."""
    built = list(catalog._indexes.values())
    return built if catalog._index is None else [catalog._index, *built]


def catalog_of(client: object, tools: list[dict[str, Any]]) -> ToolCatalog:
    engine = engine_of(client)
    assert engine is not None
    found = engine.cache.lookup(tools, "chat", "-_-")
    assert found is not None
    assert found.catalog is not None
    return found.catalog


def idle() -> None:
    """Wait until the index and embeddings pools have finished what was started."""
    assert POOLS.index.wait_idle(TIMEOUT)
    assert POOLS.embeddings.wait_idle(TIMEOUT)


def test_the_first_accepted_call_builds_the_index_the_searches_use(
    server: ScriptedOpenAIServer,
) -> None:
    tools = dotted_tools()
    server.script(text("Nothing to do."))
    client = wrap_openai(
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0), settings=SETTINGS
    )
    with client:
        client.chat.completions.create(model="m", messages=[USER], tools=tools)
        idle()
        catalog = catalog_of(client, tools)
        assert catalog_of(client, tools) is catalog
        assert index_built(catalog, NAMESPACES)
        before = indexes(catalog)
        assert len(before) == 1

        server.script(call("tool_search", query="warehouse"), text("Found it."))
        client.chat.completions.create(model="m", messages=[USER], tools=tools)

    result = json.loads(server.requests[2].tool_outputs[0][1])
    assert result["loaded"]
    assert [id(i) for i in indexes(catalog)] == [id(i) for i in before]


class _Watched(dict[str, Any]):
    """A caller tool entry that notes the thread of every ``get`` (what indexing reads)."""

    threads: set[int]

    def get(self, key: str, default: Any = None) -> Any:
        self.threads.add(threading.get_ident())
        return super().get(key, default)


@pytest.mark.parametrize("door", ["create", "with_raw_response", "with_streaming_response"])
async def test_the_async_client_indexes_a_new_list_off_the_event_loop(
    server: ScriptedOpenAIServer, door: str
) -> None:
    threads: set[int] = set()
    tools = [_Watched(tool) for tool in dotted_tools()]
    for tool in tools:
        tool.threads = threads
    server.script(text("Nothing to do."))
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    client = wrap_openai(inner, settings=SETTINGS)
    try:
        completions = client.chat.completions
        arguments: dict[str, Any] = {"model": "m", "messages": [USER], "tools": tools}
        if door == "create":
            await completions.create(**arguments)
        elif door == "with_raw_response":
            await completions.with_raw_response.create(**arguments)
        else:
            async with completions.with_streaming_response.create(**arguments):
                pass
    finally:
        await client.close()

    idle()
    assert threads  # the list was indexed ...
    assert threading.get_ident() not in threads  # ... never on the event loop's thread
    assert index_built(catalog_of(client, tools), NAMESPACES)


def made(plan: object) -> bool:
    """Whether ``plan`` is a plan made (not `None`, not a `Pending` build)."""
    return plan is not None and not isinstance(plan, Pending)


def test_a_plan_that_must_index_says_so_instead_of_building() -> None:
    cache = ToolsCache()
    tools = dotted_tools()

    def plan(settings: BotSettings, *, build: bool) -> object:
        return setup(settings, cache, tools=tools, tool_choice=None, api="chat", build=build)

    assert plan(SETTINGS, build=False) == Pending()  # a new list: no build to wait for
    assert len(cache) == 0  # nothing indexed
    assert made(plan(SETTINGS, build=True))
    found = cache.lookup(tools, "chat", "-_-")
    assert found is not None
    assert found.catalog is not None
    assert not index_built(found.catalog, NAMESPACES)  # no upstream accepted it yet
    assert made(plan(SETTINGS, build=False))  # not accepted: nothing more is due
    found.pin()
    due = plan(SETTINGS, build=False)
    assert isinstance(due, Pending)  # accepted: its index is due ...
    assert due.build is not None  # ... one build every such call can wait for
    assert plan(SETTINGS, build=False) == due
    assert made(plan(SETTINGS, build=True))
    assert index_built(found.catalog, NAMESPACES)
    assert made(plan(SETTINGS, build=False))
    # Other namespace descriptions need another index: not built on the loop either.
    described = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True}, "tools": {"namespaces": {"inventory": "Stock."}}}
    )
    assert isinstance(plan(described, build=False), Pending)
    off = BotSettings.model_validate({"tools": {"deny": ["get_weather"]}})
    assert made(plan(off, build=False))  # no index without search


async def test_a_reload_builds_the_cached_lists_new_index_in_the_reload_thread(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    skills = "[skills]\ntool_search_enabled = true\n"
    path = write_config(tmp_path / "config.toml", server.base_url, "chat_completions", skills)
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    client = wrap_openai(inner, config=path)
    tools = dotted_tools()
    try:
        server.script(text("Nothing to do."))
        await client.chat.completions.create(model="m", messages=[USER], tools=tools)
        idle()
        catalog = catalog_of(client, tools)
        assert index_built(catalog, {})
        assert not index_built(catalog, NAMESPACES)

        engine = engine_of(client)
        assert engine is not None
        reloader = engine._reloader
        assert reloader is not None
        reloaded: list[bool] = []
        done = threading.Event()

        def seen(settings: BotSettings) -> None:
            # Subscribed after the wrapper: runs once the wrapper's own callback is done.
            reloaded.append(index_built(catalog, settings.tools.namespaces))
            done.set()

        reloader.subscribe(seen)
        extra = skills + '[tools.namespaces]\ninventory = "Warehouse stock levels."\n'
        write_config(path, server.base_url, "chat_completions", extra)
        assert await asyncio.to_thread(done.wait, TIMEOUT)
        assert reloaded == [True]
        before = indexes(catalog)

        server.script(call("tool_search", query="warehouse"), text("Found it."))
        await client.chat.completions.create(model="m", messages=[USER], tools=tools)
    finally:
        await client.close()

    assert json.loads(server.requests[2].tool_outputs[0][1])["loaded"]
    assert [id(i) for i in indexes(catalog)] == [id(i) for i in before]


def test_a_plan_whose_directory_is_not_built_is_made_off_the_loop() -> None:
    """Issue 27: the first projection of a list built its directory (token counts of every
    name, the tokenizer loaded once: seconds) on the event loop, after the index was built."""
    cache = ToolsCache()
    tools = dotted_tools()
    cache.get(tools, "chat", SETTINGS.tools.dot_delimiter).prepare(SETTINGS)  # the proxy's way

    def plan(settings: BotSettings, *, build: bool) -> object:
        return setup(settings, cache, tools=tools, tool_choice=None, api="chat", build=build)

    assert isinstance(plan(SETTINGS, build=False), Pending)  # index built, directory not
    assert made(plan(SETTINGS, build=True))
    assert made(plan(SETTINGS, build=False))
    budget = SETTINGS.model_copy(
        update={"skills": SETTINGS.skills.model_copy(update={"tool_search_directory_budget": 50})}
    )
    assert isinstance(plan(budget, build=False), Pending)  # another directory


def test_a_call_the_upstream_refuses_builds_no_index_and_embeds_nothing(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    server.embeddings.dimension = 64
    wanted = {"model": "hashed-words", "base_url": server.base_url, "cache_dir": str(tmp_path)}
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_embeddings": wanted}}
    )
    inner = openai.OpenAI(base_url=server.base_url, api_key="wrong", max_retries=0)
    lists = [chat_tools(70 + i) for i in range(3)]
    with wrap_openai(inner, settings=settings) as client:
        for tools in lists:
            server.script(error(401, "Incorrect API key provided.", code="invalid_api_key"))
            with pytest.raises(openai.AuthenticationError):
                client.chat.completions.create(model="m", messages=[USER], tools=tools)
        idle()
        assert server.embeddings.requests == []
        engine = engine_of(client)
        assert engine is not None
        for tools in lists:
            found = engine.cache.lookup(tools, "chat", "-_-")
            assert found is None or (found.catalog and not index_built(found.catalog, {}))
        # Accepted: the same list is indexed and embedded (the test can fail).
        server.script(text("ok"))
        client.chat.completions.create(model="m", messages=[USER], tools=lists[-1])
        idle()
        assert index_built(catalog_of(client, lists[-1]), {})
        assert server.embeddings.requests


def many_tools(count: int) -> list[dict[str, Any]]:
    """``count`` distinct tools in 40 namespaces: a list whose index takes a while to build."""
    words = ("stock", "order", "ship", "invoice", "refund", "ticket", "user", "report")
    return [
        {
            "type": "function",
            "function": {
                "name": f"ns{i % 40}.{words[i % 8]}_{i}",
                "description": f"Handle {words[i % 8]} number {i}: look up, change or list it "
                f"for the {words[(i // 8) % 8]} desk.",
                "parameters": {
                    "type": "object",
                    "properties": {f"{words[i % 8]}_id": {"type": "string"}},
                },
            },
        }
        for i in range(count)
    ]


async def test_a_burst_of_calls_with_a_new_list_waits_for_one_build(
    server: ScriptedOpenAIServer,
) -> None:
    """Calls that need the same list's index (clients sending one new list at once, just
    after the upstream accepted it) wait for the one build under way instead of each taking
    a place in the index pool's bounded queue, which refused all but a few (PoolBusy)."""
    tools, burst = many_tools(4_000), 40
    server.script(*(text("Nothing to do.") for _ in range(burst + 1)))
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    client = wrap_openai(inner, settings=SETTINGS)
    try:
        await client.chat.completions.create(model="m", messages=[USER], tools=tools)
        answers = await asyncio.gather(
            *(
                client.chat.completions.create(model="m", messages=[USER], tools=tools)
                for _ in range(burst)
            ),
            return_exceptions=True,
        )
    finally:
        await client.close()
    failed = [a for a in answers if isinstance(a, BaseException)]
    assert failed == []
    assert [a.choices[0].message.content for a in answers] == ["Nothing to do."] * burst
    engine = engine_of(client)
    assert engine is not None
    assert len(engine.builds) == 0  # nothing left behind
    idle()
