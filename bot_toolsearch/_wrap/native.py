"""A client's own tool search (OpenAI's dialect), read at the wrapper's edge and reported back.

Clients now ask for deferred tools themselves: a ``{"type": "tool_search"}`` tool (executed by
the server, or ``"execution": "client"`` with the client's own description and parameters),
function tools marked ``"defer_loading": true`` (on the tool, or inside ``function`` in Chat
Completions), ``{"type": "namespace", ...}`` groups of tools, and in the Responses history the
``tool_search_call``/``tool_search_output`` items and a ``function_call``'s ``namespace``. Most
backends refuse every one of these. `parse_native` turns such a request into an ordinary one
(every native key and type gone) plus what the engine reads of it, a `Dialect`: the caller
fixed the deferred set (its ``defer_loading`` tools, less those a resent ``tool_search_output``
loaded), and a Responses reply reports each search. `NativeRequest.report` renders the reply's
side: a ``tool_search_call`` and a ``tool_search_output`` item per search (the client's own
definitions, a namespace member inside its namespace group), a namespace member's call under
its own ``name`` and ``namespace``, and under client execution the model's call of the search
function as the client's ``tool_search_call``. Under client execution the model still sees the
directory of the deferred tools (their parameters only once the client loaded them) and the
client's search function in place of ours, always, even beside no other tool.

A namespace member is indexed under ``<namespace>.<name>``, so the namespace's description
finds it (it is a namespace description of the session) and the directory groups it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseToolSearchCall,
    ResponseToolSearchOutputItem,
)

from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._core.prompt import DEFERRED_TOOLS_CLOSE
from bot_toolsearch._protocol.calls import CallRequest, parse_arguments
from bot_toolsearch._protocol.dialect import Dialect

from .caller_tools import Api
from .item_ids import CALL_PREFIX, OUTPUT_PREFIX, expand, is_ours, make_id
from .plan import mapping_get

__all__ = [
    "CLIENT_SEARCH",
    "CLIENT_SEARCH_RULES",
    "Execution",
    "NativeRequest",
    "parse_native",
    "speaks_native",
]

Execution = Literal["server", "client"]
"""Who runs the searches: this wrapper (``server``, as OpenAI's hosted tool search) or the
client itself (``client``)."""

TOOL_TYPES = frozenset({"tool_search", "namespace"})
"""Tool types of the dialect; no backend without native tool search accepts them."""
ITEM_TYPES = frozenset({"tool_search_call", "tool_search_output"})
"""Input item types of the dialect."""
CLIENT_SEARCH = {
    "description": "Load deferred tools by name: the exact tool or namespace names to load.",
    "parameters": {
        "type": "object",
        "properties": {
            "paths": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Tool names or namespace names from the directory.",
            }
        },
        "required": ["paths"],
        "additionalProperties": False,
    },
}
"""The search function under client execution when the client gives no description or
parameters of its own: OpenAI's built-in client schema, ``{"paths": [...]}``, the one the
Agents SDKs' runners execute (they refuse any other arguments)."""
CLIENT_SEARCH_RULES = (
    "Tools listed in <available_deferred_tools> are not loaded yet: their schemas are not in "
    "your tool list. To use one, call tool_search first with the exact names from the list, "
    "as its parameters ask; never call a listed tool directly or guess its parameters. A line "
    "`name.* (N tools): description` stands for the N tools of namespace `name`. A loaded "
    "tool becomes callable from the next turn, never in the same turn as the search. Loading "
    "is not doing: do not end the task just because a load succeeded."
)
"""The directory's rules under client execution (in place of ``TOOL_SEARCH_RULES``, whose
``query="select:..."`` syntax is ours, not the client's)."""


def _as_dict(item: object) -> Any:
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True, mode="json")
    return item


def _compact(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):  # a caller object JSON cannot walk
        return json.dumps({"query": str(value)}, separators=(",", ":"))


@dataclass(slots=True)
class _Tools:
    """The caller's tools as read: the upstream list and what the dialect says of each."""

    upstream: list[Any] = field(default_factory=list)
    deferred: set[str] = field(default_factory=set)
    namespaces: dict[str, str] = field(default_factory=dict)
    members: dict[str, tuple[str, str]] = field(default_factory=dict)
    definitions: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    entries: dict[str, Any] = field(default_factory=dict)
    execution: Execution = "server"
    search_tool: dict[str, Any] | None = None

    def function(self, tool: Mapping[str, Any], api: Api, *, namespace: str | None) -> None:
        """One function tool (a namespace member when ``namespace`` is given)."""
        inner = tool.get("function") if api == "chat" else tool
        name = inner.get("name") if isinstance(inner, Mapping) else None
        if not isinstance(name, str) or not isinstance(inner, Mapping):
            self.upstream.append(tool)
            return
        deferred = tool.get("defer_loading") is True or inner.get("defer_loading") is True
        entry = {k: v for k, v in tool.items() if k != "defer_loading"}
        if api == "chat":
            entry["function"] = {k: v for k, v in inner.items() if k != "defer_loading"}
        canonical = name
        if namespace is not None:
            canonical = f"{namespace}.{name}"
            entry["name"] = canonical
            self.members[canonical] = (namespace, name)
        if canonical in self.entries:
            return  # the first spelling wins, as the wrapper's own index keeps it
        self.definitions[canonical] = tool
        self.entries[canonical] = entry
        if deferred:
            self.deferred.add(canonical)
        self.upstream.append(entry)

    def namespace(self, group: Mapping[str, Any], api: Api) -> None:
        """A ``{"type": "namespace"}`` group: each member indexed as ``<namespace>.<name>``."""
        name = group.get("name")
        members = group.get("tools")
        if not isinstance(name, str) or not name or not isinstance(members, list | tuple):
            return
        description = group.get("description")
        if isinstance(description, str) and description:
            self.namespaces[name] = description
        for member in members:
            if isinstance(member, Mapping) and member.get("type", "function") == "function":
                self.function(member, api, namespace=name)

    def search(self, tool: Mapping[str, Any], api: Api) -> None:
        """The client's ``{"type": "tool_search"}`` tool: who executes, and how it reads."""
        if api == "chat" or tool.get("execution") != "client":
            return  # Chat Completions has no item to hand a client's search over: ours runs
        self.execution = "client"
        description = tool.get("description")
        parameters = tool.get("parameters")
        spec = {
            "name": TOOL_SEARCH_NAME,
            "description": description
            if isinstance(description, str)
            else CLIENT_SEARCH["description"],
            "parameters": parameters
            if isinstance(parameters, Mapping)
            else CLIENT_SEARCH["parameters"],
        }
        self.search_tool = {"type": "function", **spec, "strict": False}


def _read_tools(tools: Sequence[Any], api: Api) -> _Tools:
    read = _Tools()
    for tool in tools:
        kind = tool.get("type", "function") if isinstance(tool, Mapping) else None
        if kind == "tool_search":
            read.search(tool, api)
        elif kind == "namespace":
            read.namespace(tool, api)
        elif kind == "function":
            read.function(tool, api, namespace=None)
        elif isinstance(tool, Mapping) and "defer_loading" in tool:
            # A hosted tool (an MCP server ...) marked deferred: the backend runs it, so it
            # cannot be deferred here; it is sent without the key the backend would refuse.
            read.upstream.append({k: v for k, v in tool.items() if k != "defer_loading"})
        else:
            read.upstream.append(tool)
    return read


def _native_tool(tool: object, api: Api) -> bool:
    """Whether one tool entry speaks the dialect: key tests only, a few per tool, so the scan
    of every call stays far below indexing (which a new list gets off the event loop)."""
    if not isinstance(tool, Mapping):
        return False
    kind = tool["type"] if "type" in tool else None  # noqa: SIM401  # no get(): see above
    if "defer_loading" in tool or (isinstance(kind, str) and kind in TOOL_TYPES):
        return True
    function = tool["function"] if api == "chat" and "function" in tool else None
    return isinstance(function, Mapping) and "defer_loading" in function


def speaks_native(tools: Sequence[Any], api: Api) -> bool:
    """Whether a tool list speaks the dialect. Every call with tools pays this scan, so plain
    dicts (the usual entries) take one loop with key tests only and no call per tool."""
    for tool in tools:
        if type(tool) is not dict:
            if _native_tool(tool, api):
                return True
            continue
        if "defer_loading" in tool:
            return True
        kind = tool["type"] if "type" in tool else None  # noqa: SIM401  # no get(): see above
        if kind is not None and type(kind) is str and kind in TOOL_TYPES:
            return True
        if api == "chat" and "function" in tool:
            function = tool["function"]
            if type(function) is dict and "defer_loading" in function:
                return True
            if type(function) is not dict and _native_tool(tool, api):
                return True
    return False


def _native_item(item: object) -> bool:
    kind = mapping_get(item, "type")
    return (
        (isinstance(kind, str) and kind in ITEM_TYPES)
        or (kind == "function_call" and mapping_get(item, "namespace") is not None)
        or (kind == "item_reference" and _our_reference(item) is not None)
    )


def _our_reference(item: object) -> str | None:
    """The id of an ``item_reference`` to a search item we made, else ``None``."""
    if mapping_get(item, "type") != "item_reference":
        return None
    ref = mapping_get(item, "id")
    return ref if isinstance(ref, str) and is_ours(ref) else None


def _output_tools(tools: object, read: _Tools) -> list[str]:
    """The canonical names a ``tool_search_output``'s ``tools`` load; a definition the request
    does not carry (a client search found it) joins the tools read."""
    names: list[str] = []
    for given in tools if isinstance(tools, list | tuple) else ():
        tool = _as_dict(given)
        if not isinstance(tool, Mapping):
            continue
        if tool.get("type") == "namespace":
            space = tool.get("name")
            for inner in tool.get("tools") or ():
                member = _as_dict(inner)
                name = member.get("name") if isinstance(member, Mapping) else None
                if isinstance(space, str) and isinstance(name, str):
                    canonical = f"{space}.{name}"
                    if canonical not in read.entries:
                        read.namespace({**tool, "tools": [member]}, "responses")
                    names.append(canonical)
        elif tool.get("type", "function") == "function" and isinstance(tool.get("name"), str):
            if tool["name"] not in read.entries:
                read.function(tool, "responses", namespace=None)
            names.append(tool["name"])
    return names


def _read_input(items: Sequence[Any], read: _Tools) -> tuple[list[Any], list[str]]:
    """The Responses input without the dialect's items, and the tools its searches loaded.

    A ``tool_search_call`` and its ``tool_search_output`` become the ``tool_search`` function's
    call and output (the output naming the loaded tools, as our own search result does); an
    output with no call resent (made elsewhere, or the call stored upstream) gets one, so the
    two always pair; a call with no output is dropped. A namespace member's call is sent
    under its indexed name. An ``item_reference`` to a search item we made is that item
    (its id carries it, `bot_toolsearch._wrap.item_ids`): the upstream never sees it.

    Raises:
        ItemReferenceError: a reference to an id of ours that does not read back.
    """
    items = [
        item
        if (ref := _our_reference(item)) is None
        else expand(ref, at, read.members, read.entries)
        for at, item in enumerate(items)
    ]
    answered = {
        _call_id(item, at)
        for at, item in enumerate(items)
        if mapping_get(item, "type") == "tool_search_output"
    }
    out: list[Any] = []
    loaded: list[str] = []
    called: set[str] = set()
    for at, item in enumerate(items):
        kind = mapping_get(item, "type")
        if kind == "tool_search_call":
            call_id = _call_id(item, at)
            if call_id not in answered:
                continue
            called.add(call_id)
            arguments = mapping_get(item, "arguments")
            text = arguments if isinstance(arguments, str) else _compact(arguments)
            out.append(
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "name": TOOL_SEARCH_NAME,
                    "arguments": text,
                }
            )
        elif kind == "tool_search_output":
            call_id = _call_id(item, at)
            names = _output_tools(mapping_get(item, "tools"), read)
            loaded.extend(n for n in names if n not in loaded)
            if call_id not in called:
                query = _compact({"query": "select:" + ",".join(names)})
                out.append(
                    {
                        "type": "function_call",
                        "call_id": call_id,
                        "name": TOOL_SEARCH_NAME,
                        "arguments": query,
                    }
                )
            out.append(
                {"type": "function_call_output", "call_id": call_id, "output": _loaded(names)}
            )
        elif kind == "function_call" and mapping_get(item, "namespace") is not None:
            plain = dict(_as_dict(item))
            space, name = plain.pop("namespace", None), plain.get("name")
            if isinstance(space, str) and space and isinstance(name, str):
                plain["name"] = f"{space}.{name}"
            out.append(plain)
        else:
            out.append(item)
    return out, loaded


def _call_id(item: object, at: int) -> str:
    """A search item's ``call_id`` (else its ``id``; else one made from its position, so a
    call and its output still pair)."""
    for key in ("call_id", "id"):
        value = mapping_get(item, key)
        if isinstance(value, str) and value:
            return value
    return f"call_ts{at}"


def _loaded(names: Sequence[str]) -> str:
    """A resent search's output as the model reads it: the tools it loaded."""
    return _compact({"loaded": list(names)})


@dataclass(frozen=True, slots=True)
class NativeRequest:
    """A request in OpenAI's tool-search dialect, made ordinary, and how to answer it."""

    api: Api
    execution: Execution
    """Who runs the searches (the client's ``tool_search`` tool says; default ``server``)."""
    kwargs: dict[str, Any]
    """The caller's keyword arguments with no key or type of the dialect left."""
    deferred: frozenset[str]
    """The tools the caller marked ``defer_loading`` (canonical names)."""
    loaded: tuple[str, ...]
    """Tools a resent ``tool_search_output`` loaded: loaded from round 1, with no search."""
    namespaces: Mapping[str, str]
    """Namespace -> description, of the caller's namespace groups."""
    members: Mapping[str, tuple[str, str]]
    """Canonical name -> (namespace, own name) of each namespace member."""
    definitions: Mapping[str, Mapping[str, Any]]
    """Canonical name -> the client's own definition, as it sent it."""
    search_tool: Mapping[str, Any] | None
    """Under client execution: the ordinary function the upstream sees for the client's
    search (its description and parameters); ``None`` otherwise."""

    @property
    def dialect(self) -> Dialect:
        """What the engine reads: the caller's deferred set (none under client execution,
        where the deferred tools never reach the upstream), and whether searches are
        reported (a Responses reply under server execution)."""
        if self.execution == "client":
            # The client runs the searches: its deferred tools are deferred all the same (the
            # model sees the directory, and their parameters once the client loaded them),
            # but a search is the client's item, never a round of ours.
            return Dialect(deferred=self.deferred.difference(self.loaded))
        return Dialect(
            deferred=self.deferred.difference(self.loaded),
            report_searches=self.api == "responses",
        )

    def round_tools(self, tools: list[Any]) -> list[Any]:
        """A round's tools as sent: under client execution the client's search function in
        place of ours (the model calls it; the reply hands the call to the client)."""
        if self.search_tool is None:
            return tools
        ours = [tool for tool in tools if mapping_get(tool, "name") != TOOL_SEARCH_NAME]
        return [*ours, self.search_tool]

    def directory(self, text: str | None) -> str | None:
        """The directory the model reads: under client execution its block with rules that
        name no syntax of ours (the client's search function says how it reads)."""
        if text is None or self.search_tool is None:
            return text
        end = text.find(DEFERRED_TOOLS_CLOSE)
        if end < 0:
            return text
        return f"{text[: end + len(DEFERRED_TOOLS_CLOSE)]}\n\n{CLIENT_SEARCH_RULES}"

    def client_calls(self, output: Iterable[Any]) -> list[Any]:
        """Under client execution, the model's calls of the search function as the client's
        ``tool_search_call`` items (``arguments`` an object); every other item unchanged."""
        out: list[Any] = []
        for item in output:
            if isinstance(item, ResponseFunctionToolCall) and item.name == TOOL_SEARCH_NAME:
                parsed, _ = parse_arguments(item.arguments or "")
                arguments = dict(parsed) if parsed is not None else {}
                fields = {"call_id": item.call_id, "arguments": arguments, "execution": "client"}
                out.append(
                    ResponseToolSearchCall(
                        id=make_id(CALL_PREFIX, fields, f"ts_{item.call_id}"),
                        call_id=item.call_id,
                        arguments=arguments,
                        execution="client",
                        status="completed",
                        type="tool_search_call",
                    )
                )
            else:
                out.append(item)
        return out

    def report(
        self,
        output: Sequence[Any],
        searches: Sequence[tuple[CallRequest, tuple[str, ...]]],
        canonical: Callable[[str], str | None],
    ) -> list[Any]:
        """The reply's ``output`` as the client reads it: each search as a ``tool_search_call``
        and a ``tool_search_output`` item, before the first ``function_call`` (else at the
        end); each namespace member's call under its own ``name`` and ``namespace``."""
        out: list[Any] = []
        for item in output:
            if isinstance(item, ResponseFunctionToolCall):
                name = canonical(item.name) or item.name
                member = self.members.get(name)
                if member is not None:
                    item.namespace, item.name = member
            out.append(item)
        if not searches:
            return out
        items: list[Any] = []
        for call, loaded in searches:
            items.extend(self._search_items(call, loaded))
        at = next(
            (i for i, item in enumerate(out) if isinstance(item, ResponseFunctionToolCall)),
            len(out),
        )
        return [*out[:at], *items, *out[at:]]

    def _search_items(self, call: CallRequest, loaded: Sequence[str]) -> list[Any]:
        arguments: dict[str, Any] = (
            dict(call.arguments) if call.arguments is not None else {"query": call.arguments_raw}
        )
        made = {"call_id": call.id, "arguments": arguments, "execution": "server"}
        searched = ResponseToolSearchCall(
            id=make_id(CALL_PREFIX, made, f"ts_{call.id}"),
            call_id=call.id,
            arguments=arguments,
            execution="server",
            status="completed",
            type="tool_search_call",
        )
        fields = {
            "id": make_id(
                OUTPUT_PREFIX,
                {"call_id": call.id, "loaded": list(loaded), "execution": "server"},
                f"tso_{call.id}",
            ),
            "call_id": call.id,
            "execution": "server",
            "status": "completed",
            "tools": self._definitions(loaded),
            "type": "tool_search_output",
        }
        try:
            result = ResponseToolSearchOutputItem.model_validate(fields)
        except pydantic.ValidationError:
            # A definition the SDK's types do not read (the client's own odd fields): the
            # names still say what was loaded.
            fields["tools"] = self._definitions(loaded, bare=True)
            result = ResponseToolSearchOutputItem.model_validate(fields)
        return [searched, result]

    def _definitions(self, names: Sequence[str], *, bare: bool = False) -> list[dict[str, Any]]:
        """The client's own definitions of ``names``; namespace members inside their group
        (``bare``: only each function's type and own name)."""
        tools: list[dict[str, Any]] = []
        groups: dict[str, dict[str, Any]] = {}
        for name in names:
            definition = self.definitions.get(name)
            if definition is None:
                continue
            if bare:
                own = self.members.get(name, ("", name))[1]
                definition = {"type": "function", "name": own}
            member = self.members.get(name)
            if member is None:
                tools.append(dict(definition))
                continue
            space = member[0]
            group = groups.get(space)
            if group is None:
                group = groups[space] = {
                    "type": "namespace",
                    "name": space,
                    "description": self.namespaces.get(space, ""),
                    "tools": [],
                }
                tools.append(group)
            group["tools"].append(dict(definition))
        return tools


def parse_native(
    kwargs: Mapping[str, Any], api: Api, *, plain_tools: bool = False
) -> NativeRequest | None:
    """The request in OpenAI's tool-search dialect made ordinary, or ``None`` when it does not
    speak it (no ``tool_search`` or ``namespace`` tool, no ``defer_loading`` key, no
    ``tool_search_call``/``tool_search_output`` item or ``namespace`` on a call): then it keeps
    today's path exactly. ``plain_tools``: the tool list is known not to speak it (the wrapper
    indexed it before: only ordinary lists are indexed), so only the input is scanned."""
    tools = kwargs.get("tools")
    tool_list: Sequence[Any] = tools if isinstance(tools, list | tuple) else ()
    raw = kwargs.get("input") if api == "responses" else None
    items: Sequence[Any] = raw if isinstance(raw, list | tuple) else ()
    if not any(map(_native_item, items)) and (plain_tools or not speaks_native(tool_list, api)):
        return None
    read = _read_tools(tool_list, api)
    out = dict(kwargs)
    loaded: list[str] = []
    if items:
        out["input"], loaded = _read_input(items, read)
    out["tools"] = read.upstream
    return NativeRequest(
        api=api,
        execution=read.execution,
        kwargs=out,
        deferred=frozenset(read.deferred),
        loaded=tuple(loaded),
        namespaces=dict(read.namespaces),
        members=dict(read.members),
        definitions=dict(read.definitions),
        search_tool=read.search_tool,
    )
