"""Model-visible texts: exact snapshots, the virtual schema and the directory block."""

from __future__ import annotations

import pytest

from bot_toolsearch._core.prompt import (
    CALL_TOOL_DESCRIPTION,
    CALL_TOOL_NAME,
    MAX_RESULTS_DESCRIPTION,
    QUERY_DESCRIPTION,
    TOOL_SEARCH_DESCRIPTION,
    TOOL_SEARCH_RULES_BRIDGE,
    call_tool_schema,
    tool_search_schema,
)
from bot_toolsearch.core import TOOL_SEARCH_NAME, TOOL_SEARCH_RULES, render_deferred_tools


def test_description_snapshot() -> None:
    assert TOOL_SEARCH_DESCRIPTION == (
        "Search and load deferred tool schemas for this request. This tool only loads schemas: "
        "it never executes tools or performs business actions, downloads or registers files, "
        "or sends messages. A name in `loaded` becomes callable starting with the next model "
        "turn; loading it does not complete the user's task. If the requested action remains "
        "unfinished, call the loaded target tool before `end`."
    )
    assert QUERY_DESCRIPTION == (
        "Use select:name_a,name_b for exact selection, select:namespace.* for a namespace's "
        "tools, a full tool name, keywords, or +term to require a keyword."
    )
    assert MAX_RESULTS_DESCRIPTION == "Maximum matches to load, capped by configuration."


def test_rules_snapshot_says_what_the_spec_requires() -> None:
    assert TOOL_SEARCH_RULES == (
        "Tools listed in <available_deferred_tools> are not loaded yet: their schemas are not "
        "in your tool list. To use one, call tool_search first; never call a listed tool "
        'directly or guess its parameters. Prefer query="select:<name>" with exact names '
        "from the list, and batch several names in one call (select:name_a,name_b). A tool in "
        "`loaded` becomes callable from the next turn, never in the same turn as the search: "
        "wait for the next turn, then call it by the name in your tool list. Loading is not "
        "doing: tool_search runs nothing, so do not end the task just because a load "
        "succeeded while the real action is still pending."
    )


def test_bridge_rules_keep_the_shared_rules_and_explain_call_tool() -> None:
    shared = TOOL_SEARCH_RULES.split(" A tool in `loaded`")[0]
    assert TOOL_SEARCH_RULES_BRIDGE.startswith(shared)
    assert "call_tool" in TOOL_SEARCH_RULES_BRIDGE
    assert "call_tool" not in TOOL_SEARCH_RULES
    assert "`tools`" in TOOL_SEARCH_RULES_BRIDGE
    assert TOOL_SEARCH_RULES_BRIDGE.endswith("while the real action is still pending.")


def test_call_tool_schema_fields() -> None:
    schema = call_tool_schema()
    assert schema["function"]["name"] == CALL_TOOL_NAME == "call_tool"
    assert schema["function"]["description"] == CALL_TOOL_DESCRIPTION
    parameters = schema["function"]["parameters"]
    assert parameters["required"] == ["name", "arguments"]
    assert parameters["properties"]["arguments"]["type"] == "object"
    assert parameters["additionalProperties"] is False
    schema["function"]["name"] = "changed"
    assert call_tool_schema()["function"]["name"] == "call_tool"


def test_schema_fields() -> None:
    schema = tool_search_schema(7)
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == TOOL_SEARCH_NAME == "tool_search"
    assert function["description"] == TOOL_SEARCH_DESCRIPTION
    params = function["parameters"]
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert params["required"] == ["query"]
    assert params["properties"]["query"] == {"type": "string", "description": QUERY_DESCRIPTION}
    assert params["properties"]["max_results"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 7,
        "description": MAX_RESULTS_DESCRIPTION,
    }
    assert "strict" not in function


def test_schema_is_a_fresh_copy() -> None:
    first = tool_search_schema(5)
    first["function"]["parameters"]["properties"].clear()
    assert tool_search_schema(5)["function"]["parameters"]["properties"]


def test_block_layout_and_order() -> None:
    block = render_deferred_tools(["Zeta", "beta", "_x", "Alpha", "beta"])
    assert block == (
        "<available_deferred_tools>\n_x\nAlpha\nbeta\nZeta\n</available_deferred_tools>"
    )


def test_block_is_byte_identical_for_the_same_names() -> None:
    names = ("b", "a", "c")
    assert render_deferred_tools(names) == render_deferred_tools(list(reversed(names)))
    assert render_deferred_tools(iter(names)) == render_deferred_tools(names)


def test_names_are_verbatim_and_unsafe_names_are_left_out() -> None:
    block = render_deferred_tools(["a&b", "x\ny", "<evil>", "sp ace", "", "ok", 3])  # type: ignore[list-item]
    assert block.splitlines() == [
        "<available_deferred_tools>",
        "a&b",
        "ok",
        "</available_deferred_tools>",
    ]


@pytest.mark.parametrize("names", [[], (), ["", "bad name"]])
def test_no_names_no_block(names: list[str]) -> None:
    assert render_deferred_tools(names) == ""


def test_a_bare_string_is_an_error() -> None:
    with pytest.raises(TypeError, match="not a single string"):
        render_deferred_tools("abc")


def test_unhashable_items_are_ignored() -> None:
    assert render_deferred_tools(["a", ["b"]]) == render_deferred_tools(["a"])  # type: ignore[list-item]
