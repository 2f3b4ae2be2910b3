"""The one place tool lists, calls and history items change between canonical and wire names.

Both hosts speak canonical names (``weather.forecast``); a provider sees wire names
(``weather-_-forecast``, see `WireNames`). The `Bot`'s transport and the wrapper's plans
(``_wrap``) route every tool entry, history message or item and reply call through these
functions. A call to a tool that is not permitted keeps the spelling the model wrote, only
made wire-legal (`encode_foreign_name`), so a forbidden tool's wire name never leaks.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Literal

from bot_toolsearch._core.unicode import well_formed

from .base import ModelToolCall
from .names import WireNames, encode_foreign_name

__all__ = [
    "canonical_calls",
    "wire_call_name",
    "wire_item",
    "wire_message",
    "wire_own_message",
    "wire_tool",
]


def wire_call_name(name: str, names: WireNames, *, foreign: bool) -> str:
    """The wire spelling of a called name: mapped, or for a ``foreign`` call (no permitted
    tool) the model's own spelling made wire-legal."""
    return encode_foreign_name(name) if foreign else names.to_wire(name)


def wire_tool(
    tool: Mapping[str, Any],
    names: WireNames,
    api: Literal["chat", "responses"] = "chat",
    *,
    canonical: str | None = None,
) -> Mapping[str, Any]:
    """A function tool entry with its wire name: the same object when it already has it.

    Chat Completions nests the name under ``function``; Responses does not. ``canonical``
    names the tool when the entry's own name is not canonical (already wired once).
    """
    function = tool["function"] if api == "chat" else tool
    wire = names.to_wire(str(function["name"]) if canonical is None else canonical)
    if function.get("name") == wire:
        return tool
    if api == "chat":
        return {**tool, "function": {**function, "name": wire}}
    return {**tool, "name": wire}


def wire_own_message(message: Mapping[str, Any], names: WireNames) -> dict[str, Any]:
    """A chat message written by this library with its ``tool_calls`` in wire spelling (a new
    dict, every text made well-formed). A call marked ``foreign`` (see ``history_calls``) is
    no permitted tool's and keeps the model's spelling."""
    out = dict(message)
    content = out.get("content")
    if isinstance(content, str):
        # The last guard before the SDK encodes the body: no lone surrogate leaves.
        out["content"] = well_formed(content)
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": wire_call_name(
                        str(call["function"]["name"]), names, foreign=bool(call.get("foreign"))
                    ),
                    "arguments": well_formed(str(call["function"]["arguments"])),
                },
            }
            for call in calls
        ]
    return out


def wire_message(message: Any, names: WireNames, known: Collection[str]) -> Any:
    """A caller's chat message with the names of its tool calls in wire spelling (a malformed
    message or call goes upstream as the caller wrote it)."""
    if not isinstance(message, Mapping) or not isinstance(message.get("tool_calls"), list | tuple):
        return message
    calls = []
    for call in message["tool_calls"]:
        function = call.get("function") if isinstance(call, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not isinstance(function, Mapping):
            calls.append(call)
            continue
        wire = wire_call_name(name, names, foreign=name not in known)
        calls.append({**call, "function": {**function, "name": wire}})
    return {**message, "tool_calls": calls}


def wire_item(item: Mapping[str, Any], names: WireNames, known: Collection[str]) -> dict[str, Any]:
    """A Responses ``function_call`` item (as a dict) with its name in wire spelling."""
    name = str(item["name"])
    return {**item, "name": wire_call_name(name, names, foreign=name not in known)}


def canonical_calls(
    raw: Iterable[tuple[str, str, str]], names: WireNames
) -> tuple[ModelToolCall, ...]:
    """The ``(id, wire name, arguments)`` calls of a reply with canonical names (a name no
    tool has stays as sent)."""
    return tuple(
        ModelToolCall(call_id, names.to_canonical(wire) or wire, wire, arguments)
        for call_id, wire, arguments in raw
    )
