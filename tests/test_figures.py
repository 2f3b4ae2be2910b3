"""Every current figure the README and docs quote is the one ``make bench`` wrote (issue 32).

docs/benchmarks.md is the one output of ``make bench``; each claim below is a sentence or table
row of a page with ``<<benchmark/metric>>`` (the row's value) or ``<<benchmark/metric|regex>>``
(the regex's group 1, searched in the row's value and note) in place of its figures. A claim
whose rendered text is not on its page fails: rerun the bench and the page must follow, or the
page changed and the claim must follow. Pages quote figures verbatim, as the bench wrote them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "docs" / "benchmarks.md"


def bench_rows() -> dict[str, tuple[str, str]]:
    """``{"benchmark/metric": (value, note)}`` from docs/benchmarks.md's table; a metric that
    appears twice is also keyed ``benchmark/metric/note``."""
    text = BENCHMARKS.read_text(encoding="utf-8")
    block = text[text.index("```\n") + 4 : text.rindex("```")]
    rows: dict[str, tuple[str, str]] = {}
    for line in block.splitlines()[2:]:
        cells = re.split(r"\s{2,}", line.strip())
        benchmark, metric, value = cells[:3]
        note = cells[3] if len(cells) > 3 else ""
        rows.setdefault(f"{benchmark}/{metric}", (value, note))
        rows[f"{benchmark}/{metric}/{note}"] = (value, note)
    return rows


def render(template: str, rows: dict[str, tuple[str, str]]) -> str:
    def figure(match: re.Match[str]) -> str:
        key, _, pattern = match.group(1).partition("|")
        value, note = rows[key]
        if not pattern:
            return value
        found = re.search(pattern, f"{value}  {note}")
        assert found is not None, (key, pattern, value, note)
        return found.group(1)

    return re.sub(r"<<(.+?)>>", figure, template)


def page(name: str) -> str:
    return " ".join((REPO / name).read_text(encoding="utf-8").split())


W = "wrap/"
PROXY = "wrap/proxy, 1 worker, 769 tools, 50 clients"
PASS = "wrap/pass-through, 1 worker, 769 tools, 50 clients"
RATIO = "wrap/proxy / pass-through, 769 tools (interleaved)"
SCAN = "embeddings/scan "
RATIO_OF = r"ours ([\d.]+)x"
BUILD_RATIO = r"^[\d.]+ s\s+([\d.]+)x"

R10 = "ranking/keyword search (10,000)"
H = "hybrid/"
QUESTIONS = r"^([\d.]+ / [\d.]+)"
KEYWORDS = r"\| ([\d.]+ / [\d.]+)"
CPU = "hybrid search (769), local model, CPU"
CPU_10K = "hybrid search (10,000), local model, CPU"
ADDED = r"(\+[\d.]+ ms) a search"


def hybrid_row(label: str, metric: str, bold: str = "") -> str:
    """A README row of the hybrid table: questions and keywords at 769 and 10,000 tools."""
    cells = [
        f"{bold}<<{H}{metric} ({size})|{style}>>{bold}"
        for size in ("769", "10,000")
        for style in (QUESTIONS, KEYWORDS)
    ]
    return f"| {label} | {' | '.join(cells)} |"


CLAIMS: list[tuple[str, str]] = [
    # README.md: hybrid search with the local model (issue 30); its costs in docs/core.md.
    ("README.md", hybrid_row("BM25 alone", "BM25 alone")),
    (
        "README.md",
        hybrid_row(
            "+ all-MiniLM-L6-v2 (int8), score fusion", "local model + score fusion", bold="**"
        ),
    ),
    ("README.md", f"<<{H}{CPU}|{ADDED}>> of CPU per search at 769 tools"),
    (
        "docs/core.md",
        f"Embedding the catalog: <<{H}catalog embedding (769), local model>> for the 769 dev "
        f"tools, <<{H}catalog embedding (10,000), local model>> for 10,000 real-world tools "
        f"(<<{H}catalog embedding (10,000), local model|wall (\\d+ s)>> on 2 cores, two batches "
        "at a time)",
    ),
    (
        "docs/core.md",
        f"Per search: <<{H}{CPU}|{ADDED}>> of CPU at 769 tools, <<{H}{CPU_10K}|{ADDED}>> at "
        f"10,000 (the query embedded, the scan, the fusion), against "
        f"<<{H}{CPU}|BM25 alone ([\\d.]+) ms>> and <<{H}{CPU_10K}|BM25 alone ([\\d.]+ ms)>> for "
        "BM25 alone (this benchmark's CPU time per search; [performance.md](performance.md) "
        f"times the keyword search on its own, by the clock: <<{R10}, ours>> at 10,000 tools",
    ),
    # docs/wrapper.md's first-request tokens, and why they differ from the README's chart.
    (
        "docs/wrapper.md",
        "| the caller's full list | "
        f"<<{W}first-request tokens, 100 tools|vs ([\\d,]+)>> | "
        f"<<{W}first-request tokens, 1,000 tools|vs ([\\d,]+)>> |",
    ),
    (
        "docs/wrapper.md",
        f"| through the wrapper | <<{W}first-request tokens, 100 tools|^([\\d,]+)>> (−92%) | "
        f"<<{W}first-request tokens, 1,000 tools|^([\\d,]+)>> (−96%) |",
    ),
    (
        "docs/wrapper.md",
        "The README's chart, from `bench/bench_scale.py`, counts "
        "<<scale/first-request tokens (1,000), full schemas>> and "
        "<<scale/first-request tokens (1,000), budget 4,000>> for 1,000 tools",
    ),
    # docs/performance.md: the two ways of timing a search against bm25s, and a loaded session.
    (
        "docs/performance.md",
        f"even with bm25s where the table says <<{R10}, ours|ours ([\\d.]+)x>>×",
    ),
    (
        "docs/performance.md",
        f"`bench_ranking` now reports both: <<{R10}, ours>> against bm25s's <<{R10}, bm25s>> "
        f"(<<{R10}, ours|ours ([\\d.]+)x>>×) the first way, <<{R10}, ours, each query once>> "
        f"against <<{R10}, ours, each query once|bm25s \\(([\\d.]+ ms)\\)>> "
        f"(<<{R10}, ours, each query once|([\\d.]+)x bm25s>>×) the second, at 10,000 tools. A "
        "session that has already loaded hundreds of tools searches not much slower than a "
        f"fresh one (750 loaded: <<{R10}, ours, 750 tools loaded|^[\\d.]+ ms\\s+([\\d.]+)x>>× over "
        "the same terms; before issue 30, 5×)",
    ),
    # docs/wrapper.md: work per create, first-request tokens, the proxy.
    (
        "docs/wrapper.md",
        "| wrapper work per `create`, same list object (plain openai loop) | "
        f"<<{W}create overhead, 1,000 tools, same list>> | "
        f"<<{W}create overhead, 10,000 tools, same list>> |",
    ),
    (
        "docs/wrapper.md",
        "| wrapper work per `create`, list rebuilt by a framework (same `parameters` objects) | "
        f"<<{W}create overhead, 1,000 tools, list rebuilt by a framework>> | "
        f"<<{W}create overhead, 10,000 tools, list rebuilt by a framework>> |",
    ),
    (
        "docs/wrapper.md",
        "| wrapper work per `create`, list parsed anew (the proxy; nothing shared) | "
        f"<<{W}create overhead, 1,000 tools, list parsed anew (proxy)>> | "
        f"<<{W}create overhead, 10,000 tools, list parsed anew (proxy)>> |",
    ),
    (
        "docs/wrapper.md",
        "| first call with a new list (indexing it once, search index included) | "
        f"<<{W}first call (indexing), 1,000 tools>> | <<{W}first call (indexing), 10,000 tools>> |",
    ),
    (
        "docs/wrapper.md",
        f"| the caller's full list | <<{W}first-request tokens, 100 tools|vs ([\\d,]+)>> | "
        f"<<{W}first-request tokens, 1,000 tools|vs ([\\d,]+)>> |",
    ),
    (
        "docs/wrapper.md",
        f"| through the wrapper | <<{W}first-request tokens, 100 tools|^([\\d,]+) vs>> "
        f"(−<<{W}first-request tokens, 100 tools|-(\\d+%)>>) | "
        f"<<{W}first-request tokens, 1,000 tools|^([\\d,]+) vs>> "
        f"(−<<{W}first-request tokens, 1,000 tools|-(\\d+%)>>) |",
    ),
    (
        "docs/wrapper.md",
        f"1 worker <<{PROXY}|^(\\d+) req/s>> requests/s against <<{PASS}|^(\\d+) req/s>>, "
        f"<<{PROXY}|CPU ([\\d.]+ ms)/request>> of CPU per request against "
        f"<<{PASS}|CPU ([\\d.]+) ms/request>> (×<<{RATIO}|CPU/request x([\\d.]+)>>); p50 "
        f"<<{PROXY}|p50 ([\\d.]+ ms)>> against <<{PASS}|p50 ([\\d.]+ ms)>>",
    ),
    # docs/core.md: the semantic stage's scan, memory and the BM25 recall it adds to.
    *[
        (
            "docs/core.md",
            f"| {label} | <<{SCAN}{size}, numpy|^([\\d.]+ ms)>> | "
            f"<<{SCAN}{size}, pure Python|^([\\d.]+ ms)>> |",
        )
        for label, size in (
            ("769 tools × 384 dimensions", "769 x 384"),
            ("10,000 tools × 384", "10,000 x 384"),
            ("10,000 tools × 1,536", "10,000 x 1,536"),
        )
    ],
    (
        "docs/core.md",
        "<<embeddings/matrix 10,000 x 1,536 from disk cache, numpy|([\\d.]+ MB)>> at 10,000 "
        "tools × 1,536, read from the disk cache in "
        "<<embeddings/matrix 10,000 x 1,536 from disk cache, numpy>> with numpy "
        "(<<embeddings/matrix 10,000 x 1,536 from disk cache, pure Python>> without)",
    ),
    (
        "docs/core.md",
        "recall@5 / MRR@5 <<quality/engine question recall@5>> / <<quality/engine question MRR@5>>"
        " for the raw questions, <<quality/engine keywords recall@5>> / "
        "<<quality/engine keywords MRR@5>> for up to six content words",
    ),
    # docs/performance.md: ranking quality, scale, start-up and the index.
    (
        "docs/performance.md",
        "| the raw question | <<quality/engine question recall@5>> | "
        "<<quality/engine question MRR@5>> | <<quality/substring question recall@5>> / "
        "<<quality/substring question MRR@5>> |",
    ),
    (
        "docs/performance.md",
        "| up to 6 content words | <<quality/engine keywords recall@5>> | "
        "<<quality/engine keywords MRR@5>> | <<quality/substring keywords recall@5>> / "
        "<<quality/substring keywords MRR@5>> |",
    ),
    *[
        (
            "docs/performance.md",
            f"| {label} | <<scale/{style} recall@5 (769)>> → <<scale/{style} recall@5 (10,000)>> "
            f"(−<<scale/{style} recall@5 drop>>) | <<scale/{style} MRR@5 (769)>> → "
            f"<<scale/{style} MRR@5 (10,000)>> (−<<scale/{style} MRR@5 drop>>) |",
        )
        for label, style in (
            ("the raw question", "question"),
            ("up to 6 content words", "keywords"),
        )
    ],
    *[
        (
            "docs/performance.md",
            f"| {n} | <<scale/first-request tokens ({n}), full schemas>> | "
            f"<<scale/first-request tokens ({n}), names directory>> | "
            f"<<scale/first-request tokens ({n}), budget 4,000>> ",
        )
        for n in ("1,000", "5,000", "10,000")
    ],
    (
        "docs/performance.md",
        "The bot then holds <<scale/Bot memory (10,000 code tools)>>, index and directory "
        "included, against <<scale/Bot memory (10,000 code tools)|schemas' own memory "
        "([\\d.]+ MiB)>> for the schemas themselves (<<scale/Bot memory (10,000 code tools)|"
        "\\(([\\d.]+)x\\)>>×)",
    ),
    (
        "docs/performance.md",
        "starts in <<scale/Bot(...) start-up (10,000 code tools)|tool search off: ([\\d.]+ s)>> "
        "in a fresh process with tool search off",
    ),
    (
        "docs/performance.md",
        "At 10,000 tools a session is created in <<scale/session creation (10,000)>>; a keyword "
        "search takes <<ranking/keyword search (10,000), ours>> once the terms it uses have been "
        "searched before and <<scale/keyword search (10,000)>> when they have not",
    ),
    (
        "docs/performance.md",
        "creating the `Tool` objects takes another <<scale/Bot(...) start-up (10,000 code "
        "tools)|Tool objects before it ([\\d.]+ s)>>",
    ),
    (
        "docs/performance.md",
        "With tool search on it starts in <<scale/Bot(...) start-up (10,000 code tools)>>, because",
    ),
    (
        "docs/performance.md",
        "counter of the `tokens` extra takes another <<scale/Bot(...) start-up (10,000 code "
        "tools)|the token counter ([\\d.]+ s)>>, once per process",
    ),
    (
        "docs/performance.md",
        "the first keyword search after start-up takes "
        "<<scale/first keyword search after start-up (10,000)>>",
    ),
    ("docs/core.md", "decode_name=wire.to_canonical) # per ask, <<core/session creation (256)>>"),
    *[
        (
            "docs/performance.md",
            f"| {label} | <<ranking/{metric}, ours>> | <<ranking/{metric}, bm25s>> | "
            f"<<ranking/{metric}, ours|{ratio}>>× |",
        )
        for label, metric, ratio in (
            ("keyword search, 1,000 tools", "keyword search (1,000)", RATIO_OF),
            ("keyword search, 10,000 tools", "keyword search (10,000)", RATIO_OF),
            ("index build, 10,000 real tools", "index build (10,000)", BUILD_RATIO),
            (
                "index build, 10,000 tools repeating the dev catalog's texts",
                "index build (10,000, dev catalog repeated)",
                BUILD_RATIO,
            ),
        )
    ],
]


def test_the_readme_scale_chart_is_the_last_bench_run() -> None:
    rows = bench_rows()
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    for n in ("1,000", "5,000", "10,000"):
        (line,) = [x for x in lines if x.lstrip().startswith(f"{n} tools  every schema ")]
        full = rows[f"scale/first-request tokens ({n}), full schemas"][0]
        budget = rows[f"scale/first-request tokens ({n}), budget 4,000"][0]
        assert re.search(rf"▕█* *{re.escape(full)} +tool search ▕ {re.escape(budget)}$", line)


@pytest.mark.parametrize(("name", "template"), CLAIMS, ids=[f"{n}:{t[:40]}" for n, t in CLAIMS])
def test_the_figure_is_the_last_bench_run(name: str, template: str) -> None:
    expected = " ".join(render(template, bench_rows()).split())
    assert expected in page(name), expected


def test_the_fixed_tool_modes_share_of_append_through_the_wrapper_is_computed() -> None:
    rows = bench_rows()

    def cost(api: str, mode: str) -> int:
        note = rows[f"wrap/wrapper conversation, 769 tools, {api}, search on, {mode}"][1]
        found = re.search(r"cost ([\d,]+)", note)
        assert found is not None
        return int(found.group(1).replace(",", ""))

    shares = [
        cost(api, mode) / cost(api, "append")
        for api, mode in (
            ("chat_completions", "bridge"),
            ("responses", "bridge"),
            ("responses", "additional_tools"),
        )
    ]
    low, high = round(min(shares) * 100), round(max(shares) * 100)
    assert f'cost {low}–{high}% of `"append"` through the wrapper' in page("docs/wrapper.md")


@pytest.mark.parametrize(
    ("name", "prefix", "metric"),
    [
        ("docs/wrapper.md", "wrap/wrapper conversation, 769 tools", "{api}, search {mode}"),
        (
            "docs/loading-modes.md",
            "prompt cache/{tools} tools",
            "{api}, search {mode}: input tokens",
        ),
    ],
)
def test_the_cache_tables_are_the_bench_rows(name: str, prefix: str, metric: str) -> None:
    rows = bench_rows()
    text = (REPO / name).read_text(encoding="utf-8")
    checked = 0
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if "loading-modes" in name and len(cells) == 7 and cells[0].isdigit():
            tools, api, mode, tokens, cached, cost = cells[:6]
            key = prefix.format(tools=tools) + ", " + metric.format(api=api, mode=mode)
        elif "wrapper" in name and len(cells) == 5 and cells[2].replace(",", "").isdigit():
            api, mode, tokens, cached, cost = cells
            key = prefix + ", " + metric.format(api=api, mode=mode)
        else:
            continue
        value, note = rows[key]
        assert value == tokens, key
        assert f"cached {cached}" in note, key
        assert f"cost {cost} " in note, key
        checked += 1
    assert checked >= 7


def test_performance_md_says_where_its_data_comes_from() -> None:
    """The quality rows need the BFCL-derived dev set, which is not in the repository."""
    text = page("docs/performance.md")
    assert "BOT_TOOLSEARCH_BENCH_DATA" in text
    assert "not in this repository" in text
    assert "skipped" in text


MAKE_TEST_TIME = (
    "`make test` takes about 6 minutes on 2 idle cores and 10-20 minutes on 2 cores other jobs "
    "keep busy"
)
"""How long ``make test`` takes: stated once, in the README (measured: 2.0-2.2 min with four
workers on an idle 2-core machine, 6-7 min on the same machine shared with other jobs)."""


def test_the_make_test_time_is_stated_once() -> None:
    assert MAKE_TEST_TIME in page("README.md")
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "stated once, in README.md" in makefile
    assert not re.search(r"\d min", makefile)
    for doc in sorted((REPO / "docs").glob("*.md")):
        text = page(f"docs/{doc.name}")
        assert "make test` takes" not in text, doc.name
