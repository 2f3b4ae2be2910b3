"""Chat Completions under the wrapper: one caller ``create`` call, any number of hidden rounds.

The caller's messages go upstream unchanged, with the directory as one system message right
after the caller's own leading system (or developer) messages, byte-identical in every round
and every call. A round whose calls the wrapper answers entirely (``tool_search``, refusals)
is hidden: its assistant turn and results are appended to the upstream messages only, and the
model is asked again. The first round with a call the caller must run, or with none, is
returned, holding only the caller's calls, with ``usage`` summed over every round.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic
from openai.types.chat import ChatCompletion
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)

from bot_toolsearch._protocol.calls import CallRequest, CallResult, history_calls
from bot_toolsearch._protocol.loading import search_messages
from bot_toolsearch._transports.wire import wire_message, wire_own_message

from .encoded import encoded_text
from .observe import RoundHook, Rounds
from .plan import Setup, UsageSum, ask_start, given, read_calls

__all__ = ["DROPPED_CALLS", "HIDDEN_CALLS_KEPT", "ChatPlan", "insert_directory"]

logger = logging.getLogger("bot_toolsearch")

_SYSTEM_ROLES = ("system", "developer")
HIDDEN_CALLS_KEPT = 64
"""Most calls of one hidden round kept in the messages of the next request (the first ones,
with their results); the rest are left out, with a note in the last kept result."""
DROPPED_CALLS = (
    "\n\n({count} more calls of this response were left out unanswered: at most {kept} calls "
    "of one response are answered. Make fewer calls per response.)"
)
"""The note on the last kept result of a hidden round that had too many calls."""


def insert_directory(messages: list[Any], directory: str) -> list[Any]:
    """``messages`` with the directory as a system message after the leading system ones (its
    JSON encoded once per text, `bot_toolsearch._wrap.encoded`)."""
    at = 0
    while (
        at < len(messages)
        and isinstance(messages[at], Mapping)
        and messages[at].get("role") in _SYSTEM_ROLES
    ):
        at += 1
    message = {"role": "system", "content": encoded_text(directory)}
    return [*messages[:at], message, *messages[at:]]


def _plain(message: Any) -> Any:
    """An SDK model in ``messages`` (``completion.choices[0].message`` appended as is) as the
    dict the SDK itself would send for it; anything else unchanged."""
    if isinstance(message, pydantic.BaseModel):
        exclude = getattr(message, "__api_exclude__", None)
        return message.model_dump(exclude_unset=True, mode="json", exclude=exclude)
    return message


def _calls(message: Any) -> list[tuple[str, str, str]]:
    """``(id, name, arguments)`` of every well-formed call of an assistant message."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return []
    raw = message.get("tool_calls")
    if not isinstance(raw, list | tuple) or not raw:
        return []
    out: list[tuple[str, str, str]] = []
    for call in raw:
        function = call.get("function") if isinstance(call, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not isinstance(function, Mapping):
            return []  # a malformed call: the message goes upstream as the caller wrote it
        arguments = function.get("arguments")
        call_id = call.get("id") if isinstance(call, Mapping) else None
        out.append(
            (
                call_id if isinstance(call_id, str) else "",
                name,
                arguments if isinstance(arguments, str) else "",
            )
        )
    return out


class ChatPlan:
    """The hidden rounds of one ``chat.completions.create`` call (sans-IO).

    Args:
        setup: the call's settings, tools and projection.
        kwargs: the caller's keyword arguments to ``create``.
        on_round: the client's ``on_round`` hook, if any (`bot_toolsearch._wrap.observe`).
    """

    def __init__(
        self, setup: Setup, kwargs: Mapping[str, Any], on_round: RoundHook | None = None
    ) -> None:
        self._setup = setup
        self.offload = setup.offload()
        """Searches may take long (`Setup.offload`): an async door feeds off its loop."""
        self.accept = setup.accept
        """Call when the upstream answered 2xx (`Setup.accept`)."""
        self._report = Rounds(on_round, "chat", kwargs.get("model"))
        self._kwargs = {k: v for k, v in kwargs.items() if k not in ("messages", "tools")}
        projection = setup.projection
        messages = self._replay(list(kwargs.get("messages") or ()))
        projection.load_forced()
        directory = projection.directory
        self.messages = messages if directory is None else insert_directory(messages, directory)
        options = kwargs.get("stream_options")
        self.stream_options: object = options if given(options) else None
        """The caller's ``stream_options`` (``include_usage`` asks for the summed usage)."""
        self.rounds = 0
        self.usage = UsageSum()
        self.unchanged = False
        """The answer `feed` returned is the upstream's reply as it came: its only round, its
        calls and usage untouched (`bot_toolsearch._wrap.verbatim`)."""

    def _replay(self, messages: list[Any]) -> list[Any]:
        """The caller's history as sent upstream, loading every tool it called, in order.

        Under ``bridge`` a call of a deferred tool is sent as the ``call_tool`` call, and the
        tools it first used are re-declared right before it by exact-name ``tool_search``
        calls carrying their schemas: the same bytes in every call, so the prompt of each
        ``create`` call extends the one before.
        """
        projection = self._setup.projection
        view = projection.view
        bridge = projection.mode == "bridge"
        start = 0 if projection.keep_conversation else ask_start(messages)
        out: list[Any] = []
        for at, original in enumerate(messages):
            if type(original) is dict and "tool_calls" not in original:
                # Most of a history: no call to load, rename or rewrite (what the steps below
                # make of such a message is the message itself).
                out.append(original)
                continue
            message = _plain(original)
            calls = _calls(message) if at >= start else []
            if calls:
                loaded = projection.load_called(name for _, name, _ in calls)
                if bridge:
                    if loaded:
                        out.extend(self._searches(calls[0][0], loaded))
                    message = {
                        **message,
                        "tool_calls": [
                            projection.bridge_call(call_id, name, arguments)
                            if projection.is_deferred(name)
                            else call
                            for (call_id, name, arguments), call in zip(
                                calls, message["tool_calls"], strict=True
                            )
                        ],
                    }
            out.append(message if view.plain else wire_message(message, view.names, view.entries))
        return out

    def _searches(self, anchor: str, loaded: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
        return search_messages(self._setup.projection.replayed_searches(anchor, loaded))

    def request(self) -> dict[str, Any]:
        """The keyword arguments of the next upstream ``create``."""
        self.rounds += 1
        tools = self._setup.projection.round_tools()
        self._report.sending()
        return {**self._kwargs, "messages": self.messages, "tools": tools}

    def feed(self, completion: ChatCompletion) -> ChatCompletion | None:
        """Read one upstream completion: the caller's answer, or ``None`` to send `request`."""
        usage = self.usage.add(completion.usage, "chat")
        projection = self._setup.projection
        sent = projection.sent
        if not completion.choices:
            self._report.report(self.rounds, sent, None, usage, hidden=False)
            return self._finish(completion)
        choice = completion.choices[0]
        message = choice.message
        native: list[tuple[str, str, str]] = []
        others: list[Any] = []
        for c in message.tool_calls or ():
            if isinstance(c, ChatCompletionMessageFunctionToolCall):
                native.append((c.id, c.function.name or "", c.function.arguments or ""))
            else:
                others.append(c)
        calls, recovered = read_calls(
            native, message.content, projection.view.names, projection.permitted
        )
        if not calls:
            self._report.report(self.rounds, sent, None, usage, hidden=False, text=message.content)
            return self._finish(completion)
        answer = projection.answer(calls)
        answered = answer.results
        mine = [call for i, call in enumerate(answer.calls) if i not in answered]
        last = mine or others or self.rounds >= self._setup.settings.model.max_rounds
        self._report.report(self.rounds, sent, answer, usage, hidden=not last)
        if last:
            if answered:
                if mine or others:
                    logger.info(
                        "a response mixed the caller's calls with %d the wrapper answered; "
                        "only the caller's are returned",
                        len(answered),
                    )
                else:
                    logger.warning(
                        "[model] max_rounds (%d) reached with only tool_search calls; "
                        "returning the reply without them",
                        self.rounds,
                    )
            plain = projection.view.plain
            if answered or recovered or not plain or native != _ids(answer.calls):
                message.tool_calls = [*others, *(_tool_call(c) for c in mine)] or None
                if recovered:
                    message.content = None
                if not message.tool_calls:
                    message.content = message.content or ""
                    choice.finish_reason = "stop"
                else:
                    choice.finish_reason = "tool_calls"
                return self._finish(completion, rewritten=True)
            return self._finish(completion)
        self._hide(calls, answered)
        return None

    def _hide(self, calls: Sequence[CallRequest], answered: Mapping[int, CallResult]) -> None:
        """Append the hidden round to the upstream messages: at most `HIDDEN_CALLS_KEPT` of its
        calls with their results, so one response cannot grow every later request."""
        view = self._setup.projection.view
        permitted = view.permitted
        dropped = max(0, len(calls) - HIDDEN_CALLS_KEPT)
        if dropped:
            logger.warning(
                "a response made %d calls the wrapper answered; the next request keeps the "
                "first %d",
                len(calls),
                HIDDEN_CALLS_KEPT,
            )
            calls = calls[:HIDDEN_CALLS_KEPT]
        assistant = {
            "role": "assistant",
            "content": None,
            "tool_calls": history_calls(calls, permitted),
        }
        results = [
            {"role": "tool", "tool_call_id": call.id, "content": answered[i].content}
            for i, call in enumerate(calls)
        ]
        if dropped:
            results[-1]["content"] += DROPPED_CALLS.format(count=dropped, kept=HIDDEN_CALLS_KEPT)
        self.messages = [*self.messages, wire_own_message(assistant, view.names), *results]

    def _finish(self, completion: ChatCompletion, *, rewritten: bool = False) -> ChatCompletion:
        if self.usage.requests > 1:
            completion.usage = self.usage.chat_usage()
        self.unchanged = not rewritten and self.usage.requests == 1
        return completion


def _ids(calls: Sequence[CallRequest]) -> list[tuple[str, str, str]]:
    return [(c.id, c.name, c.arguments_raw) for c in calls]


def _tool_call(call: CallRequest) -> ChatCompletionMessageFunctionToolCall:
    return ChatCompletionMessageFunctionToolCall(
        id=call.id,
        type="function",
        function=Function(name=call.name, arguments=call.arguments_raw),
    )
