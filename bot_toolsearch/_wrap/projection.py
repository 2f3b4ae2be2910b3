"""The one place the wrapper uses the core: a caller's request projected onto tool search.

Per ``create`` call it builds a `ToolSearchSession` over the cached catalog of the caller's
tools, with ``[tools] allow``/``deny`` hiding what is not permitted, and re-derives the loaded
set from the history the caller resent: every tool the conversation already called is loaded,
in first-call order, so the tool list is the same from call to call and a provider's prompt
cache survives. Per round it gives the tools to send (the caller's other tools, then the
session's list: always-loaded, ``tool_search``, loaded) and the directory text, byte for byte
the `Bot`'s; per response it answers ``tool_search`` calls and refuses calls this round does
not expose, with the `Bot`'s own functions and texts.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._runtime.calls import CallRequest
from bot_toolsearch._runtime.tool_search import canonical_query, directory_message, refusal
from bot_toolsearch._transports.responses import flat_tool

from .caller_tools import Api, CallerTools

__all__ = ["Projection", "requested_tool"]

logger = logging.getLogger("bot_toolsearch")


class Projection:
    """Tool search for one ``create`` call of the caller.

    Args:
        tools: the caller's indexed tool list (with a catalog).
        settings: the settings snapshot of this call.
        called: canonical names of the tools the resent history already called, in order.
    """

    __slots__ = ("_blind_call", "_tools", "directory", "exposed", "permitted", "session")

    def __init__(self, tools: CallerTools, settings: BotSettings, called: Iterable[str]) -> None:
        assert tools.catalog is not None
        skills = settings.skills
        self._tools = tools
        self._blind_call = skills.tool_search_blind_call
        self.permitted, hidden = tools.permissions(settings.tools.allow, settings.tools.deny)
        self.session = ToolSearchSession(
            tools.catalog,
            always_loaded=skills.tool_search_always_loaded,
            max_results=skills.tool_search_max_results,
            hidden=hidden,
            directory_budget=skills.tool_search_directory_budget,
            namespaces=settings.tools.namespaces,
        )
        session = self.session
        for name in called:
            canonical = name if name in self.permitted else tools.names.to_canonical(name)
            if canonical in self.permitted and canonical not in session.loaded_tool_names:
                # A bare full name is an exact lookup: it loads exactly that tool.
                session.search(canonical)
        self.directory: str | None = (
            str(directory_message(session.directory)["content"])
            if session.deferred_tool_names
            else None
        )
        """The directory and the rules, or ``None`` when nothing is deferred (search is off)."""
        self.exposed: frozenset[str] = frozenset()

    @property
    def active(self) -> bool:
        """Whether tool search applies (some permitted tool is deferred)."""
        return self.directory is not None

    def round_tools(self) -> list[Any]:
        """The tools of the next round (wire names), and freeze that round's exposure.

        The caller's non-function tools first, then the session's list: always-loaded,
        ``tool_search``, then what is loaded in load order, so each round's list extends the
        previous one.
        """
        tools = self._tools
        out: list[Any] = list(tools.others)
        for schema in self.session.request_tools():
            name = schema["function"]["name"]
            if name == TOOL_SEARCH_NAME:
                out.append(schema if tools.api == "chat" else flat_tool(schema))
            else:
                out.append(tools.entries[name])
        self.exposed = self.session.exposed_tool_names()
        return out

    def answer(self, calls: Sequence[CallRequest]) -> dict[int, str]:
        """The results of the calls the wrapper answers itself, by position in ``calls``.

        As the `Bot`'s middleware: every ``tool_search`` first, in call order (so several build
        on each other), then a refusal for each call this round does not expose (so each one
        reflects every load of this response). The other calls are the caller's to run.
        """
        answered: dict[int, str] = {}
        for i, call in enumerate(calls):
            if call.name == TOOL_SEARCH_NAME:
                answered[i] = self._search(call)
        for i, call in enumerate(calls):
            if i not in answered and call.name not in self.exposed:
                text, _reason = refusal(
                    self.session, call.name, call.id, self.permitted, blind_call=self._blind_call
                )
                answered[i] = text
        return answered

    def _search(self, call: CallRequest) -> str:
        arguments: Mapping[str, Any] | str = call.arguments_raw
        if call.arguments is not None:
            arguments = dict(call.arguments)
            query = arguments.get("query")
            if isinstance(query, str):
                arguments["query"] = canonical_query(query, self._tools.names, self.permitted)
        return self.session.execute(arguments)


def requested_tool(tool_choice: object, api: Api) -> str | None:
    """The function a ``tool_choice`` forces, if any (it must be loaded to be callable)."""
    if not isinstance(tool_choice, Mapping) or tool_choice.get("type") != "function":
        return None
    if api == "chat":
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
    else:
        name = tool_choice.get("name")
    return name if isinstance(name, str) else None
