"""set_value / get_value: one key changes, every other byte stays, invalid edits are refused."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from bot_toolsearch import ConfigError
from bot_toolsearch._config.env import ENV_FALLBACKS
from bot_toolsearch.config import get_value, set_value

ORIGINAL = """\
# Bot config -- hand-written, keep my comments!
[skills]
tool_search_enabled = true   # turned on 2024-05
tool_search_max_results = 5  # five is plenty
tool_search_always_loaded = [ 'send_message',   "end" ]

# wire names
[tools]
dot_delimiter = '-_-'
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ENV_FALLBACKS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(ORIGINAL, encoding="utf-8")
    return path


def test_existing_key_changes_and_nothing_else(path: Path) -> None:
    set_value(path, "skills.tool_search_max_results", 8)
    expected = ORIGINAL.replace("tool_search_max_results = 5 ", "tool_search_max_results = 8 ")
    assert path.read_text(encoding="utf-8") == expected
    assert get_value(path, "skills.tool_search_max_results") == 8


def test_new_key_in_existing_table_keeps_the_blank_line(path: Path) -> None:
    set_value(path, "skills.tool_search_blind_call", "load")
    expected = ORIGINAL.replace('"end" ]\n\n', '"end" ]\ntool_search_blind_call = "load"\n\n')
    assert path.read_text(encoding="utf-8") == expected


def test_new_table_is_appended(path: Path) -> None:
    set_value(path, "easter_egg.agent_call_message_enabled", "tools")
    text = path.read_text(encoding="utf-8")
    assert text.startswith(ORIGINAL)
    assert text[len(ORIGINAL) :] == '\n[easter_egg]\nagent_call_message_enabled = "tools"\n'


def test_lists_and_tuples_are_written_as_arrays(path: Path) -> None:
    set_value(path, "tools.deny", ("admin.*", "debug_*"))
    assert get_value(path, "tools.deny") == ("admin.*", "debug_*")
    assert 'deny = ["admin.*", "debug_*"]' in path.read_text(encoding="utf-8")


def test_crlf_file_stays_crlf(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(ORIGINAL.replace("\n", "\r\n").encode())
    set_value(path, "skills.prefetch_tools_hide", True)
    expected = ORIGINAL.replace('"end" ]\n\n', '"end" ]\nprefetch_tools_hide = true\n\n')
    assert path.read_bytes() == expected.replace("\n", "\r\n").encode()
    set_value(path, "skills.tool_search_max_results", 9)
    expected = expected.replace("tool_search_max_results = 5 ", "tool_search_max_results = 9 ")
    assert path.read_bytes() == expected.replace("\n", "\r\n").encode()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("skills.tool_search_max_results", 0, "must be at least 1, got 0"),
        ("skills.tool_search_enabled", "maybe", 'expected true or false, got "maybe"'),
        ("tools.dot_delimiter", ".", "must be 1-16 characters"),
        ("plugins.enabled", ["tool_serch"], "unknown plugin 'tool_serch'"),
        ("skills.tool_search_maxresults", 3, "did you mean 'tool_search_max_results'?"),
        ("skils.tool_search_enabled", True, "unknown table 'skils' (did you mean 'skills'?)"),
        ("tool_search_enabled", True, "expected TABLE.KEY"),
    ],
)
def test_invalid_edit_is_refused_and_the_file_untouched(
    path: Path, key: str, value: object, message: str
) -> None:
    before = path.stat()
    with pytest.raises(ConfigError, match=re.escape(message)):
        set_value(path, key, value)
    assert path.read_text(encoding="utf-8") == ORIGINAL
    assert path.stat().st_ino == before.st_ino  # not even replaced by an identical copy
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml"]


def test_refusal_names_the_line_in_the_new_document(path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        set_value(path, "skills.tool_search_max_results", 0)
    assert (raised.value.line, raised.value.column) == (4, 27)


def test_write_is_atomic_and_keeps_permissions(path: Path) -> None:
    os.chmod(path, 0o640)
    inode = path.stat().st_ino
    set_value(path, "skills.tool_search_max_results", 6)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != inode  # replaced by rename, never rewritten in place
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml"]


def test_a_symlinked_file_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "bot.toml"
    target.write_text(ORIGINAL, encoding="utf-8")
    link = tmp_path / "config.toml"
    link.symlink_to("real/bot.toml")
    set_value(link, "skills.tool_search_max_results", 9)
    assert link.is_symlink()
    assert os.readlink(link) == "real/bot.toml"
    assert "tool_search_max_results = 9  # five is plenty" in target.read_text(encoding="utf-8")
    assert get_value(link, "skills.tool_search_max_results") == 9
    # The temporary file went beside the target, and nothing was left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml", "real"]
    assert [p.name for p in target.parent.iterdir()] == ["bot.toml"]


def test_missing_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        set_value(tmp_path / "absent.toml", "skills.tool_search_enabled", True)
    broken = tmp_path / "broken.toml"
    broken.write_text("[skills\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid TOML") as raised:
        set_value(broken, "skills.tool_search_enabled", True)
    assert raised.value.line == 1
    assert broken.read_text(encoding="utf-8") == "[skills\n"


def test_value_that_is_not_toml(path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot write"):
        set_value(path, "model.name", object())
    assert path.read_text(encoding="utf-8") == ORIGINAL


def test_get_value_is_the_effective_value(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFETCH_TOOLS", "a,b")
    assert get_value(path, "skills.prefetch_tools") == ("a", "b")  # env
    assert get_value(path, "skills.tool_search_enabled") is True  # file
    assert get_value(path, "model.max_rounds") == 16  # default
    with pytest.raises(ConfigError, match="did you mean 'max_rounds'"):
        get_value(path, "model.max_round")


def test_edit_ignores_an_invalid_environment(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The file is what is edited and checked; a bad env var is reported when loading.
    monkeypatch.setenv("TOOL_SEARCH_BLIND_CALL", "sometimes")
    set_value(path, "skills.tool_search_max_results", 7)
    assert "tool_search_max_results = 7" in path.read_text(encoding="utf-8")
