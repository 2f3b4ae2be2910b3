"""The `Bot` builds tool search's keyword index ahead of the first search: when it is made,
when its tools change, and on a config reload (in the reload thread), with the namespace
descriptions its asks search with, so the first keyword search builds nothing."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openai
import pytest

from bot_toolsearch import Bot, BotSettings, Tool, wrap_openai
from bot_toolsearch._core import session as session_module
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.index import SearchIndex
from bot_toolsearch._services.indexing import index_built
from bot_toolsearch._services.threads import POOLS
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests._helpers import write_config

if TYPE_CHECKING:
    from tests.conftest import BotFactory

TIMEOUT = 10.0
NAMESPACES = {"music": "Songs, albums and playlists."}


def music_tools() -> list[Tool]:
    return [
        Tool(f"music.{verb}", f"Music: {verb} the song.", None, lambda: "ok")
        for verb in ("play", "pause", "stop")
    ] + [Tool("weather.now", "The weather right now.", None, lambda: "ok")]


def indexes(catalog: ToolCatalog) -> list[SearchIndex]:
    """Every search index the catalog holds (private state, read only)."""
    built = list(catalog._indexes.values())
    return built if catalog._index is None else [catalog._index, *built]


def loaded(server: ScriptedOpenAIServer, request: int) -> list[str]:
    result: list[str] = json.loads(server.requests[request].tool_outputs[0][1])["loaded"]
    return result


async def test_the_index_is_built_when_the_bot_is_made_and_the_first_search_uses_it(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    bot = make_bot(music_tools(), tools_table={"namespaces": NAMESPACES})
    catalog = bot.toolset.catalog
    assert index_built(catalog, NAMESPACES)
    before = indexes(catalog)
    assert len(before) == 1  # only the one the asks search with

    server.script(call("tool_search", query="albums"), call("end"))
    await bot.ask("play something")

    # The search matched the namespace description through the prebuilt index, and built none.
    assert loaded(server, 1)[:3] == ["music.pause", "music.play", "music.stop"]
    assert [id(i) for i in indexes(catalog)] == [id(i) for i in before]


async def test_without_tool_search_no_index_is_built(make_bot: BotFactory) -> None:
    off = make_bot(music_tools(), skills={"tool_search_enabled": False})
    assert indexes(off.toolset.catalog) == []
    no_plugin = make_bot(music_tools(), plugins={"enabled": []})
    assert indexes(no_plugin.toolset.catalog) == []


async def test_set_tools_builds_the_new_sets_index(make_bot: BotFactory) -> None:
    bot = make_bot(music_tools()[:1])
    bot.set_tools(music_tools())
    assert len(bot.toolset.catalog) == 4 + 2  # with send_message and end
    assert index_built(bot.toolset.catalog, {})


async def test_a_reload_builds_the_index_in_the_reload_thread_before_any_ask(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    path = write_config(tmp_path / "config.toml", server.base_url, api)
    bot = Bot.from_config(path, music_tools())
    reloader = bot._reloader
    assert reloader is not None
    catalog = bot.toolset.catalog
    assert indexes(catalog) == []  # tool search is off

    # Subscribed after the bot: runs once the bot's own callback is done.
    reloaded: list[tuple[int, bool]] = []
    done = threading.Event()

    def seen(settings: BotSettings) -> None:
        reloaded.append((settings.generation, index_built(catalog, NAMESPACES)))
        done.set()

    reloader.subscribe(seen)
    try:
        write_config(
            path,
            server.base_url,
            api,
            '[skills]\ntool_search_enabled = true\n[tools.namespaces]\nmusic = "Songs, albums '
            'and playlists."\n',
        )
        assert await asyncio.to_thread(done.wait, TIMEOUT)
        assert reloaded == [(2, True)]
        before = indexes(catalog)
        server.script(call("tool_search", query="albums"), call("end"))
        result = await bot.ask("play something")
    finally:
        await bot.aclose()

    assert result.settings_generation == 2
    assert loaded(server, 1)[:3] == ["music.pause", "music.play", "music.stop"]
    assert [id(i) for i in indexes(catalog)] == [id(i) for i in before]


async def test_a_new_tool_snapshot_comes_with_its_index_and_folder_descriptions(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    def folder(namespace: str, verb: str) -> None:
        path = tmp_path / "tools" / namespace / verb
        path.mkdir(parents=True)
        (path / "config.json").write_text(f'{{"description": "{verb} it."}}', "utf-8")
        (path / "handler.py").write_text("def execute(**kw):\n    return 'ok'\n", "utf-8")

    folder("pets", "feed")
    (tmp_path / "tools" / "pets" / "README.md").write_text("Cats and dogs.\n", "utf-8")
    extra = '[skills]\ntool_search_enabled = true\n[tools]\ndirs = ["tools"]\n'
    path = write_config(tmp_path / "config.toml", server.base_url, api, extra)
    bot = Bot.from_config(path)
    try:
        await bot.start()
        first = bot.toolset
        described = first.namespace_descriptions(bot.settings.tools.namespaces)
        assert described == {"pets": "Cats and dogs."}
        assert index_built(first.catalog, described)

        registry = bot.registry
        assert registry is not None
        generation = registry.snapshot().generation
        folder("pets", "walk")
        await registry.wait_for_generation(generation + 1, timeout=TIMEOUT)
        toolset = await bot._tools.acurrent()
        assert "pets.walk" in toolset.catalog
        assert index_built(toolset.catalog, described)
        before = indexes(toolset.catalog)

        server.script(call("tool_search", query="dogs"), call("end"))
        await bot.ask("x")
    finally:
        await bot.aclose()

    assert loaded(server, 1) == ["pets.feed", "pets.walk"]
    assert [id(i) for i in indexes(toolset.catalog)] == [id(i) for i in before]


class _Switch:
    """A settings source that cannot announce a reload (no ``subscribe``)."""

    def __init__(self, settings: BotSettings) -> None:
        self.settings = settings

    def snapshot(self) -> BotSettings:
        return self.settings


@pytest.mark.parametrize("ahead", [True, False])
async def test_a_search_that_would_build_the_index_runs_off_the_event_loop(
    server: ScriptedOpenAIServer,
    client: openai.AsyncOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    ahead: bool,
) -> None:
    on = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
    source = _Switch(on if ahead else BotSettings())
    bot = Bot(source, music_tools(), client=client)
    source.settings = on.model_copy(update={"generation": 2})  # tool search on (ahead: again)
    catalog = bot.toolset.catalog
    assert index_built(catalog, {}) is ahead

    # A spy on the session's index lookup: which thread searched, and whether it was built.
    seen: list[tuple[int, bool]] = []
    original = session_module.search_index

    def spy(searched: ToolCatalog, namespaces: Any = ()) -> SearchIndex:
        seen.append((threading.get_ident(), index_built(searched, dict(namespaces))))
        return original(searched, namespaces)

    monkeypatch.setattr(session_module, "search_index", spy)
    server.script(call("tool_search", query="pause"), call("end"))
    await bot.ask("pause it")

    assert loaded(server, 1) == ["music.pause"]
    [(thread, built)] = seen
    assert built is ahead
    # Built ahead: on the loop (no thread hop); else the build goes to a worker thread.
    assert (thread == threading.get_ident()) is ahead


def many_tools() -> list[Tool]:
    tools = [
        Tool(f"repo.op_{i:02d}", "Change a repository.", None, lambda: "ok") for i in range(40)
    ]
    return [*tools, *music_tools(), Tool("clock", "The time now.", None, lambda: "noon")]


@pytest.mark.parametrize(
    "skills",
    [
        {},
        {"tool_search_directory_budget": 60},  # grouped by namespace
        {"prefetch_tools": ["clock"]},  # always loaded, so out of the directory
    ],
)
async def test_the_bot_builds_its_asks_directory_when_it_is_made(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    monkeypatch: pytest.MonkeyPatch,
    skills: dict[str, Any],
) -> None:
    built: list[int] = []
    original = session_module.build_directory

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(session_module, "build_directory", spy)
    bot = make_bot(
        many_tools(),
        skills=skills,
        tools_table={"namespaces": NAMESPACES},
        tool_filter=lambda context, names: names,  # narrows nothing: the same directory
    )
    assert len(built) == 1
    server.script(call("end"))
    await bot.ask("x")
    server.script(call("end"))
    await bot.ask("again")

    assert len(built) == 1  # both asks found it built
    [text] = [t for t in server.requests[0].system_texts if "<available_deferred_tools>" in t]
    block = text.partition("<available_deferred_tools>")[2].partition("</")[0]
    assert ("clock" in block.split()) is ("prefetch_tools" not in skills)
    assert ("repo.* (40 tools)" in block) is ("tool_search_directory_budget" in skills)


async def test_with_hidden_prefetch_tools_the_first_ask_builds_the_directory(
    server: ScriptedOpenAIServer, make_bot: BotFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []
    original = session_module.build_directory

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(session_module, "build_directory", spy)
    bot = make_bot(many_tools(), skills={"prefetch_tools": ["clock"], "prefetch_tools_hide": True})
    assert built == []  # what the ask hides depends on the prefetch's outcome
    server.script(call("end"))
    await bot.ask("x")
    assert len(built) == 1


# -- the semantic stage: tool texts embedded in the background at the same moments ---------------


def embeddings_settings(server: ScriptedOpenAIServer, cache: Path) -> BotSettings:
    wanted = {"model": "hashed-words", "base_url": server.base_url, "cache_dir": str(cache)}
    return BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_embeddings": wanted}}
    )


def join_embedding_threads(before: set[threading.Thread]) -> None:
    """Wait for the background embeddings of tool texts (`warm_semantic`) started since
    ``before`` to finish: the ``embeddings`` pool is idle."""
    del before
    assert POOLS.embeddings.wait_idle(TIMEOUT)


def embedding_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "tool_search_embeddings" in r.getMessage()
    ]


async def test_the_bot_embeds_its_tool_texts_before_the_first_ask(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI, tmp_path: Path
) -> None:
    before = set(threading.enumerate())
    bot = Bot(embeddings_settings(server, tmp_path), music_tools(), client=client)
    join_embedding_threads(before)
    # Every tool text (the four tools, send_message and end), before anything was asked.
    assert len(server.embeddings.texts()) == len(bot.toolset.catalog) == 6
    assert server.requests == []

    server.script(call("tool_search", query="albums"), call("end"))
    await bot.ask("play something")
    assert server.embeddings.texts()[6:] == ["albums"]  # the search embeds its query only


async def test_a_failed_background_embedding_is_the_one_warning_and_bm25_answers(
    server: ScriptedOpenAIServer,
    client: openai.AsyncOpenAI,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.embeddings.fault = "down"
    before = set(threading.enumerate())
    bot = Bot(embeddings_settings(server, tmp_path), music_tools(), client=client)
    join_embedding_threads(before)
    assert len(embedding_warnings(caplog)) == 1
    sent = len(server.embeddings.requests)

    server.script(call("tool_search", query="pause"), call("end"))
    await bot.ask("pause it")
    assert loaded(server, 1) == ["music.pause"]
    assert len(embedding_warnings(caplog)) == 1
    assert len(server.embeddings.requests) == sent  # the endpoint is left alone meanwhile


def test_the_wrapper_embeds_a_new_lists_tool_texts_once(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    tools: list[dict[str, Any]] = [
        {"type": "function", "function": {"name": f"music.{verb}", "description": verb}}
        for verb in ("play", "pause", "stop")
    ]
    inner = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    before = set(threading.enumerate())
    with wrap_openai(inner, settings=embeddings_settings(server, tmp_path)) as wrapped:
        for _ in range(3):
            server.script(text("ok"))
            user = {"role": "user", "content": "x"}
            wrapped.chat.completions.create(model="m", messages=[user], tools=tools)
            join_embedding_threads(before)
    assert len(server.embeddings.requests) == 1
    assert len(server.embeddings.texts()) == 3
