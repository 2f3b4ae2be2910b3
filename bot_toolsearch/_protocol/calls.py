"""The values of one tool call (`CallRequest`, `CallResult`), their making from a reply, and
how a call that raised is logged.

A leaf of the runtime, as ``starlette/types.py`` is: the context, the middleware protocol and the
ask results all import these values, and this module imports none of them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot_toolsearch._core.unicode import well_formed
from bot_toolsearch._tools.mcp import MCPToolError
from bot_toolsearch._tools.tool import ToolImportError
from bot_toolsearch._transports.base import ModelToolCall
from bot_toolsearch._transports.names import WireNames
from bot_toolsearch._transports.text_calls import TextToolCall

from .messages import shown_name

__all__ = [
    "CallOutcome",
    "CallRequest",
    "CallResult",
    "RefusalReason",
    "from_native",
    "from_text",
    "history_calls",
    "log_failure",
    "log_refusals",
    "parse_arguments",
    "unique_ids",
]

logger = logging.getLogger("bot_toolsearch")

CallOutcome = Literal["ran", "answered", "refused", "invalid", "failed", "returned"]
"""``ran``: the tool was executed; ``answered``: a middleware answered it (``tool_search``);
``refused``: not executed, the result says why; ``invalid``: unusable name or arguments;
``failed``: the handler raised; ``returned``: the wrapper handed it to its caller to run."""

RefusalReason = Literal[
    "not_loaded",
    "loaded_this_round",
    "blind_call_loaded",
    "unknown",
    "end_with_other_calls",
    "too_many_searches",
]
"""Why a call was refused; keys of ``AskStats.refused_calls``."""


@dataclass(frozen=True, slots=True)
class CallRequest:
    """One tool call from a model response."""

    index: int
    """Position of the call in the response."""
    id: str
    """The call id the result must carry."""
    name: str
    """Canonical name when the wire name decodes, else the name exactly as the model sent it."""
    arguments_raw: str
    """The arguments as the model sent them (a JSON string)."""
    arguments: Mapping[str, Any] | None
    """The parsed arguments; ``None`` when they are not a JSON object."""
    arguments_error: str | None = None
    """Why ``arguments`` is ``None``."""
    source: Literal["native", "text"] = "native"
    """``text``: recovered from a tool-call envelope the model wrote as plain text."""


@dataclass(frozen=True, slots=True)
class CallResult:
    """The one result of one call, sent back to the model under the call's id."""

    call_id: str
    """Id of the call this answers."""
    name: str
    """Name of the call (canonical when known)."""
    content: str
    """The tool result text the model reads."""
    outcome: CallOutcome
    """What happened to the call."""
    reason: RefusalReason | None = None
    """For refused calls: why."""


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

    The first call with an id keeps it; a repeat gets the next ``<id>_<n>`` (``n`` from 2) that
    no call of the response uses and no earlier repeat was given, so the renaming is
    deterministic. Linear in the number of calls: each id remembers the last suffix it handed
    out, and every id of the response can be skipped over at most once (``a_b_2`` is only ever
    the candidate ``2`` of ``a_b``).
    """
    taken = {call.id for call in calls}
    if len(taken) == len(calls):
        return list(calls), False
    seen: set[str] = set()
    last_suffix: dict[str, int] = {}
    out: list[CallRequest] = []
    for call in calls:
        if call.id not in seen:
            seen.add(call.id)
            out.append(call)
            continue
        suffix = last_suffix.get(call.id, 1) + 1
        while f"{call.id}_{suffix}" in taken:
            suffix += 1
        last_suffix[call.id] = suffix
        new_id = f"{call.id}_{suffix}"
        taken.add(new_id)
        seen.add(new_id)
        out.append(dataclasses.replace(call, id=new_id))
    return out, True


_LOGGED_NAMES = 3
"""Most refused names one summary line shows (each made safe and cut by `shown_name`)."""


def log_refusals(results: Sequence[CallResult]) -> None:
    """One warning line for the calls of a batch refused as unknown or not loaded yet.

    A reply may hold thousands of such calls: the line gives their count, the count per
    reason and the first few distinct names, never one line per call.
    """
    refused = [r for r in results if r.reason in ("unknown", "not_loaded")]
    if not refused:
        return
    reasons: dict[str, int] = {}
    names: list[str] = []
    for result in refused:
        reasons[str(result.reason)] = reasons.get(str(result.reason), 0) + 1
        if len(names) < _LOGGED_NAMES and result.name not in names:
            names.append(result.name)
    counts = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
    shown = ", ".join(shown_name(n) for n in names)
    rest = len({r.name for r in refused}) - len(names)
    more = f" and {rest} more" if rest else ""
    logger.warning(
        "refused %d call(s) to unknown or unloaded tools (%s): %s%s",
        len(refused),
        counts,
        shown,
        more,
    )


def log_failure(name: str, exc: Exception) -> None:
    """Log a tool that raised: one line for what is not the developer's bug, else a traceback.

    An MCP tool's error is the server's answer (often to the model's arguments, such as an
    unknown time zone) and is logged as one WARNING line; a handler of ours that raised may be a
    bug in it, so its traceback is logged at ERROR.
    """
    if isinstance(exc, MCPToolError):
        logger.warning("tool %s failed: %s", name, exc)
    elif isinstance(exc, ToolImportError):  # e.g. a SyntaxError in a handler: its file:line
        if not exc.logged:  # says it all, in one line without a traceback
            logger.error("tool %s cannot run: %s", name, exc)
    else:
        logger.error("tool %s raised", name, exc_info=exc)
