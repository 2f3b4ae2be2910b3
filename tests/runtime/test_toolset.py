"""The bot's tool set: built-ins first, hostile names dropped, per-ask filtering rules."""

from __future__ import annotations

import pytest

from bot_toolsearch import BotSettings, Tool
from bot_toolsearch._runtime.toolset import ToolSet, permitted_names


def noop(name: str) -> Tool:
    return Tool(name, "", None, lambda: "")


def test_builtins_come_first_and_hostile_names_are_unusable() -> None:
    toolset = ToolSet.build([noop("a.b"), noop("bad\nname"), noop("x<y>")], ())
    assert list(toolset.entries) == ["send_message", "end", "a.b"]
    assert [s["function"]["name"] for s in toolset.schemas] == ["send_message", "end", "a.b"]
    assert not toolset.reserved.present


def test_a_real_tool_search_is_kept_out_of_the_catalog_but_usable_without_search() -> None:
    toolset = ToolSet.build([noop("tool_search"), noop("a")], ())
    assert toolset.reserved.present
    assert "tool_search" not in toolset.catalog
    assert list(toolset.entries) == ["send_message", "end", "tool_search", "a"]
    assert [s["function"]["name"] for s in toolset.schemas] == list(toolset.entries)


def test_searchable_leaves_the_real_tool_search_out_once_per_permitted_set() -> None:
    toolset = ToolSet.build([noop("tool_search"), noop("a")], ())
    permitted = toolset.pattern_permitted((), ())
    searchable = toolset.searchable(permitted)
    assert searchable == {"send_message", "end", "a"}
    assert toolset.searchable(permitted) is searchable  # the views cached per set are shared
    assert toolset.searchable(searchable) is searchable
    plain = ToolSet.build([noop("a")], ())
    names = plain.pattern_permitted((), ())
    assert plain.searchable(names) is names


def test_wire_names_are_cached_per_delimiter() -> None:
    toolset = ToolSet.build([noop("a.b")], ())
    assert toolset.wire_names("-_-") is toolset.wire_names("-_-")
    assert toolset.wire_names("__").to_wire("a.b") == "a__b"


async def test_a_hook_cannot_add_tools_and_must_return_names() -> None:
    toolset = ToolSet.build([noop("a"), noop("b")], ())
    names = await permitted_names(toolset, BotSettings(), {}, lambda _c, _n: ["a", "ghost"])
    assert names == {"a"}
    with pytest.raises(TypeError, match="iterable of tool names"):
        await permitted_names(toolset, BotSettings(), {}, lambda _c, _n: "a")


def test_a_snapshot_tool_with_a_builtin_or_agent_name_is_refused_naming_its_source() -> None:
    from bot_toolsearch import Agent, CatalogError
    from bot_toolsearch._tools.source import ToolSetSnapshot

    snap = ToolSetSnapshot.build([(noop("a"), "code"), (noop("end"), "folder:tools/end")])
    with pytest.raises(CatalogError, match=r"'end' from folder:tools/end .*built-in"):
        ToolSet.from_snapshot(snap, ())
    helper = Agent("a", "An agent.", "Help.", [])
    with pytest.raises(CatalogError, match=r"'a' from code .*agent 'a'"):
        ToolSet.from_snapshot(ToolSetSnapshot.build([(noop("a"), "code")]), [helper])
    good = ToolSet.from_snapshot(ToolSetSnapshot.build([(noop("a"), "code")]), ())
    assert list(good.entries) == ["send_message", "end", "a"]


async def test_pattern_results_and_views_are_computed_once_per_settings() -> None:
    toolset = ToolSet.build([noop("ns.a"), noop("ns.b"), noop("other.c")], ())
    settings = BotSettings.model_validate({"tools": {"allow": ["ns.*"], "deny": ["*.b"]}})
    first = await permitted_names(toolset, settings, {}, None)
    second = await permitted_names(toolset, settings, {}, None)
    assert first == {"send_message", "end", "ns.a"}
    assert second is first  # no per-ask work proportional to the catalog
    view = toolset.view(first)
    assert toolset.view(second) is view
    assert [s["function"]["name"] for s in view.schemas] == ["send_message", "end", "ns.a"]
    assert view.hidden == ("ns.b", "other.c")
    # The hook still runs every ask and is intersected with the cached pattern result.
    hooked = await permitted_names(toolset, settings, {"u": 1}, lambda c, n: ["ns.b", "end"])
    assert hooked == {"end"}
    everything = await permitted_names(toolset, BotSettings(), {}, None)
    assert toolset.view(everything).schemas is toolset.schemas


def test_unknown_configured_names_warn_once_per_tool_set(caplog: pytest.LogCaptureFixture) -> None:
    toolset = ToolSet.build([noop("a")], ())
    for _ in range(3):
        toolset.warn_unknown("prefetch_tools", [" a ", "ghost", "tool_search", "ghost"])
    messages = [r.getMessage() for r in caplog.records if r.name == "bot_toolsearch"]
    assert messages == ["[skills] prefetch_tools names 'ghost', which matches no tool"]
    ToolSet.build([noop("a")], ()).warn_unknown("prefetch_tools", ["ghost"])
    assert len([r for r in caplog.records if r.name == "bot_toolsearch"]) == 2


def test_the_tool_set_shares_each_tools_one_parameters_copy() -> None:
    params = {"type": "object", "properties": {"city": {"type": "string"}}}
    tool = Tool("weather.now", "Weather now.", params, lambda city: city)
    params["properties"]["evil"] = {"type": "string"}  # the caller's edit does not reach it
    toolset = ToolSet.build([tool], ())
    (schema,) = [s for s in toolset.schemas if s["function"]["name"] == "weather.now"]
    assert schema["function"]["parameters"] is tool.parameters
    assert "evil" not in tool.parameters["properties"]
    assert toolset.catalog.schema("weather.now") == tool.schema()
