"""Anthropic's Messages wire as JSON: a request read into the engine's terms, replies rendered.

A Messages request names tools as ``{"name", "description", "input_schema"}``; Anthropic's own
tool search adds a search tool (``tool_search_tool_regex_20251119`` or
``tool_search_tool_bm25_20251119``) and ``"defer_loading": true`` on the tools it hides, and
reports each search as a ``server_tool_use`` block answered by a ``tool_search_tool_result``
block of ``tool_reference`` blocks. A client may also answer its own search with a
``tool_result`` holding ``tool_reference`` blocks. An Anthropic-compatible backend without tool
search refuses all of these, so this module turns them into what every backend takes: the
caller's custom tools in the engine's function shape (`read_tools`), a history with the search
blocks left out and each ``tool_reference`` a line of text (`upstream_history`, which also
says which tools the history loaded), and the search blocks of a reply (`search_blocks`).
Nothing here imports the ``anthropic`` SDK: the wire is JSON.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "SEARCH_TOOL_TYPES",
    "MessagesTools",
    "anthropic_tool",
    "forced_tool",
    "read_tools",
    "regex_matches",
    "search_blocks",
    "upstream_history",
]

SEARCH_TOOL_TYPES: Mapping[str, str] = {
    "tool_search_tool_regex_20251119": "regex",
    "tool_search_tool_regex": "regex",
    "tool_search_tool_bm25_20251119": "bm25",
    "tool_search_tool_bm25": "bm25",
}
"""Anthropic's tool search tool types, and which variant each is."""
_SEARCH_BLOCKS = frozenset({"server_tool_use", "tool_search_tool_result"})
MAX_PATTERN = 200
"""Longest regex pattern the regex variant takes (Anthropic's own bound)."""
_MATCH_CHARS = 2048
"""Most characters of one tool's text (name, description) a pattern is matched against."""


@dataclass(slots=True)
class MessagesTools:
    """A Messages request's ``tools`` read into the engine's terms."""

    custom: list[dict[str, Any]] = field(default_factory=list)
    """The caller's custom tools, ``defer_loading`` removed, in the caller's order."""
    by_name: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Name -> the custom tool as it goes upstream."""
    others: list[dict[str, Any]] = field(default_factory=list)
    """Tools of another type (Anthropic's server tools): passed on as they are."""
    search: dict[str, Any] | None = None
    """The caller's tool search tool, if any."""
    variant: str | None = None
    """``"regex"`` or ``"bm25"`` with a search tool."""
    deferred: frozenset[str] = frozenset()
    """Names of the custom tools marked ``defer_loading``."""
    marked: bool = False
    """Whether any tool carried a ``defer_loading`` key (a request in Anthropic's dialect)."""

    @property
    def functions(self) -> list[dict[str, Any]]:
        """The custom tools as function tools, the shape the engine's catalog reads."""
        out: list[dict[str, Any]] = []
        for tool in self.custom:
            function: dict[str, Any] = {"name": tool["name"]}
            if isinstance(tool.get("description"), str):
                function["description"] = tool["description"]
            schema = tool.get("input_schema")
            function["parameters"] = schema if isinstance(schema, Mapping) else {"type": "object"}
            out.append({"type": "function", "function": function})
        return out

    @property
    def search_name(self) -> str:
        """The name the caller's search tool reports under (``server_tool_use.name``)."""
        name = self.search.get("name") if self.search is not None else None
        if isinstance(name, str) and name:
            return name
        return f"tool_search_tool_{self.variant or 'bm25'}"


def read_tools(tools: object) -> MessagesTools | None:
    """``tools`` read into `MessagesTools`; ``None`` when it is not a list of objects."""
    if not isinstance(tools, list):
        return None
    out = MessagesTools()
    deferred: list[str] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            return None
        kind = tool.get("type")
        if "defer_loading" in tool:
            out.marked = True
        plain = {k: v for k, v in tool.items() if k != "defer_loading"}
        if isinstance(kind, str) and kind in SEARCH_TOOL_TYPES:
            out.search, out.variant = plain, SEARCH_TOOL_TYPES[kind]
        elif kind in (None, "custom") and isinstance(tool.get("name"), str):
            out.custom.append(plain)
            out.by_name[plain["name"]] = plain
            if tool.get("defer_loading") is True:
                deferred.append(plain["name"])
        else:
            out.others.append(plain)
    out.deferred = frozenset(deferred)
    return out


def anthropic_tool(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A function-shaped schema of the engine (the virtual ``tool_search``) as a custom tool."""
    function = schema.get("function", schema)
    out: dict[str, Any] = {"name": function["name"]}
    if function.get("description"):
        out["description"] = function["description"]
    out["input_schema"] = function.get("parameters") or {"type": "object"}
    return out


def forced_tool(tool_choice: object) -> str | None:
    """The tool a Messages ``tool_choice`` forces (``{"type": "tool", "name": ...}``), if any."""
    if isinstance(tool_choice, Mapping) and tool_choice.get("type") == "tool":
        name = tool_choice.get("name")
        return name if isinstance(name, str) else None
    return None


@dataclass(slots=True)
class History:
    """A caller's ``messages`` as they go upstream, and the tools they load."""

    messages: list[dict[str, Any]]
    called: list[str]
    """Tools the caller's history called (``tool_use``), in first-call order, from ``start``."""
    referenced: list[str]
    """Tools a ``tool_reference`` block of the history named, in order (searches resent)."""


def upstream_history(messages: Sequence[Any], *, whole: bool) -> History:
    """``messages`` without the search blocks, each ``tool_reference`` a line of text.

    ``whole``: the tools called anywhere load (``tool_search_keep_loaded = "conversation"``);
    else only those called since the ask's last user message (one that is more than tool
    results). An assistant message left empty is dropped and the user messages around it
    become one, so the turns still alternate.
    """
    start = 0 if whole else _ask_start(messages)
    out: list[dict[str, Any]] = []
    called: list[str] = []
    referenced: list[str] = []
    for at, message in enumerate(messages):
        if not isinstance(message, Mapping):
            out.append(message)  # the upstream says what is wrong with it
            continue
        content = message.get("content")
        if not isinstance(content, list):
            out.append(dict(message))
            continue
        blocks: list[Any] = []
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind == "tool_use" and at >= start and isinstance(block.get("name"), str):
                called.append(block["name"])
            if kind == "tool_search_tool_result":
                referenced.extend(_references(_result_references(block)))
            if kind in _SEARCH_BLOCKS and _is_search_block(block):
                continue
            if kind == "tool_result" and isinstance(block.get("content"), list):
                names = _references(block["content"])
                if names:
                    referenced.extend(names)
                    blocks.append({**block, "content": _referenced_text(block["content"])})
                    continue
            blocks.append(block)
        if not blocks and message.get("role") == "assistant":
            continue
        out.append({**message, "content": blocks})
    return History(_merge_users(out), called, referenced)


def _is_search_block(block: Mapping[str, Any]) -> bool:
    if block.get("type") == "tool_search_tool_result":
        return True
    name = block.get("name")
    return isinstance(name, str) and name.startswith("tool_search_tool_")


def _result_references(block: Mapping[str, Any]) -> list[Any]:
    content = block.get("content")
    if isinstance(content, Mapping):
        refs = content.get("tool_references")
        return refs if isinstance(refs, list) else []
    return []


def _references(blocks: Iterable[Any]) -> list[str]:
    return [
        b["tool_name"]
        for b in blocks
        if isinstance(b, Mapping)
        and b.get("type") == "tool_reference"
        and isinstance(b.get("tool_name"), str)
    ]


def _referenced_text(blocks: list[Any]) -> list[Any]:
    """A ``tool_result``'s content with its ``tool_reference`` blocks as one text block."""
    names = _references(blocks)
    rest = [b for b in blocks if not (isinstance(b, Mapping) and b.get("type") == "tool_reference")]
    line = "Tools loaded (call them directly): " + ", ".join(names)
    return [*rest, {"type": "text", "text": line}]


def _ask_start(messages: Sequence[Any]) -> int:
    """The ask's last user message that holds more than tool results."""
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message.get("content")
        if not isinstance(content, list) or any(
            not (isinstance(b, Mapping) and b.get("type") == "tool_result") for b in content
        ):
            return at
    return 0


def _merge_users(messages: list[Any]) -> list[Any]:
    out: list[Any] = []
    for message in messages:
        previous = out[-1] if out else None
        if (
            isinstance(previous, dict)
            and isinstance(message, dict)
            and previous.get("role") == message.get("role") == "user"
        ):
            out[-1] = {**previous, "content": [*_blocks(previous), *_blocks(message)]}
        else:
            out.append(message)
    return out


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def search_blocks(
    call_id: str, name: str, query: object, loaded: Sequence[str]
) -> list[dict[str, Any]]:
    """The ``server_tool_use`` and ``tool_search_tool_result`` blocks of one search, as
    Anthropic's API returns them (its id derived from the model's call id)."""
    digest = hashlib.sha256(call_id.encode()).hexdigest()[:24]
    block_id = f"srvtoolu_{digest}"
    return [
        {
            "type": "server_tool_use",
            "id": block_id,
            "name": name,
            "input": {"query": query if isinstance(query, str) else ""},
        },
        {
            "type": "tool_search_tool_result",
            "tool_use_id": block_id,
            "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": n} for n in loaded],
            },
        },
    ]


def regex_matches(pattern: str, tools: Iterable[Mapping[str, Any]], limit: int) -> list[str] | None:
    """Names of the first ``limit`` tools whose name or description ``pattern`` finds
    (as ``re.search`` ignoring case would), or ``None`` for a pattern outside the subset this
    matcher takes (the caller searches its words instead).

    A model's pattern is never run by a backtracking engine on catalog text: the subset is
    literal text (``\\`` escapes included) with ``.*`` between pieces, ``^`` and ``$``
    anchors, ``|`` between alternatives, a leading ``(?i)`` and one enclosing group, which a
    left-to-right scan matches in time linear in the text per piece. At most `MAX_PATTERN`
    characters (Anthropic's bound); each text is cut to `_MATCH_CHARS`.
    """
    if len(pattern) > MAX_PATTERN:
        return None
    alternatives = _glob(pattern)
    if alternatives is None:
        return None
    out: list[str] = []
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str):
            continue
        description = tool.get("description")
        texts = [name.lower()]
        if isinstance(description, str):
            texts.append(description[:_MATCH_CHARS].replace("\n", " ").lower())
        if any(_found(text, alt) for text in texts for alt in alternatives):
            out.append(name)
            if len(out) >= limit:
                break
    return out


_Alternative = tuple[bool, list[str], bool]
"""Anchored at the start, the literal pieces (``.*`` between two), anchored at the end."""
_SPECIAL = frozenset("[](){}?+*.\\|^$")


def _glob(pattern: str) -> list[_Alternative] | None:
    text = pattern.removeprefix("(?i)")
    if text.startswith("(") and text.endswith(")") and "(" not in text[1:-1]:
        text = text[1:-1]
    out: list[_Alternative] = []
    for alternative in _split_bars(text):
        if alternative is None:
            return None
        start = alternative.startswith("^")
        body = alternative[1:] if start else alternative
        end = body.endswith("$") and not body.endswith("\\$")
        body = body[:-1] if end else body
        pieces = _pieces(body)
        if pieces is None:
            return None
        out.append((start, [p.lower() for p in pieces], end))
    return out


def _split_bars(text: str) -> list[str | None]:
    parts: list[str | None] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == "|":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current) if not escaped else None)
    return parts


def _pieces(body: str) -> list[str] | None:
    pieces: list[str] = []
    current: list[str] = []
    at = 0
    while at < len(body):
        char = body[at]
        if char == "\\" and at + 1 < len(body) and not body[at + 1].isalnum():
            current.append(body[at + 1])
            at += 2
        elif body.startswith(".*", at):
            pieces.append("".join(current))
            current = []
            at += 2
        elif char in _SPECIAL:
            return None
        else:
            current.append(char)
            at += 1
    pieces.append("".join(current))
    return pieces


def _found(text: str, alternative: _Alternative) -> bool:
    start, pieces, end = alternative
    first, last = pieces[0], pieces[-1]
    if len(pieces) == 1:
        if start and end:
            return text == first
        if start:
            return text.startswith(first)
        return text.endswith(first) if end else first in text
    if start:
        if not text.startswith(first):
            return False
        at = len(first)
    else:
        found = text.find(first)
        if found < 0:
            return False
        at = found + len(first)
    for piece in pieces[1:-1]:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    if end:
        return text.endswith(last) and len(text) - len(last) >= at
    return text.find(last, at) >= 0
