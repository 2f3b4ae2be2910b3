"""The prompt-cache bench's workload runs the real `Bot` against the cache-modelling server."""

from __future__ import annotations

from typing import Any

import pytest

from bench.bench_cache import build_workload, measure

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": f"office_tool_{i}",
            "description": f"Reads meter {i} of the office and returns its last readings.",
            "parameters": {
                "type": "object",
                "properties": {
                    "room": {"type": "string", "description": "The room the meter is in."},
                    "days": {"type": "integer", "description": "How many days back to read."},
                },
                "required": ["room", "days"],
            },
        },
    }
    for i in range(120)
]


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
async def test_the_workload_runs_on_script_and_the_cache_figures_add_up(api: str) -> None:
    off = await measure(build_workload(120, tool_search=False, schemas=SCHEMAS), api)
    on = await measure(build_workload(120, tool_search=True, schemas=SCHEMAS), api)

    assert (off.requests, on.requests) == (6, 9)  # two more searches in ask 1, one in ask 2
    assert 0 < off.cached_tokens < off.input_tokens
    assert on.input_tokens < off.input_tokens
    for figures in (off, on):
        uncached = figures.input_tokens - figures.cached_tokens
        assert figures.cost == pytest.approx(uncached + 0.1 * figures.cached_tokens)
        assert figures.cost < figures.cost_with_writes <= 1.25 * figures.input_tokens


async def test_a_loading_mode_the_bot_does_not_know_is_refused() -> None:
    workload = build_workload(120, tool_search=True, loading_mode="nonsense", schemas=SCHEMAS)
    with pytest.raises(ValueError, match="tool_search_loading"):
        await measure(workload, "chat_completions")


@pytest.mark.parametrize(
    ("api", "mode"),
    [("chat_completions", "bridge"), ("responses", "bridge"), ("responses", "additional_tools")],
)
async def test_fixed_tool_modes_run_on_script_and_cache_more_than_append(
    api: str, mode: str
) -> None:
    append = await measure(build_workload(120, tool_search=True, schemas=SCHEMAS), api)
    fixed = await measure(
        build_workload(120, tool_search=True, loading_mode=mode, schemas=SCHEMAS), api
    )

    assert fixed.requests == append.requests == 9
    assert fixed.cached_tokens > append.cached_tokens
    assert fixed.cost < append.cost
