"""ToolSearchSession: resolution, loading, paging, exposure, results and execute."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot_toolsearch.core import TOOL_SEARCH_NAME, ToolCatalog, ToolSearchResult, ToolSearchSession

FIELDS = ["loaded", "already_loaded", "not_found", "truncated", "total_deferred_tools"]


def fn(name: str, description: str = "", **params: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": params}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    }


def names_of(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


@pytest.fixture
def weather() -> ToolCatalog:
    return ToolCatalog(
        [
            fn("weather_current", "Current conditions"),
            fn("weather_forecast", "Forecast for days ahead"),
            fn("city_lookup", "Find a city", weather_city={"type": "string"}),
            fn("news_digest", "Headlines, sometimes about weather"),
            fn("send_message", "Send a chat message"),
            fn("end", "Finish the turn"),
            fn("music.search_songs", "Search songs by title"),
            fn("getMemberInfo", "Profile of a group member"),
        ]
    )


# -- construction -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, True, False, 2.0, "5", None])
def test_max_results_must_be_a_positive_int(weather: ToolCatalog, bad: Any) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        ToolSearchSession(weather, max_results=bad)


def test_accepts_schemas_directly() -> None:
    session = ToolSearchSession([fn("a"), fn("b")], always_loaded=["a"])
    assert session.catalog_tool_names == ("a", "b")
    assert session.deferred_tool_names == ("b",)
    assert isinstance(session.catalog, ToolCatalog)


@pytest.mark.parametrize("field", ["always_loaded", "hidden"])
def test_a_bare_string_for_a_name_list_is_an_error(weather: ToolCatalog, field: str) -> None:
    with pytest.raises(TypeError, match=f"{field} must be a collection of tool names"):
        ToolSearchSession(weather, **{field: "end"})


def test_always_loaded_resolution() -> None:
    catalog = ToolCatalog([fn("Send_Message"), fn("foo"), fn("Foo"), fn("other")])
    session = ToolSearchSession(
        catalog,
        always_loaded=[" send_message ", "END", 42, "FOO", "tool_search"],  # type: ignore[list-item]
    )
    assert session.loaded_tool_names == frozenset({"Send_Message", "Foo"})
    assert session.deferred_tool_names == ("foo", "other")
    assert session.total_deferred_tools == 2
    assert session.exposed_tool_names() == frozenset({"Send_Message", "Foo", TOOL_SEARCH_NAME})


def test_deferred_names_use_casefold_order_and_accessors(weather: ToolCatalog) -> None:
    catalog = ToolCatalog([fn("Zeta"), fn("beta"), fn("_x"), fn("Alpha")])
    session = ToolSearchSession(catalog, max_results=3)
    assert session.deferred_tool_names == ("_x", "Alpha", "beta", "Zeta")
    assert session.catalog_tool_names == ("Zeta", "beta", "_x", "Alpha")
    assert session.max_results == 3
    assert session.catalog is catalog


def test_hidden_tools_are_absent_everywhere(weather: ToolCatalog) -> None:
    session = ToolSearchSession(
        weather, always_loaded=["end", "weather_current"], hidden=["weather_current", "city_lookup"]
    )
    assert "weather_current" not in session.catalog_tool_names
    assert "city_lookup" not in session.deferred_tool_names
    assert session.loaded_tool_names == frozenset({"end"})
    assert session.total_deferred_tools == len(weather) - 3
    assert not session.has_tool("city_lookup")
    assert session.has_tool("weather_forecast")
    assert not session.has_tool("Weather_Forecast")
    result = session.search("select:city_lookup,WEATHER_CURRENT")
    assert result.loaded == ()
    assert result.not_found == ("city_lookup", "WEATHER_CURRENT")
    assert session.search("city_lookup").not_found == ("city_lookup",)
    assert "city_lookup" not in session.search("weather city lookup").loaded
    assert "weather_current" not in session.search("weather").loaded


def test_hidden_matches_exact_spelling_only(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, hidden=["END", "nope"])
    assert session.has_tool("end")
    assert session.total_deferred_tools == len(weather)


# -- request_tools and exposure ---------------------------------------------------------


def test_request_tools_order_extends_the_previous_round() -> None:
    session = ToolSearchSession(
        [fn("weather.lookup"), fn("end"), fn("send_message"), fn("a"), fn("b")],
        always_loaded=["send_message", "end"],
    )
    first = names_of(session.request_tools())
    assert first == ["end", "send_message", TOOL_SEARCH_NAME]
    session.search("select:b")
    session.search("select:weather.lookup,a")
    second = names_of(session.request_tools())
    assert second == [*first, "b", "weather.lookup", "a"]


def test_request_tool_names_are_the_names_of_request_tools_and_freeze_the_same_round() -> None:
    tools = [fn("weather.lookup"), fn("end"), fn("send_message"), fn("a"), fn("b")]
    by_name, by_schema = (
        ToolSearchSession(tools, always_loaded=["send_message", "end"]) for _ in range(2)
    )
    for query in (None, "select:b", "select:weather.lookup,a"):
        if query is not None:
            by_name.search(query)
            by_schema.search(query)
            assert by_name.exposed_tool_names() == by_schema.exposed_tool_names()
        names = by_name.request_tool_names()
        assert list(names) == names_of(by_schema.request_tools())
        assert by_name.exposed_tool_names() == by_schema.exposed_tool_names()
    assert names[-2:] == ("weather.lookup", "a")


def test_loaded_tools_are_exposed_only_from_the_next_round(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, always_loaded=["end"])
    session.request_tools()
    assert session.search("select:weather_current").loaded == ("weather_current",)
    assert "weather_current" in session.loaded_tool_names
    assert "weather_current" not in session.exposed_tool_names()
    session.request_tools()
    assert session.exposed_tool_names() == frozenset({"end", "weather_current", TOOL_SEARCH_NAME})


def test_request_tools_returns_fresh_objects(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, always_loaded=["end"])
    tools = session.request_tools()
    tools[0]["function"]["name"] = "hacked"
    tools[1]["function"]["parameters"]["properties"].clear()
    tools.append(fn("injected"))
    again = session.request_tools()
    assert names_of(again) == ["end", TOOL_SEARCH_NAME]
    assert again[1]["function"]["parameters"]["properties"]


def test_tool_search_schema_is_a_copy_with_the_cap(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, max_results=3)
    schema = session.tool_search_schema
    assert schema["function"]["parameters"]["properties"]["max_results"]["maximum"] == 3
    schema["function"]["name"] = "x"
    assert session.tool_search_schema["function"]["name"] == TOOL_SEARCH_NAME


# -- select: and exact names ----------------------------------------------------------------


def test_select_resolves_exact_then_case_insensitive_and_deduplicates(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, max_results=5)
    result = session.search("select:WEATHER_CURRENT, weather_current end nope NOPE other")
    assert result.loaded == ("weather_current", "end")
    assert result.not_found == ("nope", "other")
    assert result.truncated is False


def test_select_cap_counts_new_loads(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, always_loaded=["end"], max_results=2)
    result = session.search("select:tool_search,end,weather_current,weather_forecast,news_digest")
    assert result.already_loaded == (TOOL_SEARCH_NAME, "end")
    assert result.loaded == ("weather_current", "weather_forecast")
    assert result.truncated is True
    assert session.search("select:news_digest", max_results=0).loaded == ("news_digest",)


@pytest.mark.parametrize("query", ["select:", "select: , ,", "SELECT :  "])
def test_empty_select_reports_the_query(weather: ToolCatalog, query: str) -> None:
    result = ToolSearchSession(weather).search(query)
    assert result.not_found == (query.strip(),)
    assert result.loaded == result.already_loaded == ()


def test_exact_catalog_case_variant_beats_the_virtual_name() -> None:
    session = ToolSearchSession([fn("Tool_Search", "a real tool"), fn("other")])
    assert session.search("select:Tool_Search").loaded == ("Tool_Search",)
    virtual = session.search("select:tool_search")
    assert virtual.already_loaded == (TOOL_SEARCH_NAME,)
    assert virtual.loaded == ()
    assert session.search("TOOL_SEARCH").already_loaded == (TOOL_SEARCH_NAME,)
    assert "Tool_Search" in names_of(session.request_tools())


def test_a_bare_full_name_loads_only_that_tool(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, always_loaded=["end"])
    result = session.search("  weather_forecast ")
    assert result.loaded == ("weather_forecast",)
    assert result.truncated is False
    assert session.search("END").already_loaded == ("end",)
    assert session.search("getMemberInfo").loaded == ("getMemberInfo",)


# -- keyword search -------------------------------------------------------------------------


def test_keyword_ranking_name_then_parameter_then_description(weather: ToolCatalog) -> None:
    result = ToolSearchSession(weather, max_results=5).search("weather")
    assert result.loaded == ("weather_current", "weather_forecast", "city_lookup", "news_digest")
    assert result.truncated is False


def test_keyword_ties_break_by_casefold_name() -> None:
    session = ToolSearchSession([fn("zeta", "common"), fn("Alpha", "common"), fn("beta", "common")])
    assert session.search("common").loaded == ("Alpha", "beta", "zeta")


def test_keyword_search_skips_always_loaded_and_the_virtual_tool(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, always_loaded=["send_message"])
    result = session.search("send message tool search")
    assert "send_message" not in (*result.loaded, *result.already_loaded)
    assert TOOL_SEARCH_NAME not in (*result.loaded, *result.already_loaded)
    assert result.loaded[0] == "music.search_songs"


def test_cap_truncated_and_smaller_max_results(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, max_results=2)
    result = session.search("weather")
    assert result.loaded == ("weather_current", "weather_forecast")
    assert result.truncated is True
    fresh = ToolSearchSession(weather, max_results=2)
    assert len(fresh.search("weather", max_results=1).loaded) == 1
    for ignored in (None, True, 2.0, "1", 99):
        probe = ToolSearchSession(weather, max_results=2)
        assert len(probe.search("weather", max_results=ignored).loaded) == 2, ignored
    assert len(ToolSearchSession(weather).search("weather", max_results=-3).loaded) == 1


def test_repeated_search_pages_on_and_reports_earlier_matches(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, max_results=2)
    first = session.search("weather")
    second = session.search("weather")
    assert second.already_loaded == first.loaded
    assert second.loaded == ("city_lookup", "news_digest")
    assert second.truncated is False
    third = session.search("weather")
    assert third.already_loaded == (*first.loaded, *second.loaded)
    assert third.loaded == ()
    assert third.not_found == ()
    assert session.search("weather").already_loaded == third.already_loaded


def test_loaded_set_only_grows(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather)
    seen: frozenset[str] = session.loaded_tool_names
    for query in ("weather", "select:end", "nothing matches", "", "select:", "music"):
        session.search(query)
        assert seen <= session.loaded_tool_names
        seen = session.loaded_tool_names


def test_required_terms_filter_before_ranking(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather)
    assert session.search("weather +city").loaded == ("city_lookup",)
    assert session.search("+nothing weather").not_found == ("+nothing weather",)


def test_camel_case_and_separators_in_queries(weather: ToolCatalog) -> None:
    assert ToolSearchSession(weather).search("MemberInfo").loaded[0] == "getMemberInfo"
    assert ToolSearchSession(weather).search("member-info").loaded[0] == "getMemberInfo"
    encoded = ToolSearchSession(weather).search("music-_-search_songs")
    assert encoded.loaded[0] == "music.search_songs"


def test_inflections_and_stop_words(weather: ToolCatalog) -> None:
    assert ToolSearchSession(weather).search("song").loaded[0] == "music.search_songs"
    assert ToolSearchSession(weather).search("forecasting").loaded[0] == "weather_forecast"
    assert ToolSearchSession(weather).search("the song of a").loaded[0] == "music.search_songs"
    only_stops = ToolSearchSession([fn("about_us", "Who we are"), fn("x", "unrelated")])
    assert only_stops.search("about").loaded == ("about_us",)


def test_cjk_search() -> None:
    catalog = ToolCatalog(
        [
            fn("weather.cn", "查询城市天气预报"),
            fn("group.avatar", "获取群成员的头像和昵称"),
            fn("music.play", "播放歌曲"),
        ]
    )
    assert ToolSearchSession(catalog).search("天气").loaded == ("weather.cn",)
    assert ToolSearchSession(catalog).search("成员 头像").loaded[0] == "group.avatar"
    assert ToolSearchSession(catalog).search("歌").loaded == ("music.play",)


def test_not_found_rules(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather)
    assert session.search("zzzz qqqq").not_found == ("zzzz qqqq",)
    assert session.search("...").not_found == ("...",)
    assert session.search("+").not_found == ("+",)
    empty = session.search("   ")
    assert empty == ToolSearchResult(total_deferred_tools=len(weather))


def test_total_deferred_is_constant(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather, always_loaded=["end"])
    before = session.total_deferred_tools
    session.search("weather")
    session.search("select:news_digest")
    assert session.search("music").total_deferred_tools == before == len(weather) - 1


def test_search_rejects_a_non_string_query(weather: ToolCatalog) -> None:
    with pytest.raises(TypeError, match="query must be a string, got int"):
        ToolSearchSession(weather).search(3)  # type: ignore[arg-type]


# -- execute ------------------------------------------------------------------------------


def test_execute_returns_compact_json_with_five_fields() -> None:
    session = ToolSearchSession([fn("天气.查询"), fn("other")])
    text = session.execute({"query": "select:天气.查询,injected_tool"})
    assert text == (
        '{"loaded":["天气.查询"],"already_loaded":[],"not_found":["injected_tool"],'
        '"truncated":false,"total_deferred_tools":2}'
    )


def test_execute_accepts_raw_json_and_ignores_extra_fields(weather: ToolCatalog) -> None:
    session = ToolSearchSession(weather)
    raw = json.dumps({"query": "select:end", "schema": fn("evil"), "max_results": 1})
    assert json.loads(session.execute(raw))["loaded"] == ["end"]
    assert "evil" not in names_of(session.request_tools())
    fenced = '```json\n{"query": "select:news_digest"}\n```'
    assert json.loads(session.execute(fenced))["loaded"] == ["news_digest"]
    assert json.loads(session.execute(b'{"query": "select:weather_current"}'))["loaded"] == [
        "weather_current"
    ]


@pytest.mark.parametrize(
    ("arguments", "hint"),
    [
        ("{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ("null", "JSON object"),
        (None, "JSON object"),
        (42, "JSON object"),
        ({}, "'query'"),
        ({"q": "x"}, "'query'"),
        ({"query": 123}, "must be a string"),
        ({"query": None}, "must be a string"),
        ("[" * 100_000, "not valid JSON"),
    ],
    ids=repr,
)
def test_execute_on_bad_input_explains_what_to_send(
    weather: ToolCatalog, arguments: object, hint: str
) -> None:
    session = ToolSearchSession(weather)
    payload = json.loads(session.execute(arguments))
    assert list(payload) == [*FIELDS, "error"]
    assert hint in payload["error"]
    assert '"query"' in payload["error"]
    assert payload["loaded"] == payload["already_loaded"] == payload["not_found"] == []
    assert payload["total_deferred_tools"] == len(weather)
    assert session.loaded_tool_names == frozenset()


def test_execute_logs_one_info_line(weather: ToolCatalog, caplog: pytest.LogCaptureFixture) -> None:
    session = ToolSearchSession(weather)
    with caplog.at_level(logging.INFO, logger="bot_toolsearch"):
        session.execute({"query": "select:end " + "x" * 500, "max_results": 2})
    records = [r for r in caplog.records if r.name == "bot_toolsearch"]
    assert len(records) == 1
    message = records[0].getMessage()
    query = ("select:end " + "x" * 500)[:200]
    assert message.split(" max_results=")[0] == f"[tool_search] query={query!r}"
    assert "max_results=2 loaded=('end',)" in message
    assert records[0].args  # %-style arguments, not a preformatted string


def test_result_to_dict_and_json() -> None:
    result = ToolSearchResult(loaded=("a",), truncated=True, total_deferred_tools=3)
    assert result.to_dict() == {
        "loaded": ["a"],
        "already_loaded": [],
        "not_found": [],
        "truncated": True,
        "total_deferred_tools": 3,
    }
    assert result.to_json() == (
        '{"loaded":["a"],"already_loaded":[],"not_found":[],"truncated":true,'
        '"total_deferred_tools":3}'
    )
    with pytest.raises(AttributeError):
        result.loaded = ()  # type: ignore[misc]


# -- properties -----------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
query_text = st.text() | st.sampled_from(
    ["select:end", "select:", "weather", "+city weather", "TOOL_SEARCH", "天气", "+", "..."]
)
arguments = (
    json_values
    | st.fixed_dictionaries({"query": query_text}, optional={"max_results": json_values})
    | st.builds(json.dumps, st.fixed_dictionaries({"query": query_text}))
    | st.text()
)
CATALOG = ToolCatalog(
    [fn("weather_current", "Current weather"), fn("end"), fn("city_lookup", "城市"), fn("x")]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(arguments, min_size=1, max_size=4))
def test_execute_never_raises_and_always_returns_the_five_fields(calls: list[object]) -> None:
    session = ToolSearchSession(CATALOG, always_loaded=["end"], max_results=2)
    for call in calls:
        payload = json.loads(session.execute(call))
        has_query = False
        value: object = call
        if isinstance(call, str):
            try:
                value = json.loads(call)
            except ValueError:
                value = None
        if isinstance(value, dict):
            has_query = isinstance(value.get("query"), str)
        assert list(payload)[:5] == FIELDS
        assert ("error" in payload) is not has_query
        assert len(payload) == 5 + ("error" in payload)
        assert payload["total_deferred_tools"] == 3
        assert len(payload["loaded"]) <= 2
        assert all(session.has_tool(n) for n in payload["loaded"])


def test_hostile_queries_are_bounded_in_work_and_in_what_is_echoed() -> None:
    from bot_toolsearch._core.query import MAX_KEYWORD_CHARS, MAX_SELECT_NAMES

    catalog = ToolCatalog(
        [
            {"type": "function", "function": {"name": "weather.forecast", "description": "w"}},
            {"type": "function", "function": {"name": "music.play", "description": "m"}},
        ]
    )
    session = ToolSearchSession(catalog)
    miss = session.search("zzzqqq" * 2000)
    assert len(miss.not_found[0]) == 201
    assert miss.not_found[0].endswith("…")
    # A term past the keyword budget is never looked at.
    late = session.search("q" * MAX_KEYWORD_CHARS + " weather")
    assert late.loaded == ()
    many = session.search("select:" + ",".join(["nope"] * 5000 + ["music.play"]))
    assert many.loaded == ()  # music.play is item 5001, past the select budget
    assert many.not_found == ("nope",)
    within = session.search("select:" + ",".join(["x"] * (MAX_SELECT_NAMES - 1) + ["music.play"]))
    assert within.loaded == ("music.play",)


# --- wire spellings ----------------------------------------------------------------------


def test_select_and_a_bare_name_accept_the_default_wire_spelling() -> None:
    from bot_toolsearch._demo.catalog import demo_schemas

    session = ToolSearchSession(demo_schemas())
    assert session.search("select:weather-_-forecast,time.now").loaded == (
        "weather.forecast",
        "time.now",
    )
    assert session.search("weather-_-hourly_forecast").loaded == ("weather.hourly_forecast",)
    assert session.search("select:weather-_-nothing").not_found == ("weather-_-nothing",)


def test_a_decoder_of_the_names_sent_resolves_other_delimiters_and_hidden_stays_hidden() -> None:
    from bot_toolsearch._demo.catalog import demo_schemas
    from bot_toolsearch.core import WireNames

    schemas = demo_schemas()
    names = WireNames.build([s["function"]["name"] for s in schemas], dot_delimiter="__")
    session = ToolSearchSession(schemas, hidden=["time.now"], decode_name=names.to_canonical)
    assert session.search("select:weather__forecast").loaded == ("weather.forecast",)
    # The default delimiter is not undone when the caller's decoder does not know it.
    assert session.search("select:time-_-week_number").not_found == ("time-_-week_number",)
    assert session.search("select:time__now").not_found == ("time__now",)


def test_a_session_with_many_loaded_tools_ranks_as_the_full_sort_does() -> None:
    """With tools loaded the candidates are heaped and taken best first rather than cut at
    a depth: the result must still be what walking the whole (score, id) order gives."""
    import random

    from bot_toolsearch._core.query import KeywordQuery, parse_query

    rng = random.Random(30)
    words = ["weather", "city", "email", "send", "song", "play", "area", "shape", "file", "list"]
    schemas = [
        {
            "type": "function",
            "function": {
                "name": f"ns{i % 7}.tool_{i}",
                "description": " ".join(rng.choices(words, k=rng.randint(1, 6))),
            },
        }
        for i in range(120)
    ]
    catalog = ToolCatalog(schemas)
    for trial in range(30):
        session = ToolSearchSession(catalog, max_results=200, always_loaded=["ns0.tool_0"])
        preload = rng.sample(catalog.names, rng.randint(0, 100))
        session.search("select:" + ",".join(preload))
        query = " ".join(rng.sample(words, rng.randint(1, 3)))
        limit = rng.randint(1, 6)
        before = set(session.loaded_tool_names)
        parsed = parse_query(query)
        assert isinstance(parsed, KeywordQuery)
        scores = catalog.index.scores(parsed.terms)
        ranked = sorted(
            (d for d in scores if catalog.sorted_names[d] != "ns0.tool_0"),
            key=lambda d: (-scores[d], d),
        )
        loaded: list[str] = []
        already: list[str] = []
        truncated = False
        for doc in ranked:
            name = catalog.sorted_names[doc]
            if name in before:
                already.append(name)
            elif len(loaded) < limit:
                loaded.append(name)
            else:
                truncated = True
                break
        result = session.search(query, limit)
        assert (result.loaded, result.already_loaded, result.truncated) == (
            tuple(loaded),
            tuple(already),
            truncated,
        ), (trial, query)


# -- a tool named outright among other words ----------------------------------------------


def _crowded() -> ToolCatalog:
    return ToolCatalog(
        [
            fn("weather_now", "Current weather report: weather now, weather today"),
            fn("weather_report_today", "The weather report for today, the weather now"),
            fn("forecast.dailyOutlook", "Daily outlook"),
            fn("list", "List things"),
            fn("notes.list_notes", "List the user's notes"),
            fn("secret_tool", "Weather report for admins"),
            fn("weather_outlook", "Daily forecast outlook: weather report, today and now"),
        ]
    )


@pytest.mark.parametrize(
    "query",
    [
        "weather report today now use forecast.dailyOutlook",
        "weather report today now FORECAST.DAILYOUTLOOK",
        "weather report today now forecast-_-dailyOutlook",
        "weather report today now `forecast.dailyoutlook()`, please",
        "weather report today now +forecast.dailyOutlook.",
    ],
)
def test_a_tool_named_among_other_words_is_loaded_first(query: str) -> None:
    session = ToolSearchSession(_crowded(), max_results=2)
    assert session.search(query).loaded[0] == "forecast.dailyOutlook"


def test_named_tools_come_first_in_query_order_then_the_ranking() -> None:
    session = ToolSearchSession(_crowded(), max_results=3)
    result = session.search("weather outlook notes.list_notes and forecast.dailyOutlook")
    assert result.loaded == ("notes.list_notes", "forecast.dailyOutlook", "weather_outlook")


def test_named_first_also_with_a_semantic_stage_and_the_no_match_floor() -> None:
    catalog = _crowded()
    weak = [(catalog.rank("weather_outlook"), 0.05), (catalog.rank("weather_now"), 0.04)]
    session = ToolSearchSession(
        catalog, max_results=2, semantic=lambda text, count: weak, no_match_floor=0.3
    )
    assert session.search("weather report today forecast.dailyOutlook").loaded == (
        "forecast.dailyOutlook",
        "weather_outlook",
    )


def test_one_word_names_and_hidden_tools_are_not_promoted() -> None:
    session = ToolSearchSession(_crowded(), max_results=1, hidden=["secret_tool"])
    assert session.search("list the notes").loaded == ("notes.list_notes",)
    assert session.search("weather report secret_tool").loaded == ("weather_report_today",)


def test_a_fork_starts_as_its_session_started_and_shares_what_it_derived(
    weather: ToolCatalog,
) -> None:
    session = ToolSearchSession(weather, always_loaded=["end"], hidden=["news_digest"])
    directory = session.directory
    searched = session.fork()
    searched.search("select:weather_current,weather_forecast")
    assert names_of(searched.request_tools())[-2:] == ["weather_current", "weather_forecast"]
    fork = session.fork()
    for slot in ToolSearchSession.__slots__:
        getattr(fork, slot)  # every slot is set
    assert fork.loaded_tool_names == {"end"}
    assert names_of(fork.request_tools()) == ["end", TOOL_SEARCH_NAME]
    assert fork.exposed_tool_names() == {"end", TOOL_SEARCH_NAME}
    assert fork.directory is directory
    assert not fork.has_tool("news_digest")
    assert fork.search("weather_current").loaded == ("weather_current",)
    assert session.loaded_tool_names == {"end"}
    assert searched.loaded_tool_names == {"end", "weather_current", "weather_forecast"}
