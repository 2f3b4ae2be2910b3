"""Tools and sub-agents as the host runtime sees them: a schema plus a handler."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import re
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from bot_toolsearch._errors import CatalogError

from .schema import function_schema, schema_from_signature

__all__ = ["Agent", "Handler", "Tool", "ToolImportError", "tool"]

Handler = Callable[..., Any]
"""A tool handler: sync or async, called with the parsed arguments as keyword arguments."""

_IMPORT_STRING = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class ToolImportError(CatalogError):
    """A tool's handler import string could not be resolved.

    Attributes:
        name: the tool name.
        target: the import string, ``"package.module:function"``.
    """

    def __init__(self, name: str, target: str, cause: BaseException) -> None:
        super().__init__(
            f"tool {name!r}: cannot import handler {target!r}: {type(cause).__name__}: {cause}",
            name=name,
        )
        self.target = target


@dataclass(slots=True)
class _LazyHandler:
    """Resolves an import string on first use and caches the callable (thread-safe)."""

    target: str
    resolved: Handler | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, tool_name: str) -> Handler:
        if self.resolved is None:
            with self.lock:
                if self.resolved is None:
                    self.resolved = _import_handler(tool_name, self.target)
        return self.resolved


def _import_handler(tool_name: str, target: str) -> Handler:
    module_name, _, attr_path = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for attr in attr_path.split("."):
            obj = getattr(obj, attr)
    except Exception as exc:
        raise ToolImportError(tool_name, target, exc) from exc
    if not callable(obj):
        raise ToolImportError(tool_name, target, TypeError(f"{attr_path} is not callable"))
    handler: Handler = obj
    return handler


def _json_copy(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON-like mapping, so callers' later edits cannot reach us."""
    copied: dict[str, Any] = json.loads(json.dumps(value))
    return copied


def result_to_text(result: object) -> str:
    """A handler's return value as the text a tool result carries (non-strings as JSON)."""
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True, init=False)
class Tool:
    """One tool: an OpenAI function schema plus the handler that runs it.

    Args:
        name: the canonical tool name (dots allowed, e.g. ``weather.forecast``).
        description: what the tool does, shown to the model once its schema is loaded.
        parameters: a JSON Schema object describing the keyword arguments.
        handler: a sync or async callable, or an import string ``"package.module:function"``
            that is imported on the first call and cached.
    """

    name: str
    """Canonical tool name."""
    description: str
    """What the tool does."""
    parameters: Mapping[str, Any]
    """JSON Schema of the arguments (an ``object`` schema)."""
    _handler: Handler | _LazyHandler

    def __init__(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any] | None,
        handler: Handler | str,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise CatalogError(f"tool name must be a non-empty string, got {name!r}", name=None)
        if isinstance(handler, str):
            if not _IMPORT_STRING.match(handler):
                raise CatalogError(
                    f"tool {name!r}: handler import string must look like "
                    f"'package.module:function', got {handler!r}",
                    name=name,
                )
            bound: Handler | _LazyHandler = _LazyHandler(handler)
        elif callable(handler):
            bound = handler
        else:
            raise CatalogError(f"tool {name!r}: handler must be callable", name=name)
        params = _json_copy(parameters) if parameters else {"type": "object", "properties": {}}
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", description or "")
        object.__setattr__(self, "parameters", params)
        object.__setattr__(self, "_handler", bound)

    @property
    def handler_is_loaded(self) -> bool:
        """False while an import-string handler has not been imported yet."""
        return not isinstance(self._handler, _LazyHandler) or self._handler.resolved is not None

    def schema(self) -> dict[str, Any]:
        """The Chat Completions function tool schema (a fresh object)."""
        return function_schema(self.name, self.description, _json_copy(self.parameters))

    def shared_schema(self) -> dict[str, Any]:
        """The schema around this tool's own ``parameters`` object, not a copy: for the
        runtime's catalog and tool lists, which only read it (one copy of every schema, made
        by ``Tool(...)``, instead of one per consumer). Never mutate it."""
        return function_schema(self.name, self.description, self.parameters)  # type: ignore[arg-type]

    def resolve_handler(self) -> Handler:
        """The handler callable, importing it first if it is an import string.

        Raises:
            ToolImportError: the import string cannot be resolved.
        """
        if isinstance(self._handler, _LazyHandler):
            return self._handler.get(self.name)
        return self._handler

    async def invoke(self, arguments: Mapping[str, Any]) -> str:
        """Run the handler with ``arguments`` as keyword arguments and return its text.

        Sync handlers run in a worker thread so parallel calls do not block each other.

        Raises:
            ToolImportError: the handler cannot be imported.
            Exception: whatever the handler raises.
        """
        handler = self.resolve_handler()
        kwargs = dict(arguments)
        if inspect.iscoroutinefunction(handler):
            result = await handler(**kwargs)
        else:
            result = await asyncio.to_thread(handler, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        return result_to_text(result)


@overload
def tool(fn: Handler, /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Handler], Tool]: ...
def tool(
    fn: Handler | None = None, /, *, name: str | None = None, description: str | None = None
) -> Tool | Callable[[Handler], Tool]:
    """Make a `Tool` from a typed function; the schema comes from its signature and docstring.

    Works bare (``@tool``) or with options (``@tool(name="math.add")``).

    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> add.name, add.parameters["required"]
    ('add', ['a', 'b'])
    """

    def build(func: Handler) -> Tool:
        summary, parameters = schema_from_signature(func)
        return Tool(name or func.__name__, description or summary, parameters, func)

    return build if fn is None else build(fn)


AGENT_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "request": {"type": "string", "description": "What the agent should do, in full."}
    },
    "required": ["request"],
}


@dataclass(frozen=True, slots=True)
class Agent:
    """A sub-agent, offered to the main AI as one tool.

    When called it runs its own model loop with its own full tool list: never tool search,
    never the deferred directory.
    """

    name: str
    """Tool name the main AI calls the agent by."""
    description: str
    """What the agent is for, shown to the main AI."""
    instructions: str
    """The agent's own system prompt."""
    tools: Sequence[Tool] = ()
    """The agent's private tools, all sent on every agent request."""
    max_rounds: int = 8
    """Model rounds the agent may use per call."""

    def schema(self) -> dict[str, Any]:
        """The Chat Completions function tool schema by which the main AI calls the agent."""
        return function_schema(self.name, self.description, _json_copy(AGENT_PARAMETERS))


MaybeAwaitable = Awaitable[Any] | Any
