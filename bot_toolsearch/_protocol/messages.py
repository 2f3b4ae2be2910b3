"""Every text of the host runtime that a model (or the chat) reads, as named constants.

Wording changes are behaviour changes: tests snapshot these strings and the CHANGELOG records
edits. Core texts (the ``tool_search`` schema, the directory block, ``TOOL_SEARCH_RULES``) live
in ``_core/prompt.py``; these are the runtime's own.
"""

from __future__ import annotations

import re

__all__ = [
    "ANNOUNCEMENT",
    "ANNOUNCEMENT_AGENT_TOOL",
    "ANNOUNCEMENT_REPEAT_SUFFIX",
    "BLIND_CALL_LOADED",
    "CALL_TOOL_ARGUMENTS_NOT_OBJECT",
    "CALL_TOOL_INVALID",
    "CALL_TOOL_NAME_MISSING",
    "CALL_TOOL_NOT_OBJECT",
    "CORRECTION_HINT",
    "END_WITH_OTHER_CALLS",
    "END_WITH_OTHER_CALLS_NONE_RAN",
    "INVALID_ARGUMENTS",
    "INVALID_ARGUMENT_VALUES",
    "INVALID_CALL",
    "LOADED_THIS_ROUND",
    "MAX_SHOWN_NAME",
    "NOT_LOADED_YET",
    "NOT_LOADED_YET_BRIDGE",
    "NO_SUCH_TOOL",
    "PREFETCH_HEADER",
    "SCHEMA_NOTE",
    "TOOL_FAILED",
    "TOOL_TIMED_OUT",
    "TRUNCATED_RESULT",
    "end_with_other_calls",
    "no_such_tool",
    "shown_name",
    "tool_failed",
    "truncated_result",
]

NOT_LOADED_YET = (
    "Error: tool {name} was not executed: its schema is not loaded yet. "
    'Call tool_search with query "select:{name}" first, then call {name} in the next round, '
    "when its full parameter schema is in your tools."
)
"""Refusal: a permitted deferred tool that no search has loaded."""

NOT_LOADED_YET_BRIDGE = (
    "Error: tool {name} was not executed: it is not loaded yet. "
    'Call tool_search with query "select:{name}" first; its result gives the schema of {name}. '
    "Then call {name} through call_tool in the next round."
)
"""Refusal in bridge mode: a permitted deferred tool that no search has loaded."""

TOO_MANY_SEARCHES = (
    "Error: not searched: one response may make at most {limit} tool_search calls "
    "([skills] tool_search_max_searches). Search again in the next round if still needed."
)
"""Result of a ``tool_search`` call beyond the per-response cap."""

LOADED_THIS_ROUND = (
    "Error: tool {name} was not executed: its schema was loaded in this round and becomes "
    "callable in the next round. Call {name} again in the next round; do not search for it again."
)
"""Refusal: the tool was loaded by a search in the same response (or earlier this round)."""

BLIND_CALL_LOADED = (
    "Error: tool {name} was not executed: its schema was not loaded. It has now been loaded for "
    "you; call {name} again in the next round with arguments that match its schema."
)
"""Refusal under ``tool_search_blind_call = "load"``: refused now, loaded for the next round."""

SCHEMA_NOTE = "\nThe schema of {name}: {schema}"
"""Bridge mode: appended to an invalid call's result and to a blind-call load, so the model has
the schema it must match (compact JSON with ``name``, ``description``, ``parameters``)."""

CALL_TOOL_INVALID = (
    "Error: call_tool was not executed: {problem}. Call it again with the exact name of a tool "
    'that tool_search loaded and its arguments, like {{"name":"<tool>","arguments":{{...}}}}.'
)
"""Result of a malformed ``call_tool`` call (bridge mode); ``problem`` says what is wrong."""

CALL_TOOL_NAME_MISSING = "its field 'name' is missing or not a string"
"""``CALL_TOOL_INVALID`` problem: no usable ``name``."""

CALL_TOOL_ARGUMENTS_NOT_OBJECT = "its field 'arguments' is not a JSON object"
"""``CALL_TOOL_INVALID`` problem: ``arguments`` is neither an object nor a JSON text of one."""

CALL_TOOL_NOT_OBJECT = "its arguments must be a JSON object ({problem})"
"""``CALL_TOOL_INVALID`` problem: the call's own arguments are not an object."""

NO_SUCH_TOOL = (
    "Error: there is no tool named {name}. Use only the tools in your tools list"
    " (or listed in the deferred tool directory, if there is one)."
)
"""Refusal: unknown, not permitted, or hidden. Never hints that such a tool exists."""

END_WITH_OTHER_CALLS = (
    "Error: end must be called alone; it was not executed and the conversation goes on. "
    "In this response, these other calls ran: {ran}; these were refused: {refused}. "
    "Read their results, then call end on its own in the next round. "
    "If send_message already succeeded, do not send the same text again."
)
"""Refusal of ``end`` co-called with other tools; lists what really ran and what did not."""

END_WITH_OTHER_CALLS_NONE_RAN = (
    "Error: end must be called alone; it was not executed and the conversation goes on. "
    "None of the other calls in this response ran (refused: {refused}). "
    "Fix them or call end on its own in the next round."
)
"""Refusal of ``end`` when every other call in the response was refused."""

INVALID_CALL = (
    "Error: invalid tool call: the tool name is empty or malformed, so it was skipped. "
    "Call again with a tool name from your tools list, or call end to finish."
)
"""Result of a call without a usable name."""

INVALID_ARGUMENTS = (
    "Error: tool {name} was not executed: its arguments must be a JSON object ({problem}). "
    "Call it again with arguments that match its parameter schema."
)
"""Result of a call whose arguments are not a JSON object."""

INVALID_ARGUMENT_VALUES = (
    "Error: tool {name} was not executed: its arguments do not match its parameter schema: "
    "{problem}. Call it again with arguments that match the schema."
)
"""Result of a call whose arguments are an object that the tool's schema rejects."""

TOOL_FAILED = "Error: tool {name} failed: {error}"
"""Result of a call whose handler raised."""

TOOL_TIMED_OUT = (
    "Error: tool {name} did not finish within {seconds:g} seconds and was abandoned; "
    "it returned no result. Do not call it again with the same arguments in this turn."
)
"""Result of a call that ran past its ``timeout`` (``[tools] call_timeout`` by default)."""

TRUNCATED_RESULT = (
    "\n[truncated: this tool result has {total} characters; only the first {shown} are shown]"
)
"""Appended to a tool result cut at ``[tools] max_result_chars``."""

PREFETCH_HEADER = "[Prefetched tool results]"
"""First line of the system message that carries prefetch results."""

CORRECTION_HINT = (
    "Your last answer was empty. Answer the user, or call a tool from your tools list."
)
"""User-role hint sent after an answer with neither text nor tool calls."""

ANNOUNCEMENT = "{name}，我调用你了"  # noqa: RUF001  (the full-width comma is the text)
"""Easter-egg announcement of a main-AI tool call."""

ANNOUNCEMENT_AGENT_TOOL = "{agent}：{name}，我调用你了"  # noqa: RUF001
"""Easter-egg announcement of a tool called inside a sub-agent."""

ANNOUNCEMENT_REPEAT_SUFFIX = " x{count}"
"""Appended once when N parallel calls of one tool are merged into one announcement."""


MAX_SHOWN_NAME = 64
"""Longest name echoed back to the model (the OpenAI function-name limit); longer ones are cut."""

# Control and format characters (newlines, bidi overrides, lone surrogates) and markup
# characters could break a line-based text or fake a directory tag; they are shown escaped.
_UNSAFE_IN_NAME = re.compile(
    "[\x00-\x1f\x7f-\x9f<>&\"'`\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]"
)


def shown_name(name: str) -> str:
    """``name`` made safe to echo in a tool result: unsafe characters as ``\\uXXXX``, at most
    `MAX_SHOWN_NAME` characters of it (a cut name ends with ``...``).

    Ordinary tool names (``music.play``, ``天气``) come back unchanged.
    """
    cut = name[:MAX_SHOWN_NAME]
    shown = _UNSAFE_IN_NAME.sub(lambda m: f"\\u{ord(m.group()):04x}", cut)
    return shown + "..." if len(name) > MAX_SHOWN_NAME else shown


def no_such_tool(name: str) -> str:
    """The refusal for a name that is unknown or not permitted, echoing it safely."""
    return NO_SUCH_TOOL.format(name=shown_name(name))


MAX_LISTED_CALLS = 20
"""Most call names one refusal lists; the rest are counted. A response of thousands of calls
with several ``end`` calls must not give each ``end`` result the whole list (the size of the
next request would grow with the square of the calls)."""


def _names(names: list[str]) -> str:
    if not names:
        return "none"
    shown = ", ".join(shown_name(n) for n in names[:MAX_LISTED_CALLS])
    more = len(names) - MAX_LISTED_CALLS
    return f"{shown} and {more} more" if more > 0 else shown


def end_with_other_calls(ran: list[str], refused: list[str]) -> str:
    """The ``end`` co-call refusal, accurate about which other calls ran.

    Args:
        ran: canonical names of the other calls that were executed.
        refused: names of the other calls that were refused or invalid.
    """
    if not ran:
        return END_WITH_OTHER_CALLS_NONE_RAN.format(refused=_names(refused))
    return END_WITH_OTHER_CALLS.format(ran=_names(ran), refused=_names(refused))


def tool_failed(name: str, exc: BaseException) -> str:
    """The tool result for a handler that raised ``exc``."""
    message = str(exc).strip()
    error = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return TOOL_FAILED.format(name=name, error=error)


def truncated_result(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters plus a marker stating the full size, when longer.

    >>> truncated_result("abcdef", 4)
    'abcd\\n[truncated: this tool result has 6 characters; only the first 4 are shown]'
    """
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATED_RESULT.format(total=len(text), shown=limit)
