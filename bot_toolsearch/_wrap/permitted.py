"""Every place a ``create`` request names a tool, held to ``[tools] allow``/``deny``.

The function tools of ``tools`` are filtered by the projection (`CallerTools.view`); this
module covers the other spellings a request can name a tool by, before anything is sent:

- ``tools`` entries that are not function tools but carry a name (a ``custom`` tool, either
  API's shape) are left out when not permitted, as denied function tools are; an ``mcp`` tool's
  ``allowed_tools`` names are filtered the same way;
- the legacy Chat Completions ``functions`` list is filtered the same way;
- ``tool_choice`` (a function, a custom tool, an ``allowed_tools`` set, an MCP tool) and the
  legacy ``function_call`` cannot be filtered without changing what the caller asked for: one
  that names a tool not permitted raises `ToolNotPermittedError` (the proxy answers 403).

With no ``allow`` and no ``deny`` nothing is looked at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot_toolsearch._config.settings import ToolsSettings
from bot_toolsearch._errors import ToolNotPermittedError
from bot_toolsearch._services.permissions import permits

__all__ = [
    "carry",
    "declared_name",
    "enforce",
    "filter_function_tools",
    "name_permitted",
]

_MAX_DEPTH = 8
"""How deep a ``tool_choice`` value is walked for names (real ones nest three levels)."""


def enforce(kwargs: dict[str, Any], tools: ToolsSettings, *, functions_only: bool = False) -> None:
    """Hold ``kwargs`` (one ``create`` call's, changed in place) to ``tools.allow``/``deny``.
    ``functions_only``: ``kwargs["tools"]`` is known to hold function tools only (a cached
    list, `CallerTools.others` empty), so it is not walked: only other tools are left out here.

    Raises:
        ToolNotPermittedError: ``tool_choice`` or ``function_call`` names a tool not permitted.
    """
    allow, deny = tools.allow, tools.deny
    if not allow and not deny:
        return
    for param in ("tool_choice", "function_call"):
        for name in _names(kwargs.get(param), 0, param):
            if not permits(name, allow, deny):
                raise ToolNotPermittedError(name, param)
    given = kwargs.get("tools")
    if isinstance(given, list | tuple) and not functions_only:
        kept = _filter_others(given, allow, deny)
        if kept is not given:
            kwargs["tools"] = kept
    functions = kwargs.get("functions")
    if isinstance(functions, list | tuple):
        left = [f for f in functions if name_permitted(declared_name(f), allow, deny)]
        if len(left) != len(functions):
            if left:
                kwargs["functions"] = left
            else:
                del kwargs["functions"]


def filter_function_tools(kwargs: dict[str, Any], tools: ToolsSettings) -> None:
    """Leave out of ``kwargs["tools"]`` every entry whose name is not permitted, function
    tools included: for a request passed through with no projection to hide them (a caller
    tool named ``tool_search`` turns tool search off for its list)."""
    allow, deny = tools.allow, tools.deny
    given = kwargs.get("tools")
    if (not allow and not deny) or not isinstance(given, list | tuple):
        return
    kept = [t for t in given if name_permitted(declared_name(t), allow, deny)]
    if len(kept) != len(given):
        kwargs["tools"] = kept


def _filter_others(
    given: Sequence[Any], allow: Sequence[str], deny: Sequence[str]
) -> Sequence[Any]:
    """``given`` itself when every named non-function tool is permitted, else a new list."""
    out: list[Any] = []
    changed = False
    for tool in given:
        if not isinstance(tool, Mapping) or tool.get("type", "function") == "function":
            out.append(tool)
        elif tool.get("type") == "mcp":
            narrowed = _narrow_mcp(tool, allow, deny)
            changed = changed or narrowed is not tool
            out.append(narrowed)
        elif name_permitted(declared_name(tool), allow, deny):
            out.append(tool)
        else:
            changed = True
    return out if changed else given


def _narrow_mcp(
    tool: Mapping[str, Any], allow: Sequence[str], deny: Sequence[str]
) -> Mapping[str, Any]:
    """An ``mcp`` tool with only the permitted names in ``allowed_tools`` (a list, or the
    filter object's ``tool_names``)."""
    allowed = tool.get("allowed_tools")
    if isinstance(allowed, list):
        kept = [n for n in allowed if not isinstance(n, str) or permits(n, allow, deny)]
        return tool if len(kept) == len(allowed) else {**tool, "allowed_tools": kept}
    if isinstance(allowed, Mapping) and isinstance(allowed.get("tool_names"), list):
        names = allowed["tool_names"]
        kept = [n for n in names if not isinstance(n, str) or permits(n, allow, deny)]
        if len(kept) == len(names):
            return tool
        return {**tool, "allowed_tools": {**allowed, "tool_names": kept}}
    return tool


def declared_name(tool: object) -> str | None:
    """The name a tool entry declares: ``name``, or ``function.name``/``custom.name``."""
    if not isinstance(tool, Mapping):
        return None
    name = tool.get("name")
    if isinstance(name, str):
        return name
    for key in ("function", "custom"):
        inner = tool.get(key)
        if isinstance(inner, Mapping) and isinstance(inner.get("name"), str):
            return str(inner["name"])
    return None


def name_permitted(name: str | None, allow: Sequence[str], deny: Sequence[str]) -> bool:
    """Whether ``allow``/``deny`` permit ``name``; an entry that declares no name (``None``)
    is no tool of theirs and passes."""
    return name is None or permits(name, allow, deny)


def _names(value: object, depth: int, param: str) -> list[str]:
    """Every tool name a ``tool_choice``/``function_call`` value spells: each ``name``
    string of its objects, at any depth (``allowed_tools`` nests a list of tools; ``mcp``
    choices name the server's tool), as ``<namespace>.<name>`` beside a ``namespace``.

    Raises:
        ToolNotPermittedError: the value nests deeper than `_MAX_DEPTH` (no API's does), so a
            name could hide below what is walked.
    """
    if depth > _MAX_DEPTH:
        raise ToolNotPermittedError("(a value nested too deeply to check)", param)
    out: list[str] = []
    if isinstance(value, Mapping):
        space = value.get("namespace")
        for key, inner in value.items():
            if key == "name" and isinstance(inner, str):
                # A namespace member is the tool <namespace>.<name>, as the wrapper names it.
                out.append(f"{space}.{inner}" if isinstance(space, str) and space else inner)
            elif isinstance(inner, Mapping | list | tuple):
                out.extend(_names(inner, depth + 1, param))
    elif isinstance(value, list | tuple):
        for inner in value:
            out.extend(_names(inner, depth + 1, param))
    return out


def carry(kwargs: dict[str, Any], held: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the tool lists of ``held`` (a copy of them that `enforce` and
    `filter_function_tools` held to allow/deny): what a passed-through call sends."""
    out = dict(kwargs)
    for key in ("tools", "functions"):
        if key in held:
            out[key] = held[key]
        else:
            out.pop(key, None)
    return out
