"""Hostile ``tool_search`` arguments: the worst-case ``execute`` time at 10 kB and 100 kB.

Every shape that once cost (or could cost) super-linear time is tried at both sizes: a code
fence full of whitespace (the old fence regex was cubic), long keyword and ``select:`` lists,
deep JSON nesting, escapes of lone surrogates, trailing junk. The figure that matters is the
ratio of the two worst cases: about 10 means the work is linear in the input.
"""

from __future__ import annotations

from collections.abc import Callable

from bot_toolsearch._transports.text_calls import TextToolCallError, parse_text_tool_calls
from bot_toolsearch.core import ToolCatalog, ToolSearchSession

from ._table import Row, median_seconds

SIZES = (10_000, 100_000)

_CATALOG = ToolCatalog(
    [
        {
            "type": "function",
            "function": {
                "name": f"ns{i % 20}.tool_{i}",
                "description": f"Tool number {i}: search, send, read and write things.",
            },
        }
        for i in range(500)
    ]
)


def _shapes(n: int) -> dict[str, str]:
    half = n // 2
    return {
        "fence of spaces": "```" + " " * n + "x",
        "fence, tag, newlines": "```json" + " \n" * half + '{"query": "a"}' + " " * 3 + "x```",
        "closed fence of spaces": "```" + " " * n + "```",
        "keyword query": '{"query": "' + "send read " * (n // 10) + '"}',
        "select list": '{"query": "select:' + "ns1.tool_1," * (n // 11) + '"}',
        "select of spaces": '{"query": "select:' + " " * n + 'x"}',
        "deep JSON": "[" * n,
        "surrogate escapes": '{"query": "' + "\\ud83d" * (n // 6) + '"}',
        "trailing junk": '{"query": "a"}' + "}" * n,
        "whitespace only": " \t\n" * (n // 3),
    }


def _text_shapes(n: int) -> dict[str, str]:
    return {
        "text: tag of spaces": "<tool_call" + " " * n,
        "text: open strings": '{"name": "' + '\\"' * (n // 2),
        "text: parameters": "<function=x>" + "<parameter=a>b</parameter>" * (n // 26),
    }


def _worst(run: Callable[[str], object], shapes: dict[str, str]) -> tuple[float, str]:
    worst, which = 0.0, ""
    for name, arguments in shapes.items():
        seconds = median_seconds(lambda a=arguments: run(a), repeat=5, warmup=1)
        if seconds > worst:
            worst, which = seconds, name
    return worst, which


def _recover(text: str) -> object:
    try:
        return parse_text_tool_calls(text)
    except TextToolCallError:
        return None


def run() -> list[Row]:
    """Worst case over the shapes at each size, and the ratio of the two."""
    session = ToolSearchSession(_CATALOG, max_results=5)
    rows: list[Row] = []
    worst: dict[int, float] = {}
    for n in SIZES:
        seconds, which = _worst(session.execute, _shapes(n))
        worst[n] = seconds
        rows.append(
            Row("hostile", f"execute worst case, {n // 1000} kB", f"{seconds * 1e3:.2f} ms", which)
        )
    ratio = worst[SIZES[1]] / worst[SIZES[0]]
    rows.append(Row("hostile", "execute 100 kB / 10 kB", f"{ratio:.1f}x", "~10 = linear"))
    text_worst = {n: _worst(_recover, _text_shapes(n)) for n in SIZES}
    for n, (seconds, which) in text_worst.items():
        rows.append(
            Row(
                "hostile",
                f"text-call recovery worst, {n // 1000} kB",
                f"{seconds * 1e3:.2f} ms",
                which,
            )
        )
    text_ratio = text_worst[SIZES[1]][0] / text_worst[SIZES[0]][0]
    rows.append(Row("hostile", "recovery 100 kB / 10 kB", f"{text_ratio:.1f}x", "~10 = linear"))
    return rows
