"""Core timings on synthetic catalogs: catalog build, session creation, request_tools, search.

Targets at 10,000 tools (issue 2): session creation < 20 µs median, one keyword search
< 1 ms median. The catalog is deterministic (seeded), with a Zipf-like word distribution: stop
words are the most frequent, and the words the queries use sit at common ranks (each appears in
roughly 2-15% of the tools), so postings lists are long, as in a real catalog.
"""

from __future__ import annotations

import itertools
import random
import time
from typing import Any

from bot_toolsearch.core import ToolCatalog, ToolSearchSession

from ._table import Row, median_seconds, us

SECTION = "core"
SIZES = (256, 10_000)
QUERIES = (
    "weather forecast for a city",
    "send a message to the group",
    "search songs by artist",
    "convert currency amount",
    "+user profile avatar",
    "getMemberInfo",
)


_STOP_WORDS = "the a of to for and with in by from or is on"
_REAL_WORDS = (
    "weather forecast city send message group search song artist convert currency amount "
    "user profile avatar member info file upload download calendar event create delete "
    "update list get set image video note task order payment invoice email contact map"
)


def _words(rng: random.Random, count: int) -> list[str]:
    """A vocabulary in frequency-rank order: stop words first, then made-up words, with the
    real words the queries use spread over ranks 40-400 (common, but not in every tool)."""
    syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "zu", "an", "or", "el"]
    made = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(count * 2)})
    rng.shuffle(made)
    vocabulary = [*_STOP_WORDS.split(), *made[:count]]
    for i, word in enumerate(_REAL_WORDS.split()):
        vocabulary.insert(40 + 10 * i, word)
    return vocabulary[:count]


def synthetic_catalog(size: int, *, seed: int = 7) -> list[dict[str, Any]]:
    """``size`` tool schemas with 3 parameters and a 12-word description each."""
    rng = random.Random(seed)
    vocabulary = _words(rng, 3000)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]

    def pick(k: int) -> list[str]:
        return rng.choices(vocabulary, weights=weights, k=k)

    schemas = []
    for i in range(size):
        namespace, verb, noun = pick(3)
        params = {
            f"{a}_{b}": {"type": "string", "description": " ".join(pick(6))}
            for a, b in (pick(2) for _ in range(3))
        }
        schemas.append(
            {
                "type": "function",
                "function": {
                    "name": f"{namespace}.{verb}_{noun}_{i}",
                    "description": " ".join(pick(12)),
                    "parameters": {"type": "object", "properties": params},
                },
            }
        )
    return schemas


def run() -> list[Row]:
    """Rows for each catalog size."""
    return [row for size in SIZES for row in _measure(size)]


def _measure(size: int) -> list[Row]:
    rows = []
    schemas = synthetic_catalog(size)
    start = time.perf_counter()
    catalog = ToolCatalog(schemas)
    build = time.perf_counter() - start
    names = catalog.names
    always = [names[0], names[1]]
    hidden = list(names[2:12])
    note = f"{size} tools"
    rows.append(Row(SECTION, f"catalog build ({size})", f"{build * 1e3:.0f} ms", note))

    create = median_seconds(lambda: ToolSearchSession(catalog, always_loaded=always))
    rows.append(Row(SECTION, f"session creation ({size})", us(create), "2 always-loaded"))
    create_hidden = median_seconds(
        lambda: ToolSearchSession(catalog, always_loaded=always, hidden=hidden)
    )
    rows.append(Row(SECTION, f"session creation ({size})", us(create_hidden), "+ 10 hidden"))

    session = ToolSearchSession(catalog, always_loaded=always)
    session.search("select:" + ",".join(names[20:25]))
    request = median_seconds(session.request_tools)
    rows.append(Row(SECTION, f"request_tools ({size})", us(request), "2 + 5 loaded"))

    cycle = itertools.cycle(QUERIES)
    search = median_seconds(
        lambda: ToolSearchSession(catalog, always_loaded=always).search(next(cycle)),
        repeat=300,
    )
    rows.append(Row(SECTION, f"keyword search ({size})", us(search), "fresh session, 6 queries"))
    paged = ToolSearchSession(catalog, always_loaded=always)
    repeat = median_seconds(lambda: paged.search("weather forecast"), repeat=100)
    rows.append(Row(SECTION, f"paged search ({size})", us(repeat), "same session, repeated"))
    deferred = median_seconds(
        lambda: ToolSearchSession(catalog, always_loaded=always).deferred_tool_names
    )
    rows.append(Row(SECTION, f"deferred_tool_names ({size})", us(deferred), "first access"))
    return rows
