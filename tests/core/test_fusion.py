"""Score fusion, property-tested against the formula, and the session's semantic hook (no HTTP)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot_toolsearch._core.fusion import BM25_WEIGHT, fuse, fused_scores, normalised, top_documents
from bot_toolsearch._core.index import split_tier
from bot_toolsearch._core.session import ToolSearchSession


def test_top_documents_orders_by_score_then_id() -> None:
    assert top_documents({5: 1.0, 2: 3.0, 1: 1.0, 7: 0.5}, 3) == [2, 1, 5]


def test_normalised_is_min_max_over_the_top_places_clamped() -> None:
    assert normalised([9.0, 5.0, 1.0, -3.0], top=3) == [1.0, 0.5, 0.0, 0.0]
    assert normalised([2.0, 2.0, 1.0], top=2) == [1.0, 1.0, 0.0]
    assert normalised([], top=3) == []


def test_how_far_ahead_a_winner_is_counts_unlike_rank_fusion() -> None:
    # BM25 is sure of 10 (far ahead); the model slightly prefers 11. RRF would tie them.
    bm25 = {10: 9.0, 11: 1.2, 12: 1.0}
    semantic = [(11, 0.61), (10, 0.60), (12, 0.10)]
    assert fuse(bm25, semantic, top=3) == [10, 11, 12]
    # A clear semantic winner that BM25 ranks second by a hair wins.
    assert fuse({10: 2.0, 11: 1.99, 12: 0.0}, [(11, 0.9), (12, 0.2), (10, 0.1)], top=3)[0] == 11


def test_depth_limits_each_ranking() -> None:
    assert fuse({1: 2.0, 2: 1.0}, [(3, 0.9), (4, 0.8), (5, 0.7)], depth=1) == [1, 3]


def test_allowed_filters_the_semantic_ranking() -> None:
    # 9 is not allowed (a +required term it lacks): it never appears.
    assert 9 not in fuse({1: 2.0, 2: 1.0}, [(9, 0.9), (2, 0.8)], allowed={1, 2})


def test_bare_ids_from_an_older_hook_rank_by_place() -> None:
    assert fuse({1: 1.0, 2: 1.0}, [2, 1], top=2) == fuse({1: 1.0, 2: 1.0}, [(2, 0.0), (1, -1.0)])


def test_tiers_of_a_one_term_query_decide_first() -> None:
    name_hit = 2_000_000.5  # tier 2
    description_hit = 3.0  # tier 0
    assert split_tier(name_hit)[0] == 2
    scores = {1: name_hit, 2: description_hit}
    # The semantic ranking prefers 2 and a semantic-only 3, yet the name hit stays first.
    assert fuse(scores, [(2, 0.9), (3, 0.8)], tiers=True) == [1, 2, 3]
    assert fuse(scores, [(2, 0.9), (3, 0.8), (1, 0.1)], tiers=False, top=3, weight=0.4)[0] == 2


def _reference(
    *,
    scores: dict[int, float],
    semantic: list[tuple[int, float]],
    depth: int,
    weight: float,
    top: int,
    tiers: bool,
) -> dict[int, tuple[int, float]]:
    """The fused score of every candidate, straight from the formula, written independently."""

    def within(doc: int) -> float:
        return scores[doc] - math.floor(scores[doc] / 1e6) * 1e6 if tiers else scores[doc]

    bm25 = sorted(scores, key=lambda d: (-scores[d], d))[:depth]
    sem = semantic[:depth]
    out: dict[int, float] = {}
    for docs, value, share in (
        (bm25, within, weight),
        ([d for d, _ in sem], dict(sem).__getitem__, 1 - weight),
    ):
        if not docs:
            continue
        ordered = [value(d) for d in docs]
        high, low = ordered[0], ordered[min(top, len(ordered)) - 1]
        for doc, v in zip(docs, ordered, strict=True):
            part = (
                (1.0 if v >= high else 0.0) if high <= low else max(0.0, (v - low) / (high - low))
            )
            out[doc] = out.get(doc, 0.0) + share * part
    tier = {d: math.floor(scores[d] / 1e6) if tiers else 0 for d in bm25}
    return {d: (tier.get(d, 0), v) for d, v in out.items()}


_SCORE = st.floats(0.0, 50.0, allow_nan=False) | st.sampled_from([1e6 + 2.5, 2e6 + 1.0, 2e6 + 7.0])


@settings(max_examples=300, deadline=None)
@given(
    scores=st.dictionaries(st.integers(0, 40), _SCORE, max_size=30),
    similarities=st.lists(st.floats(-1.0, 1.0, allow_nan=False), max_size=30),
    docs=st.permutations(list(range(41))),
    depth=st.integers(1, 35),
    weight=st.floats(0.0, 1.0),
    top=st.integers(1, 35),
    tiers=st.booleans(),
)
def test_fusion_matches_the_formula(  # noqa: PLR0917 - hypothesis's drawn values
    scores: dict[int, float],
    similarities: list[float],
    docs: list[int],
    depth: int,
    weight: float,
    top: int,
    tiers: bool,
) -> None:
    semantic = list(zip(docs, sorted(similarities, reverse=True), strict=False))
    if not tiers:
        scores = {d: split_tier(s)[1] for d, s in scores.items()}
    expected = _reference(
        scores=scores, semantic=semantic, depth=depth, weight=weight, top=top, tiers=tiers
    )
    found = fused_scores(scores, semantic, depth=depth, weight=weight, top=top, tiers=tiers)
    assert found.keys() == expected.keys()
    for doc, (tier, value) in found.items():
        assert tier == expected[doc][0]
        assert math.isclose(value, expected[doc][1], rel_tol=1e-9, abs_tol=1e-9)
    order = fuse(scores, semantic, depth=depth, weight=weight, top=top, tiers=tiers)
    assert sorted(order) == sorted(expected)
    keys = [(-expected[d][0], -expected[d][1]) for d in order]
    # Best first: each key no worse than the next (up to rounding), ties by ascending id.
    for (t1, v1), (t2, v2) in itertools.pairwise(keys):
        assert t1 < t2 or (t1 == t2 and v1 <= v2 + 1e-9)


def test_the_default_weight_leans_on_bm25() -> None:
    assert 0.5 <= BM25_WEIGHT < 1.0


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


class ScoredRanker:
    """A fixed semantic ranking with similarities, by name."""

    def __init__(self, pairs: Sequence[tuple[str, float]]) -> None:
        self.pairs = pairs
        self.session: ToolSearchSession | None = None

    def __call__(self, text: str, count: int) -> list[tuple[int, float]]:
        assert self.session is not None
        rank = self.session.catalog.rank
        return [(rank(n), s) for n, s in self.pairs][:count]


def _floored(pairs: Sequence[tuple[str, float]], floor: float | None) -> ToolSearchSession:
    ranker = ScoredRanker(pairs)
    session = ToolSearchSession(TOOLS, semantic=ranker, no_match_floor=floor)
    ranker.session = session
    return session


def test_below_the_no_match_floor_nothing_loads_and_the_closest_are_hints() -> None:
    weak = [("mail.send", 0.21), ("music.play", 0.2), ("weather.forecast", 0.1)]
    result = _floored(weak, 0.3).search("book a table for two")
    assert result.loaded == ()
    assert result.not_found == ("book a table for two",)
    assert result.names == ("mail.send", "music.play", "weather.forecast")
    # Off (the default), or a close enough tool: the usual answer.
    assert _floored(weak, None).search("book a table for two").loaded[0] == "mail.send"
    strong = [("mail.send", 0.62), ("music.play", 0.2)]
    assert _floored(strong, 0.3).search("send an email").loaded[0] == "mail.send"


def test_the_floor_counts_only_tools_a_required_term_allows() -> None:
    # The close tool lacks the required word: what is left is far, so no match.
    pairs = [("music.play", 0.8), ("mail.send", 0.1)]
    result = _floored(pairs, 0.3).search("+email anything")
    assert result.loaded == ()
    assert result.names == ("mail.send",)


def test_the_floor_is_checked() -> None:
    with pytest.raises(ValueError, match="no_match_floor"):
        ToolSearchSession(TOOLS, no_match_floor=1.5)
