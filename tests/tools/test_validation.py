"""`validate_arguments`: a model's arguments checked (and coerced) before a handler runs."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch import Agent, Tool, tool
from bot_toolsearch._tools.validation import validate_arguments
from bot_toolsearch.tools import ToolRegistry


@dataclasses.dataclass
class Place:
    city: str
    days: int = 1


@tool
def weigh(animal: str, kilos: float, note: str = "none") -> str:
    """Weigh an animal."""
    return f"{animal} {kilos!r} {note}"


@tool
def plan(place: Place, tags: list[str] | None = None) -> str:
    """Plan a trip."""
    return f"{place!r} {tags}"


@tool
def open_ended(name: str, **rest: Any) -> str:
    """Takes anything."""
    return name


def test_a_wrong_type_is_named_with_what_was_expected_and_what_came() -> None:
    arguments, problem = validate_arguments(weigh, {"animal": "cat", "kilos": "lots"})
    assert arguments == {}
    assert problem is not None
    assert problem.startswith('"kilos": expected a valid number')
    assert 'got a string "lots"' in problem


def test_values_are_coerced_as_validate_call_does_and_defaults_left_to_the_function() -> None:
    arguments, problem = validate_arguments(weigh, {"animal": "cat", "kilos": "2.5"})
    assert problem is None
    assert arguments == {"animal": "cat", "kilos": 2.5}
    assert type(arguments["kilos"]) is float

    arguments, problem = validate_arguments(plan, {"place": {"city": "Oslo", "days": "3"}})
    assert problem is None
    assert arguments == {"place": Place("Oslo", 3)}


def test_missing_and_unexpected_arguments_are_both_reported() -> None:
    _, problem = validate_arguments(weigh, {"kilos": 3, "colour": "red"})
    assert problem == (
        '"animal" is required; unexpected argument "colour" (allowed: animal, kilos, note)'
    )


def test_a_nested_problem_names_its_path() -> None:
    _, problem = validate_arguments(plan, {"place": {"city": "Oslo"}, "tags": ["a", 7]})
    assert problem is not None
    assert problem.startswith('"tags[1]": expected a valid string')


def test_kwargs_functions_accept_extra_arguments() -> None:
    arguments, problem = validate_arguments(open_ended, {"name": "x", "colour": "red"})
    assert problem is None
    assert arguments == {"name": "x", "colour": "red"}


def test_the_schema_the_model_reads_is_unchanged() -> None:
    assert "additionalProperties" not in weigh.parameters
    assert weigh.parameters["required"] == ["animal", "kilos"]


SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "enum": [1, 2, 3]},
        "units": {"type": ["string", "null"]},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}


def schema_tool(parameters: dict[str, Any]) -> Tool:
    return Tool("weather.forecast", "Forecast.", parameters, lambda **kw: "ok")


def test_schema_tools_are_checked_against_their_json_schema_without_coercion() -> None:
    forecast = schema_tool(SCHEMA)
    assert validate_arguments(forecast, {"city": "Oslo", "days": 2}) == (
        {"city": "Oslo", "days": 2},
        None,
    )
    assert validate_arguments(forecast, {"city": "Oslo", "days": "2"}) == (
        {},
        '"days": expected an integer, got a string "2"',
    )
    _, problem = validate_arguments(forecast, {"days": 9, "when": "now"})
    assert problem == (
        '"city" is required; unexpected argument "when" (allowed: city, days, units); '
        '"days": expected one of 1, 2, 3, got 9'
    )
    _, problem = validate_arguments(forecast, {"city": 1, "days": 1, "units": 5})
    assert problem == (
        '"city": expected a string, got an integer 1; '
        '"units": expected a string or null, got an integer 5'
    )


def test_the_draft_named_by_dollar_schema_is_used() -> None:
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": True}},
    }
    _, problem = validate_arguments(schema_tool(draft4), {"n": 5})
    assert problem is not None
    assert problem.startswith('"n": 5 is greater than or equal to the maximum of 5')


def test_a_catalog_regex_never_runs_over_model_text() -> None:
    # (a+)+$ backtracks exponentially on "aaaa...b"; the pattern is not enforced at all.
    evil = {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(a+)+$": {"type": "string"}},
        "additionalProperties": False,
    }
    text = "a" * 40 + "b"
    started = time.perf_counter()
    assert validate_arguments(schema_tool(evil), {"s": text, text: "x"}) == (
        {"s": text, text: "x"},
        None,
    )
    assert time.perf_counter() - started < 5  # exponential would take hours, not seconds


def test_an_unusable_schema_is_not_enforced_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dangling = schema_tool({"type": "object", "properties": {"x": {"$ref": "#/$defs/gone"}}})
    invalid = Tool("bad.schema", "", {"type": "objekt"}, lambda **kw: "ok")
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        for _ in range(3):
            assert validate_arguments(dangling, {"x": 1}) == ({"x": 1}, None)
            assert validate_arguments(invalid, {"x": 1}) == ({"x": 1}, None)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "weather.forecast: its parameter schema cannot be used" in lines[0]
    assert "bad.schema" in lines[1]


def test_many_problems_are_capped() -> None:
    wide = {
        "type": "object",
        "properties": {f"p{i}": {"type": "integer"} for i in range(9)},
    }
    _, problem = validate_arguments(schema_tool(wide), {f"p{i}": "x" for i in range(9)})
    assert problem is not None
    assert problem.count("expected an integer") == 5
    assert problem.endswith("; and 4 more")


def test_an_agent_needs_a_string_request() -> None:
    agent = Agent("helper", "Helps.", "Be helpful.")
    assert validate_arguments(agent, {"request": "do it"}) == ({"request": "do it"}, None)
    assert validate_arguments(agent, {}) == ({}, '"request" is required')


def test_folder_tools_are_checked_against_their_config_json(tmp_path: Path) -> None:
    folder = tmp_path / "tools" / "zoo" / "weigh"
    folder.mkdir(parents=True)
    parameters = {
        "type": "object",
        "properties": {"kilos": {"type": "number"}},
        "required": ["kilos"],
    }
    (folder / "config.json").write_text(json.dumps({"parameters": parameters}))
    (folder / "handler.py").write_text("def execute(kilos):\n    return kilos\n")
    registry = ToolRegistry(dirs=[tmp_path / "tools"])
    weigh_folder = registry.snapshot().tools["zoo.weigh"]
    assert validate_arguments(weigh_folder, {"kilos": 2}) == ({"kilos": 2}, None)
    assert validate_arguments(weigh_folder, {"kilos": "lots"}) == (
        {},
        '"kilos": expected a number, got a string "lots"',
    )
