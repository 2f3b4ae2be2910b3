"""The offline model behind the framework examples: a scripted OpenAI-compatible server.

It answers like a model that searches for the weather tool, calls it, then replies. Point
the examples at a real endpoint instead by setting ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from bot_toolsearch.testing import ScriptedOpenAIServer, call, text


def offline_model() -> ScriptedOpenAIServer | None:
    """A started scripted server, or ``None`` when ``OPENAI_BASE_URL`` names a real one."""
    if os.environ.get("OPENAI_BASE_URL"):
        return None
    server = ScriptedOpenAIServer().start()
    server.script(
        call("tool_search", query="select:get_weather"),
        call("get_weather", city="Oslo"),
        text("It is sunny in Oslo, 21 C."),
    )
    os.environ["OPENAI_BASE_URL"] = server.base_url
    os.environ.setdefault("OPENAI_API_KEY", "offline")
    return server


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    print(f"  ran get_weather(city={city!r})")
    return f"{city}: sunny, 21 C"


def many_tools() -> list[tuple[str, str, Callable[[str], str]]]:
    """65 more tools the model never needs: (name, description, function)."""

    def make(number: int) -> Callable[[str], str]:
        def lookup(item: str) -> str:
            return f"stock of {item} in warehouse {number}: 0"

        return lookup

    return [
        (f"inventory_item_{i:03d}", f"Look up stock level number {i}.", make(i)) for i in range(65)
    ]


def report(server: ScriptedOpenAIServer | None) -> None:
    """Print the tool names each upstream request carried."""
    if server is None:
        return
    for i, request in enumerate(server.requests, 1):
        print(f"  upstream request {i}: tools={request.tool_names}")
    server.stop()
