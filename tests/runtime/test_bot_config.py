"""A `Bot` from ``config.toml`` under hot reload: per-ask snapshots, broken edits, new clients,
rebuilt middleware stacks, and once-per-catalog warnings about unknown configured names."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot_toolsearch import Bot, Tool
from bot_toolsearch.config import ConfigReloader
from bot_toolsearch.testing import ScriptedOpenAIServer, call
from tests._helpers import write_config

TIMEOUT = 10.0


def reloader_of(bot: Bot) -> ConfigReloader:
    reloader = bot._reloader
    assert reloader is not None
    return reloader


def music_tools() -> list[Tool]:
    return [
        Tool(f"music.{verb}", f"Music: {verb} the song.", None, lambda: "ok")
        for verb in ("play", "pause", "stop")
    ]


MUSIC_WIRE = {"music-_-play", "music-_-pause", "music-_-stop"}


async def test_a_running_ask_keeps_its_settings_and_the_next_ask_sees_the_edit(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    skills = (
        "[skills]\ntool_search_enabled = true\n"
        'tool_search_always_loaded = ["send_message", "end", "hold"]\n'
    )
    path = write_config(
        tmp_path / "config.toml", server.base_url, api, skills + "tool_search_max_results = 5\n"
    )
    entered, release = asyncio.Event(), asyncio.Event()

    async def hold() -> str:
        entered.set()
        await release.wait()
        return "held"

    bot = Bot.from_config(path, [Tool("hold", "Hold the line.", None, hold), *music_tools()])
    try:
        server.script(call("hold"), call("tool_search", query="music"), call("end"))
        first = asyncio.create_task(bot.ask("play something"))
        await asyncio.wait_for(entered.wait(), TIMEOUT)
        write_config(path, server.base_url, api, skills + "tool_search_max_results = 1\n")
        await reloader_of(bot).wait_for_generation(2, timeout=TIMEOUT)
        release.set()
        old = await asyncio.wait_for(first, TIMEOUT)

        server.script(call("tool_search", query="music"), call("end"))
        new = await bot.ask("again")
    finally:
        await bot.aclose()

    assert (old.settings_generation, new.settings_generation) == (1, 2)
    # Round 3 of the running ask: its search loaded up to the old 5 results.
    assert set(server.requests[2].tool_names) >= MUSIC_WIRE
    assert "tool_search" in server.requests[2].tool_names
    # The next ask's search loads one tool only.
    assert len(MUSIC_WIRE & set(server.requests[4].tool_names)) == 1
    assert old.stats.tools_loaded != new.stats.tools_loaded


async def test_a_broken_edit_keeps_the_last_good_settings_for_the_next_ask(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    path = write_config(
        tmp_path / "config.toml", server.base_url, api, "[skills]\ntool_search_enabled = true\n"
    )
    bot = Bot.from_config(path, music_tools())
    reloader = reloader_of(bot)
    try:
        path.write_text("[skills\ntool_search_enabled = false\n", encoding="utf-8")
        await reloader.wait_until(lambda r: r.last_error is not None, timeout=TIMEOUT)
        server.script(call("end"))
        kept = await bot.ask("x")

        write_config(path, server.base_url, api, "[skills]\ntool_search_enabled = false\n")
        await reloader.wait_for_generation(2, timeout=TIMEOUT)
        server.script(call("end"))
        fixed = await bot.ask("y")
    finally:
        await bot.aclose()

    assert kept.settings_generation == 1
    assert server.requests[0].tool_names == ["send_message", "end", "tool_search"]
    assert fixed.settings_generation == 2
    assert "tool_search" not in server.requests[1].tool_names
    assert set(server.requests[1].tool_names) >= MUSIC_WIRE


async def test_a_model_change_builds_a_new_client_for_later_asks(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    path = write_config(tmp_path / "config.toml", server.base_url, api)
    bot = Bot.from_config(path)
    with ScriptedOpenAIServer() as other:
        try:
            server.script(call("end"))
            await bot.ask("x")
            first_client = bot._client_for(reloader_of(bot).snapshot())
            write_config(path, other.base_url, api)
            await reloader_of(bot).wait_for_generation(2, timeout=TIMEOUT)
            other.script(call("end"))
            await bot.ask("y")
            second_client = bot._client_for(reloader_of(bot).snapshot())
        finally:
            await bot.aclose()
        other.assert_consumed()
        assert len(other.requests) == 1

    assert len(server.requests) == 1
    assert second_client is not first_client
    assert first_client.is_closed()
    assert second_client.is_closed()


async def test_a_plugins_change_rebuilds_the_middleware_stack(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    skills = "[skills]\ntool_search_enabled = true\n"
    plugins = '[plugins]\nenabled = ["tool_search"]\n'
    path = write_config(tmp_path / "config.toml", server.base_url, api, plugins + skills)
    bot = Bot.from_config(path, music_tools())
    try:
        server.script(call("end"))
        await bot.ask("x")
        before = bot._pipeline_for(reloader_of(bot).snapshot())
        write_config(path, server.base_url, api, "[plugins]\nenabled = []\n" + skills)
        await reloader_of(bot).wait_for_generation(2, timeout=TIMEOUT)
        server.script(call("end"))
        await bot.ask("y")
        after = bot._pipeline_for(reloader_of(bot).snapshot())
    finally:
        await bot.aclose()

    assert after is not before
    assert server.requests[0].tool_names == ["send_message", "end", "tool_search"]
    # No tool-search middleware any more: the full list, no directory message.
    assert set(server.requests[1].tool_names) == {"send_message", "end", *MUSIC_WIRE}
    assert not any("available_deferred_tools" in t for t in server.requests[1].system_texts)


async def test_unknown_always_loaded_and_prefetch_names_warn_once_per_catalog(
    server: ScriptedOpenAIServer,
    tmp_path: Path,
    api: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    skills = (
        "[skills]\ntool_search_enabled = true\n"
        'tool_search_always_loaded = ["send_message", "end", "ghost", "music.play"]\n'
        'prefetch_tools = ["phantom"]\n'
    )
    path = write_config(tmp_path / "config.toml", server.base_url, api, skills)
    caplog.set_level(logging.WARNING, logger="bot_toolsearch")
    bot = Bot.from_config(path, music_tools())
    try:
        for _ in range(3):
            server.script(call("end"))
            await bot.ask("x")
        warned = [
            r.getMessage()
            for r in caplog.records
            if r.name == "bot_toolsearch" and r.levelno == logging.WARNING
        ]
        bot.set_tools(music_tools()[:1])  # a new catalog: warned about again, once
        for _ in range(2):
            server.script(call("end"))
            await bot.ask("y")
        again = [
            r.getMessage()
            for r in caplog.records
            if r.name == "bot_toolsearch" and r.levelno == logging.WARNING
        ][len(warned) :]
    finally:
        await bot.aclose()

    expected = [
        "[skills] tool_search_always_loaded names 'ghost', which matches no tool",
        "[skills] prefetch_tools names 'phantom', which matches no tool",
    ]
    assert warned == expected
    assert again == expected
