"""Retrieval quality on the BFCL-derived set: our engine against a naive substring scorer.

Each query runs as the first search of a fresh session with ``max_results=5``; the first
expected tool counts. recall@k = that tool is among the first k loaded; MRR@5 = mean of
1/rank within the five. The data lives outside the repository (``../shared/bench``, or the
folder ``BOT_TOOLSEARCH_BENCH_DATA`` names). Every split there is measured: each
``queries_<split>.jsonl`` against ``catalog_<split>.json`` if present, else ``catalog.json``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bot_toolsearch.core import ToolCatalog, ToolSearchSession

from ._table import Row

DATA = Path(
    os.environ.get("BOT_TOOLSEARCH_BENCH_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "bench"
)
CAP = 5
SECTION = "quality"

Ranker = Callable[[str], Sequence[str]]
Split = tuple[str, list[dict[str, Any]], list[dict[str, Any]]]


def _splits() -> list[Split]:
    """``(name, schemas, queries)`` for every ``queries_<name>.jsonl`` with a catalog."""
    splits = []
    for queries_path in sorted(DATA.glob("queries_*.jsonl")):
        name = queries_path.stem.removeprefix("queries_")
        catalog_path = DATA / f"catalog_{name}.json"
        if not catalog_path.is_file():
            catalog_path = DATA / "catalog.json"
        if not catalog_path.is_file():
            continue
        schemas = json.loads(catalog_path.read_text(encoding="utf-8"))
        lines = queries_path.read_text(encoding="utf-8").splitlines()
        splits.append((name, schemas, [json.loads(line) for line in lines if line.strip()]))
    return splits


# --- the baseline: the reference design's substring scoring -------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[._\-]+")


def _parts(name: str) -> list[str]:
    return [p for p in _SEPARATORS.split(_CAMEL.sub(" ", name).casefold().replace(" ", "_")) if p]


def _param_names(node: object, out: list[str]) -> None:
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            out.extend(" ".join(_parts(k)) for k in props)
        for value in node.values():
            _param_names(value, out)
    elif isinstance(node, list):
        for value in node:
            _param_names(value, out)


def _descriptions(node: object, out: list[str]) -> None:
    if isinstance(node, dict):
        text = node.get("description")
        if isinstance(text, str):
            out.append(text.casefold())
        for value in node.values():
            _descriptions(value, out)
    elif isinstance(node, list):
        for value in node:
            _descriptions(value, out)


def substring_ranker(schemas: list[dict[str, Any]]) -> Ranker:
    """Points per term: name part equal 10 / substring 5, parameter name 3, description 2."""
    docs = []
    for schema in schemas:
        function = schema["function"]
        params: list[str] = []
        texts = [str(function.get("description", "")).casefold()]
        _param_names(function.get("parameters"), params)
        _descriptions(function.get("parameters"), texts)
        docs.append((function["name"], _parts(function["name"]), params, " ".join(texts)))

    def rank(query: str) -> list[str]:
        terms: list[str] = []
        for token in query.casefold().split():
            terms.extend(t for t in _parts(token.lstrip("+")) if t not in terms)
        scored = []
        for name, parts, params, text in docs:
            score = 0
            for term in terms:
                if term in parts:
                    score += 10
                elif any(term in part for part in parts):
                    score += 5
                if any(term in p for p in params):
                    score += 3
                if term in text:
                    score += 2
            if score:
                scored.append((-score, name.casefold(), name))
        return [name for _, _, name in sorted(scored)[:CAP]]

    return rank


def engine_ranker(
    schemas: list[dict[str, Any]], namespaces: dict[str, str] | None = None
) -> Ranker:
    """Our engine: the first search of a fresh session over one prebuilt catalog (with
    ``namespaces`` descriptions, when given)."""
    catalog = ToolCatalog(schemas)

    def rank(query: str) -> Sequence[str]:
        session = ToolSearchSession(catalog, max_results=CAP, namespaces=namespaces)
        return session.search(query).loaded

    return rank


def evaluate(rank: Ranker, queries: list[dict[str, Any]], field: str) -> tuple[float, ...]:
    """``(recall@1, recall@5, MRR@5)`` of ``rank`` over ``queries[field]``."""
    hits1 = hits5 = 0
    reciprocal = 0.0
    for query in queries:
        found = list(rank(query[field]))[:CAP]
        target = query["expected"][0]
        if target in found:
            position = found.index(target) + 1
            hits5 += 1
            hits1 += position == 1
            reciprocal += 1.0 / position
    n = max(1, len(queries))
    return hits1 / n, hits5 / n, reciprocal / n


def run() -> list[Row]:
    """Rows for both rankers and both query styles, per split."""
    splits = _splits()
    if not splits:
        return [Row(SECTION, "dataset", "skipped", f"no queries_*.jsonl with a catalog in {DATA}")]
    rows = []
    for split, schemas, queries in splits:
        note = f"{split}: {len(queries)} queries, {len(schemas)} tools"
        for label, make in (("engine", engine_ranker), ("substring", substring_ranker)):
            rank = make(schemas)
            for field, style in (("question", "question"), ("keyword_query", "keywords")):
                r1, r5, mrr = evaluate(rank, queries, field)
                rows.append(Row(SECTION, f"{label} {style} recall@1", f"{r1:.3f}", note))
                rows.append(Row(SECTION, f"{label} {style} recall@5", f"{r5:.3f}", note))
                rows.append(Row(SECTION, f"{label} {style} MRR@5", f"{mrr:.3f}", note))
    return rows
