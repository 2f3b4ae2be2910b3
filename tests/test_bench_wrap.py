"""The wrapper's prompt-cache bench: one conversation resent by a caller loop, per mode."""

from __future__ import annotations

import pytest

from bench.bench_cache import build_workload
from bench.bench_wrap import wrapped_conversation
from tests.test_bench_cache import SCHEMAS


@pytest.mark.parametrize(
    ("api", "fixed"), [("chat_completions", "bridge"), ("responses", "additional_tools")]
)
async def test_a_fixed_mode_keeps_more_of_the_conversation_cached_than_append(
    api: str, fixed: str
) -> None:
    figures = {}
    for mode in ("-", "append", fixed):
        workload = build_workload(120, tool_search=mode != "-", loading_mode=mode, schemas=SCHEMAS)
        figures[mode] = await wrapped_conversation(workload, api, mode, SCHEMAS)

    assert [figures[m][3] for m in ("-", "append", fixed)] == [6, 9, 9]  # upstream requests
    off, append, bridged = figures["-"], figures["append"], figures[fixed]
    assert append[0] < off[0]  # tool search sends fewer tokens
    assert bridged[1] / bridged[0] > append[1] / append[0]  # and a fixed list caches more
    assert bridged[2] < append[2]  # so it costs less
