"""Hypothesis fuzzing of everything a model or a catalog controls (issue 10).

Each property runs 2,000 examples. The invariants: nothing raises except the documented
error, every result is JSON with the fixed fields, every string is encodable (no lone
surrogate survives), and catalog construction either indexes an entry or skips it.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot_toolsearch import CatalogError
from bot_toolsearch._core.query import MAX_SELECT_NAMES, KeywordQuery, SelectQuery, parse_query
from bot_toolsearch._transports.text_calls import TextToolCallError, parse_text_tool_calls
from bot_toolsearch.core import ToolCatalog, ToolSearchSession

# 2,000 examples per property in CI (CI=true, as .ci/run is run), where every landing is
# checked; 300 on a developer's `make test`, to keep it fast. FUZZ_EXAMPLES overrides both.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES") or (2000 if os.environ.get("CI") else 300))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

NAMES = ["weather.forecast", "music.play", "mail-_-send", "Mail.Send", "天气.查询", "end"]
CATALOG = ToolCatalog(
    [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"The {name} tool.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
        for name in NAMES
    ]
)

# Text with the characters parsers care about over-represented, lone surrogates included.
hostile_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(list('`{}[]"\\:,+<>/= \n\tselect_.-')),
        st.characters(blacklist_categories=()),
        st.sampled_from(["\ud83d", "\udc00", "\u202e", "\x00"]),
    ),
    max_size=120,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=10,
)
query_values = st.one_of(
    hostile_text,
    st.builds(lambda names: "select:" + ",".join(names), st.lists(st.sampled_from(NAMES))),
    st.sampled_from(NAMES),
)


def assert_encodable(text: str) -> None:
    text.encode("utf-8")  # raises on a lone surrogate


def check_result(out: str) -> dict[str, Any]:
    assert_encodable(out)
    result: dict[str, Any] = json.loads(out)
    assert list(result)[:5] == [
        "loaded",
        "already_loaded",
        "not_found",
        "truncated",
        "total_deferred_tools",
    ]
    assert set(result["loaded"]) <= set(NAMES)
    return result


@FUZZ
@given(arguments=st.one_of(hostile_text, json_values, st.binary(max_size=200)))
def test_execute_never_raises_on_any_arguments(arguments: object) -> None:
    session = ToolSearchSession(CATALOG, max_results=3)
    check_result(session.execute(arguments))


@FUZZ
@given(query=query_values, max_results=json_values, fence=st.booleans())
def test_execute_answers_every_query_as_json(query: str, max_results: object, fence: bool) -> None:
    session = ToolSearchSession(CATALOG, max_results=3, hidden=["music.play"])
    arguments = json.dumps({"query": query, "max_results": max_results})
    if fence:
        arguments = f"```json\n{arguments}\n```"
    result = check_result(session.execute(arguments))
    assert "music.play" not in result["loaded"] + result["already_loaded"]
    assert len(result["loaded"]) <= 3


@FUZZ
@given(query=query_values)
def test_the_query_parser_never_raises_and_bounds_its_output(query: str) -> None:
    parsed = parse_query(query)
    if isinstance(parsed, SelectQuery):
        assert len(parsed.names) <= MAX_SELECT_NAMES
        assert all(name and not name.isspace() for name in parsed.names)
    else:
        assert isinstance(parsed, KeywordQuery)
        assert set(parsed.required) <= set(parsed.terms)
        assert len(parsed.terms) == len(set(parsed.terms))


envelopes = st.one_of(
    hostile_text,
    st.builds(
        lambda name, args: json.dumps({"name": name, "arguments": args}),
        hostile_text,
        json_values,
    ),
    st.builds(
        lambda name, args: f"<tool_call>{json.dumps({'name': name, 'arguments': args})}",
        hostile_text,
        json_values,
    ).map(lambda s: s + "</tool_call>"),
    st.builds(
        lambda name, key, value: (
            f"<function={name}><parameter={key}>{value}</parameter></function>"
        ),
        hostile_text,
        hostile_text,
        hostile_text,
    ),
)


@FUZZ
@given(text=envelopes, fence=st.booleans())
def test_text_call_recovery_returns_calls_or_raises_its_own_error(text: str, fence: bool) -> None:
    if fence:
        text = f"```\n{text}\n```"
    try:
        calls = parse_text_tool_calls(text)
    except TextToolCallError:
        return
    for call in calls:
        assert isinstance(call.name, str)
        assert call.name
        assert isinstance(call.arguments, dict)


schema_entries = st.one_of(
    json_values,
    st.builds(
        lambda name, parameters, description: {
            "type": "function",
            "function": {"name": name, "parameters": parameters, "description": description},
        },
        st.one_of(hostile_text, st.sampled_from(NAMES), json_values),
        json_values,
        st.one_of(hostile_text, json_values),
    ),
)


@FUZZ
@given(entries=st.lists(schema_entries, max_size=4))
def test_catalog_construction_indexes_or_skips_every_entry(entries: list[object]) -> None:
    logging.getLogger("bot_toolsearch").disabled = True
    reserved = any(
        isinstance(e, dict)
        and isinstance(e.get("function"), dict)
        and e["function"].get("name") == "tool_search"
        for e in entries
    )
    try:
        if reserved:  # only the reserved name may stop the build
            with pytest.raises(CatalogError, match="tool_search"):
                ToolCatalog(entries)  # type: ignore[arg-type]
            return
        catalog = ToolCatalog(entries)  # type: ignore[arg-type]
    finally:
        logging.getLogger("bot_toolsearch").disabled = False
    assert len(catalog.names) <= len(entries)
    for name in catalog.names:
        schema = catalog.schema(name)
        assert schema is not None
        assert_encodable(json.dumps(schema, ensure_ascii=False))
    session = ToolSearchSession(catalog)
    check_names = set(catalog.names)
    out = json.loads(session.execute({"query": "tool"}))
    assert set(out["loaded"]) <= check_names


@pytest.mark.parametrize("value", [None, 42, 1.5, "x", b"x", {"a": 1}])
def test_catalog_of_a_single_value_raises_catalog_error(value: object) -> None:
    with pytest.raises(CatalogError):
        ToolCatalog(value)  # type: ignore[arg-type]


def test_ci_runs_two_thousand_examples_per_property() -> None:
    # .ci/run runs with CI=true: there every property gets its 2,000 examples (issue 10).
    if os.environ.get("CI") and not os.environ.get("FUZZ_EXAMPLES"):
        assert EXAMPLES == 2000
    assert FUZZ.max_examples == EXAMPLES >= 300
