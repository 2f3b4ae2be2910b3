"""One rule for every door (issue 29): which tool-search mode is in force, and why, said once
at start-up; settings that leave ``tool_search_enabled`` unset are never silently off."""

from __future__ import annotations

import logging
from pathlib import Path

import openai
import pytest

from bot_toolsearch import Bot, BotSettings, wrap_openai
from bot_toolsearch._services.mode import search_mode

SKILLS_WITHOUT_ENABLED = "[skills]\ntool_search_max_results = 3\n\n[bot]\nhot_reload = false\n"


def test_the_rule() -> None:
    assert search_mode(None).on
    unset = search_mode(BotSettings.model_validate({"skills": {"tool_search_max_results": 3}}))
    assert (unset.on, unset.unset) == (False, True)
    assert "[skills] tool_search_enabled is not set in the settings" in str(unset)
    on = search_mode(BotSettings.model_validate({"skills": {"tool_search_enabled": True}}))
    assert str(on) == "tool search on ([skills] tool_search_enabled = true in the settings)"
    off = search_mode(
        BotSettings.model_validate({"skills": {"tool_search_enabled": False}}), source="config x"
    )
    assert str(off) == "tool search off ([skills] tool_search_enabled = false in the config x)"
    no_plugin = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True}, "plugins": {"enabled": []}}
    )
    assert search_mode(no_plugin, plugins=True).on is False
    assert search_mode(no_plugin).on is True  # the wrapper and the proxy need no plugin


def _mode_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "bot_toolsearch.mode"]


async def test_a_bot_whose_config_leaves_it_unset_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(SKILLS_WITHOUT_ENABLED, encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="bot_toolsearch.mode"):
        bot = Bot.from_config(path)
    [record] = _mode_records(caplog)
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(
        f"Bot: tool search off ([skills] tool_search_enabled is not set in the config {path} "
    )
    await bot.aclose()


async def test_a_bot_that_sets_it_says_so_at_info(caplog: pytest.LogCaptureFixture) -> None:
    settings = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
    with caplog.at_level(logging.INFO, logger="bot_toolsearch.mode"):
        bot = Bot(settings)
    [record] = _mode_records(caplog)
    assert (record.levelno, record.getMessage()) == (
        logging.INFO,
        "Bot: tool search on ([skills] tool_search_enabled = true in the settings)",
    )
    await bot.aclose()


def test_the_wrapper_states_the_same_rule(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "config.toml"
    path.write_text(SKILLS_WITHOUT_ENABLED, encoding="utf-8")
    inner = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    with caplog.at_level(logging.INFO, logger="bot_toolsearch.mode"):
        wrap_openai(inner, config=path).close()
        wrap_openai(inner).close()
    unset, default = _mode_records(caplog)
    assert unset.levelno == logging.WARNING
    assert unset.getMessage().startswith(
        "wrap_openai: tool search off ([skills] tool_search_enabled is not set in the config "
        f"{path}"
    )
    assert (default.levelno, default.getMessage()) == (
        logging.INFO,
        "wrap_openai: tool search on (no config: the defaults, with tool search on)",
    )


async def test_an_edit_that_switches_tool_search_is_said_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from bot_toolsearch.config import ConfigReloader

    path = tmp_path / "config.toml"
    path.write_text(SKILLS_WITHOUT_ENABLED, encoding="utf-8")
    reloader = ConfigReloader(path)
    with caplog.at_level(logging.INFO, logger="bot_toolsearch.mode"):
        bot = Bot(reloader)
        path.write_text(SKILLS_WITHOUT_ENABLED.replace("3", "4"), encoding="utf-8")
        assert reloader.reload()  # still off: nothing more said
        path.write_text("[skills]\ntool_search_enabled = true\n", encoding="utf-8")
        assert reloader.reload()
    first, switched = _mode_records(caplog)
    assert first.getMessage().startswith(
        f"Bot: tool search off ([skills] tool_search_enabled is not set in the config {path}"
    )
    assert switched.getMessage() == (
        f"Bot: tool search on ([skills] tool_search_enabled = true in the config {path})"
    )
    await bot.aclose()
