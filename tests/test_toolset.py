"""The bot's tool set: built-ins first, hostile names dropped, per-ask filtering rules."""

from __future__ import annotations

import pytest

from bot_toolsearch import BotSettings, Tool
from bot_toolsearch._toolset import ToolSet, permitted_names


def noop(name: str) -> Tool:
    return Tool(name, "", None, lambda: "")


def test_builtins_come_first_and_hostile_names_are_unusable() -> None:
    toolset = ToolSet.build([noop("a.b"), noop("bad\nname"), noop("x<y>")], ())
    assert list(toolset.entries) == ["send_message", "end", "a.b"]
    assert [s["function"]["name"] for s in toolset.schemas] == ["send_message", "end", "a.b"]
    assert not toolset.collision


def test_a_real_tool_search_is_kept_out_of_the_catalog_but_usable() -> None:
    toolset = ToolSet.build([noop("tool_search"), noop("a")], ())
    assert toolset.collision
    assert "tool_search" not in toolset.catalog
    assert "tool_search" in toolset.entries


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
