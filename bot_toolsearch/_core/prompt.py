"""Every model-visible text of tool search: the virtual schema, the directory block, the rules.

Wording here is behaviour: a change belongs in the CHANGELOG, and tests/test_prompt.py pins the
texts exactly.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from .catalog import TOOL_SEARCH_NAME, invalid_name_reason
from .directory import CLOSE, DEFAULT_DIRECTORY_BUDGET, OPEN, build_directory

__all__ = [
    "ARGUMENTS_NOT_JSON",
    "ARGUMENTS_NOT_OBJECT",
    "CALL_TOOL_ARGUMENTS_DESCRIPTION",
    "CALL_TOOL_DESCRIPTION",
    "CALL_TOOL_NAME",
    "CALL_TOOL_NAME_DESCRIPTION",
    "DEFERRED_TOOLS_CLOSE",
    "DEFERRED_TOOLS_OPEN",
    "GROUPED_DIRECTORY_RULES",
    "MAX_RESULTS_DESCRIPTION",
    "QUERY_DESCRIPTION",
    "QUERY_MISSING",
    "QUERY_NOT_STRING",
    "TOOL_SEARCH_DESCRIPTION",
    "TOOL_SEARCH_NAME",
    "TOOL_SEARCH_RULES",
    "TOOL_SEARCH_RULES_BRIDGE",
    "call_tool_schema",
    "render_deferred_tools",
    "tool_search_schema",
]

TOOL_SEARCH_DESCRIPTION = (
    "Search and load deferred tool schemas for this request. This tool only loads schemas: it "
    "never executes tools or performs business actions, downloads or registers files, or "
    "sends messages. A name in `loaded` becomes callable starting with the next model turn; "
    "loading it does not complete the user's task. If the requested action remains unfinished, "
    "call the loaded target tool before `end`."
)
"""The description of the virtual ``tool_search`` tool."""

QUERY_DESCRIPTION = (
    "Use select:name_a,name_b for exact selection, select:namespace.* for a namespace's "
    "tools, a full tool name, keywords, or +term to require a keyword."
)
"""The description of the ``query`` parameter."""

MAX_RESULTS_DESCRIPTION = "Maximum matches to load, capped by configuration."
"""The description of the ``max_results`` parameter."""

DEFERRED_TOOLS_OPEN = OPEN
"""Opening tag of the directory of deferred tool names."""
DEFERRED_TOOLS_CLOSE = CLOSE
"""Closing tag of the directory of deferred tool names."""

TOOL_SEARCH_RULES = (
    "Tools listed in <available_deferred_tools> are not loaded yet: their schemas are not in "
    "your tool list. To use one, call tool_search first; never call a listed tool directly or "
    'guess its parameters. Prefer query="select:<name>" with exact names from the list, and '
    "batch several names in one call (select:name_a,name_b). A tool in `loaded` becomes "
    "callable from the next turn, never in the same turn as the search: wait for the next "
    "turn, then call it by the name in your tool list. Loading is not doing: tool_search runs "
    "nothing, so do not end the task just because a load succeeded while the real action is "
    "still pending."
)
"""The short rules a host puts beside the ``<available_deferred_tools>`` block."""

GROUPED_DIRECTORY_RULES = (
    "The directory is grouped to save space: a line `name.* (N tools): description` stands for "
    "N deferred tools whose names start with `name.`. To see them, call tool_search with "
    'query="select:name.*": it loads them all when they fit in max_results, otherwise it '
    "loads nothing and returns their exact names in `names`, a page at a time (send "
    "`next_query` for the next page); then select the ones you need. Keyword queries search "
    "every deferred tool, listed or not."
)
"""Added after `TOOL_SEARCH_RULES` only when the directory is grouped (over its budget)."""
TOOL_SEARCH_RULES_BRIDGE = (
    "Tools listed in <available_deferred_tools> are not loaded yet: their schemas are not in "
    "your tool list. To use one, call tool_search first; never call a listed tool directly or "
    'guess its parameters. Prefer query="select:<name>" with exact names from the list, and '
    "batch several names in one call (select:name_a,name_b). The tool_search result gives "
    "each tool in `loaded` with its full schema under `tools`. From the next turn on, never in "
    "the same turn as the search, call a loaded tool through call_tool: its exact name as "
    "`name` and an `arguments` object that matches that schema. Loading is not doing: "
    "tool_search runs nothing, so do not end the task just because a load succeeded while "
    "the real action is still pending."
)
"""The rules under ``[skills] tool_search_loading = "bridge"``: schemas arrive in the search
result and loaded tools are called through ``call_tool``."""

CALL_TOOL_NAME = "call_tool"
"""The name of the virtual tool that calls a loaded tool in bridge mode."""

CALL_TOOL_DESCRIPTION = (
    "Call a tool that tool_search loaded, by name, with arguments that match the schema the "
    "tool_search result gave for it. The result is that tool's result."
)
"""The description of the virtual ``call_tool`` tool."""

CALL_TOOL_NAME_DESCRIPTION = "The exact name of a loaded tool, as in the tool_search result."
"""The description of the ``name`` parameter of ``call_tool``."""

CALL_TOOL_ARGUMENTS_DESCRIPTION = "The tool's arguments: an object that matches its schema."
"""The description of the ``arguments`` parameter of ``call_tool``."""

_EXPECTED = 'send an object like {"query":"select:tool_a,tool_b"} or {"query":"weather forecast"}'
ARGUMENTS_NOT_JSON = f"tool_search arguments were not valid JSON; {_EXPECTED}."
"""Error for arguments that do not parse as JSON."""
ARGUMENTS_NOT_OBJECT = f"tool_search arguments must be a JSON object; {_EXPECTED}."
"""Error for arguments that parse to something other than an object."""
QUERY_MISSING = f"tool_search needs a string field 'query'; {_EXPECTED}."
"""Error for an object without ``query``."""
QUERY_NOT_STRING = f"tool_search field 'query' must be a string; {_EXPECTED}."
"""Error for a ``query`` that is not a string."""


@functools.lru_cache(maxsize=64)
def _schema_json(cap: int) -> str:
    schema = {
        "type": "function",
        "function": {
            "name": TOOL_SEARCH_NAME,
            "description": TOOL_SEARCH_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": QUERY_DESCRIPTION},
                    "max_results": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": cap,
                        "description": MAX_RESULTS_DESCRIPTION,
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    }
    return json.dumps(schema, ensure_ascii=False)


def tool_search_schema(cap: int) -> dict[str, Any]:
    """A fresh Chat Completions schema of the virtual tool, with ``max_results`` up to ``cap``."""
    schema: dict[str, Any] = json.loads(_schema_json(cap))
    return schema


@functools.lru_cache(maxsize=1)
def _call_tool_json() -> str:
    schema = {
        "type": "function",
        "function": {
            "name": CALL_TOOL_NAME,
            "description": CALL_TOOL_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": CALL_TOOL_NAME_DESCRIPTION},
                    "arguments": {"type": "object", "description": CALL_TOOL_ARGUMENTS_DESCRIPTION},
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            },
        },
    }
    return json.dumps(schema, ensure_ascii=False)


def call_tool_schema() -> dict[str, Any]:
    """A fresh Chat Completions schema of the virtual ``call_tool`` (bridge mode)."""
    schema: dict[str, Any] = json.loads(_call_tool_json())
    return schema


@functools.lru_cache(maxsize=16)
def _render(
    names: tuple[str, ...],
    budget: int,
    namespaces: tuple[tuple[str, str], ...],
    always_loaded: tuple[str, ...],
) -> str:
    unique = {name for name in names if invalid_name_reason(name) is None}
    if not unique:
        return ""
    ordered = sorted(unique, key=lambda n: (n.casefold(), n))
    directory = build_directory(
        ordered, budget=budget, descriptions=dict(namespaces), always_loaded=always_loaded
    )
    return directory.text


def render_deferred_tools(
    names: Iterable[str],
    *,
    budget: int = DEFAULT_DIRECTORY_BUDGET,
    namespaces: Mapping[str, str] | None = None,
    always_loaded: Iterable[str] = (),
) -> str:
    """The ``<available_deferred_tools>`` block: one name per line while it fits ``budget``.

    Names are de-duplicated and sorted by ``(casefold(name), name)``, the order of
    :attr:`ToolSearchSession.deferred_tool_names`, so the block is byte-identical for the same
    names in every ask. Names are written verbatim (the model must copy them exactly into
    ``select:``); a name that no catalog accepts (not a string, empty, with whitespace,
    control characters, ``<`` or ``>``) is left out, so no name can break the layout.

    When the list takes more than ``budget`` tokens the block is grouped by namespace (see
    `bot_toolsearch._core.directory`; put `GROUPED_DIRECTORY_RULES` beside it then).
    :meth:`ToolSearchSession.directory` does the same with descriptions derived from the
    catalog's tool descriptions; here they are derived from the names alone.

    Args:
        names: tool names, usually ``session.deferred_tool_names``.
        budget: tokens the block may take; 0 means no limit (always one name per line).
        namespaces: namespace -> one-line description, for grouped lines.
        always_loaded: always-loaded tool names; their namespaces are listed first.

    Returns:
        The block, or ``""`` when no name is left.

    Raises:
        TypeError: ``names`` is a single string instead of a collection of names.
        ValueError: ``budget`` is negative or not an integer.

    >>> print(render_deferred_tools(["beta", "Alpha", "_x"]))
    <available_deferred_tools>
    _x
    Alpha
    beta
    </available_deferred_tools>
    """
    if isinstance(names, str | bytes):
        raise TypeError("names must be a collection of tool names, not a single string")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be an integer >= 0, got {budget!r}")
    key = names if isinstance(names, tuple) else tuple(names)
    described = tuple((namespaces or {}).items())
    always = tuple(n for n in always_loaded if isinstance(n, str))
    try:
        return _render(key, budget, described, always)
    except TypeError:  # an unhashable item: no valid name anyway, render without the cache
        strings = tuple(n for n in key if isinstance(n, str))
        return _render.__wrapped__(strings, budget, described, always)
