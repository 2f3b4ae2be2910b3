"""Tool, the @tool decorator, lazy import-string handlers and Agent."""

from __future__ import annotations

import sys
from typing import Literal

import pytest

from bot_toolsearch import Agent, CatalogError, Tool, ToolImportError, tool


async def test_sync_and_async_handlers_return_text() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    async def shout(text: str) -> str:
        return text.upper()

    assert await Tool("add", "", None, add).invoke({"a": 2, "b": 3}) == "5"
    assert await Tool("shout", "", None, shout).invoke({"text": "hi"}) == "HI"


async def test_non_string_results_are_json_with_unicode_kept() -> None:
    t = Tool("info", "", None, lambda: {"城市": "北京", "n": 1})
    assert await t.invoke({}) == '{"城市": "北京", "n": 1}'


def test_schema_is_a_fresh_copy() -> None:
    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    t = Tool("music.search", "Find songs", params, lambda q: q)
    schema = t.schema()
    schema["function"]["parameters"]["properties"].clear()
    params["properties"].clear()
    assert t.schema()["function"]["parameters"]["properties"] == {"q": {"type": "string"}}
    assert t.schema()["function"]["name"] == "music.search"


def test_decorator_derives_schema_from_signature_and_docstring() -> None:
    @tool(name="weather.forecast")
    def forecast(city: str, days: int = 3, unit: Literal["c", "f"] = "c") -> str:
        """Forecast the weather for a city.

        Args:
            city: City name, e.g. Berlin.
            days: How many days ahead.
        """
        return f"{city} {days} {unit}"

    assert forecast.name == "weather.forecast"
    assert forecast.description == "Forecast the weather for a city."
    props = forecast.parameters["properties"]
    assert forecast.parameters["required"] == ["city"]
    assert props["city"] == {"type": "string", "description": "City name, e.g. Berlin."}
    assert props["days"]["type"] == "integer"
    assert props["days"]["default"] == 3
    assert props["unit"]["enum"] == ["c", "f"]
    assert "title" not in forecast.parameters


def test_bare_decorator() -> None:
    @tool
    def ping() -> str:
        """Reply pong."""
        return "pong"

    assert (ping.name, ping.description) == ("ping", "Reply pong.")


async def test_import_string_handler_is_imported_on_first_call_only(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "lazy_tool_pkg_x"  # type: ignore[operator]
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "handler.py").write_text("def execute(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    t = Tool("double", "", None, "lazy_tool_pkg_x.handler:execute")
    assert not t.handler_is_loaded
    assert "lazy_tool_pkg_x.handler" not in sys.modules
    assert await t.invoke({"x": 4}) == "8"
    assert t.handler_is_loaded
    assert "lazy_tool_pkg_x.handler" in sys.modules


async def test_broken_import_string_raises_tool_import_error() -> None:
    t = Tool("ghost", "", None, "no_such_module_xyz.handler:execute")
    with pytest.raises(ToolImportError, match="no_such_module_xyz"):
        await t.invoke({})


@pytest.mark.parametrize("bad", ["", "   ", 3])
def test_bad_names_are_rejected(bad: object) -> None:
    with pytest.raises(CatalogError):
        Tool(bad, "", None, lambda: None)  # type: ignore[arg-type]


def test_bad_import_string_is_rejected() -> None:
    with pytest.raises(CatalogError, match=r"package\.module:function"):
        Tool("x", "", None, "not an import string")


def test_agent_schema_takes_a_request() -> None:
    agent = Agent("web_agent", "Browse the web", "You browse.")
    fn = agent.schema()["function"]
    assert fn["name"] == "web_agent"
    assert fn["parameters"]["required"] == ["request"]
