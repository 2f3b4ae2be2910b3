"""What a wrapped client and its copies share: the settings source and the tool-list cache.

``config`` is a ``config.toml`` path, hot-reloaded as for the `Bot` (a valid edit changes the
next ``create`` call, never one that is running); ``settings`` a fixed `BotSettings`; with
neither, the built-in defaults with tool search on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from bot_toolsearch._config.reload import ConfigReloader
from bot_toolsearch._config.settings import BotSettings, SkillsSettings
from bot_toolsearch._services.client_policy import scoped
from bot_toolsearch._services.threads import SharedWork

from .caller_tools import Api, CallerTools, ToolsCache
from .chat import ChatPlan
from .native import NativeRequest, count_named, parse_native, speaks_dialect
from .native_cache import NativeCache
from .native_pass import guard_reply, hold_native
from .observe import RoundHook
from .permitted import enforce, filter_function_tools
from .plan import Pending, Setup, setup
from .responses import ResponseAliases, ResponsesPlan

__all__ = ["Engine"]

logger = logging.getLogger("bot_toolsearch")

_INLINE_TOOLS = 256
"""Most tools a request in the dialect may name, in a tool list not read before or in its
input's ``tool_search_output`` items, for its read to happen on the event loop; more is read
in the ``index`` pool (`Pending`), as a new plain list is indexed there."""


class Engine:
    """The settings and caches behind one `wrap_openai` call.

    Raises:
        TypeError: both ``config`` and ``settings`` are given.
        ConfigError: ``config`` cannot be read or is invalid.
    """

    def __init__(
        self,
        *,
        config: str | os.PathLike[str] | None = None,
        settings: BotSettings | None = None,
        on_round: RoundHook | None = None,
    ) -> None:
        if config is not None and settings is not None:
            raise TypeError("pass config (a config.toml path) or settings, not both")
        self.on_round = on_round
        """Called with each upstream round's `RoundTrace` (`bot_toolsearch._wrap.observe`)."""
        self._reloader: ConfigReloader | None = None
        self._fixed: BotSettings | None = settings
        self.cache = ToolsCache()
        self.native = NativeCache()
        """The reads of tool lists in OpenAI's tool-search dialect (`NativeCache`)."""
        self.builds = SharedWork()
        """The index builds under way in the ``index`` pool, by event loop and `Pending.build`:
        a call that needs one under way waits for it (`bot_toolsearch._wrap.client`)."""
        self.aliases = ResponseAliases()
        """Stream ids standing for a later response (`ResponseAliases`), across calls."""
        self.platform: object = None
        """The SDK's platform headers, once a client of this engine has found them: a copy
        made per call (the proxy makes one per API key) starts with them, instead of looking
        them up again in a worker thread before its first request (`share_platform`)."""
        if config is not None:
            self._reloader = ConfigReloader(config)
            # A reload that changes the namespace descriptions (or turns tool search on)
            # builds the cached lists' new search indexes in the reload thread.
            self._reloader.subscribe(self.cache.prepare)
            if self._reloader.snapshot().bot.hot_reload:
                self._reloader.start()
        elif settings is None:
            self._fixed = BotSettings(skills=SkillsSettings(tool_search_enabled=True))

    def snapshot(self) -> BotSettings:
        """The settings of the next ``create`` call (read once per call), with the ``[tools]``
        policy of the proxy client whose request it serves, if any (`client_policy`)."""
        if self._reloader is not None:
            return scoped(self._reloader.snapshot())
        assert self._fixed is not None
        return scoped(self._fixed)

    def _known(
        self, kwargs: Mapping[str, Any], api: Api, settings: BotSettings
    ) -> CallerTools | None:
        """The cached indexed form of the call's tool list, if any (cheap: nothing is built)."""
        tools = kwargs.get("tools")
        if not isinstance(tools, list | tuple) or not tools:
            return None
        return self.cache.lookup(tools, api, settings.tools.dot_delimiter)

    def _enforce(
        self, given: dict[str, Any], settings: BotSettings, known: CallerTools | None
    ) -> CallerTools | None:
        """`enforce` ``[tools] allow``/``deny`` on ``given``; ``known`` (its list's cached form)
        again, or ``None`` when enforcing changed the list. A cached list with no tool but
        function tools is not walked: only other tools are left out there."""
        before = given.get("tools")
        enforce(given, settings.tools, functions_only=known is not None and not known.others)
        return known if given.get("tools") is before else None

    def _native(
        self,
        kwargs: Mapping[str, Any],
        api: Api,
        settings: BotSettings,
        known: CallerTools | None,
        *,
        build: bool = True,
    ) -> tuple[BotSettings, NativeRequest | None, CallerTools | None] | Pending | None:
        """The call's settings, and its request in OpenAI's tool-search dialect made ordinary
        (``None`` when it does not speak it); ``None`` for a request in the dialect under
        ``[proxy] native_tool_search = "pass"``: it goes to the upstream as the client wrote
        it, held to allow/deny (`through`). A `Pending` instead when not to ``build`` and
        the read is large (a list not read before, or a resent ``tool_search_output``,
        naming more than `_INLINE_TOOLS` tools): it is then made in the ``index`` pool.

        A client's explicit request is honoured whatever ``tool_search_enabled`` says, and
        its namespace descriptions join the configured ones (the client's own win). A tool
        list indexed before is ordinary (only ordinary lists are indexed): found in the cache
        (``known``, looked up once per call), it is not scanned again. A list in the dialect
        is read once (`NativeCache`).

        Raises:
            CatalogError: two tools under one name, one a namespace member.
        """
        tools = kwargs.get("tools")
        if not speaks_dialect(kwargs, api, plain_tools=known is not None):
            return settings, None, known
        if settings.proxy.native_tool_search == "pass":
            return None
        if not build:
            listed, resent = count_named(kwargs, api)
            read = not listed or (
                isinstance(tools, list | tuple) and self.native.cached(tools, api) is not None
            )
            if resent > _INLINE_TOOLS or (listed > _INLINE_TOOLS and not read):
                return Pending()
        native = parse_native(kwargs, api, plain_tools=known is not None, reader=self.native.read)
        assert native is not None
        skills = settings.skills.model_copy(update={"tool_search_enabled": True})
        namespaces = {**settings.tools.namespaces, **native.namespaces}
        table = settings.tools.model_copy(update={"namespaces": namespaces})
        tables = {"skills": skills, "tools": table}
        return settings.model_copy(update=tables), native, None

    def chat_plan(self, kwargs: dict[str, Any], *, build: bool = True) -> ChatPlan | Pending | None:
        """The plan of a ``chat.completions.create`` call, or ``None`` to pass it through;
        a `Pending` instead of indexing when not to ``build`` (see `setup`).

        ``kwargs`` are first held to ``[tools] allow``/``deny`` in place (`enforce`), so what
        passes through is held to them too.

        Raises:
            ToolNotPermittedError: ``tool_choice``/``function_call`` names a denied tool.
        """
        given = kwargs
        settings = self.snapshot()
        known = self._enforce(given, settings, self._known(given, "chat", settings))
        messages = kwargs.get("messages")
        if not isinstance(messages, list | tuple):
            filter_function_tools(given, settings.tools)
            return None
        found, kwargs, _ = self._setup(given, settings, known, "chat", build)
        return ChatPlan(found, kwargs, self.on_round) if isinstance(found, Setup) else found

    def responses_plan(
        self, kwargs: dict[str, Any], *, build: bool = True
    ) -> ResponsesPlan | Pending | None:
        """The plan of a ``responses.create`` call, or ``None`` to pass it through;
        a `Pending` instead of indexing when not to ``build`` (see `setup`).

        Raises:
            ToolNotPermittedError: ``tool_choice`` names a denied tool (see `chat_plan`).
        """
        given = kwargs
        settings = self.snapshot()
        known = self._enforce(given, settings, self._known(given, "responses", settings))
        found, kwargs, native = self._setup(given, settings, known, "responses", build)
        if not isinstance(found, Setup):
            return found
        return ResponsesPlan(
            found, kwargs, self.aliases, native=native, on_round=self.on_round, caller=given
        )

    def _setup(
        self,
        given: dict[str, Any],
        settings: BotSettings,
        known: CallerTools | None,
        api: Api,
        build: bool,
    ) -> tuple[Setup | Pending | None, dict[str, Any], NativeRequest | None]:
        """A call's `setup` under ``settings`` (``None``: pass it through, its tools held to
        allow/deny), the arguments it plans from (a dialect request's made ordinary) and the
        dialect request; ``known``: its tool list's cached form, if looked up already."""
        permissions = settings.tools
        read = self._native(given, api, settings, known, build=build)
        if read is None or isinstance(read, Pending):
            return read, given, None
        settings, native, known = read
        kwargs = given if native is None else native.kwargs
        found = setup(
            settings,
            self.cache,
            tools=kwargs.get("tools"),
            tool_choice=kwargs.get("tool_choice"),
            api=api,
            build=build,
            dialect=None if native is None else native.dialect,
            known=known,
        )
        if found is None:
            filter_function_tools(given, permissions)
        return found, kwargs, native

    def through(self, kwargs: dict[str, Any], api: Api) -> dict[str, Any]:
        """A passed-through call's arguments: a request in the dialect (with no function tool
        left to index, say a lone ``tool_search`` tool) goes upstream made ordinary, never as
        the client wrote it, unless ``[proxy] native_tool_search = "pass"``: then as written,
        less the tools ``[tools] allow``/``deny`` leave out (`hold_native`).

        Raises:
            CatalogError: two tools under one name, one a namespace member.
        """
        settings = self.snapshot()
        if settings.proxy.native_tool_search == "pass":
            return hold_native(kwargs, api, settings.tools)
        native = parse_native(kwargs, api, reader=self.native.read)
        if native is None:
            return kwargs
        if native.search_tool is None:
            return native.kwargs
        # No function tool to index, but the client's search function still goes up.
        tools = native.kwargs.get("tools") or []
        return {**native.kwargs, "tools": native.round_tools(list(tools))}

    def passed(self, reply: Any, url: str) -> Any:
        """A passed-through call's reply (from ``url``): with ``[tools] allow``/``deny`` set,
        never one that calls a tool they do not permit (`guard_reply`; a stream is checked
        as it is read).

        Raises:
            ModelReplyError: the reply calls such a tool.
        """
        return guard_reply(reply, self.snapshot().tools, url)

    def share_platform(self, source: object, copied: object | None = None) -> None:
        """Remember ``source``'s platform headers when it found them; give them to ``copied``
        when it has none yet."""
        known = getattr(source, "_platform", None)
        if known is not None:
            self.platform = known
        unset = copied is not None and getattr(copied, "_platform", 0) is None
        if unset and self.platform is not None:
            copied._platform = self.platform  # type: ignore[union-attr]

    def close(self) -> None:
        """Stop watching ``config.toml``; the last settings stay in force."""
        if self._reloader is not None:
            self._reloader.stop()
