"""Environment fallbacks: the pydantic-settings model's conversion rules, through `apply_env`."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from bot_toolsearch import ConfigError
from bot_toolsearch._config.env import ENV_FALLBACKS, EnvFallbacks, _reset_env_log, apply_env


@pytest.fixture(autouse=True)
def _fresh_log() -> Iterator[None]:
    _reset_env_log()
    yield
    _reset_env_log()


def applied(environ: dict[str, str], data: dict[str, Any] | None = None) -> dict[str, Any]:
    """What ``apply_env`` puts in ``data``; fails on any error."""
    data = {} if data is None else data
    errors: list[ConfigError] = []
    apply_env(data, environ, errors)
    assert errors == [], [str(e) for e in errors]
    return data


def errors_for(environ: dict[str, str]) -> list[ConfigError]:
    errors: list[ConfigError] = []
    apply_env({}, environ, errors)
    return errors


def test_every_variable_is_a_model_field() -> None:
    assert list(EnvFallbacks.model_fields) == list(ENV_FALLBACKS)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("YES", True), (" On ", True),
     ("0", False), ("False", False), ("no", False), ("OFF", False)],
)  # fmt: skip
def test_bool_words(raw: str, expected: bool) -> None:
    data = applied({"TOOL_SEARCH_ENABLED": raw, "PREFETCH_TOOLS_HIDE": raw})
    assert data == {"skills": {"tool_search_enabled": expected, "prefetch_tools_hide": expected}}


@pytest.mark.parametrize("raw", ["maybe", "t", "y", "2", "truth"])
def test_other_bool_text_is_an_error_naming_the_variable(raw: str) -> None:
    (err,) = errors_for({"TOOL_SEARCH_ENABLED": raw})
    assert str(err) == (
        "skills.tool_search_enabled (from environment variable TOOL_SEARCH_ENABLED): "
        f"expected true or false (1/0, yes/no, on/off), got {raw!r}"
    )
    assert (err.key, err.value, err.line) == ("skills.tool_search_enabled", raw, None)


@pytest.mark.parametrize(("raw", "expected"), [("9", 9), (" 9 ", 9), ("-3", -3), ("+4", 4)])
def test_int_text(raw: str, expected: int) -> None:
    assert applied({"TOOL_SEARCH_MAX_RESULTS": raw}) == {
        "skills": {"tool_search_max_results": expected}
    }


@pytest.mark.parametrize("raw", ["2.5", "abc", "2.0", "1_000", "1e3"])
def test_non_integer_text_is_an_error(raw: str) -> None:
    (err,) = errors_for({"TOOL_SEARCH_MAX_RESULTS": raw})
    assert "(from environment variable TOOL_SEARCH_MAX_RESULTS)" in str(err)
    assert str(err).endswith(f"expected an integer, got {raw!r}")


def test_lists_are_comma_separated_not_json() -> None:
    data = applied({"TOOL_SEARCH_ALWAYS_LOADED": " a, b ,,c ,", "PREFETCH_TOOLS": '["x"]'})
    assert data == {
        "skills": {"tool_search_always_loaded": ["a", "b", "c"], "prefetch_tools": ['["x"]']}
    }


def test_a_list_of_only_commas_is_empty() -> None:
    assert applied({"PREFETCH_TOOLS": ", ,"}) == {"skills": {"prefetch_tools": []}}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", "agent"), ("1", "agent"), ("YES", "agent"), ("on", "agent"),
     ("false", "none"), ("0", "none"), ("No", "none"), ("off", "none"),
     (" tools ", "tools"), ("Weird", "Weird")],
)  # fmt: skip
def test_easter_egg_legacy_words(raw: str, expected: str) -> None:
    data = applied({"EASTER_EGG_AGENT_CALL_MESSAGE_ENABLED": raw})
    assert data == {"easter_egg": {"agent_call_message_enabled": expected}}


def test_strings_are_stripped_and_left_for_the_settings_to_check() -> None:
    data = applied({"TOOL_SEARCH_BLIND_CALL": "  load ", "TOOLS_DOT_DELIMITER": "."})
    assert data == {"skills": {"tool_search_blind_call": "load"}, "tools": {"dot_delimiter": "."}}


@pytest.mark.parametrize("raw", ["", " ", "\t\n"])
def test_blank_counts_as_unset(raw: str) -> None:
    environ = dict.fromkeys(ENV_FALLBACKS, raw)
    data: dict[str, Any] = {}
    errors: list[ConfigError] = []
    assert apply_env(data, environ, errors) == {}
    assert (data, errors) == ({}, [])


def test_a_key_in_the_file_wins_and_its_variable_is_not_read() -> None:
    data: dict[str, Any] = {"skills": {"tool_search_enabled": False}}
    errors: list[ConfigError] = []
    used = apply_env(data, {"TOOL_SEARCH_ENABLED": "maybe", "PREFETCH_TOOLS": "a"}, errors)
    assert errors == []
    assert data == {"skills": {"tool_search_enabled": False, "prefetch_tools": ["a"]}}
    assert used == {("skills", "prefetch_tools"): "PREFETCH_TOOLS"}


def test_each_bad_variable_is_reported_and_the_good_ones_still_apply() -> None:
    environ = {
        "TOOL_SEARCH_ENABLED": "maybe",
        "TOOL_SEARCH_MAX_RESULTS": "lots",
        "PREFETCH_TOOLS_HIDE": "yes",
        "TOOLS_DOT_DELIMITER": "--",
    }
    data: dict[str, Any] = {}
    errors: list[ConfigError] = []
    used = apply_env(data, environ, errors)
    assert sorted(e.key or "" for e in errors) == [
        "skills.tool_search_enabled",
        "skills.tool_search_max_results",
    ]
    assert data == {"skills": {"prefetch_tools_hide": True}, "tools": {"dot_delimiter": "--"}}
    assert used == {
        ("skills", "prefetch_tools_hide"): "PREFETCH_TOOLS_HIDE",
        ("tools", "dot_delimiter"): "TOOLS_DOT_DELIMITER",
    }


def test_only_the_given_mapping_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_SEARCH_ENABLED", "true")
    assert applied({}) == {}
    assert EnvFallbacks.from_environ({}).TOOL_SEARCH_ENABLED is None
    # A bare EnvFallbacks() reads the process environment, like any BaseSettings.
    assert EnvFallbacks().TOOL_SEARCH_ENABLED is True


def test_model_is_frozen_and_reports_by_variable_name() -> None:
    fallbacks = EnvFallbacks.from_environ({"PREFETCH_TOOLS": "a,b", "OTHER": "x"})
    assert fallbacks.PREFETCH_TOOLS == ("a", "b")
    with pytest.raises(ValidationError):
        fallbacks.PREFETCH_TOOLS = ()
    with pytest.raises(ValidationError) as caught:
        EnvFallbacks.from_environ({"PREFETCH_TOOLS_HIDE": "sure"})
    assert [e["loc"] for e in caught.value.errors()] == [("PREFETCH_TOOLS_HIDE",)]


def test_variable_names_are_case_sensitive() -> None:
    assert applied({"tool_search_enabled": "true"}) == {}


def test_variables_in_use_are_one_info_line_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="bot_toolsearch.config"):
        for _ in range(3):
            applied({"TOOL_SEARCH_ENABLED": "1", "PREFETCH_TOOLS": "a"})
        errors_for({"TOOL_SEARCH_MAX_RESULTS": "x"})
        applied({"TOOL_SEARCH_ENABLED": "1", "TOOLS_DOT_DELIMITER": "__"})
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "INFO",
            "settings from the environment: TOOL_SEARCH_ENABLED (skills.tool_search_enabled), "
            "PREFETCH_TOOLS (skills.prefetch_tools)",
        ),
        ("INFO", "settings from the environment: TOOLS_DOT_DELIMITER (tools.dot_delimiter)"),
    ]


def test_directory_budget_from_the_environment_and_its_range() -> None:
    assert applied({"TOOL_SEARCH_DIRECTORY_BUDGET": " 0 "}) == {
        "skills": {"tool_search_directory_budget": 0}
    }
    from bot_toolsearch import BotSettings, ConfigError

    # Settings built in code raise ConfigError too (#16), never pydantic's ValidationError.
    with pytest.raises(ConfigError, match="tool_search_directory_budget"):
        BotSettings.model_validate(applied({"TOOL_SEARCH_DIRECTORY_BUDGET": "-1"}))
    (err,) = errors_for({"TOOL_SEARCH_DIRECTORY_BUDGET": "lots"})
    assert "(from environment variable TOOL_SEARCH_DIRECTORY_BUDGET)" in str(err)
