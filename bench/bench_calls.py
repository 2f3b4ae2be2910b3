"""One model reply with 16,000 tool calls sharing one id (issue 20): the id renaming.

`unique_ids` is what the `Bot`'s ask loop and the wrapper's plans run on every reply; renaming
the repeats used to probe ``<id>_2``, ``<id>_3``, ... afresh for each one (16.6 s at 16k
calls). Also the wrapper's whole reading of such a reply (`read_calls`: names, arguments,
renaming), the work one upstream reply costs before any tool search.
"""

from __future__ import annotations

import time

from bot_toolsearch._runtime.calls import CallRequest, unique_ids
from bot_toolsearch._wrap.caller_tools import CallerTools
from bot_toolsearch._wrap.plan import read_calls

from ._table import Row

CALLS = 16_000


def _best(fn: object, repeat: int = 3) -> float:
    assert callable(fn)
    best = float("inf")
    for _ in range(repeat):
        begin = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - begin)
    return best


def run() -> list[Row]:
    """The time to rename 16k repeated ids, alone and as the wrapper reads the reply."""
    calls = [CallRequest(i, "call_1", "a", "{}", {}) for i in range(CALLS)]
    rename = _best(lambda: unique_ids(calls))
    tools = CallerTools.build(
        [{"type": "function", "function": {"name": f"tool_{i}"}} for i in range(50)],
        "chat",
        "__",
    )
    native = [("call_1", "tool_1", '{"x": 1}')] * CALLS
    permitted = frozenset(tools.entries)
    read = _best(lambda: read_calls(native, None, tools, permitted))
    return [
        Row("calls", f"rename {CALLS:,} repeated call ids", f"{rename * 1e3:.1f} ms", "was 16.6 s"),
        Row("calls", f"wrapper reads a reply of {CALLS:,} calls, one id", f"{read * 1e3:.1f} ms"),
    ]
