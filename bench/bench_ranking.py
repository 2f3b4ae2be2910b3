"""Our keyword index against bm25s, side by side in one process (issue 23).

bm25s (PyPI, MIT; pure Python + numpy) is the fastest BM25 library a user could pick. Both
index the same tools of the 10,000-tool pool (``bench/_scale_catalog.py``) at 1,000 and 10,000
tools, and both answer the first 300 keyword forms of the dev query set:

- index build: ours is the search index of an already built `ToolCatalog` (tokenising every
  name, description and parameter; min of 3, each in a fresh catalog);
  bm25s's is tokenising the same text (name parts, description, parameter names and texts)
  and ``BM25.index`` (min of 3);
- keyword search: ours is a fresh session's first search (the whole of ``tool_search``: parse,
  score, rank, take five); bm25s's is tokenising the query and ``retrieve(k=5)``, and, as a
  floor, its scoring alone (``get_scores`` of the query's words + numpy ``argpartition``);
  medians;
- recall@5 / MRR@5 of both on the dev set at 10,000 tools, for scale;
- both builds again on 10,000 tools made of the dev catalog's 769 repeated with numbered
  names (``get_weather_2``), the shape of the issue's benchmark kit: a catalog repeating its
  texts, as real ones repeat parameter descriptions;
- the whole start-up of ours at 10,000: `ToolCatalog` plus its index (min of 3).

Each figure of ours is also given as a ratio to bm25s's (lower is faster).
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bot_toolsearch.core import ToolCatalog, ToolSearchSession

from ._scale_catalog import load_scale_catalog
from ._table import Row, median_seconds
from .bench_quality import CAP, DATA, evaluate

SECTION = "ranking"
SIZES = (1_000, 10_000)
QUERIES = 300
BUILDS = 3


def _text(schema: dict[str, Any]) -> str:
    """Everything bm25s indexes of one tool: its name parts, description and parameters."""
    function = schema["function"]
    name = str(function["name"]).replace(".", " ").replace("_", " ")
    parameters = json.dumps(function.get("parameters") or {}, ensure_ascii=False)
    return f"{name} {function.get('description') or ''} {parameters}"


def _min_seconds(fn: Callable[[], object], runs: int = BUILDS) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _ours(schemas: list[dict[str, Any]]) -> tuple[float, Callable[[str], Sequence[str]]]:
    catalogs = iter([ToolCatalog(schemas) for _ in range(BUILDS)])
    catalog = ToolCatalog(schemas)
    build = _min_seconds(lambda: next(catalogs).index)
    _ = catalog.index

    def rank(query: str) -> Sequence[str]:
        return ToolSearchSession(catalog, max_results=CAP).search(query).loaded

    return build, rank


def _bm25s(
    schemas: list[dict[str, Any]],
) -> tuple[float, Callable[[str], Sequence[str]], Callable[[str], object]]:
    import bm25s  # the dev extra

    texts = [_text(s) for s in schemas]
    names = [s["function"]["name"] for s in schemas]

    def index() -> Any:
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
        return retriever

    build = _min_seconds(index)
    retriever = index()

    def rank(query: str) -> Sequence[str]:
        tokens = bm25s.tokenize([query], show_progress=False)
        if not tokens.vocab:  # only stop words
            return ()
        k = min(CAP, len(names))
        docs, scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [names[d] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    vocabulary = retriever.vocab_dict

    def scores_only(query: str) -> object:
        """bm25s's scoring alone: the query's terms already tokenised, top five by argpartition."""
        terms = [t for t in query.lower().split() if t in vocabulary]
        return retriever.get_scores(terms).argpartition(-CAP)[-CAP:] if terms else ()

    return build, rank, scores_only


def _loaded_session(catalog: ToolCatalog, keywords: list[str], fresh: float) -> Row:
    """A search in a session that has already loaded hundreds of tools (what the first half
    of the queries loads, five each), against a fresh session's, both over warm terms."""
    session = ToolSearchSession(catalog, max_results=len(catalog))
    for query in keywords[: len(keywords) // 2]:
        session.search(query, CAP)
    loaded = len(session.loaded_tool_names)
    warm = statistics.median(_each_once(lambda q: ToolSearchSession(catalog).search(q), keywords))
    seconds = statistics.median(_each_once(lambda q: session.search(q, CAP), keywords))
    return Row(SECTION, f"keyword search ({len(catalog):,}), ours, {loaded} tools loaded",
               f"{seconds * 1e3:.3f} ms",
               f"{seconds / warm:.2f}x a fresh session's {warm * 1e3:.3f} ms over the same warm "
               f"terms (first search of each term: {fresh * 1e3:.3f} ms); median")  # fmt: skip


def _each_once(rank: Callable[[str], object], texts: list[str]) -> list[float]:
    """The time of ``rank(text)`` for each text, once each, in order."""
    samples = []
    for text in texts:
        start = time.perf_counter()
        rank(text)
        samples.append(time.perf_counter() - start)
    return samples


def _repeated(size: int) -> list[dict[str, Any]]:
    """``size`` tools: the dev catalog's tools again and again, the copies' names numbered."""
    dev = load_scale_catalog(769)
    tools = []
    for k in range(-(-size // len(dev))):
        for schema in dev:
            copy = json.loads(json.dumps(schema))
            if k:
                copy["function"]["name"] = f"{copy['function']['name']}_{k + 1}"
            tools.append(copy)
    return tools[:size]


def _start_up(label: str, schemas: list[dict[str, Any]]) -> Row:
    """Our whole start-up on ``schemas``: the catalog, then its index."""
    seconds = _min_seconds(lambda: ToolCatalog(schemas).index)
    return Row(SECTION, f"catalog + index ({len(schemas):,}, {label}), ours", f"{seconds:.2f} s",
               f"ToolCatalog(schemas).index: what a start-up pays; min of {BUILDS}")  # fmt: skip


def _builds(label: str, schemas: list[dict[str, Any]]) -> list[Row]:
    """Index build of ours and of bm25s on ``schemas``, and our whole start-up."""
    size = len(schemas)
    ours, _ = _ours(schemas)
    theirs, _, _ = _bm25s(schemas)
    return [
        Row(SECTION, f"index build ({size:,}, {label}), ours", f"{ours:.2f} s",
            f"{ours / theirs:.2f}x bm25s; min of {BUILDS}"),
        Row(SECTION, f"index build ({size:,}, {label}), bm25s", f"{theirs:.2f} s",
            f"tokenize + index, min of {BUILDS}"),
        _start_up(label, schemas),
    ]  # fmt: skip


def run() -> list[Row]:
    """Build and search timings of both engines per size, ratios, and quality at 10,000."""
    path = DATA / "queries_dev.jsonl"
    if not path.is_file():
        return [Row(SECTION, "dataset", "skipped", f"no queries_dev.jsonl in {DATA}")]
    try:
        import bm25s  # noqa: F401
    except ImportError:
        return [Row(SECTION, "bm25s", "skipped", "not installed (the dev extra has it)")]
    queries = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]
    keywords = [q["keyword_query"] for q in queries[:QUERIES]]
    rows = []
    for size in SIZES:
        try:
            schemas = load_scale_catalog(size)
        except RuntimeError as error:  # no BFCL wheel, or no dev extra
            return [Row(SECTION, "dataset", "skipped", str(error).splitlines()[0])]
        (our_build, ours), (their_build, theirs, scoring) = _ours(schemas), _bm25s(schemas)
        searches = []
        for rank in (ours, theirs, scoring):
            cycle = itertools.cycle(keywords)
            searches.append(median_seconds(lambda r=rank, c=cycle: r(next(c)), repeat=2 * QUERIES))
        # The same searches, each query once over a catalog that has answered none yet: every
        # query term's weights are worked out in its search (the harness of issue 30). The
        # rows above cycle the queries twice, so their median is a search whose terms were
        # seen before (the index keeps each term's weights): the two harnesses disagree there.
        fresh = ToolCatalog(schemas)
        _ = fresh.index

        def first(query: str, catalog: ToolCatalog = fresh) -> Sequence[str]:
            return ToolSearchSession(catalog, max_results=CAP).search(query).loaded

        once = statistics.median(_each_once(first, keywords))
        theirs_once = statistics.median(_each_once(theirs, keywords))
        note = f"{size:,} tools; ours {searches[0] / searches[1]:.2f}x bm25s"
        rows += [
            Row(SECTION, f"keyword search ({size:,}), ours", f"{searches[0] * 1e3:.3f} ms",
                f"{note}; fresh session, {QUERIES} dev keyword queries, median"),
            Row(SECTION, f"keyword search ({size:,}), bm25s", f"{searches[1] * 1e3:.3f} ms",
                "tokenize + retrieve(k=5), one thread, median"),
            Row(SECTION, f"keyword search ({size:,}), bm25s scoring only",
                f"{searches[2] * 1e3:.3f} ms",
                f"ours {searches[0] / searches[2]:.2f}x; get_scores + argpartition, median"),
            Row(SECTION, f"keyword search ({size:,}), ours, each query once",
                f"{once * 1e3:.3f} ms",
                f"{once / theirs_once:.2f}x bm25s ({theirs_once * 1e3:.3f} ms) the same way; "
                "fresh catalog, every term's first search, median"),
            Row(SECTION, f"index build ({size:,}), ours", f"{our_build:.2f} s",
                f"{our_build / their_build:.2f}x bm25s; min of {BUILDS}"),
            Row(SECTION, f"index build ({size:,}), bm25s", f"{their_build:.2f} s",
                f"tokenize + index, min of {BUILDS}"),
        ]  # fmt: skip
        if size == SIZES[-1]:
            rows.append(_loaded_session(fresh, keywords, once))
            for label, rank in (("ours", ours), ("bm25s", theirs)):
                for field, style in (("question", "question"), ("keyword_query", "keywords")):
                    _, r5, mrr = evaluate(rank, queries, field)
                    metric = f"{style} recall@5 / MRR@5 ({size:,}), {label}"
                    note = f"dev, {len(queries)} queries"
                    rows.append(Row(SECTION, metric, f"{r5:.3f} / {mrr:.3f}", note))
    rows.append(_start_up("real tools", load_scale_catalog(SIZES[-1])))
    rows += _builds("dev catalog repeated", _repeated(SIZES[-1]))
    return rows
