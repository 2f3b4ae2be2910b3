"""OpenTelemetry spans of tool search: a wrapped call's rounds and searches, read back with
the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot_toolsearch import Tool, wrap_openai
from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, Usage, call
from tests.wrap._tools import chat_tools

if TYPE_CHECKING:
    from tests.conftest import BotFactory

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The exporter of the process's tracer provider (set once: OpenTelemetry allows one)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


async def test_a_round_and_a_search_are_spans_with_genai_attributes(
    server: ScriptedOpenAIServer, spans: InMemorySpanExporter
) -> None:
    server.script(
        ToolCallsTurn((call("tool_search", query="weather city"),), usage=Usage(100, 5, 0)),
        ToolCallsTurn((call("get_weather", city="Oslo"),), usage=Usage(120, 7, 0)),
    )
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    client = wrap_openai(inner)
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("caller"):
        await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}], tools=chat_tools()
        )
    await client.close()
    finished = {s.name: s for s in spans.get_finished_spans() if s.name != "caller"}
    caller = next(s for s in spans.get_finished_spans() if s.name == "caller")
    rounds = [s for s in spans.get_finished_spans() if s.name == "chat gpt-test"]
    assert len(rounds) == 2
    first, second = sorted(rounds, key=lambda s: s.attributes["bot_toolsearch.round"])
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == "gpt-test"
    assert first.attributes["gen_ai.usage.input_tokens"] == 100
    assert first.attributes["gen_ai.usage.output_tokens"] == 5
    assert first.attributes["bot_toolsearch.hidden"] is True
    assert "get_weather" in first.attributes["bot_toolsearch.loaded"]
    assert second.attributes["bot_toolsearch.hidden"] is False
    assert first.parent is not None
    assert first.parent.span_id == caller.context.span_id
    search = finished["execute_tool tool_search"]
    assert search.attributes["gen_ai.tool.name"] == "tool_search"
    assert search.attributes["gen_ai.operation.name"] == "execute_tool"
    assert search.attributes["bot_toolsearch.query"] == "weather city"
    assert "get_weather" in search.attributes["bot_toolsearch.loaded"]
    assert search.parent is not None
    assert search.parent.span_id == first.context.span_id


async def test_the_bot_records_the_same_spans(
    server: ScriptedOpenAIServer, make_bot: BotFactory, spans: InMemorySpanExporter
) -> None:
    tool = Tool(
        "weather.forecast",
        "Weather forecast.",
        {"type": "object", "properties": {"city": {"type": "string"}}},
        lambda city: f"{city}: sun",
    )
    server.script(call("tool_search", query="select:weather.forecast"), call("end"))
    await make_bot([tool]).ask("Oslo?")
    rounds = [s for s in spans.get_finished_spans() if s.name.startswith("chat")]
    assert [s.attributes["bot_toolsearch.round"] for s in rounds] == [1, 2]
    assert rounds[0].attributes["bot_toolsearch.loaded"] == ("weather.forecast",)
    [search] = [s for s in spans.get_finished_spans() if s.name == "execute_tool tool_search"]
    assert search.attributes["bot_toolsearch.query"] == "select:weather.forecast"


def test_no_span_is_started_before_an_application_sets_a_tracer_provider() -> None:
    """Without a tracer provider every span would be a no-op: none is started (a fresh
    process, since this one's provider is set once by the fixture above)."""
    import subprocess
    import sys

    script = (
        "from bot_toolsearch._protocol.trace import RoundTrace\n"
        "from bot_toolsearch._services import telemetry\n"
        "trace = RoundTrace(1, ('a',), (), 'ok', 1, 0)\n"
        "telemetry.round_spans(trace, api='chat', model='m', start_ns=0)\n"
        "assert telemetry._tracer.cache_info().currsize == 0, 'a span was started'\n"
        "from opentelemetry import trace as t\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "t.set_tracer_provider(TracerProvider())\n"
        "telemetry.round_spans(trace, api='chat', model='m', start_ns=0)\n"
        "assert telemetry._tracer.cache_info().currsize == 1, 'no span once a provider is set'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


# -- a provider set after the first rounds (a fresh process each: OpenTelemetry sets it once) --

_ROUNDS = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from bot_toolsearch._protocol.trace import RoundTrace
from bot_toolsearch._services.telemetry import _tracer, round_spans

def rounds(n):
    for i in range(n):
        round_spans(RoundTrace(i + 1, ("a",), (), "ok"), api="chat", model="m", start_ns=0)

rounds(3)
print(type(PROVIDER).__name__, _tracer.cache_info().currsize)
"""

_LATER = """
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
rounds(2)
print([span.attributes["bot_toolsearch.round"] for span in exporter.get_finished_spans()])
"""


def _run(code: str, **env: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_a_provider_set_after_the_first_rounds_records_the_next_ones() -> None:
    code = _ROUNDS.replace("PROVIDER", "trace.get_tracer_provider()") + _LATER
    assert _run(code) == ["ProxyTracerProvider 0", "[1, 2]"]


def test_a_provider_the_environment_names_is_loaded_by_the_first_round() -> None:
    # As ``get_tracer_provider`` loads it (the SDK's entry point): the rounds set it up.
    probe = _ROUNDS.replace("PROVIDER", "trace._TRACER_PROVIDER")
    assert _run(probe, OTEL_PYTHON_TRACER_PROVIDER="sdk_tracer_provider") == ["TracerProvider 1"]
    assert _run(probe) == ["NoneType 0"]
