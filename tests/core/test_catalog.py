"""ToolCatalog: validation, duplicates, collisions, isolation, precomputed orders."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bot_toolsearch import CatalogError, ToolSearchNameCollisionError
from bot_toolsearch.core import ToolCatalog, ToolSearchSession


def fn(name: object, description: str = "", **params: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": params}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    }


def test_names_keep_input_order_and_sorted_names_casefold_order() -> None:
    catalog = ToolCatalog([fn("Zeta"), fn("beta"), fn("_x"), fn("Alpha")])
    assert catalog.names == ("Zeta", "beta", "_x", "Alpha")
    assert catalog.sorted_names == ("_x", "Alpha", "beta", "Zeta")
    assert len(catalog) == 4
    assert list(catalog) == list(catalog.names)
    assert "beta" in catalog
    assert "Beta" not in catalog
    assert 3 not in catalog


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "function"},
        {"function": "not a mapping"},
        "not a mapping",
        None,
        fn(None),
        fn(""),
        fn(42),
        fn("has space"),
        fn(" padded"),
        fn("new\nline"),
        fn("tab\there"),
        fn("bell\x07"),
        fn("rtl\u202eoverride"),
        fn("<script>"),
        fn("a>b"),
        fn("line\u2028sep"),
    ],
    ids=repr,
)
def test_malformed_entries_are_skipped_with_one_warning(
    entry: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        catalog = ToolCatalog([entry, fn("good")])
    assert catalog.names == ("good",)
    warnings = [r for r in caplog.records if r.name == "bot_toolsearch"]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING


def test_non_json_schemas_are_skipped() -> None:
    cyclic = fn("cyclic")
    cyclic["function"]["parameters"]["self"] = cyclic
    odd = fn("odd", x={"default": object()})
    nan = fn("nan", x={"default": float("nan")})
    catalog = ToolCatalog([cyclic, odd, nan, fn("fine")])
    assert catalog.names == ("fine",)


def test_first_duplicate_wins(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        catalog = ToolCatalog([fn("dup", "first"), fn("dup", "second"), fn("other")])
    assert catalog.names == ("dup", "other")
    schema = catalog.schema("dup")
    assert schema is not None
    assert schema["function"]["description"] == "first"
    assert sum("duplicate" in r.getMessage() for r in caplog.records) == 1


def test_reserved_name_is_skipped_with_the_one_summary_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        catalog = ToolCatalog([fn("ok"), fn("tool_search"), fn("dup"), fn("dup"), fn("more")])
    assert catalog.names == ("ok", "dup", "more")
    assert "tool_search" not in catalog
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert "1 reserved" in lines[0]
    assert "1 duplicate" in lines[0]
    assert "'tool_search'" in lines[0]
    # The rest of the catalog is searchable as usual.
    session = ToolSearchSession(catalog)
    assert session.search("more").loaded == ("more",)
    assert session.search("select:tool_search").loaded == ()


def test_the_collision_error_stays_importable_for_old_code() -> None:
    error = ToolSearchNameCollisionError("tool_search")
    assert error.name == "tool_search"
    assert isinstance(error, ValueError)


def test_case_variant_of_reserved_name_is_allowed_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        catalog = ToolCatalog([fn("Tool_Search")])
    assert catalog.names == ("Tool_Search",)
    assert any("reserved" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("bad", ["tools", b"tools", {"function": {"name": "x"}}])
def test_a_single_value_instead_of_a_sequence_is_an_error(bad: Any) -> None:
    with pytest.raises(CatalogError):
        ToolCatalog(bad)


def test_later_mutation_of_the_input_changes_nothing() -> None:
    source = fn("weather", "Current weather", city={"type": "string"})
    schemas = [source]
    catalog = ToolCatalog(schemas)
    source["function"]["description"] = "changed"
    source["function"]["parameters"]["properties"]["city"]["type"] = "integer"
    source["function"]["name"] = "renamed"
    schemas.append(fn("added"))
    assert catalog.names == ("weather",)
    schema = catalog.schema("weather")
    assert schema is not None
    assert schema["function"]["description"] == "Current weather"
    assert schema["function"]["parameters"]["properties"]["city"]["type"] == "string"


def test_schema_returns_a_fresh_copy_each_time() -> None:
    catalog = ToolCatalog([fn("weather", "Current weather")])
    first = catalog.schema("weather")
    assert first is not None
    first["function"]["description"] = "mutated"
    again = catalog.schema("weather")
    assert again is not None
    assert again["function"]["description"] == "Current weather"
    assert catalog.schema("Weather") is None
    assert catalog.schema("missing") is None


def test_schemas_keeps_order_and_extra_keys() -> None:
    entry = fn("b")
    entry["strict"] = True
    catalog = ToolCatalog([fn("a"), entry])
    assert [s["function"]["name"] for s in catalog.schemas(["b", "a"])] == ["b", "a"]
    assert catalog.schemas(["b"])[0]["strict"] is True
    with pytest.raises(KeyError):
        catalog.schemas(["missing"])


def test_case_variants_and_positions() -> None:
    catalog = ToolCatalog([fn("foo"), fn("Foo"), fn("bar")])
    assert catalog.case_variants("FOO") == ("Foo", "foo")
    assert catalog.case_variants("nothing") == ()
    assert catalog.position("bar") == 2
    assert catalog.sorted_names[catalog.rank("foo")] == "foo"


def test_nested_parameters_are_indexed() -> None:
    nested = {
        "type": "object",
        "properties": {
            "filter": {
                "type": "object",
                "properties": {"memberId": {"type": "string", "description": "whose avatar"}},
            },
            "tags": {"type": "array", "items": {"anyOf": [{"description": "a colour"}]}},
            "mode": {"type": "string", "enum": ["fahrenheit", "celsius"]},
        },
        "$defs": {"Thing": {"description": "spaceship parts"}},
    }
    entry = {"type": "function", "function": {"name": "tool", "parameters": nested}}
    catalog = ToolCatalog([entry, fn("other")])
    for term in ("member", "avatar", "colour", "celsius", "spaceship"):
        assert set(catalog.index.scores([term])) == {catalog.rank("tool")}, term


def _nested(depth: int, name: str) -> dict[str, Any]:
    node: dict[str, Any] = {"description": "bottom"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"p": node}}
    return {"type": "function", "function": {"name": name, "parameters": node}}


def test_hostile_nesting_is_skipped_and_deep_nesting_is_indexed() -> None:
    # 60 nested properties are 121 levels, within MAX_SCHEMA_DEPTH (128).
    catalog = ToolCatalog([_nested(100_000, "hostile"), _nested(60, "deep")])
    assert catalog.names == ("deep",)
    assert set(catalog.index.scores(["bottom"])) == {catalog.rank("deep")}


def test_unusual_but_valid_names_are_kept() -> None:
    names = ["天气.查询", "a&b", 'quote"s', "émoji✨", "x" * 200]
    catalog = ToolCatalog([fn(n) for n in names])
    assert catalog.names == tuple(names)


def test_names_longer_than_the_limit_are_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from bot_toolsearch._core.catalog import MAX_NAME_LENGTH

    longest = "n" * MAX_NAME_LENGTH
    schemas = [
        {"type": "function", "function": {"name": longest, "description": "ok"}},
        {"type": "function", "function": {"name": longest + "x", "description": "too long"}},
    ]
    with caplog.at_level("WARNING", logger="bot_toolsearch"):
        catalog = ToolCatalog(schemas)
    assert catalog.names == (longest,)
    assert f"{MAX_NAME_LENGTH + 1} characters long" in caplog.text


def test_deferred_names_are_cached_per_excluded_set() -> None:
    catalog = ToolCatalog([fn(n) for n in ("b", "A", "c", "end")])
    first = catalog.deferred_names(frozenset({"end"}))
    assert first == ("A", "b", "c")
    assert catalog.deferred_names(frozenset({"end"})) is first  # same tuple, no rebuild
    assert catalog.deferred_names(frozenset({"end", "c"})) == ("A", "b")
    assert catalog.deferred_names(frozenset()) is catalog.sorted_names


def test_sessions_with_the_same_exclusions_share_one_directory_tuple() -> None:
    catalog = ToolCatalog([fn(n) for n in ("send_message", "end", "x", "y")])
    one = ToolSearchSession(catalog, always_loaded=["send_message", "end"])
    two = ToolSearchSession(catalog, always_loaded=["end", "send_message"])
    assert one.deferred_tool_names == ("x", "y")
    assert one.deferred_tool_names is two.deferred_tool_names


def test_the_lazily_built_index_reads_the_catalogs_copy_not_the_callers_objects() -> None:
    from bot_toolsearch.core import ToolSearchSession

    schema = {
        "type": "function",
        "function": {
            "name": "zoo.feed",
            "description": "Feed the giraffes.",
            "parameters": {"type": "object", "properties": {"animal": {"type": "string"}}},
        },
    }
    catalog = ToolCatalog([schema])
    schema["function"]["description"] = "Polish the trumpets."
    schema["function"]["parameters"]["properties"]["tuba"] = {"type": "string"}
    session = ToolSearchSession(catalog)
    assert session.search("giraffes").loaded == ("zoo.feed",)
    assert session.search("trumpets").not_found == ("trumpets",)
    assert catalog.schema("zoo.feed") == {
        "type": "function",
        "function": {
            "name": "zoo.feed",
            "description": "Feed the giraffes.",
            "parameters": {"type": "object", "properties": {"animal": {"type": "string"}}},
        },
    }
    assert catalog.index is catalog.index  # built once


def test_ten_thousand_duplicates_log_one_summary_line(caplog: pytest.LogCaptureFixture) -> None:
    schemas = [fn("dup", str(i)) for i in range(10_000)]
    schemas += [fn("x" * 100_000 + " "), {"function": 1}, fn("ok"), fn("TOOL_SEARCH")]
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        catalog = ToolCatalog(schemas)
    assert catalog.names == ("dup", "ok", "TOOL_SEARCH")
    lines = [r.getMessage() for r in caplog.records if r.name == "bot_toolsearch"]
    assert len(lines) == 2
    summary, reserved = lines
    assert summary.startswith(
        "tool catalog: skipping 10,001 of 10,004 entries "
        "(9,999 duplicate, 1 invalid name, 1 malformed): "
        "entry 1 ('dup'): duplicate name (the first is kept); entry 2 ('dup'): "
    )
    assert summary.endswith("; and 9,998 more")
    assert len(summary) < 600  # a huge name is cut, never echoed whole
    assert "'TOOL_SEARCH'" in reserved
    assert "reserved" in reserved


def test_a_skipped_name_that_nests_deeply_is_not_repr_d(caplog: pytest.LogCaptureFixture) -> None:
    nested: list[Any] = []
    for _ in range(100_000):
        nested = [nested]
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        catalog = ToolCatalog([{"function": {"name": nested}}, fn("ok")])
    assert catalog.names == ("ok",)
    assert "entry 0: name is list, not a string" in caplog.text
