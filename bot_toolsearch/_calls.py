"""Turning a model's tool calls (native or recovered from text) into `CallRequest` values."""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Sequence
from typing import Any

from ._middleware import CallRequest
from ._names import WireNames
from ._text_calls import TextToolCall
from ._transport import ModelToolCall
from ._unicode import well_formed

__all__ = ["from_native", "from_text", "history_calls", "parse_arguments", "unique_ids"]


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str]:
    """A call's raw arguments as an object, or ``None`` and why not.

    An empty string counts as ``{}``: some models send it for tools without parameters.
    """
    if not raw.strip():
        return {}, ""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"got a JSON {type(value).__name__}, not an object"
    return value, ""


def from_native(calls: Sequence[ModelToolCall], permitted: frozenset[str]) -> list[CallRequest]:
    """Native calls as requests, arguments parsed (never raises).

    A name that decodes to a tool this ask may not use keeps the model's spelling, so no
    result can reveal the canonical name of a forbidden tool.
    """
    requests: list[CallRequest] = []
    for index, call in enumerate(calls):
        arguments, problem = parse_arguments(call.arguments)
        name = call.name if call.name in permitted else call.wire_name
        requests.append(
            CallRequest(index, call.id, name, call.arguments, arguments, problem or None)
        )
    return requests


def from_text(
    calls: Sequence[TextToolCall], names: WireNames, permitted: frozenset[str]
) -> list[CallRequest]:
    """Calls recovered from text as requests, with fresh ids where the text gave none."""
    requests: list[CallRequest] = []
    for index, call in enumerate(calls):
        call_id = call.id or f"call_txt_{secrets.token_hex(12)}"
        canonical = names.to_canonical(call.name)
        name = canonical if canonical is not None and canonical in permitted else call.name
        # The model may have written a lone surrogate as a JSON escape; the raw text is sent
        # back in the history, so it must be encodable.
        raw = well_formed(json.dumps(call.arguments, ensure_ascii=False))
        requests.append(CallRequest(index, call_id, name, raw, call.arguments, None, "text"))
    return requests


def history_calls(calls: Sequence[CallRequest], permitted: frozenset[str]) -> list[dict[str, Any]]:
    """The ``tool_calls`` of the assistant message that carried ``calls``.

    Calls to permitted tools carry canonical names (the transport encodes them). Any other
    call is marked ``foreign``: the transport sends its name as the model wrote it (only made
    wire-legal), never through the catalog's map, which would reveal a forbidden tool's
    wire spelling.
    """
    out: list[dict[str, Any]] = []
    for call in calls:
        entry: dict[str, Any] = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_raw},
        }
        if call.name not in permitted:
            entry["foreign"] = True
        out.append(entry)
    return out


def unique_ids(calls: Sequence[CallRequest]) -> tuple[list[CallRequest], bool]:
    """The calls with every repeated id made unique (``<id>_2``, ``<id>_3``, ...); whether any was.

    A provider that reuses an id within one response would otherwise get several results
    under one id and could not tell them apart. The new ids are used everywhere after this:
    in the stored assistant message, the results and the trace, so each pair still matches.
    """
    seen: set[str] = set()
    taken = {call.id for call in calls}
    out: list[CallRequest] = []
    changed = False
    for call in calls:
        if call.id not in seen:
            seen.add(call.id)
            out.append(call)
            continue
        suffix = 2
        while f"{call.id}_{suffix}" in taken:
            suffix += 1
        new_id = f"{call.id}_{suffix}"
        taken.add(new_id)
        seen.add(new_id)
        out.append(dataclasses.replace(call, id=new_id))
        changed = True
    return out, changed
