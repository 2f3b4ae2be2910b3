"""The second ranking stage: its features by hand, its order, and the session's use of it."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bot_toolsearch._core import rerank
from bot_toolsearch._core.catalog import search_index
from bot_toolsearch._core.index import SearchIndex
from bot_toolsearch._core.rerank import FEATURES, RERANK_DEPTH, features
from bot_toolsearch.core import ToolCatalog, ToolSearchSession

DOCS = [
    (["get", "weather"], ["citi"], ["forecast", "for", "a", "citi"], [], ["geo"]),
    (["weather"], [], ["weather", "weather", "news"], [], []),
    (["send", "mail"], ["to", "citi"], ["send", "mail"], [], ["mail"]),
]


def only(feature: str, value: float = 1.0) -> tuple[float, ...]:
    """Weights that rank by one feature alone."""
    return tuple(value if name == feature else 0.0 for name in FEATURES)


def test_the_features_of_a_candidate_worked_out_by_hand() -> None:
    index = SearchIndex(DOCS)
    rows = features(index, ["weather", "citi"], [0, 1, 2], [4.0, 2.0, 1.0], {0: 0.5, 1: 0.7})
    assert [len(row) for row in rows] == [len(FEATURES)] * 3
    first, second, third = (dict(zip(FEATURES, row, strict=True)) for row in rows)
    idf_weather, idf_citi = (index.term_fields(t)[0] for t in ("weather", "citi"))
    total = idf_weather + idf_citi
    assert (first["first"], second["first"], third["first"]) == (1.0, 0.5, 0.25)
    # BM25 saturation per field: "weather" once in the first tool's leaf name.
    assert math.isclose(first["leaf_bm25"], idf_weather / (1 + index.norm(0, 0)) / total)
    assert math.isclose(first["param_name_bm25"], idf_citi / (1 + index.norm(1, 0)) / total)
    assert first["coverage"] == pytest.approx(1.0)
    assert third["coverage"] == pytest.approx(idf_citi / total)
    # Partial and exact name matches: half of get_weather's leaf; all of weather's.
    assert (first["leaf_coverage"], first["namespace_coverage"], first["exact_name"]) == (
        0.5,
        0.0,
        0.0,
    )
    assert (second["leaf_coverage"], second["exact_name"]) == (1.0, 1.0)
    assert third["param_name_overlap"] == 0.5
    # Similarities relative to the best candidate; one the model did not list gets its lowest.
    assert (first["cosine"], second["cosine"], third["cosine"]) == pytest.approx((-0.2, 0, -0.2))
    assert (first["place"], second["place"], third["place"]) == (1.0, 0.5, 1 / 3)


def test_without_a_model_the_cosine_is_zero_and_no_candidates_no_rows() -> None:
    index = SearchIndex(DOCS)
    rows = features(index, ["mail"], [2, 0], [3.0, 1.0])
    assert [row[FEATURES.index("cosine")] for row in rows] == [0.0, 0.0]
    assert features(index, ["mail"], [], []) == []


def test_rerank_orders_by_tier_then_score_then_the_first_stage_and_only_the_head() -> None:
    index = SearchIndex(DOCS)
    # By the leaf coverage, the weather-only tool (1.0) passes get_weather (0.5) ...
    assert rerank.rerank(index, ["weather"], [0, 1], [2.0, 1.0], only("leaf_coverage")) == [1, 0]
    # ... but not across a tier, and equal scores keep the first stage's order.
    tiers = [2, 1]
    assert rerank.rerank(
        index, ["weather"], [0, 1], [2.0, 1.0], only("leaf_coverage"), tiers=tiers
    ) == [0, 1]
    assert rerank.rerank(index, ["weather"], [2, 0, 1], [1.0] * 3, only("cosine")) == [2, 0, 1]
    many = list(range(RERANK_DEPTH + 5))
    big = SearchIndex([(["t"], [], [str(i)] * (1 + i % 3)) for i in many])
    reordered = rerank.rerank(big, ["t"], many, [1.0] * len(many), only("place", -1.0))
    assert reordered[:RERANK_DEPTH] == many[:RERANK_DEPTH][::-1]
    assert reordered[RERANK_DEPTH:] == many[RERANK_DEPTH:]


def _catalog() -> ToolCatalog:
    def fn(name: str, description: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "description": description}}

    return ToolCatalog(
        [
            fn("weather_report_service", "Weather report weather forecast weather"),
            fn("get_weather", "Weather for a place"),
            fn("weather", "Weather"),
            fn("music.play", "Play a song"),
        ]
    )


def test_shipped_weights_off_keep_todays_order() -> None:
    assert rerank.WEIGHTS == {"bm25": None, "hybrid": None}  # the dev set's verdict
    assert ToolSearchSession(_catalog()).search("weather report").loaded[0] == (
        "weather_report_service"
    )


@pytest.mark.parametrize("stage", ["bm25", "hybrid"])
def test_the_session_uses_a_stages_weights_and_leaves_select_and_names_alone(
    monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    catalog = _catalog()
    semantic = None
    if stage == "hybrid":
        ranked = [(catalog.rank(n), 0.5) for n in ("weather_report_service", "get_weather")]
        semantic = lambda text, count: ranked  # noqa: E731
    before = ToolSearchSession(catalog, semantic=semantic).search("get weather").loaded
    assert before[0] == "get_weather"
    assert len(before) == 3
    monkeypatch.setitem(rerank.WEIGHTS, stage, only("place", -1.0))  # the order reversed
    after = ToolSearchSession(catalog, semantic=semantic).search("get weather").loaded
    assert after == before[::-1]
    other = "hybrid" if stage == "bm25" else "bm25"
    assert rerank.WEIGHTS[other] is None
    session = ToolSearchSession(catalog, semantic=semantic, max_results=1)
    assert session.search("select:get_weather").loaded == ("get_weather",)
    assert session.search("weather_report_service").loaded == ("weather_report_service",)


def test_the_index_gives_each_terms_counts_per_field_and_name_lengths() -> None:
    index = search_index(_catalog())
    idf, counts = index.term_fields("weather")
    assert idf > 0
    assert len(counts) == 6
    report = _catalog().rank("weather_report_service")
    assert (counts[0][report], counts[2][report]) == (1, 3)
    assert index.name_length(report) == (3, 0)
    assert index.name_length(_catalog().rank("music.play")) == (1, 1)
    assert not any(index.term_fields("nowhere")[1])


def test_with_weights_on_a_repeated_search_pages_on_past_the_loaded_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(rerank.WEIGHTS, "bm25", only("place", -1.0))
    session = ToolSearchSession(_catalog(), max_results=2)
    first = session.search("weather forecast")
    second = session.search("weather forecast")
    assert len(first.loaded) == 2
    assert second.loaded == tuple(
        {"weather_report_service", "get_weather", "weather"} - set(first.loaded)
    )
    assert set(second.already_loaded) <= set(first.loaded)
