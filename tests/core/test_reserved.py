"""ReservedTool: the real ``tool_search`` of a tool set, left out of a searching request with
the catalog's one summary warning, logged once."""

from __future__ import annotations

import logging

import pytest

from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.reserved import ReservedTool


def schema(name: str) -> dict[str, object]:
    return {"type": "function", "function": {"name": name, "description": f"The {name} tool."}}


def test_the_warning_is_the_catalogs_own_line_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    names = ["a", "b", "tool_search", "c"]
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        ToolCatalog([schema(n) for n in names])
        from_catalog = [r.getMessage() for r in caplog.records]
        caplog.clear()
        reserved = ReservedTool(names)
        for _ in range(3):
            reserved.warn()
        logged = [r.getMessage() for r in caplog.records]
    assert logged == from_catalog
    assert logged == [
        "tool catalog: skipping 1 of 4 entries (1 reserved): entry 2 ('tool_search'): "
        "the reserved name of the virtual search tool"
    ]


def test_without_a_real_tool_search_nothing_is_skipped_or_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reserved = ReservedTool(["a", "Tool_Search"])
    names = frozenset({"a", "Tool_Search"})
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        reserved.warn()
    assert not reserved.present
    assert reserved.skip(names) is names  # a case variant is a tool of its own
    assert not caplog.records


def test_skip_leaves_only_the_exact_reserved_name_out() -> None:
    reserved = ReservedTool(["tool_search", "a"])
    assert (reserved.position, reserved.total) == (0, 2)
    assert reserved.skip(frozenset({"tool_search", "a", "tool_search_x"})) == {
        "a",
        "tool_search_x",
    }
