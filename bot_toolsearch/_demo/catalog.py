"""The demo bot's tool catalog: 178 realistic tools across 17 namespaces.

Tools whose answer can be computed locally (time zones, units, arithmetic, statistics, text,
hashes, finance formulas, distances) really compute it. The others stand in for services the
demo cannot reach (weather, calendar, music, the chat group, email, ...) and return clearly
marked sample data: every such result carries ``"sample_data": true``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bot_toolsearch._tools.tool import Tool

from ._data import SAMPLE_GROUPS, load_json
from ._formula_tools import FORMULA_TOOLS
from ._math_tools import MATH_TOOLS
from ._text_tools import TEXT_TOOLS
from ._time_tools import TIME_TOOLS
from ._unit_tools import UNIT_TOOLS

__all__ = ["SAMPLE_NOTE", "demo_schemas", "demo_tools", "is_sample_tool"]

SAMPLE_NOTE = "illustrative sample data from the offline demo, not a live service"
"""The ``note`` every sample-data result carries beside ``"sample_data": true``."""


def _sample_handler(name: str, fields: dict[str, Any]) -> Callable[..., dict[str, Any]]:
    def handler(**arguments: Any) -> dict[str, Any]:
        return {
            "sample_data": True,
            "note": SAMPLE_NOTE,
            "tool": name,
            "arguments": arguments,
            **fields,
        }

    return handler


def _sample_tool(spec: dict[str, Any]) -> Tool:
    """A tool from one ``data/samples_*.json`` entry: name, description, properties,
    required and the sample ``result`` fields."""
    name = spec["name"]
    parameters: dict[str, Any] = {"type": "object", "properties": spec["properties"]}
    if spec["required"]:
        parameters["required"] = list(spec["required"])
    return Tool(name, spec["description"], parameters, _sample_handler(name, spec["result"]))


_SAMPLE_SPECS: tuple[dict[str, Any], ...] = tuple(
    spec for group in SAMPLE_GROUPS for spec in load_json(f"samples_{group}.json")
)
_SAMPLE_NAMES = frozenset(spec["name"] for spec in _SAMPLE_SPECS)
_COMPUTED: tuple[Tool, ...] = (*TIME_TOOLS, *UNIT_TOOLS, *MATH_TOOLS, *TEXT_TOOLS, *FORMULA_TOOLS)


def demo_tools() -> tuple[Tool, ...]:
    """Every demo tool, grouped by namespace (computed tools and sample tools interleaved).

    The host built-ins (``send_message``, ``end``) are not included: the `Bot` provides them.
    """
    tools = [*_COMPUTED, *(_sample_tool(spec) for spec in _SAMPLE_SPECS)]
    order = {ns: i for i, ns in enumerate(dict.fromkeys(t.name.split(".")[0] for t in tools))}
    # A stable sort by namespace keeps each namespace together, in first-appearance order.
    return tuple(sorted(tools, key=lambda t: order[t.name.split(".")[0]]))


def demo_schemas(tools: Sequence[Tool] | None = None) -> list[dict[str, Any]]:
    """The Chat Completions schemas of the demo tools (what a ``tools.json`` catalog holds)."""
    return [t.schema() for t in (demo_tools() if tools is None else tools)]


def is_sample_tool(name: str) -> bool:
    """True for tools that return sample data rather than a computed answer."""
    return name in _SAMPLE_NAMES
