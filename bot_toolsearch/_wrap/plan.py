"""What both API plans share: the call's settings and tools, reading calls, summing usage.

A plan is sans-IO: it says which request to send next and reads each reply; the async and the
sync client drive the same plan, so both behave identically.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._protocol.calls import CallRequest, from_native, from_text, unique_ids
from bot_toolsearch._protocol.dialect import CONFIG, Dialect
from bot_toolsearch._transports.names import WireNames
from bot_toolsearch._transports.text_calls import recover_text_calls
from bot_toolsearch._transports.wire import canonical_calls

from .caller_tools import Api, CallerTools, ToolsCache
from .projection import Projection, requested_tool, shared_part

__all__ = [
    "Pending",
    "Setup",
    "UsageSum",
    "ask_start",
    "busy",
    "given",
    "mapping_get",
    "read_calls",
    "setup",
]

logger = logging.getLogger("bot_toolsearch")


INLINE_CALLS = 32
"""Most calls (or output items) of one reply read on an async door's event loop; a larger
reply is read in a worker thread, so a reply of thousands of calls never stalls the loop."""
INLINE_TEXT = 64 * 1024
"""Most characters of reply text read on the event loop (text tool calls are parsed from it)."""


def busy(reply: object) -> bool:
    """Whether reading ``reply`` (a completion or a response) is more than a little work: more
    than `INLINE_CALLS` calls or output items, or more than `INLINE_TEXT` of text."""
    choices = getattr(reply, "choices", None)
    if isinstance(choices, list):
        message = getattr(choices[0], "message", None) if choices else None
        calls = getattr(message, "tool_calls", None) or ()
        text = getattr(message, "content", None)
        return len(calls) > INLINE_CALLS or (isinstance(text, str) and len(text) > INLINE_TEXT)
    output = getattr(reply, "output", None)
    if isinstance(output, list):
        if len(output) > INLINE_CALLS:
            return True
        size = 0
        for item in output:
            for part in getattr(item, "content", None) or ():
                text = getattr(part, "text", None)
                size += len(text) if isinstance(text, str) else 0
        return size > INLINE_TEXT
    return False


_UNGIVEN = (openai.NotGiven, openai.Omit)


def given(value: object) -> bool:
    """Whether an SDK argument was given (not ``None``, ``NOT_GIVEN`` or ``omit``)."""
    return value is not None and not isinstance(value, _UNGIVEN)


@dataclass(frozen=True, slots=True)
class Setup:
    """Everything one ``create`` call with tool search needs before its first request."""

    settings: BotSettings
    tools: CallerTools
    projection: Projection

    def offload(self) -> bool:
        """Whether this call's searches may take long: call the embeddings endpoint, or build
        the keyword index (not built before the upstream accepts the list). An async door
        runs them in the ``search`` pool then."""
        if self.projection.protocol.session.semantic is not None:
            return True
        return not self.tools.prepared(self.settings)

    def accept(self) -> None:
        """The upstream answered 2xx to a request carrying the call's tools (see
        `CallerTools.accept`)."""
        self.tools.accept(self.settings)


@dataclass(frozen=True, slots=True)
class Pending:
    """What `setup` answers instead of indexing when told not to build (``build=False``):
    the call needs a new tool list indexed, or its search index or directory built, so an
    async door makes the plan in a worker thread (`bot_toolsearch._wrap.client`)."""

    build: Hashable | None = None
    """The build the call needs: its cached list and the settings the build is for, the
    same for every call with that list under those settings (concurrent ones wait for one
    build); ``None`` for a list not cached yet."""


def setup(
    settings: BotSettings,
    cache: ToolsCache,
    *,
    tools: object,
    tool_choice: object,
    api: Api,
    build: bool = True,
    dialect: Dialect | None = None,
    known: CallerTools | None = None,
) -> Setup | Pending | None:
    """The call's tool search, or ``None`` to pass the request through untouched.

    Passes through when the request has no tool list or no function tool other than one
    named ``tool_search``, or tool search is off (in the settings, or no permitted tool is
    left to defer) and ``[tools] allow``/``deny`` leave every tool (the caller's own
    ``tool_search`` included): a deny is a promise whenever the
    wrapper is in the path, so with tool search off the denied tools are still left out (and
    a call to one is refused as no such tool).

    A list seen for the first time gets its catalog only (names, wire names, directory: what
    the first round needs); its search index and vectors come once the upstream accepts a
    request carrying it (`CallerTools.accept`, which the plans call on a 2xx answer). An
    accepted list is prepared for these settings when it is not yet (a reload changed the
    namespace descriptions). With ``build=False`` nothing is indexed: a `Pending` says that
    the call would have to, and what.

    A ``dialect`` (a client that speaks tool search itself, `bot_toolsearch._wrap.native`)
    is honoured whatever ``tool_search_enabled`` says, and never passes through while its
    list has a function tool: the request as the client wrote it would fail upstream.
    ``known``: the indexed form of ``tools``, when the caller looked it up already.
    """
    if not given(tools):
        return None
    if (
        dialect is None
        and not settings.skills.tool_search_enabled
        and not (settings.tools.allow or settings.tools.deny)
    ):
        return None
    if not isinstance(tools, list | tuple):
        tools = _as_list(tools)
        if tools is None:
            return None
    delimiter = settings.tools.dot_delimiter
    indexed = (
        known
        if known is not None
        else cache.get(tools, api, delimiter)
        if build
        else cache.lookup(tools, api, delimiter)
    )
    if indexed is None:
        return Pending()
    if indexed.catalog is None:
        return None
    # A list projected under this very snapshot before has its directory made.
    shared = shared_part(indexed, settings, dialect)
    key = None if shared is not None else (_directory_key(settings), dialect)
    searching = settings.skills.tool_search_enabled or dialect is not None
    if indexed.accepted and not indexed.prepared(settings):
        if not build:
            return Pending((indexed, key or (_directory_key(settings), dialect)))
        indexed.prepare(settings)
    if not build and searching and key is not None and not indexed.directory_built(key):
        return Pending((indexed, key))
    forced = requested_tool(tool_choice, api)
    # The first projection of a list under these settings builds its directory (token counts
    # of every name, the tokenizer loaded once): in a worker thread for an async door.
    projection = Projection(
        indexed, settings, forced=forced, dialect=dialect or CONFIG, shared=shared
    )
    if key is not None:
        indexed.add_directory(key)
    if dialect is None and not projection.active and not projection.filtering:
        return None
    return Setup(settings, indexed, projection)


def _directory_key(settings: BotSettings) -> Hashable:
    """What a list's directory depends on in ``settings`` (the settings of a projection)."""
    tools, skills = settings.tools, settings.skills
    return (
        tools.allow,
        tools.deny,
        tuple(tools.namespaces.items()) if tools.namespaces else (),
        skills.tool_search_enabled,
        skills.tool_search_always_loaded,
        skills.prefetch_tools,
        skills.tool_search_directory_budget,
        skills.tool_search_loading,
    )


def _as_list(tools: object) -> list[Any] | None:
    if isinstance(tools, str | bytes | Mapping):
        return None
    try:
        items: list[Any] = list(tools)  # type: ignore[call-overload]  # any iterable
    except TypeError:
        return None
    return items


def read_calls(
    native: Sequence[tuple[str, str, str]],
    text: str | None,
    names: WireNames,
    permitted: frozenset[str],
) -> tuple[list[CallRequest], bool]:
    """The calls of one reply with canonical names, and whether they were recovered from text.

    ``native`` holds ``(id, wire_name, arguments)`` per native call. Without native calls, a
    text that is a tool-call envelope gives the calls (as the `Bot` recovers them).
    """
    calls = from_native(canonical_calls(native, names), permitted) if native else []
    recovered = False
    if not calls and text and text.strip():
        found = recover_text_calls(text)
        if found:
            calls = from_text(found, names, permitted)
            recovered = True
    if not calls:  # a plain answer (the most common round): nothing to rename
        return calls, recovered
    calls, renamed = unique_ids(calls)
    if renamed:
        logger.warning("the model repeated a tool-call id in one response; renamed the repeats")
    return calls, recovered


class UsageSum:
    """Token usage summed over every upstream request of one ``create`` call."""

    __slots__ = ("cached", "input", "output", "reasoning", "requests", "total")

    def __init__(self) -> None:
        self.requests = 0
        self.input = self.output = self.total = self.cached = self.reasoning = 0

    def add(self, usage: object, api: Api) -> tuple[int, int, int]:
        """Add one response's ``usage`` (absent usage counts zero); that response's input,
        cached and output tokens."""
        self.requests += 1
        if usage is None:
            return 0, 0, 0
        if api == "chat":
            prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
            output = int(getattr(usage, "completion_tokens", 0) or 0)
            details = getattr(usage, "prompt_tokens_details", None)
            out_details = getattr(usage, "completion_tokens_details", None)
        else:
            prompt = int(getattr(usage, "input_tokens", 0) or 0)
            output = int(getattr(usage, "output_tokens", 0) or 0)
            details = getattr(usage, "input_tokens_details", None)
            out_details = getattr(usage, "output_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        self.input += prompt
        self.output += output
        self.total += int(getattr(usage, "total_tokens", 0) or 0)
        self.cached += cached
        self.reasoning += int(getattr(out_details, "reasoning_tokens", 0) or 0)
        return prompt, cached, output

    def chat_usage(self) -> openai.types.CompletionUsage:
        """The sum as a Chat Completions ``usage`` object."""
        from openai.types.completion_usage import (
            CompletionTokensDetails,
            CompletionUsage,
            PromptTokensDetails,
        )

        return CompletionUsage(
            prompt_tokens=self.input,
            completion_tokens=self.output,
            total_tokens=self.total,
            prompt_tokens_details=PromptTokensDetails(cached_tokens=self.cached),
            completion_tokens_details=CompletionTokensDetails(reasoning_tokens=self.reasoning),
        )

    def responses_usage(self) -> Any:
        """The sum as a Responses ``usage`` object."""
        from openai.types.responses.response_usage import (
            InputTokensDetails,
            OutputTokensDetails,
            ResponseUsage,
        )

        # model_construct: the details gain fields across SDK versions; ours are the summed ones.
        return ResponseUsage.model_construct(
            input_tokens=self.input,
            output_tokens=self.output,
            total_tokens=self.total,
            input_tokens_details=InputTokensDetails.model_construct(cached_tokens=self.cached),
            output_tokens_details=OutputTokensDetails.model_construct(
                reasoning_tokens=self.reasoning
            ),
        )


def ask_start(items: Sequence[Any]) -> int:
    """Where the current ask starts in a caller's history (messages or input items): at the
    last user message. Under ``tool_search_keep_loaded = "ask"`` only the tools called from
    there on are loaded, as the `Bot` loads only the tools of its current ask."""
    for at in range(len(items) - 1, -1, -1):
        if mapping_get(items[at], "role") == "user":
            return at
    return 0


def mapping_get(item: object, key: str) -> Any:
    """``item[key]`` for a mapping, ``item.key`` for an SDK object, else ``None``."""
    if type(item) is dict:  # most items: a plain dict, without the ABC's instance check
        return item.get(key)
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)
