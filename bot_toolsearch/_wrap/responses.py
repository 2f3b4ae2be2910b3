"""The Responses API under the wrapper: hidden rounds chained as the `Bot` chains them.

The directory and the rules follow the caller's ``instructions`` (a blank line between), as the
`Bot` sends its system messages as ``instructions``. A hidden round continues from its own
response with ``previous_response_id`` and only the ``function_call_output`` items, unless
the caller sent ``store=False`` or the calls were recovered from text (then the whole input is
resent); when the server has lost the calls (HTTP 400 "No tool call found ..."), the round is
resent statelessly once, as in the `Bot`. The answer's ``id`` is the final round's (the one
to continue from) and its ``previous_response_id`` the caller's own.

The loaded set is derived from the ``function_call`` items of the ``input`` the caller sends.
A caller that continues a stored conversation with ``previous_response_id`` and only new
items (usually ``function_call_output``) sends no calls, so only this call's searches load
tools: the model reloads what it needs with ``select:``.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
from openai.types.responses import Response, ResponseFunctionToolCall, Tool

from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._core.prompt import CALL_TOOL_NAME
from bot_toolsearch._protocol.calls import CallRequest, CallResult
from bot_toolsearch._transports.chain import (
    Round,
    chain_round,
    drive,
    drive_async,
)
from bot_toolsearch._transports.wire import wire_item

from .encoded import encoded_text, joined
from .native import NativeRequest
from .observe import RoundHook, Rounds
from .plan import Setup, UsageSum, ask_start, given, mapping_get, read_calls
from .projection import Answer

__all__ = ["ALIAS_SINK", "ResponseAliases", "ResponsesPlan", "create_round", "create_round_async"]

logger = logging.getLogger("bot_toolsearch")

CALLER_ITEMS = frozenset(
    {
        "custom_tool_call",
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "mcp_approval_request",
        "tool_search_call",
    }
)
"""Output items other than function calls that the caller must act on (a
``tool_search_call`` only under a client's own execution, `NativeRequest.client_calls`)."""


_RUN_TYPES = frozenset({"function_call", "reasoning"})
"""Input items that form one model turn's run: declarations go before the run."""


@dataclass
class _Chain:
    """This call's Responses chain (`ChainState`): its own hidden rounds, not the caller's."""

    previous_response_id: str | None = None
    stateless: bool = False
    stateless_replays: int = 0


def _arguments(call: Mapping[str, Any]) -> dict[str, str]:
    return {"arguments": str(call["function"]["arguments"])}


def _as_dict(item: object) -> Any:
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True, mode="json")
    return item


ALIAS_SINK: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar(
    "bot_toolsearch_alias_sink", default=None
)
"""Where a door that shares aliases beyond this process (``serve`` with ``[proxy] state``)
collects the ones its current request adds, to store them before the client sees the id."""


class ResponseAliases:
    """Stream ids that stand for a later upstream response, for ``previous_response_id``.

    A streamed call keeps one response id from ``response.created`` to its terminal event:
    the id of the upstream round the caller is first shown something in. That is the final
    round's id unless a round that streamed text went on to search (the text was out before
    the search was known); then the stream's id is that round's, and this map sends a later
    ``previous_response_id`` naming it to the final round's id. Bounded (oldest dropped) and
    per process: under ``serve --workers N`` such a follow-up must reach the same worker.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._final: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, shown: str, final: str) -> None:
        """Remember that the stream id ``shown`` stands for the upstream response ``final``
        (and hand the pair to the request's `ALIAS_SINK`, if one is set)."""
        sink = ALIAS_SINK.get()
        if sink is not None:
            sink.append((shown, final))
        with self._lock:
            self._final[shown] = final
            self._final.move_to_end(shown)
            while len(self._final) > self._size:
                self._final.popitem(last=False)

    def resolve(self, response_id: str) -> str:
        """The upstream response ``response_id`` stands for (itself when it is one)."""
        with self._lock:
            return self._final.get(response_id, response_id)


class ResponsesPlan:
    """The hidden rounds of one ``responses.create`` call (sans-IO).

    Args:
        setup: the call's settings, tools and projection.
        kwargs: the caller's keyword arguments to ``create``.
        aliases: the stream ids of earlier calls that stand for a later response.
        native: the request as a client that speaks tool search itself wrote it (its
            ``kwargs`` are the ones given here): the reply then reports each search as that
            client reads it (`NativeRequest.report`).
        on_round: the client's ``on_round`` hook, if any (`bot_toolsearch._wrap.observe`).
        caller: the caller's own keyword arguments, before the dialect was made ordinary
            (default ``kwargs``): the answer echoes its ``instructions`` and ``tools``.
    """

    def __init__(
        self,
        setup: Setup,
        kwargs: Mapping[str, Any],
        aliases: ResponseAliases | None = None,
        *,
        native: NativeRequest | None = None,
        on_round: RoundHook | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> None:
        self._setup = setup
        self._echo = _Echo(kwargs if caller is None else caller)
        self._aliases = aliases if aliases is not None else ResponseAliases()
        self._native = native
        self._searches: list[tuple[CallRequest, tuple[str, ...]]] = []
        self.offload = setup.offload()
        """Searches may take long (`Setup.offload`): an async door feeds off its loop."""
        self.accept = setup.accept
        """Call when the upstream answered 2xx (`Setup.accept`)."""
        self._report = Rounds(on_round, "responses", kwargs.get("model"))
        skip = ("input", "tools", "instructions", "previous_response_id")
        self._kwargs = {k: v for k, v in kwargs.items() if k not in skip}
        raw = kwargs.get("input")
        items: list[Any]
        if isinstance(raw, str):
            items = [{"role": "user", "content": raw}]
        elif isinstance(raw, list | tuple):
            items = list(raw)
        else:
            items = []
        view = setup.projection.view
        previous = kwargs.get("previous_response_id")
        self.caller_previous: str | None = previous if isinstance(previous, str) else None
        """The ``previous_response_id`` the caller sent: the one its answer shows."""
        self._previous: str | None = (
            self._aliases.resolve(previous)
            if isinstance(previous, str)
            else previous
            if given(previous)
            else None
        )
        replayed = self._replay(items)
        setup.projection.load_forced()
        changed = len(replayed) != len(items) or any(
            a is not b for a, b in zip(replayed, items, strict=False)
        )
        items = replayed
        self._original_input: Any = (
            raw if isinstance(raw, str) and view.plain and not changed else items
        )
        self._items = items
        directory = setup.projection.directory
        if native is not None:
            directory = native.directory(directory)
        if directory is not None:
            directory = encoded_text(directory)  # its JSON made once (`encoded`)
        instructions = kwargs.get("instructions")
        self._instructions: object = (
            instructions
            if directory is None
            else joined(f"{instructions}\n\n", directory)
            if given(instructions) and isinstance(instructions, str) and instructions
            else directory
        )
        self._chain = _Chain(
            stateless=kwargs.get("store") is False
            or setup.settings.model.responses_force_stateless_replay
        )
        self._extended = False
        self._new: list[dict[str, Any]] = []
        self.rounds = 0
        self.usage = UsageSum()

    def _replay(self, items: list[Any]) -> list[Any]:
        """The caller's input as sent upstream, loading every tool it called, in order.

        A run of ``function_call`` items (with the ``reasoning`` items before them) that first
        uses deferred tools is preceded, under ``additional_tools``, by one item declaring
        them and, under ``bridge``, by exact-name ``tool_search`` calls and outputs carrying
        their schemas, with its calls of deferred tools sent as ``call_tool`` calls. The same
        bytes in every call, so each ``create`` call's prompt extends the one before. With
        ``previous_response_id`` the server holds the earlier items; only new ones are here.
        """
        projection = self._setup.projection
        start = 0 if projection.keep_conversation else ask_start(items)
        out: list[Any] = []
        i = 0
        while i < len(items):
            end = i
            while end < len(items) and mapping_get(items[end], "type") in _RUN_TYPES:
                end += 1
            run = items[i:end] if end > i else [items[i]]
            calls = [
                item
                for item in run
                if mapping_get(item, "type") == "function_call"
                and isinstance(mapping_get(item, "name"), str)
                and i >= start
            ]
            if calls:
                loaded = projection.load_called(str(mapping_get(c, "name")) for c in calls)
                if loaded and projection.mode == "additional_tools":
                    out.append(projection.declaration([name for name, _ in loaded]))
                elif loaded and projection.mode == "bridge":
                    anchor = str(mapping_get(calls[0], "call_id") or "")
                    for call_id, arguments, content in projection.replayed_searches(anchor, loaded):
                        out.append(
                            {
                                "type": "function_call",
                                "call_id": call_id,
                                "name": TOOL_SEARCH_NAME,
                                "arguments": arguments,
                            }
                        )
                        out.append(
                            {"type": "function_call_output", "call_id": call_id, "output": content}
                        )
            out.extend(self._wire_item(item, replaying=i >= start) for item in run)
            i = max(end, i + 1)
        return out

    def _wire_item(self, item: Any, *, replaying: bool) -> Any:
        if mapping_get(item, "type") != "function_call":
            return item
        projection = self._setup.projection
        view = projection.view
        name = mapping_get(item, "name")
        if not isinstance(name, str):
            return item
        if replaying and projection.mode == "bridge" and projection.is_deferred(name):
            arguments = mapping_get(item, "arguments")
            call = projection.bridge_call(
                str(mapping_get(item, "call_id") or ""),
                name,
                arguments if isinstance(arguments, str) else "",
            )
            return {**_as_dict(item), "name": CALL_TOOL_NAME, **_arguments(call)}
        if view.plain:
            return item
        return wire_item(_as_dict(item), view.names, view.entries)

    def request(self) -> Round[Any]:
        """The next round for the shared driver (`bot_toolsearch._wrap.rounds`): its `flow`,
        which the driver's transport runs (`round_sender`, `round_sender_async`)."""
        return self.flow()

    def flow(self) -> Round[Any]:
        """The next upstream round: `chain_round` over this call's chain (count in `rounds`)."""
        self.rounds += 1
        tools = self._setup.projection.round_tools()
        if self._native is not None:
            tools = self._native.round_tools(tools)
        request = {**self._kwargs, "tools": tools}
        self._report.sending()
        if given(self._instructions):
            request["instructions"] = self._instructions
        if self._previous is not None:
            request["previous_response_id"] = self._previous
        return chain_round(
            self._chain,
            request,
            new=lambda: self._new,
            full=lambda: self._items if self._extended else self._original_input,
            scope="call",
        )

    def feed(self, response: Response) -> Response | None:
        """Read one upstream response: the caller's answer, or ``None`` to send the next `flow`."""
        usage = self.usage.add(response.usage, "responses")
        output = list(response.output or ())
        if self._native is not None and self._native.search_tool is not None:
            output = response.output = self._native.client_calls(output)
        native = [
            (item.call_id, item.name or "", item.arguments or "")
            for item in output
            if isinstance(item, ResponseFunctionToolCall)
        ]
        others = [item for item in output if getattr(item, "type", None) in CALLER_ITEMS]
        text = "".join(
            getattr(part, "text", "") or ""
            for item in output
            if getattr(item, "type", None) == "message"
            for part in getattr(item, "content", None) or ()
        )
        projection = self._setup.projection
        calls, recovered = read_calls(native, text, projection.view.names, projection.permitted)
        sent = projection.sent
        if not calls:
            self._report.report(self.rounds, sent, None, usage, hidden=False, text=text or None)
            return self._finish(response)
        answer = projection.answer(calls)
        self._searches.extend((answer.calls[i], loaded) for i, loaded in answer.searched.items())
        answered = answer.results
        mine = [call for i, call in enumerate(answer.calls) if i not in answered]
        last = mine or others or self.rounds >= self._setup.settings.model.max_rounds
        self._report.report(self.rounds, sent, answer, usage, hidden=not last)
        if last:
            if not (mine or others):
                logger.warning(
                    "[model] max_rounds (%d) reached with only tool_search calls; "
                    "returning the reply without them",
                    self.rounds,
                )
            bridged = any(a is not b for a, b in zip(calls, answer.calls, strict=True))
            if answered or recovered or bridged or not projection.view.plain:
                response.output = self._caller_output(output, answer.calls, answered, recovered)
            return self._finish(response)
        self._hide(response, output, calls, answer, recovered)
        return None

    def _caller_output(
        self,
        output: list[Any],
        calls: Sequence[CallRequest],
        answered: Mapping[int, CallResult],
        recovered: bool,
    ) -> list[Any]:
        keep = {call.id: call for i, call in enumerate(calls) if i not in answered}
        out: list[Any] = []
        for item in output:
            if isinstance(item, ResponseFunctionToolCall):
                call = keep.get(item.call_id)
                if call is not None:
                    item.name = call.name
                    item.arguments = call.arguments_raw
                    out.append(item)
            elif not (recovered and getattr(item, "type", None) == "message"):
                out.append(item)
        if recovered:
            out.extend(
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments_raw,
                    status="completed",
                )
                for call in keep.values()
            )
        return out

    def _hide(
        self,
        response: Response,
        output: list[Any],
        calls: Sequence[CallRequest],
        answer: Answer,
        recovered: bool,
    ) -> None:
        results: list[dict[str, Any]] = []
        for i, call in enumerate(calls):
            results.append(
                {
                    "type": "function_call_output",
                    "call_id": call.id,
                    "output": answer.results[i].content,
                }
            )
            declared = answer.declared.get(call.id)
            if declared:
                results.append(self._setup.projection.declaration(declared))
        if recovered:
            view = self._setup.projection.view
            said: list[Any] = [
                wire_item(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments_raw,
                    },
                    view.names,
                    view.permitted,
                )
                for call in calls
            ]
            self._chain.stateless = True  # the server never saw these call ids
        else:
            said = [_as_dict(item) for item in output]
        self._items = [*self._items, *said, *results]
        self._extended = True
        self._new = results
        # Unlike the `Bot`, a round with no id is not the end of the chain: the next may chain.
        self._chain.previous_response_id = response.id or None

    def _finish(self, response: Response) -> Response:
        if self.usage.requests > 1:
            response.usage = self.usage.responses_usage()
        if self._native is not None:
            response.output = self._native.report(
                list(response.output or ()),
                self._searches,
                self._setup.projection.protocol.canonical,
            )
        self.present(response)
        return response

    def searches_so_far(self) -> list[Any]:
        """The searches answered in the hidden rounds so far as the client's
        ``tool_search_call``/``tool_search_output`` items (none unless the client speaks
        OpenAI's dialect): a stream shows them before the round that follows them."""
        if self._native is None:
            return []
        return self._native.search_items(self._searches)

    def present(self, response: Any, shown: str | None = None) -> Any:
        """``response`` (the final one, or a stream's opening one) as the caller sees it: its
        ``previous_response_id``, ``instructions`` and ``tools`` the caller's own, not a
        hidden round's or the ones sent upstream (the directory, ``tool_search``, the loaded
        tools), and its ``id`` the stream's ``shown`` one when given (remembered as standing
        for the upstream id)."""
        response.previous_response_id = self.caller_previous
        self._echo.apply(response)
        upstream = getattr(response, "id", None)
        if shown and upstream != shown:
            if isinstance(upstream, str) and upstream:
                self._aliases.add(shown, upstream)
            response.id = shown
        return response


class _Echo:
    """The caller's own ``instructions`` and ``tools``, as the upstream would have echoed them
    in its answer had it been sent them (the tools read into the SDK's types on first use,
    `_typed_tools`)."""

    def __init__(self, caller: Mapping[str, Any]) -> None:
        instructions = caller.get("instructions")
        self._instructions = instructions if given(instructions) else None
        tools = caller.get("tools")
        self._given = tuple(tools) if isinstance(tools, list | tuple) else ()
        self._tools: tuple[Tool, ...] | None = None

    def apply(self, response: Any) -> None:
        if self._tools is None:
            self._tools = _typed_tools(self._given)
        response.instructions = self._instructions
        response.tools = list(self._tools)


_TOOL: pydantic.TypeAdapter[Tool] = pydantic.TypeAdapter(Tool)
_TYPED: OrderedDict[int, tuple[tuple[Any, ...], tuple[Tool, ...]]] = OrderedDict()
_TYPED_LOCK = threading.Lock()
_TYPED_SIZE = 16


def _typed_tools(tools: tuple[Any, ...]) -> tuple[Tool, ...]:
    """``tools`` read into the SDK's types; one the types cannot read (which no API would have
    accepted) is left out. Reading costs tens of microseconds a tool (about 100 ms for 1,000
    function tools on a loaded 2-core machine), so the last few lists are kept, by length: a
    framework resends an equal list every call, and comparing 1,000 tools costs about 1 ms."""
    key = len(tools)
    with _TYPED_LOCK:
        kept = _TYPED.get(key)
    if kept is not None and kept[0] == tools:
        return kept[1]
    typed: list[Tool] = []
    for tool in tools:
        try:
            typed.append(_TOOL.validate_python(tool))
        except pydantic.ValidationError:
            continue
    out = tuple(typed)
    with _TYPED_LOCK:
        _TYPED[key] = (tools, out)
        _TYPED.move_to_end(key)
        while len(_TYPED) > _TYPED_SIZE:
            _TYPED.popitem(last=False)
    return out


def create_round(create: Callable[..., Any], plan: ResponsesPlan) -> Any:
    """Send the plan's next round with ``create`` (sync), driving `ResponsesPlan.flow`: a
    lost-call 400 on a chained round is resent statelessly, any other error raises."""
    return drive(plan.flow(), create)


async def create_round_async(create: Callable[..., Awaitable[Any]], plan: ResponsesPlan) -> Any:
    """`create_round` for the async shells."""
    return await drive_async(plan.flow(), create)


def round_sender(create: Callable[..., Any]) -> Callable[[Round[Any]], Any]:
    """The shared driver's transport for this plan (sync): a round's flow sent with
    ``create`` as `create_round` sends it."""
    return lambda flow: drive(flow, create)


def round_sender_async(
    create: Callable[..., Awaitable[Any]],
) -> Callable[[Round[Any]], Awaitable[Any]]:
    """`round_sender` for the async shells."""
    return lambda flow: drive_async(flow, create)
