"""A caller's tool list for the wrapper tests: 70 real-looking function tools."""

from __future__ import annotations

import json
from typing import Any

from bot_toolsearch.core import TOOL_SEARCH_RULES, render_deferred_tools

_TOPICS = [
    ("get_weather", "Get the current weather for a city.", {"city": "The city name."}),
    ("send_email", "Send an email to a recipient.", {"to": "Address.", "body": "Text."}),
    ("play_music", "Play a song by title.", {"title": "Song title."}),
    ("create_event", "Create a calendar event.", {"title": "Event title.", "when": "ISO time."}),
    ("convert_currency", "Convert an amount between currencies.", {"amount": "Amount."}),
]


def _tool(name: str, description: str, params: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
                "required": list(params),
            },
        },
    }


def chat_tools(count: int = 70) -> list[dict[str, Any]]:
    """``count`` Chat Completions function tools; the first five are the named topics."""
    tools = [_tool(*topic) for topic in _TOPICS]
    tools.extend(
        _tool(f"inventory_item_{i:03d}", f"Look up stock level number {i} in the warehouse.", {})
        for i in range(count - len(tools))
    )
    return tools


def responses_tools(count: int = 70) -> list[dict[str, Any]]:
    """The same tools in the Responses (flat) shape."""
    return [{"type": "function", "strict": False, **tool["function"]} for tool in chat_tools(count)]


def directory_for(names: list[str]) -> str:
    """The directory text the `Bot` sends for these deferred names."""
    return render_deferred_tools(names) + "\n\n" + TOOL_SEARCH_RULES


def loaded(output: str) -> list[str]:
    """The ``loaded`` field of a ``tool_search`` result."""
    value: list[str] = json.loads(output)["loaded"]
    return value
