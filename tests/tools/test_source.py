"""ToolSetSnapshot, fingerprint and the ToolSource seam."""

from __future__ import annotations

import dataclasses

import pytest

from bot_toolsearch import Tool
from bot_toolsearch._tools.source import (
    StaticToolSource,
    ToolSetSnapshot,
    ToolSource,
    fingerprint,
)
from bot_toolsearch.core import ToolCatalog


def make(name: str, description: str = "d") -> Tool:
    return Tool(name, description, {"type": "object", "properties": {}}, lambda: name)


def test_build_keeps_order_sources_and_first_duplicate() -> None:
    a, b, a2 = make("a"), make("b"), make("a", "other")
    snap = ToolSetSnapshot.build([(b, "code"), (a, "mcp:x"), (a2, "code")], generation=3)
    assert list(snap.tools) == ["b", "a"]
    assert snap.tools["a"] is a
    assert dict(snap.sources) == {"b": "code", "a": "mcp:x"}
    assert snap.catalog.names == ("b", "a")
    assert snap.generation == 3


def test_snapshot_is_immutable() -> None:
    snap = ToolSetSnapshot.build([(make("a"), "code")])
    with pytest.raises(TypeError):
        snap.tools["b"] = make("b")  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.generation = 5  # type: ignore[misc]


def test_fingerprint_ignores_order_but_not_content() -> None:
    a, b = make("a").schema(), make("b").schema()
    assert fingerprint([a, b]) == fingerprint([b, a])
    changed = make("b", "different").schema()
    assert fingerprint([a, b]) != fingerprint([a, changed])


def test_build_reuses_the_catalog_only_for_the_same_fingerprint() -> None:
    first = ToolSetSnapshot.build([(make("a"), "code")])
    same = ToolSetSnapshot.build([(make("a"), "code")], generation=1, reuse=first)
    assert same.catalog is first.catalog
    other = ToolSetSnapshot.build([(make("a", "new"), "code")], generation=2, reuse=first)
    assert other.catalog is not first.catalog
    assert other.fingerprint != first.fingerprint


def test_tools_the_catalog_rejects_are_not_callable() -> None:
    bad = make("has space")
    snap = ToolSetSnapshot.build([(bad, "code"), (make("ok"), "code")])
    assert list(snap.tools) == ["ok"]
    assert "has space" not in snap.sources


def test_a_real_tool_search_is_callable_but_not_in_the_catalog() -> None:
    real, other = make("tool_search", "a real tool"), make("other")
    snap = ToolSetSnapshot.build([(real, "code"), (other, "code")])
    assert list(snap.tools) == ["other", "tool_search"]
    assert snap.tools["tool_search"] is real
    assert snap.sources["tool_search"] == "code"
    assert snap.catalog.names == ("other",)
    assert "tool_search" not in snap.catalog
    # The catalog itself skips the name too (never the other tools).
    assert ToolCatalog([real.schema(), other.schema()]).names == ("other",)


def test_a_real_tool_search_counts_in_the_fingerprint_and_reuse_still_works() -> None:
    plain = ToolSetSnapshot.build([(make("a"), "code")])
    first = ToolSetSnapshot.build([(make("a"), "code"), (make("tool_search"), "code")])
    assert first.fingerprint != plain.fingerprint
    same = ToolSetSnapshot.build(
        [(make("a"), "code"), (make("tool_search"), "code")], generation=1, reuse=first
    )
    assert same.catalog is first.catalog
    edited = ToolSetSnapshot.build(
        [(make("a"), "code"), (make("tool_search", "edited"), "code")], generation=2, reuse=first
    )
    # Its schema is sent when tool search is off, so an edit is a new fingerprint.
    assert edited.fingerprint != first.fingerprint
    assert edited.catalog.names == ("a",)


def test_a_static_source_keeps_a_real_tool_search() -> None:
    snap = StaticToolSource([make("tool_search"), make("a")]).snapshot()
    assert list(snap.tools) == ["a", "tool_search"]
    assert snap.catalog.names == ("a",)


def test_static_source_satisfies_the_protocol() -> None:
    source = StaticToolSource([make("a")])
    assert isinstance(source, ToolSource)
    assert source.snapshot() is source.snapshot()
    assert source.snapshot().sources["a"] == "code"
