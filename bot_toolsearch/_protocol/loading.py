"""The loading modes of tool search (``[skills] tool_search_loading``) as plain functions.

One place for what each mode changes on the wire, on plain values (schemas, names, call
values), so the `Bot`'s tool-search middleware and ask loop and a drop-in client wrapper apply
the same rules:

- ``append``: a load adds the loaded schemas at the end of ``tools`` (the session's order).
- ``additional_tools`` (Responses API only; Chat Completions falls back to ``append``):
  ``tools`` is fixed for the ask (always-loaded tools and ``tool_search``); a load adds one
  ``{"type": "additional_tools", "role": "developer", "tools": [...]}`` item to the history
  right after the search's output.
- ``bridge``: ``tools`` is fixed for the ask (always-loaded tools, ``tool_search`` and the
  virtual ``call_tool``); a search's result carries the loaded schemas, and a ``call_tool``
  call is unwrapped into an ordinary call of the named tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot_toolsearch._config.settings import ToolSearchLoading
from bot_toolsearch._core.prompt import CALL_TOOL_NAME, TOOL_SEARCH_NAME, call_tool_schema
from bot_toolsearch._transports.base import ToolDeclaration
from bot_toolsearch._transports.names import WireNames

from .calls import CallRequest, CallResult, parse_arguments
from .messages import (
    CALL_TOOL_ARGUMENTS_NOT_OBJECT,
    CALL_TOOL_INVALID,
    CALL_TOOL_NAME_MISSING,
    CALL_TOOL_NOT_OBJECT,
    SCHEMA_NOTE,
)

__all__ = [
    "ADDITIONAL_TOOLS",
    "FALLBACK_TO_APPEND",
    "BridgedCalls",
    "bridge_collides",
    "bridge_search_result",
    "effective_loading",
    "fell_back",
    "request_names",
    "request_tools",
    "schema_entry",
    "schema_note",
    "search_messages",
    "tool_declaration",
    "unwrap_calls",
]

ADDITIONAL_TOOLS = "additional_tools"
"""The ``type`` of the history message (and Responses input item) that declares loaded tools."""

FALLBACK_TO_APPEND = (
    '[skills] tool_search_loading = "additional_tools" needs the Responses API; '
    '[model] api is "%s", so loads are appended to the tools list ("append")'
)
"""The one log line of the Chat Completions fallback (``%s``: the API)."""


def effective_loading(mode: ToolSearchLoading, api: str) -> ToolSearchLoading:
    """The mode that applies on ``api`` (``"responses"`` or a Chat Completions name):
    ``additional_tools`` needs the Responses API; ``auto`` is ``additional_tools`` there and
    ``bridge`` on Chat Completions. Never ``auto``."""
    if mode == "auto":
        return "additional_tools" if api == "responses" else "bridge"
    if mode == "additional_tools" and api != "responses":
        return "append"
    return mode


def fell_back(wanted: ToolSearchLoading, mode: ToolSearchLoading) -> bool:
    """Whether `effective_loading` refused ``wanted`` (``additional_tools`` on Chat
    Completions), which is worth one log line; ``auto`` choosing a mode is not."""
    return wanted == "additional_tools" and mode == "append"


def bridge_collides(names: WireNames) -> bool:
    """Whether a real tool owns the spelling ``call_tool`` (bridge mode cannot be used)."""
    return names.to_canonical(CALL_TOOL_NAME) is not None


def request_tools(
    session_tools: Sequence[Mapping[str, Any]], mode: ToolSearchLoading
) -> list[dict[str, Any]]:
    """The provider-visible ``tools`` of a round from the session's list for that round.

    ``session_tools`` is the always-loaded tools, ``tool_search``, then the loaded tools (the
    order of `ToolSearchSession.request_tools`). ``append`` sends it as it is; the other modes
    cut it after ``tool_search`` (so it is the same in every round of an ask), and ``bridge``
    adds ``call_tool``.
    """
    tools = [dict(t) for t in session_tools]
    if mode == "append":
        return tools
    cut = next(
        (i + 1 for i, t in enumerate(tools) if t["function"]["name"] == TOOL_SEARCH_NAME),
        len(tools),
    )
    fixed = tools[:cut]
    if mode == "bridge":
        fixed.append(call_tool_schema())
    return fixed


def request_names(session_names: Sequence[str], mode: ToolSearchLoading) -> tuple[str, ...]:
    """The names of the tools `request_tools` makes of the session's list whose names are
    ``session_names`` (`ToolSearchSession.request_tool_names`), in its order."""
    if mode == "append":
        return tuple(session_names)
    cut = (
        session_names.index(TOOL_SEARCH_NAME) + 1
        if TOOL_SEARCH_NAME in session_names
        else len(session_names)
    )
    fixed = tuple(session_names[:cut])
    return (*fixed, CALL_TOOL_NAME) if mode == "bridge" else fixed


def schema_entry(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``{"name", "description", "parameters"}`` of a Chat Completions tool schema."""
    function = schema["function"]
    return {
        "name": function["name"],
        "description": function.get("description") or "",
        "parameters": function.get("parameters") or {"type": "object", "properties": {}},
    }


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def bridge_search_result(result: Mapping[str, Any], schemas: Sequence[Mapping[str, Any]]) -> str:
    """A search result's text in bridge mode: its fields plus ``tools``, the full schemas
    ``schemas`` (the tools it loaded, and any already loaded one the ask has not shown yet;
    canonical names, the names ``call_tool`` takes)."""
    return _compact({**result, "tools": [schema_entry(s) for s in schemas]})


def search_messages(searches: Sequence[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """The Chat-shaped history of ``tool_search`` calls a host shows on the model's behalf
    (``(id, arguments, result)`` each): one assistant message with the calls, then each
    result. Used to re-declare loaded schemas in ``bridge`` mode, the same bytes every time."""
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": TOOL_SEARCH_NAME, "arguments": arguments},
            }
            for call_id, arguments, _ in searches
        ],
    }
    results = [
        {"role": "tool", "tool_call_id": call_id, "content": content}
        for call_id, _, content in searches
    ]
    return [assistant, *results]


def schema_note(name: str, schema: Mapping[str, Any]) -> str:
    """`SCHEMA_NOTE` for one tool: appended to a bridged call's invalid-arguments result."""
    return SCHEMA_NOTE.format(name=name, schema=_compact(schema_entry(schema)))


def tool_declaration(
    schemas: Sequence[Mapping[str, Any]], after: str | None = None
) -> ToolDeclaration:
    """The declaration of loaded tools (canonical Chat Completions schemas, copied; the
    transport encodes the names and sends it as one ``additional_tools`` input item)."""
    return ToolDeclaration(tuple(json.loads(json.dumps(s)) for s in schemas), after)


@dataclass(frozen=True, slots=True)
class BridgedCalls:
    """A batch with its ``call_tool`` calls unwrapped."""

    calls: list[CallRequest]
    """Every call, in order; a well-formed ``call_tool`` call became a call of its target."""
    answered: dict[int, CallResult]
    """Results of the malformed ``call_tool`` calls, by position."""
    bridged: frozenset[int]
    """Positions of the unwrapped calls."""


def unwrap_calls(
    calls: Sequence[CallRequest], names: WireNames, permitted: frozenset[str]
) -> BridgedCalls:
    """Turn each ``call_tool(name, arguments)`` call into an ordinary call of ``name``.

    The unwrapped call keeps the call's id, index and source; its name is canonical when
    ``name`` (canonical or wire spelling) decodes to a permitted tool, and otherwise stays as
    the model wrote it, so later refusals echo only the model's text. ``arguments`` may be an
    object or a JSON text of one; missing counts as ``{}``. A call without a string ``name``,
    or with ``arguments`` of another kind, is answered here as ``invalid``.
    """
    out: list[CallRequest] = []
    answered: dict[int, CallResult] = {}
    bridged: set[int] = set()
    for position, call in enumerate(calls):
        out.append(call)
        if call.name != CALL_TOOL_NAME:
            continue
        problem = _unwrap_problem(call)
        if problem is not None:
            text = CALL_TOOL_INVALID.format(problem=problem)
            answered[position] = CallResult(call.id, CALL_TOOL_NAME, text, "invalid")
            continue
        assert call.arguments is not None
        raw_name: str = call.arguments["name"]
        canonical = names.to_canonical(raw_name.strip())
        name = canonical if canonical is not None and canonical in permitted else raw_name
        inner = call.arguments.get("arguments", {})
        if isinstance(inner, str):
            inner_raw = inner
            parsed, error = parse_arguments(inner)
        else:
            inner_raw = _compact(inner)
            parsed, error = dict(inner), ""
        out[-1] = replace(
            call,
            name=name,
            arguments_raw=inner_raw,
            arguments=parsed,
            arguments_error=error or None,
        )
        bridged.add(position)
    return BridgedCalls(out, answered, frozenset(bridged))


def _unwrap_problem(call: CallRequest) -> str | None:
    if call.arguments is None:
        return CALL_TOOL_NOT_OBJECT.format(problem=call.arguments_error or "unreadable")
    name = call.arguments.get("name")
    if not isinstance(name, str) or not name.strip():
        return CALL_TOOL_NAME_MISSING
    inner = call.arguments.get("arguments", {})
    if isinstance(inner, Mapping):
        return None
    if isinstance(inner, str) and parse_arguments(inner)[0] is not None:
        return None
    return CALL_TOOL_ARGUMENTS_NOT_OBJECT
