"""Loading config.toml: sources, env fallbacks, and every validation message."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot_toolsearch import BotSettings, ConfigError
from bot_toolsearch._config.env import ENV_FALLBACKS, _reset_env_log
from bot_toolsearch._config.file import available_plugins, check_config, load_config
from bot_toolsearch.config import load_settings

REPO = Path(__file__).resolve().parents[2]


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


def only_error(path: Path) -> ConfigError:
    errors = check_config(path)
    assert len(errors) == 1, [str(e) for e in errors]
    return errors[0]


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, "")) == BotSettings()


def test_values_and_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_SEARCH_MAX_RESULTS", "9")
    path = write(tmp_path, "[skills]\ntool_search_enabled = true\n")
    loaded = load_config(path)
    assert loaded.settings.skills.tool_search_enabled is True
    assert loaded.settings.skills.tool_search_max_results == 9
    assert loaded.sources["skills.tool_search_enabled"] == "file"
    assert loaded.sources["skills.tool_search_max_results"] == "env TOOL_SEARCH_MAX_RESULTS"
    assert loaded.sources["tools.dot_delimiter"] == "default"
    assert loaded.settings.generation == 0


def test_file_key_wins_over_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_SEARCH_ENABLED", "true")
    path = write(tmp_path, "[skills]\ntool_search_enabled = false\n")
    assert load_settings(path).skills.tool_search_enabled is False


@pytest.mark.parametrize(
    "case",
    [
        ("TOOL_SEARCH_ENABLED", " YES ", "skills.tool_search_enabled", True),
        ("TOOL_SEARCH_ENABLED", "0", "skills.tool_search_enabled", False),
        ("TOOL_SEARCH_ALWAYS_LOADED", "send_message, end ,, x", "skills.tool_search_always_loaded",
         ("send_message", "end", "x")),
        ("TOOL_SEARCH_ALWAYS_LOADED", " , ", "skills.tool_search_always_loaded", ()),
        ("TOOL_SEARCH_MAX_RESULTS", " 9 ", "skills.tool_search_max_results", 9),
        ("PREFETCH_TOOLS", "get_current_time", "skills.prefetch_tools", ("get_current_time",)),
        ("PREFETCH_TOOLS_HIDE", "on", "skills.prefetch_tools_hide", True),
        ("TOOL_SEARCH_BLIND_CALL", "load", "skills.tool_search_blind_call", "load"),
        ("TOOL_SEARCH_LOADING", " bridge ", "skills.tool_search_loading", "bridge"),
        ("TOOLS_DOT_DELIMITER", "__", "tools.dot_delimiter", "__"),
        ("EASTER_EGG_AGENT_CALL_MESSAGE_ENABLED", "tools", "easter_egg.agent_call_message_enabled",
         "tools"),
        ("EASTER_EGG_AGENT_CALL_MESSAGE_ENABLED", "true", "easter_egg.agent_call_message_enabled",
         "agent"),
        ("EASTER_EGG_AGENT_CALL_MESSAGE_ENABLED", "off", "easter_egg.agent_call_message_enabled",
         "none"),
    ],
)  # fmt: skip
def test_env_fallbacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: tuple[str, str, str, object]
) -> None:
    var, raw, key, expected = case
    monkeypatch.setenv(var, raw)
    loaded = load_config(write(tmp_path, ""))
    table, name = key.split(".")
    assert getattr(getattr(loaded.settings, table), name) == expected
    assert loaded.sources[key] == f"env {var}"


def test_empty_env_value_counts_as_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_SEARCH_ALWAYS_LOADED", "   ")
    loaded = load_config(write(tmp_path, ""))
    assert loaded.settings.skills.tool_search_always_loaded == ("send_message", "end")
    assert loaded.sources["skills.tool_search_always_loaded"] == "default"


def test_each_env_fallback_is_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TOOL_SEARCH_ENABLED", "true")
    monkeypatch.setenv("PREFETCH_TOOLS", "a")
    path = write(tmp_path, "")
    with caplog.at_level(logging.DEBUG, logger="bot_toolsearch.config"):
        for _ in range(3):
            load_settings(path)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "INFO",
            "settings from the environment: TOOL_SEARCH_ENABLED (skills.tool_search_enabled), "
            "PREFETCH_TOOLS (skills.prefetch_tools)",
        )
    ]


@pytest.mark.parametrize(
    ("var", "raw", "message"),
    [
        ("TOOL_SEARCH_ENABLED", "maybe", "expected true or false (1/0, yes/no, on/off), got 'ma"),
        ("TOOL_SEARCH_MAX_RESULTS", "2.5", "expected an integer, got '2.5'"),
        ("TOOL_SEARCH_MAX_RESULTS", "0", "must be at least 1, got 0"),
        ("TOOLS_DOT_DELIMITER", ".", "must be 1-16 characters"),
        ("TOOL_SEARCH_BLIND_CALL", "sometimes", "must be one of 'reject' or 'load'"),
        ("TOOL_SEARCH_LOADING", "prepend", "'append', 'additional_tools', 'bridge' or 'auto'"),
    ],
)  # fmt: skip
def test_env_errors_name_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, var: str, raw: str, message: str
) -> None:
    monkeypatch.setenv(var, raw)
    err = only_error(write(tmp_path, ""))
    assert f"(from environment variable {var})" in str(err)
    assert message in str(err)
    assert err.line is None


# (file text, key, line, column, message) — the column points at the value (at the key for
# unknown keys and tables).
CASES = [
    ('[skills]\ntool_search_enabled = "maybe"\n', "skills.tool_search_enabled", 2, 23,
     'expected true or false, got "maybe" (a string)'),
    ("[skills]\ntool_search_enabled = 1\n", "skills.tool_search_enabled", 2, 23,
     "expected true or false, got 1 (an integer)"),
    ("[skills]\ntool_search_max_results = 0\n", "skills.tool_search_max_results", 2, 27,
     "must be at least 1, got 0 (an integer)"),
    ("[skills]\ntool_search_max_results = -4\n", "skills.tool_search_max_results", 2, 27,
     "must be at least 1, got -4 (an integer)"),
    ("[skills]\ntool_search_max_results = 3.9\n", "skills.tool_search_max_results", 2, 27,
     "expected an integer, got 3.9 (a float)"),
    ('[skills]\ntool_search_max_results = "7"\n', "skills.tool_search_max_results", 2, 27,
     'expected an integer, got "7" (a string)'),
    ("[skills]\ntool_search_max_results = true\n", "skills.tool_search_max_results", 2, 27,
     "expected an integer, got true (a boolean)"),
    ('[skills]\ntool_search_always_loaded = "send_message"\n', "skills.tool_search_always_loaded",
     2, 29, 'expected an array, got "send_message" (a string)'),
    ("[skills]\ntool_search_always_loaded = [1]\n", "skills.tool_search_always_loaded[0]", 2, 29,
     "expected a string, got 1 (an integer)"),
    ('[skills]\ntool_search_blind_call = "maybe"\n', "skills.tool_search_blind_call", 2, 26,
     "must be one of 'reject' or 'load', got \"maybe\" (a string)"),
    ("[skills]\ntool_search_maxresults = 3\n", "skills.tool_search_maxresults", 2, 1,
     "unknown key 'tool_search_maxresults' (did you mean 'tool_search_max_results'?)"),
    ("[skills]\nzzz = 3\n", "skills.zzz", 2, 1, "unknown key 'zzz'; known keys: tool_search_en"),
    ('[tools]\ndot_delimiter = "."\n', "tools.dot_delimiter", 2, 17,
     "must be 1-16 characters from A-Z a-z 0-9 _ - (no dots or spaces)"),
    ('[tools]\ndot_delimiter = "a b"\n', "tools.dot_delimiter", 2, 17, "must be 1-16 characters"),
    ('[easter_egg]\nagent_call_message_enabled = "loud"\n', "easter_egg.agent_call_message_enabled",
     2, 30, "must be one of 'none', 'agent', 'tools', 'clean' or 'all'"),
    ('[model]\napi = "completions"\n', "model.api", 2, 7,
     "must be one of 'chat_completions' or 'responses'"),
    ("[model]\ntimeout = 0\n", "model.timeout", 2, 11, "must be greater than 0.0, got 0 (an int"),
    ("[model]\nmax_rounds = 0\n", "model.max_rounds", 2, 14, "must be at least 1, got 0"),
    ('[plugins]\nenabled = ["tool_serch"]\n', "plugins.enabled", 2, 11,
     "unknown plugin 'tool_serch' (did you mean 'tool_search'?); available plugins: tool_search"),
    ('[plugins]\nenabled = ["nope"]\n', "plugins.enabled", 2, 11,
     "unknown plugin 'nope'; available plugins: tool_search"),
    ("[skils]\nx = 1\n", "skils", 1, 2, "unknown table 'skils' (did you mean 'skills'?)"),
    ("[core]\nx = 1\n", "core", 1, 2, "unknown table 'core'; known tables: model, plugins"),
    ("skills = 3\n", "skills", 1, 10, "must be a table ([skills]), got 3 (an integer)"),
    ("[bot]\nhot_reload = \"no\"\n", "bot.hot_reload", 2, 14, "expected true or false"),
    ('[[tools.mcp_servers]]\nname = "a.b"\ncommand = "x"\n', "tools.mcp_servers[0].name", 2, 8,
     "must be 1-64 characters from A-Z a-z 0-9 _ -"),
    ('[[tools.mcp_servers]]\nname = "a"\n', "tools.mcp_servers[0]", 1, 3,
     "needs exactly one of 'command' (stdio) or 'url' (streamable HTTP)"),
    ('[[tools.mcp_servers]]\nname = "a"\ncommand = "x"\n[[tools.mcp_servers]]\nname = "b"\n'
     'url = "ftp://x"\n', "tools.mcp_servers[1].url", 6, 7,
     "must start with http:// or https://"),
    ('[[tools.mcp_servers]]\nname = "a"\ncommand = "x"\ncomand = "y"\n',
     "tools.mcp_servers[0].comand", 4, 1, "unknown key 'comand' (did you mean 'command'?)"),
    ("[tools]\ndirs = [1]\n", "tools.dirs", 2, 8, "expected non-empty folder paths"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[1] for c in CASES])
def test_every_validation_message(tmp_path: Path, case: tuple[str, str, int, int, str]) -> None:
    text, key, line, column, message = case
    path = write(tmp_path, text)
    err = only_error(path)
    assert (err.key, err.line, err.column) == (key, line, column)
    assert str(err).startswith(f"{path}:{line}:{column}: {key}: ")
    assert message in str(err)
    with pytest.raises(ConfigError) as raised:
        load_settings(path)
    assert str(raised.value) == str(err)


def test_error_carries_the_offending_value(tmp_path: Path) -> None:
    err = only_error(write(tmp_path, "[skills]\ntool_search_max_results = 0\n"))
    assert err.value == 0
    assert err.path == str(tmp_path / "config.toml")


def test_all_errors_are_listed_in_file_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[tools]\ndot_delimiter = "."\n[skills]\ntool_search_enabled = "maybe"\n'
        "tool_search_max_results = 0\n[skils]\n",
    )
    errors = check_config(path)
    assert [e.line for e in errors] == [2, 4, 5, 6]


def test_toml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    err = only_error(write(tmp_path, "[skills]\ntool_search_enabled = tru\n"))
    assert err.line == 2
    assert err.column is not None
    assert re.match(rf"{re.escape(str(tmp_path))}/config.toml:2:\d+: invalid TOML: ", str(err))


def test_half_written_header_is_a_syntax_error(tmp_path: Path) -> None:
    err = only_error(write(tmp_path, "[skills]\ntool_search_enabled = true\n[tool"))
    assert err.line == 3
    assert "invalid TOML" in err.message


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match="is a directory"):
        load_settings(tmp_path)


def test_not_utf8_points_at_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'[model]\nname = "\xff"\n')
    err = only_error(path)
    assert (err.line, err.column) == (2, 9)
    assert "not valid UTF-8" in err.message


def test_relative_dirs_resolve_against_the_config_folder(tmp_path: Path) -> None:
    path = write(tmp_path, '[tools]\ndirs = ["tools", "/abs/x"]\n')
    assert load_settings(path).tools.dirs == (tmp_path.resolve() / "tools", Path("/abs/x"))


def test_mcp_servers_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[[tools.mcp_servers]]\nname = "time"\ncommand = "mcp-server-time"\nargs = ["--x"]\n'
        'env = { A = "1" }\n[[tools.mcp_servers]]\nname = "web"\nurl = "http://127.0.0.1:9/mcp"\n',
    )
    servers = load_settings(path).tools.mcp_servers
    assert [s.name for s in servers] == ["time", "web"]
    assert servers[0].args == ("--x",)
    assert dict(servers[0].env) == {"A": "1"}
    assert servers[1].url == "http://127.0.0.1:9/mcp"


def test_legacy_easter_egg_boolean_in_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[easter_egg]\nagent_call_message_enabled = true\n")
    assert load_settings(path).easter_egg.agent_call_message_enabled == "agent"


def test_the_package_registers_tool_search() -> None:
    assert "tool_search" in available_plugins()


def test_empty_plugin_list_is_allowed(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, "[plugins]\nenabled = []\n")).plugins.enabled == ()


def test_example_config_is_the_defaults_except_where_it_says_so() -> None:
    example = load_settings(REPO / "config.example.toml", env={})
    # The one deliberate difference: the example turns tool search on. Everything else,
    # [tools] deny included, is the documented default (issue 22: no hidden deny pattern).
    expected = BotSettings().model_copy(
        update={"skills": BotSettings().skills.model_copy(update={"tool_search_enabled": True})}
    )
    assert example == expected


def test_example_config_commented_entries_are_valid(tmp_path: Path) -> None:
    """Uncommenting the sample base_url, api_key and MCP servers still gives a valid file."""
    lines = (REPO / "config.example.toml").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# [[tools.mcp_servers]]"))
    end = next(i for i, line in enumerate(lines) if line == "[easter_egg]")
    out = []
    for i, line in enumerate(lines):
        sample = start <= i < end or line.startswith(("# base_url", "# api_key"))
        out.append(line.removeprefix("# ") if sample and line != "#" else line)
    settings = load_settings(write(tmp_path, "\n".join(out) + "\n"), env={})
    assert [s.name for s in settings.tools.mcp_servers] == ["time", "docs"]
    assert settings.model.base_url == "http://127.0.0.1:8000/v1"


def test_example_documents_every_key_and_env_var() -> None:
    text = (REPO / "config.example.toml").read_text(encoding="utf-8")
    for table in ("model", "plugins", "skills", "tools", "easter_egg", "bot"):
        assert f"[{table}]" in text
        for key in type(getattr(BotSettings(), table)).model_fields:
            if key == "mcp_servers":
                assert "[[tools.mcp_servers]]" in text
                continue
            if key == "namespaces":
                assert "# [tools.namespaces]\n# github = " in text
                continue
            assert re.search(rf"^(# )?{key} = ", text, re.M), f"{table}.{key}"
    for var in ENV_FALLBACKS:
        assert var in text
