"""The BM25F index: field tiers, IDF, stemming, prefixes, coverage, required terms."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot_toolsearch._core.index import SearchIndex
from bot_toolsearch._core.tokens import index_terms, stem


def doc(name: str, params: str = "", desc: str = "", pdesc: str = "") -> tuple[list[str], ...]:
    return (index_terms(name), index_terms(params), index_terms(desc), index_terms(pdesc))


def ranked(index: SearchIndex, *terms: str, required: tuple[str, ...] = ()) -> list[int]:
    scores = index.scores(list(terms), required)
    return sorted(scores, key=lambda d: (-scores[d], d))


def test_single_term_name_beats_parameter_beats_description() -> None:
    index = SearchIndex(
        [
            doc("describe", desc="weather weather weather, all about the weather"),
            doc("lookup", params="weather_city", pdesc="weather weather"),
            doc("weather_current", desc="x " * 50),
            doc("other", desc="nothing relevant"),
        ]
    )
    assert ranked(index, "weather") == [2, 1, 0]


@given(
    st.lists(st.integers(0, 6), min_size=3, max_size=3),
    st.integers(1, 60),
)
def test_tier_contract_holds_for_any_repetition(reps: list[int], filler: int) -> None:
    # Repeating the term in lower fields and padding the name never reverses the tiers.
    name_rep, param_rep, desc_rep = reps
    index = SearchIndex(
        [
            doc("alpha_" + "pad_" * filler + "zeta"),
            doc("beta", params="zeta " * (param_rep + 1), desc="zeta " * desc_rep),
            doc("gamma", desc="zeta " * (desc_rep + name_rep + 1), pdesc="zeta " * 9),
        ]
    )
    assert ranked(index, "zeta") == [0, 1, 2]


def test_rare_terms_outweigh_common_ones() -> None:
    docs = [doc(f"get_item_{i}", desc="get the thing") for i in range(20)]
    docs.append(doc("convert", desc="get the rare hypotenuse"))
    index = SearchIndex(docs)
    assert ranked(index, "get", "hypotenus")[0] == 20


def test_coverage_prefers_tools_matching_more_terms() -> None:
    index = SearchIndex([doc("a", desc="alpha alpha alpha alpha"), doc("b", desc="alpha beta")])
    assert ranked(index, "alpha", "beta")[0] == 1


def test_prefix_variants_match_at_a_discount() -> None:
    index = SearchIndex([doc("math.hypot"), doc("hypotenuse_tool"), doc("unrelated")])
    order = ranked(index, *index_terms("hypotenuse"))
    assert order == [1, 0]
    assert ranked(index, "hypot") == [0, 1]


def test_required_terms_filter_before_ranking() -> None:
    index = SearchIndex(
        [doc("weather_now", desc="weather"), doc("city_list", desc="city weather"), doc("x")]
    )
    city = stem("city")
    assert ranked(index, "weather", city, required=(city,)) == [1]
    assert ranked(index, "weather", required=("missing",)) == []


def test_unknown_terms_score_nothing() -> None:
    index = SearchIndex([doc("a"), doc("b")])
    assert index.scores(["nope"]) == {}
    assert index.scores([]) == {}
    assert "a" in index
    assert "nope" not in index


def test_scores_are_a_fresh_dict() -> None:
    index = SearchIndex([doc("alpha")])
    first = index.scores(["alpha"])
    first.clear()
    assert index.scores(["alpha"]) != {}


def test_length_normalised_descriptions() -> None:
    index = SearchIndex([doc("a", desc="alpha " + "filler " * 80), doc("b", desc="alpha short")])
    assert ranked(index, "alpha") == [1, 0]


def test_empty_index() -> None:
    assert SearchIndex([]).scores(["a"]) == {}


def test_a_short_name_beats_a_long_one_with_the_same_hit() -> None:
    # Names are length-normalised too: a name made of the query's words ranks first.
    index = SearchIndex([doc("stock_market_daily_history_price"), doc("get_stock_price")])
    assert ranked(index, stem("stock"), stem("price")) == [1, 0]


def test_repeated_and_overlapping_searches_do_not_change_each_other() -> None:
    # Weighted postings are cached and shared between searches: no search may alter them.
    index = SearchIndex(
        [doc("alpha_beta", desc="gamma"), doc("beta", desc="alpha"), doc("gamma_alpha")]
    )
    first = index.scores(["alpha", "beta"])
    index.scores(["alpha"])
    index.scores(["beta", "gamma"], required=("gamma",))
    assert index.scores(["alpha", "beta"]) == first
    single = index.scores(["alpha"])
    assert index.scores(["alpha"]) == single


def test_postings_combine_every_field_of_a_document() -> None:
    # One posting per (term, tool), summing its fields: more fields with the term score higher.
    index = SearchIndex(
        [
            doc("zeta", params="zeta", desc="zeta", pdesc="zeta"),
            doc("zeta", desc="other words here"),
        ]
    )
    assert ranked(index, "zeta") == [0, 1]


def test_namespace_parts_are_the_name_but_the_leaf_weighs_more() -> None:
    from bot_toolsearch.core import ToolCatalog, ToolSearchSession

    catalog = ToolCatalog(
        [
            {"type": "function", "function": {"name": n, "description": d}}
            for n, d in (
                ("music.play", "Start playback."),
                ("play_music", "Start playback."),
                ("radio_tune", "Tune in to music radio."),
            )
        ]
    )
    # Both names are name-tier hits for "music", ahead of the description hit; the leaf first.
    found = ToolSearchSession(catalog).search("music").loaded
    assert found == ("play_music", "music.play", "radio_tune")


# --- the index against a straightforward scorer --------------------------------------------
# The module docstring's formula, computed per document and query term with no postings, no
# caches and no shortcuts: whatever layout the index uses to be fast, its scores must be these.
_VOCABULARY = ["weather", "weath", "forecast", "city", "citi", "get", "data", "date", "time", "x"]
_FIELD = st.lists(st.sampled_from(_VOCABULARY), max_size=7)
_DOCUMENT = st.lists(_FIELD, min_size=0, max_size=6).map(tuple)


def _reference_scores(
    docs: list[tuple[list[str], ...]], terms: list[str], required: list[str], tiers: bool
) -> dict[int, float]:
    from bot_toolsearch._core.index import FIELD_WEIGHTS

    k, b, bonus, half = 1.2, 0.75, 1.0, 0.5
    scored = []  # per document: its five scored fields (namespace descriptions merged)
    for d in docs:
        fields = [list(d[f]) if f < len(d) else [] for f in range(5)]
        if len(d) > 5:
            fields[4] = fields[4] + list(d[5])
        scored.append(fields)
    n = len(docs)
    avg = [max(1.0, sum(len(s[f]) for s in scored) / max(1, n)) for f in range(5)]
    vocabulary = {t for s in scored for field in s for t in field}

    def weight(term: str, fields: list[list[str]]) -> float | None:
        if not any(term in field for field in fields):
            return None
        total = bonus
        for f, field in enumerate(fields):
            tf = field.count(term)
            if tf:
                norm = k * (1 - b + b * len(field) / avg[f])
                total += FIELD_WEIGHTS[f] * tf / (tf + norm)
        return total

    def idf(term: str) -> float:
        df = sum(any(term in field for field in s) for s in scored)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def variants(term: str) -> list[str]:  # the vocabulary here is small: no cap applies
        if len(term) < 4 or not term.isalpha():
            return []
        shorter = [v for v in vocabulary if len(v) >= 4 and v != term and term.startswith(v)]
        return [*shorter, *(v for v in vocabulary if v != term and v.startswith(term))]

    if any(t not in vocabulary for t in required):
        return {}
    out: dict[int, float] = {}
    for i, fields in enumerate(scored):
        if any(weight(t, fields) is None for t in required):
            continue
        total, matched = 0.0, False
        for term in terms:
            exact = weight(term, fields)
            best = exact * idf(term) if exact is not None else None
            for v in variants(term):
                w = weight(v, fields)
                if w is not None and (best is None or w * idf(v) * half > best):
                    best = w * idf(v) * half
            if best is not None:
                total, matched = total + best, True
        if not matched:
            continue
        if tiers and len(terms) == 1:
            names = {*fields[0], *(docs[i][4] if len(docs[i]) > 4 else ())}
            params = set(fields[1])
            hits = {terms[0], *variants(terms[0])}
            total += 1e6 * (2 if hits & names else 1 if hits & params else 0)
        out[i] = total
    return out


@given(
    docs=st.lists(_DOCUMENT, max_size=8),
    terms=st.lists(st.sampled_from([*_VOCABULARY, "citizen", "none"]), max_size=3, unique=True),
    required=st.integers(0, 2),
    tiers=st.booleans(),
)
def test_scores_equal_a_straightforward_bm25_scorer(
    docs: list[tuple[list[str], ...]], terms: list[str], required: int, tiers: bool
) -> None:
    index = SearchIndex(docs)
    need = terms[:required]
    got = index.scores(terms, need, tiers=tiers)
    expected = _reference_scores(docs, terms, need, tiers)
    assert got.keys() == expected.keys()
    for d, score in expected.items():
        assert math.isclose(got[d], score, rel_tol=1e-12), (d, got[d], score)


# Fragments: the catalog hands each text's terms over as one shared tuple, so a description
# that many tools repeat is indexed once. Scores must not depend on how fields are cut up or
# on which fragments are shared: they are the flattened documents' scores.
_FRAGMENT = st.lists(st.sampled_from(_VOCABULARY), max_size=4).map(tuple)


@st.composite
def _fragment_documents(draw: st.DrawFn) -> list[tuple[list[tuple[str, ...]], ...]]:
    pool = draw(st.lists(_FRAGMENT, min_size=1, max_size=5))  # shared between documents
    shape = st.lists(st.lists(st.integers(0, len(pool) - 1), max_size=3), max_size=6)
    return [
        tuple([pool[i] for i in field] for field in doc)
        for doc in draw(st.lists(shape, max_size=8))
    ]


@given(
    docs=_fragment_documents(),
    terms=st.lists(st.sampled_from([*_VOCABULARY, "citizen"]), max_size=3, unique=True),
    required=st.integers(0, 2),
    tiers=st.booleans(),
)
def test_shared_fragments_score_as_the_flattened_documents(
    docs: list[tuple[list[tuple[str, ...]], ...]], terms: list[str], required: int, tiers: bool
) -> None:
    flat = [tuple([t for fragment in field for t in fragment] for field in doc) for doc in docs]
    need = terms[:required]
    got = SearchIndex.from_fragments(docs).scores(terms, need, tiers=tiers)
    expected = _reference_scores(flat, terms, need, tiers)
    assert got.keys() == expected.keys()
    for d, score in expected.items():
        assert math.isclose(got[d], score, rel_tol=1e-12), (d, got[d], score)


def test_a_catalog_index_scores_as_its_documents_indexed_one_by_one() -> None:
    # The catalog's fragment index (repeated parameter descriptions shared) against the plain
    # index of the same tools' flattened documents, over every term they hold.
    from bot_toolsearch.core import ToolCatalog

    shared = {"type": "string", "description": "The project ID, e.g. my-project."}
    catalog = ToolCatalog(
        [
            {
                "type": "function",
                "function": {
                    "name": f"{service}.{verb}Item",
                    "description": f"{verb.title()} an item of the {service} service.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "projectId": shared,
                            "itemName": {"type": "string", "description": f"The {verb} target."},
                            "mode": {"enum": ["fast", "SAFE", "project"]},
                        },
                    },
                },
            }
            for service in ("storage", "compute", "pubsub")
            for verb in ("get", "list", "delete", "create")
        ]
    )
    plain = SearchIndex([catalog.document(name) for name in catalog.sorted_names])
    vocabulary = sorted({t for n in catalog.sorted_names for f in catalog.document(n) for t in f})
    assert {"project", "safe"} <= set(vocabulary)
    for term in vocabulary:
        for query in ([term], [term, "item"]):
            got, expected = catalog.index.scores(query), plain.scores(query)
            assert got.keys() == expected.keys()
            assert all(math.isclose(got[d], expected[d], rel_tol=1e-12) for d in got)


def test_threads_searching_at_once_through_a_full_cache_agree_with_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The weight caches are shared and bounded; threads that fill and evict them at the same
    # moment must neither fail nor see another term's weights.
    import sys
    import threading

    from bot_toolsearch._core import index as index_module

    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"]
    docs = [doc(f"{a}_{b}", desc=f"{b} {a} {a}") for a in words for b in words]
    expected = {w: SearchIndex(docs).scores([w, "beta"]) for w in words}
    monkeypatch.setattr(index_module, "_WEIGHTED_CACHE_SIZE", 2)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    index = SearchIndex(docs)
    failures: list[BaseException] = []

    def search(offset: int) -> None:
        try:
            for i in range(400):
                word = words[(i + offset) % len(words)]
                assert index.scores([word, "beta"]) == expected[word]
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=search, args=(k,)) for k in range(6)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures, failures[0]
