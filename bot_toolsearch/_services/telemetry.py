"""OpenTelemetry spans of tool search, when ``opentelemetry-api`` is installed (the ``otel``
extra): one span per model round, a child span per ``tool_search`` call.

Attribute names follow the OpenTelemetry GenAI semantic conventions where one exists: the
round is a ``chat`` operation (``gen_ai.operation.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``), a search an ``execute_tool``
one (``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``); what tool search
adds is under ``bot_toolsearch.*`` (the round's number, whether it was hidden, the tools sent
and loaded, the refusals, a search's query). Without the API installed, or without an SDK
configured by the application, nothing is recorded and nothing costs more than a check: no
span is started while the global tracer provider is OpenTelemetry's stand-in or the no-op one.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any

from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._protocol.trace import CallTrace, RoundTrace

try:
    from opentelemetry import trace as otel_trace
except ImportError:  # the otel extra is not installed
    otel_trace = None  # type: ignore[assignment]

__all__ = ["TRACER_NAME", "round_spans"]

_UNSET: tuple[type, ...] = (
    () if otel_trace is None else (otel_trace.ProxyTracerProvider, otel_trace.NoOpTracerProvider)
)
"""The tracer providers that record nothing: OpenTelemetry's stand-in before the application
sets one (it follows the one set later, so `_provider_set` asks per round) and the no-op one."""

_FROM_ENVIRONMENT = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
"""Whether the environment names a tracer provider, as OpenTelemetry reads it (here once: it
is the process's start-up configuration)."""

_PROVIDER = "_TRACER_PROVIDER"
"""The global OpenTelemetry sets the provider in, once (`set_tracer_provider`)."""


def _provider_set() -> bool:
    """Whether a tracer provider that records is set, as ``get_tracer_provider`` says, but
    without its environment lookup per round while none is set: the global it reads is looked
    at each time, so a provider set after import (once, as OpenTelemetry allows) is used from
    the next round on."""
    assert otel_trace is not None
    provider = getattr(otel_trace, _PROVIDER, _UNSET)
    if provider is None and not _FROM_ENVIRONMENT:
        return False
    if provider is None or provider is _UNSET:  # the environment's, or another API version
        provider = otel_trace.get_tracer_provider()
    return not isinstance(provider, _UNSET)


TRACER_NAME = "bot_toolsearch"
"""The instrumentation scope of every span."""


def round_spans(
    trace: RoundTrace, *, api: str, model: str, start_ns: int, end_ns: int | None = None
) -> None:
    """Record ``trace`` as a finished ``chat`` span (from ``start_ns`` to ``end_ns``, default
    now) under the current span, with an ``execute_tool tool_search`` child per search."""
    if otel_trace is None or not _provider_set():
        return  # no tracer provider set: every span would be a no-op, so none is made
    tracer = _tracer()
    end = time.time_ns() if end_ns is None else end_ns
    name = f"chat {model}" if model else "chat"
    span = tracer.start_span(name, start_time=start_ns)
    if not span.is_recording():  # no SDK configured, or sampled out: nothing to build
        span.end(end_time=end)
        return
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": trace.prompt_tokens,
        "gen_ai.usage.output_tokens": trace.output_tokens,
        "bot_toolsearch.api": api,
        "bot_toolsearch.round": trace.index,
        "bot_toolsearch.hidden": trace.hidden,
        "bot_toolsearch.tools_sent": len(trace.tool_names),
        "bot_toolsearch.loaded": list(trace.loaded),
        "bot_toolsearch.refusals": len(trace.refusals),
    }
    if trace.cached_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = trace.cached_tokens
    span.set_attributes(attributes)
    context = otel_trace.set_span_in_context(span)
    for call in trace.calls:
        if call.name == TOOL_SEARCH_NAME:
            child = tracer.start_span(
                f"execute_tool {TOOL_SEARCH_NAME}",
                context=context,
                start_time=end,
                attributes=_search_attributes(call),
            )
            child.end(end_time=end)
    span.end(end_time=end)


@functools.cache
def _tracer() -> Any:
    """The package's tracer, got once: before the application sets a tracer provider it is
    OpenTelemetry's proxy tracer, which follows the provider set later."""
    assert otel_trace is not None
    return otel_trace.get_tracer(TRACER_NAME)


def _search_attributes(call: CallTrace) -> dict[str, Any]:
    query = _field(call.arguments, "query")
    loaded = _field(call.result, "loaded")
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": TOOL_SEARCH_NAME,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
        "bot_toolsearch.query": query if isinstance(query, str) else call.arguments,
        "bot_toolsearch.loaded": [n for n in loaded if isinstance(n, str)]
        if isinstance(loaded, list)
        else [],
        "bot_toolsearch.outcome": call.outcome,
    }


def _field(text: str, key: str) -> object:
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed.get(key) if isinstance(parsed, dict) else None
