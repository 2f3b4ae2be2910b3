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
from bot_toolsearch._services.threads import SharedWork

from .caller_tools import Api, CallerTools, ToolsCache
from .chat import ChatPlan
from .native import NativeRequest, parse_native
from .observe import RoundHook
from .permitted import enforce, filter_function_tools
from .plan import Pending, Setup, setup
from .responses import ResponseAliases, ResponsesPlan

__all__ = ["Engine"]

logger = logging.getLogger("bot_toolsearch")


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
        self.builds = SharedWork()
        """The index builds under way in the ``index`` pool, by event loop and `Pending.build`:
        a call that needs one under way waits for it (`bot_toolsearch._wrap.client`)."""
        self.aliases = ResponseAliases()
        self.platform: object = None
        """The SDK's platform headers, once a client of this engine has found them: a copy
        made per call (the proxy makes one per API key) starts with them, instead of looking
        them up again in a worker thread before its first request (`share_platform`)."""
        """Stream ids standing for a later response (`ResponseAliases`), across calls."""
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
        """The settings of the next ``create`` call (read once per call)."""
        if self._reloader is not None:
            return self._reloader.snapshot()
        assert self._fixed is not None
        return self._fixed

    def _native(
        self, kwargs: Mapping[str, Any], api: Api
    ) -> tuple[BotSettings, NativeRequest | None, CallerTools | None] | None:
        """The call's settings, and its request in OpenAI's tool-search dialect made ordinary
        (``None`` when it does not speak it); ``None`` for a request in the dialect under
        ``[proxy] native_tool_search = "pass"``: it goes to the upstream untouched.

        A client's explicit request is honoured whatever ``tool_search_enabled`` says, and
        its namespace descriptions join the configured ones (the client's own win). A tool
        list indexed before is ordinary (only ordinary lists are indexed): found in the cache
        (returned, so it is looked up once), it is not scanned again."""
        settings = self.snapshot()
        tools = kwargs.get("tools")
        known = (
            self.cache.lookup(tools, api, settings.tools.dot_delimiter)
            if isinstance(tools, list | tuple) and tools
            else None
        )
        native = parse_native(kwargs, api, plain_tools=known is not None)
        if native is None:
            return settings, None, known
        if settings.proxy.native_tool_search == "pass":
            return None
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
        permissions = self.snapshot().tools
        enforce(given, permissions)
        messages = kwargs.get("messages")
        if not isinstance(messages, list | tuple):
            filter_function_tools(given, permissions)
            return None
        read = self._native(kwargs, "chat")
        if read is None:
            return None
        settings, native, known = read
        if native is not None:
            kwargs = native.kwargs
        found = setup(
            settings,
            self.cache,
            tools=kwargs.get("tools"),
            tool_choice=kwargs.get("tool_choice"),
            api="chat",
            build=build,
            dialect=None if native is None else native.dialect,
            known=known,
        )
        if found is None:
            filter_function_tools(given, permissions)
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
        permissions = self.snapshot().tools
        enforce(given, permissions)
        read = self._native(kwargs, "responses")
        if read is None:
            return None
        settings, native, known = read
        if native is not None:
            kwargs = native.kwargs
        found = setup(
            settings,
            self.cache,
            tools=kwargs.get("tools"),
            tool_choice=kwargs.get("tool_choice"),
            api="responses",
            build=build,
            dialect=None if native is None else native.dialect,
            known=known,
        )
        if found is None:
            filter_function_tools(given, permissions)
        if not isinstance(found, Setup):
            return found
        return ResponsesPlan(found, kwargs, self.aliases, native=native, on_round=self.on_round)

    def through(self, kwargs: dict[str, Any], api: Api) -> dict[str, Any]:
        """A passed-through call's arguments: a request in the dialect (with no function tool
        left to index, say a lone ``tool_search`` tool) goes upstream made ordinary, never as
        the client wrote it, unless ``[proxy] native_tool_search = "pass"``."""
        if self.snapshot().proxy.native_tool_search == "pass":
            return kwargs
        native = parse_native(kwargs, api)
        if native is None:
            return kwargs
        if native.search_tool is None:
            return native.kwargs
        # No function tool to index, but the client's search function still goes up.
        tools = native.kwargs.get("tools") or []
        return {**native.kwargs, "tools": native.round_tools(list(tools))}

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
