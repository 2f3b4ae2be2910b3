"""``[conversations]`` and ``[skills] tool_search_keep_loaded`` in a real config file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot_toolsearch import Bot, ConfigError
from bot_toolsearch._config.env import ENV_FALLBACKS, _reset_env_log
from bot_toolsearch._config.file import check_config, load_config
from bot_toolsearch.conversations import MemoryConversationStore, SQLiteConversationStore


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ENV_FALLBACKS:
        monkeypatch.delenv(var, raising=False)
    _reset_env_log()
    yield
    _reset_env_log()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults(tmp_path: Path) -> None:
    settings = load_config(write(tmp_path, "")).settings
    assert settings.conversations.store == "sqlite:///bot.db"
    assert (settings.conversations.max_turns, settings.conversations.max_tokens) == (20, 8000)
    assert settings.skills.tool_search_keep_loaded == "ask"


def test_values_from_the_file(tmp_path: Path) -> None:
    text = (
        '[skills]\ntool_search_keep_loaded = "conversation"\n'
        '[conversations]\nstore = "memory"\nmax_turns = 3\nmax_tokens = 0\n'
    )
    loaded = load_config(write(tmp_path, text))
    assert loaded.settings.skills.tool_search_keep_loaded == "conversation"
    assert loaded.settings.conversations.store == "memory"
    assert loaded.sources["conversations.max_turns"] == "file"


def test_keep_loaded_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_SEARCH_KEEP_LOADED", " conversation ")
    loaded = load_config(write(tmp_path, ""))
    assert loaded.settings.skills.tool_search_keep_loaded == "conversation"
    assert loaded.sources["skills.tool_search_keep_loaded"] == "env TOOL_SEARCH_KEEP_LOADED"


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ('[conversations]\nstore = "mysql://db"\n', 2, "conversations.store"),
        ("[conversations]\nmax_turns = 0\n", 2, "must be at least 1, got 0"),
        ("[conversations]\nmax_tokens = -1\n", 2, "must be at least 0, got -1"),
        ('[skills]\ntool_search_keep_loaded = "chat"\n', 2, "'ask' or 'conversation'"),
    ],
)
def test_bad_values_name_the_line(tmp_path: Path, text: str, line: int, needle: str) -> None:
    errors = check_config(write(tmp_path, text))
    assert len(errors) == 1
    error: ConfigError = errors[0]
    assert error.line == line
    assert needle in str(error)


async def test_from_config_opens_the_configured_store(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    path = write(
        tmp_path / "cfg",
        '[bot]\nhot_reload = false\n[conversations]\nstore = "sqlite:///data/chat.db"\n',
    )
    bot = Bot.from_config(path)
    store = bot.conversations
    assert isinstance(store, SQLiteConversationStore)
    assert store.path == tmp_path / "cfg" / "data" / "chat.db"
    assert not store.path.exists()  # opened on first use only
    await bot.aclose()
    memory = write(tmp_path, '[bot]\nhot_reload = false\n[conversations]\nstore = "memory"\n')
    bot = Bot.from_config(memory)
    assert isinstance(bot.conversations, MemoryConversationStore)
    await bot.aclose()
