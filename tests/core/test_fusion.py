"""Reciprocal rank fusion, and the session's semantic hook, tested directly (no HTTP)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bot_toolsearch._core.fusion import RRF_K, fuse, top_documents
from bot_toolsearch._core.index import split_tier
from bot_toolsearch._core.session import ToolSearchSession


def test_top_documents_orders_by_score_then_id() -> None:
    assert top_documents({5: 1.0, 2: 3.0, 1: 1.0, 7: 0.5}, 3) == [2, 1, 5]


def test_fusion_adds_reciprocal_ranks() -> None:
    # BM25: 10, 11, 12. Semantic: 12, 13. RRF: 10 = 1/61, 11 = 1/62, 12 = 1/63 + 1/61,
    # 13 = 1/62.
    order = fuse({10: 9.0, 11: 5.0, 12: 1.0}, [12, 13])
    assert order == [12, 10, 11, 13]
    expected_12 = 1 / (RRF_K + 3) + 1 / (RRF_K + 1)
    assert expected_12 > 1 / (RRF_K + 1)


def test_a_document_first_in_both_rankings_wins_and_ties_break_by_id() -> None:
    assert fuse({3: 1.0, 4: 1.0}, [4, 3]) == [3, 4]  # 3: 1/61 + 1/62 = 4: 1/62 + 1/61
    assert fuse({3: 2.0, 4: 1.0}, [3]) == [3, 4]


def test_depth_limits_each_ranking() -> None:
    assert fuse({1: 2.0, 2: 1.0}, [3, 4, 5], depth=1) == [1, 3]


def test_allowed_filters_the_semantic_ranking_and_keeps_places_dense() -> None:
    # 9 is not allowed (a +required term it lacks): 2 takes semantic place 1.
    assert fuse({1: 2.0, 2: 1.0}, [9, 2], allowed={1, 2}) == [2, 1]


def test_tiers_of_a_one_term_query_decide_first() -> None:
    name_hit = 2_000_000.5  # tier 2
    description_hit = 3.0  # tier 0
    assert split_tier(name_hit)[0] == 2
    scores = {1: name_hit, 2: description_hit}
    # The semantic ranking prefers 2 and a semantic-only 3, yet the name hit stays first.
    assert fuse(scores, [2, 3], tiers=True) == [1, 2, 3]
    assert fuse(scores, [2, 3], tiers=False) == [2, 1, 3]


def _schema(name: str, description: str) -> dict[str, object]:
    return {"type": "function", "function": {"name": name, "description": description}}


TOOLS = [
    _schema("weather.forecast", "Forecast for a city."),
    _schema("music.play", "Play a song."),
    _schema("mail.send", "Send an email."),
]


class Ranker:
    """A fixed semantic ranking by name, recording every call."""

    def __init__(self, session_names: Sequence[str], answer: bool = True) -> None:
        self.order = session_names
        self.answer = answer
        self.calls: list[tuple[str, int]] = []
        self.session: ToolSearchSession | None = None

    def __call__(self, text: str, count: int) -> list[int] | None:
        self.calls.append((text, count))
        if not self.answer:
            return None
        assert self.session is not None
        return [self.session.catalog.rank(n) for n in self.order][:count]


def _session(ranker: Ranker, **kwargs: object) -> ToolSearchSession:
    session = ToolSearchSession(TOOLS, semantic=ranker, **kwargs)  # type: ignore[arg-type]
    ranker.session = session
    return session


def test_semantic_only_match_is_loaded() -> None:
    ranker = Ranker(["weather.forecast"])
    session = _session(ranker, max_results=1)
    assert session.search("will it rain +tomorrow?").not_found == ("will it rain +tomorrow?",)
    result = session.search("will it rain tomorrow")
    assert result.loaded == ("weather.forecast",)
    assert ranker.calls[-1][0] == "will it rain tomorrow"


def test_plus_marks_are_dropped_from_the_embedded_text_and_required_terms_filter() -> None:
    ranker = Ranker(["weather.forecast", "music.play"])
    session = _session(ranker)
    result = session.search("+song rain")
    assert ranker.calls == [("song rain", ranker.calls[0][1])]
    assert result.loaded == ("music.play",)


@pytest.mark.parametrize("query", ["select:music.play", "music.play", "MUSIC.PLAY", "music.*"])
def test_select_and_exact_names_never_call_the_ranker(query: str) -> None:
    ranker = Ranker(["weather.forecast"])
    assert _session(ranker).search(query).loaded == ("music.play",)
    assert ranker.calls == []


def test_unavailable_ranker_leaves_bm25_alone() -> None:
    ranker = Ranker([], answer=False)
    with_ranker = _session(ranker).search("send email")
    plain = ToolSearchSession(TOOLS).search("send email")
    assert with_ranker == plain
    assert len(ranker.calls) == 1


def test_always_loaded_and_hidden_tools_never_come_from_the_ranker() -> None:
    ranker = Ranker(["weather.forecast", "music.play", "mail.send"])
    session = _session(ranker, always_loaded=["music.play"], hidden=["weather.forecast"])
    assert session.search("anything at all").loaded == ("mail.send",)
