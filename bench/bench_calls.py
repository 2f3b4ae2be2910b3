"""One model reply with 16,000 tool calls sharing one id (issue 20): the id renaming.

`unique_ids` is what the `Bot`'s ask loop and the wrapper's plans run on every reply; renaming
the repeats used to probe ``<id>_2``, ``<id>_3``, ... afresh for each one (16.6 s at 16k
calls). Also the wrapper's whole reading of such a reply (`read_calls`: names, arguments,
renaming), the work one upstream reply costs before any tool search, and one streamed round
of 16,000 small text deltas held back as a possible tool-call envelope (each delta used to
re-join the whole text so far).
"""

from __future__ import annotations

import time

from openai.types.chat import ChatCompletionChunk

from bot_toolsearch._protocol.calls import CallRequest, unique_ids
from bot_toolsearch._wrap.caller_tools import CallerTools
from bot_toolsearch._wrap.plan import read_calls
from bot_toolsearch._wrap.streaming import _Round, _StreamState

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


def _stream_round(chunks: list[ChatCompletionChunk]) -> None:
    round_ = _Round(_StreamState(include_usage=False))
    for chunk in chunks:
        round_.feed(chunk)
    round_.whole()


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
    view = tools.view((), ())
    read = _best(lambda: read_calls(native, None, view.names, view.permitted))
    chunks = [
        ChatCompletionChunk.model_validate(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": "{" if i == 0 else "ab"},
                        "finish_reason": "stop" if i == CALLS - 1 else None,
                    }
                ],
            }
        )
        for i in range(CALLS)
    ]
    streamed = _best(lambda: _stream_round(chunks))
    return [
        Row("calls", f"rename {CALLS:,} repeated call ids", f"{rename * 1e3:.1f} ms", "was 16.6 s"),
        Row("calls", f"wrapper reads a reply of {CALLS:,} calls, one id", f"{read * 1e3:.1f} ms"),
        Row(
            "calls",
            f"stream a held round of {CALLS:,} text deltas",
            f"{streamed * 1e3:.1f} ms",
            "was 1.8 s",
        ),
    ]
