"""A request in OpenAI's tool-search dialect forwarded as the client wrote it
(``[proxy] native_tool_search = "pass"``), held to ``[tools] allow``/``deny`` first.

The upstream runs the tool search then, so every tool the request names must be one the
patterns permit before it leaves: function tools (``defer_loading`` or not, either API's
shape), namespace members (as ``<namespace>.<name>``, a group left with no member dropped)
and the tools a resent ``tool_search_output`` item loads. ``tool_choice`` is refused before
(`bot_toolsearch._wrap.permitted.enforce`), a ``{name, namespace}`` choice as the member.
Nothing else is changed; with no ``allow`` and no ``deny`` the request is returned as is.

The reply is the upstream's own, so it is checked on its way back (`guard_reply`): a call of
a tool the patterns do not permit (an upstream that made one up) is never handed to the
client; it raises `ModelReplyError` instead (the proxy answers 502, or ends a stream with an
error event). A raw-response call (``with_raw_response``) is handed over unread.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

import openai

from bot_toolsearch._config.settings import ToolsSettings
from bot_toolsearch._services.permissions import permits
from bot_toolsearch._transports.base import ModelReplyError

from .caller_tools import Api
from .permitted import declared_name, name_permitted
from .plan import mapping_get

__all__ = ["guard_reply", "hold_native"]


# The HTTP library the installed SDK is built on (httpx for openai 2, httpx2 for openai 3): the
# package declares only ``openai``, so it imports neither by name (as `_transports/embeddings`).
_HTTP: Any = next(
    sys.modules[base.__module__.partition(".")[0]]
    for base in openai.DefaultHttpxClient.__mro__
    if base.__module__.partition(".")[0] not in ("openai", "builtins")
)


def hold_native(kwargs: dict[str, Any], api: Api, tools: ToolsSettings) -> dict[str, Any]:
    """``kwargs`` with every tool ``tools.allow``/``deny`` do not permit left out of its
    ``tools`` and of its input's ``tool_search_output`` items (a new dict when one is)."""
    allow, deny = tools.allow, tools.deny
    if not allow and not deny:
        return kwargs
    out = dict(kwargs)
    given = kwargs.get("tools")
    if isinstance(given, list | tuple):
        out["tools"] = _kept(given, allow, deny)
    items = kwargs.get("input") if api == "responses" else None
    if isinstance(items, list | tuple):
        out["input"] = [_held_item(item, allow, deny) for item in items]
    return out


def _held_item(item: Any, allow: Sequence[str], deny: Sequence[str]) -> Any:
    if mapping_get(item, "type") != "tool_search_output":
        return item
    loaded = mapping_get(item, "tools")
    if not isinstance(loaded, list | tuple):
        return item
    plain = item if isinstance(item, Mapping) else _as_dict(item)
    if not isinstance(plain, Mapping):
        return item
    return {**plain, "tools": _kept([_as_dict(t) for t in loaded], allow, deny)}


def _kept(given: Sequence[Any], allow: Sequence[str], deny: Sequence[str]) -> list[Any]:
    out: list[Any] = []
    for tool in given:
        if not isinstance(tool, Mapping):
            out.append(tool)
            continue
        kind = tool.get("type", "function")
        if kind == "namespace":
            group = _group(tool, allow, deny)
            if group is not None:
                out.append(group)
        elif name_permitted(declared_name(tool), allow, deny):
            out.append(tool)
    return out


def _group(
    group: Mapping[str, Any], allow: Sequence[str], deny: Sequence[str]
) -> Mapping[str, Any] | None:
    """A namespace group with only its permitted members; ``None`` when none is left."""
    space, members = group.get("name"), group.get("tools")
    if not isinstance(members, list | tuple):
        return group
    kept = []
    for member in map(_as_dict, members):
        name = declared_name(member)
        if name is not None and isinstance(space, str) and space:
            # As `permitted` names a member in ``tool_choice``: an empty namespace adds nothing.
            name = f"{space}.{name}"
        if name_permitted(name, allow, deny):
            kept.append(member)
    if not kept:
        return None
    return group if len(kept) == len(members) else {**group, "tools": kept}


def _as_dict(item: object) -> Any:
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True, mode="json")
    return item


def guard_reply(reply: Any, tools: ToolsSettings, url: str) -> Any:
    """``reply`` (a passed-through call's result, from ``url``) checked for calls of tools
    ``tools.allow``/``deny`` do not permit; a stream is checked event by event as read.

    Raises:
        ModelReplyError: a finished reply calls such a tool (a stream raises while read).
    """
    allow, deny = tools.allow, tools.deny
    if not allow and not deny:
        return reply

    def check(value: Any) -> None:
        for name in _called(value):
            if not permits(name, allow, deny):
                reason = f"it calls the tool {name!r}, which [tools] allow/deny do not permit"
                response = getattr(reply, "response", None)
                sent = getattr(response, "request", None)
                if not isinstance(sent, _HTTP.Request):
                    sent = _HTTP.Request("POST", url)
                raise ModelReplyError(reason, sent, "")

    if isinstance(reply, openai.AsyncStream):
        return _CheckedAsyncStream(reply, check)
    if isinstance(reply, openai.Stream):
        return _CheckedStream(reply, check)
    check(reply)
    return reply


def _called(value: Any) -> Iterator[str]:
    """The tool names a reply, a Responses event or a Chat chunk calls (``<namespace>.<name>``
    for a namespace member's call)."""
    item = getattr(value, "item", None)
    output = getattr(value, "output", None)
    for call in [item] if item is not None else output if isinstance(output, list) else ():
        name = getattr(call, "name", None)
        if getattr(call, "type", None) == "function_call" and isinstance(name, str):
            space = getattr(call, "namespace", None)
            yield f"{space}.{name}" if isinstance(space, str) and space else name
    choices = getattr(value, "choices", None)
    for choice in choices if isinstance(choices, list) else ():
        message = getattr(choice, "message", None) or getattr(choice, "delta", None)
        calls = getattr(message, "tool_calls", None)
        for call in calls if isinstance(calls, list) else ():
            name = getattr(getattr(call, "function", None), "name", None)
            if isinstance(name, str):
                yield name


class _CheckedAsyncStream:
    """An upstream stream whose events are checked as they are read; the rest is its own."""

    def __init__(self, inner: Any, check: Callable[[Any], None]) -> None:
        self._inner = inner
        self._check = check

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        event = await self._inner.__anext__()
        self._check(event)
        return event

    async def __aenter__(self) -> _CheckedAsyncStream:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._inner.close()


class _CheckedStream:
    """`_CheckedAsyncStream` for a sync client."""

    def __init__(self, inner: Any, check: Callable[[Any], None]) -> None:
        self._inner = inner
        self._check = check

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        event = next(self._inner)
        self._check(event)
        return event

    def __enter__(self) -> _CheckedStream:
        return self

    def __exit__(self, *_: object) -> None:
        self._inner.close()
