"""Tools and sub-agents as the host runtime sees them: a schema plus a handler."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import math
import re
import threading
import warnings
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import pydantic

from bot_toolsearch._core.catalog import invalid_name_reason, schema_depth_problem
from bot_toolsearch._core.unicode import well_formed
from bot_toolsearch._errors import CatalogError

from .schema import function_schema, signature_model

__all__ = [
    "MAX_THREADS_PER_TOOL",
    "Agent",
    "ArgumentsMismatch",
    "HandlerThreads",
    "Tool",
    "ToolDefinitionWarning",
    "ToolHandler",
    "ToolImportError",
    "ToolTimeoutError",
    "check_binding",
    "check_timeout",
    "tool",
]

ToolHandler = Callable[..., Any]
"""A tool handler: sync or async, called with the parsed arguments as keyword arguments."""


class ToolDefinitionWarning(UserWarning):
    """A ``@tool`` function the model will read poorly: no docstring (an empty description)
    or parameters without type hints (untyped in the schema). Issued once per tool, when it
    is decorated; ``warnings.filterwarnings("ignore", category=ToolDefinitionWarning)``
    silences it."""


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
        self.logged = False
        """Whether it has been logged already (a tool folder's handler logs its own once)."""


class ArgumentsMismatch(TypeError):
    """A call's arguments do not fit the handler's signature; the handler was not called.

    This is the model's mistake (an argument the handler does not take, or one it needs left
    out), reported to the model as invalid arguments, not as a failure of the tool.
    """


def check_binding(handler: ToolHandler, arguments: Mapping[str, Any]) -> None:
    """Raise `ArgumentsMismatch` when ``handler(**arguments)`` cannot bind its parameters.

    A callable whose signature cannot be read (some builtins) is not checked.
    """
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(**arguments)
    except TypeError as exc:
        raise ArgumentsMismatch(str(exc)) from None


@dataclass(slots=True)
class _LazyHandler:
    """Resolves an import string on first use and caches the callable (thread-safe)."""

    target: str
    resolved: ToolHandler | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, tool_name: str) -> ToolHandler:
        if self.resolved is None:
            with self.lock:
                if self.resolved is None:
                    self.resolved = _import_handler(tool_name, self.target)
        return self.resolved


def _import_handler(tool_name: str, target: str) -> ToolHandler:
    module_name, _, attr_path = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for attr in attr_path.split("."):
            obj = getattr(obj, attr)
    except Exception as exc:
        raise ToolImportError(tool_name, target, exc) from exc
    if not callable(obj):
        raise ToolImportError(tool_name, target, TypeError(f"{attr_path} is not callable"))
    handler: ToolHandler = obj
    return handler


def _json_copy(value: Mapping[str, Any], name: str = "?") -> dict[str, Any]:
    """A deep copy of a JSON-like mapping, so callers' later edits cannot reach us.

    Raises:
        CatalogError: naming tool ``name``, when ``value`` nests deeper than
            `MAX_SCHEMA_DEPTH` levels, refers to itself, or holds a non-JSON value.
    """
    if not isinstance(value, Mapping):
        raise CatalogError(
            f"tool {name!r}: parameters must be a JSON Schema object, not a {type(value).__name__}",
            name=name,
        )
    problem = schema_depth_problem(value)
    if problem is not None:
        raise CatalogError(f"tool {name!r}: parameters {problem}", name=name)
    try:
        text = json.dumps(value, allow_nan=False)
    except ValueError as exc:
        what = "refer to themselves" if "ircular" in str(exc) else f"are not JSON ({exc})"
        raise CatalogError(f"tool {name!r}: parameters {what}", name=name) from None
    except (TypeError, RecursionError) as exc:
        raise CatalogError(f"tool {name!r}: parameters are not JSON ({exc})", name=name) from None
    copied: dict[str, Any] = json.loads(text)
    return copied


def check_timeout(timeout: object, name: str) -> float | None:
    """A tool's own timeout: ``None`` or a positive, finite number of seconds.

    Raises:
        CatalogError: naming the tool, for anything else.
    """
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise CatalogError(
            f"tool {name!r}: timeout must be a positive number of seconds, got {timeout!r}",
            name=name,
        )
    return float(timeout)


class ToolTimeoutError(TimeoutError):
    """A tool call ran past its timeout and was abandoned."""

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(f"tool {name!r} did not finish within {seconds:g} seconds")
        self.name = name
        self.seconds = seconds


MAX_THREADS_PER_TOOL = 8
"""Sync handler calls of one tool that run at once; more wait (within their timeout)."""


class HandlerThreads:
    """The bot's own executor for sync handlers: a daemon thread per call, at most
    `MAX_THREADS_PER_TOOL` per tool at once.

    A tool gets its own slots, so a tool whose calls hang can only fill its own: other tools
    never wait for it (the event loop's shared default pool, by contrast, was starved by 32
    stuck calls). A call that times out is abandoned, but Python cannot stop a thread: it
    runs on, holding its tool's slot, until the handler returns. A handler that *never*
    returns holds its slot for the life of the process; once all slots of a tool are held so,
    later calls of that tool wait for a slot and time out, while every other tool runs as
    usual. The threads are daemons, so a hung handler never keeps the process from exiting.
    """

    def __init__(self, per_tool: int = MAX_THREADS_PER_TOOL) -> None:
        self._per_tool = per_tool
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}
        self._waiting: dict[str, deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]]
        self._waiting = {}

    def running(self, name: str) -> int:
        """Threads of tool ``name`` that have not returned yet (hung ones included)."""
        with self._lock:
            return self._running.get(name, 0)

    async def run(self, name: str, handler: ToolHandler, kwargs: Mapping[str, Any]) -> Any:
        """``handler(**kwargs)`` on a thread of tool ``name``; its result or exception."""
        await self._acquire(name)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()

        def target() -> None:
            try:
                outcome: tuple[bool, Any] = (True, handler(**kwargs))
            except BaseException as exc:  # handed to the awaiting task, never lost
                outcome = (False, exc)
            finally:
                self._release(name)
            # A closed loop raises RuntimeError: nobody is waiting any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, done, outcome)

        try:
            threading.Thread(target=target, name=f"tool:{name}", daemon=True).start()
        except BaseException:
            self._release(name)
            raise
        return await done

    async def _acquire(self, name: str) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            count = self._running.get(name, 0)
            if count < self._per_tool and not self._waiting.get(name):
                self._running[name] = count + 1
                return
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiting.setdefault(name, deque()).append((loop, waiter))
        try:
            await waiter
        except BaseException:
            with self._lock:
                queue = self._waiting.get(name)
                if queue is not None and (loop, waiter) in queue:
                    queue.remove((loop, waiter))
                    raise
            # The slot was handed over meanwhile: pass it on (a cancelled waiter's hand-over
            # is passed on by _grant).
            if waiter.done() and not waiter.cancelled():
                self._release(name)
            raise

    def _release(self, name: str) -> None:
        with self._lock:
            queue = self._waiting.get(name)
            while queue:
                loop, waiter = queue.popleft()
                try:
                    loop.call_soon_threadsafe(self._grant, name, waiter)
                except RuntimeError:
                    continue  # that waiter's loop is closed
                return  # the slot passes to the waiter: the count stays
            self._running[name] -= 1

    def _grant(self, name: str, waiter: asyncio.Future[None]) -> None:
        if waiter.done():
            self._release(name)  # it gave up meanwhile
        else:
            waiter.set_result(None)


def _settle(done: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if done.done():
        return  # abandoned after its timeout
    ok, value = outcome
    if ok:
        done.set_result(value)
    else:
        done.set_exception(value)


_SHARED_THREADS = HandlerThreads()
"""For `Tool.invoke` without a bot's executor."""


def result_to_text(result: object) -> str:
    """A handler's return value as the text a tool result carries (non-strings as JSON).

    Lone surrogates become U+FFFD: the text goes into the next model request.
    """
    if isinstance(result, str):
        return well_formed(result)
    return well_formed(json.dumps(result, ensure_ascii=False, default=str))


@dataclass(frozen=True, slots=True, init=False)
class Tool:
    """One tool: an OpenAI function schema plus the handler that runs it.

    Args:
        name: the canonical tool name (dots allowed, e.g. ``weather.forecast``).
        description: what the tool does, shown to the model once its schema is loaded.
        parameters: a JSON Schema object describing the keyword arguments.
        handler: a sync or async callable, or an import string ``"package.module:function"``
            that is imported on the first call and cached.
        timeout: seconds one call may take; ``None`` uses ``[tools] call_timeout``.

    Raises:
        CatalogError: naming the tool, when the name is empty, the handler is not callable or
            an import string, the description is not a string, the timeout is not a positive
            number, or ``parameters`` is not a JSON object: nested deeper than
            `MAX_SCHEMA_DEPTH` levels, referring to itself, or holding non-JSON values.
    """

    name: str
    """Canonical tool name."""
    description: str
    """What the tool does."""
    parameters: Mapping[str, Any]
    """JSON Schema of the arguments (an ``object`` schema)."""
    _handler: ToolHandler | _LazyHandler
    timeout: float | None
    """Seconds one call may take; ``None`` means ``[tools] call_timeout``."""
    _signature: type[pydantic.BaseModel] | None = field(default=None, compare=False, repr=False)
    """For a ``@tool`` function: the pydantic model of its arguments (see `signature_model`)."""
    _checker: Any = field(default=None, compare=False, repr=False)
    """The JSON Schema checker of ``parameters``, built on first use (``_tools/validation.py``)."""

    def __init__(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any] | None,
        handler: ToolHandler | str,
        *,
        timeout: float | None = None,
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
            bound: ToolHandler | _LazyHandler = _LazyHandler(handler)
        elif callable(handler):
            bound = handler
        else:
            raise CatalogError(f"tool {name!r}: handler must be callable", name=name)
        if description is not None and not isinstance(description, str):
            raise CatalogError(f"tool {name!r}: description must be a string", name=name)
        seconds = check_timeout(timeout, name)
        params = (
            _json_copy(parameters, name)
            if parameters is not None and parameters != {}
            else {"type": "object", "properties": {}}
        )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "timeout", seconds)
        object.__setattr__(self, "description", description or "")
        object.__setattr__(self, "parameters", params)
        object.__setattr__(self, "_handler", bound)
        object.__setattr__(self, "_signature", None)
        object.__setattr__(self, "_checker", None)

    @property
    def handler_is_loaded(self) -> bool:
        """False while an import-string handler has not been imported yet."""
        return not isinstance(self._handler, _LazyHandler) or self._handler.resolved is not None

    def schema(self) -> dict[str, Any]:
        """The Chat Completions function tool schema (a fresh object)."""
        return function_schema(self.name, self.description, _json_copy(self.parameters, self.name))

    def shared_schema(self) -> dict[str, Any]:
        """The schema around this tool's own ``parameters`` object, not a copy: for the
        runtime's catalog and tool lists, which only read it (one copy of every schema, made
        by ``Tool(...)``, instead of one per consumer). Never mutate it."""
        return function_schema(self.name, self.description, self.parameters)  # type: ignore[arg-type]

    def resolve_handler(self) -> ToolHandler:
        """The handler callable, importing it first if it is an import string.

        Raises:
            ToolImportError: the import string cannot be resolved.
        """
        if isinstance(self._handler, _LazyHandler):
            return self._handler.get(self.name)
        return self._handler

    async def invoke(
        self,
        arguments: Mapping[str, Any],
        *,
        default_timeout: float | None = None,
        threads: HandlerThreads | None = None,
    ) -> str:
        """Run the handler with ``arguments`` as keyword arguments and return its text.

        Sync handlers run on ``threads`` (a bot passes its own; see `HandlerThreads`), so
        parallel calls do not block each other and one hung tool cannot starve the others.

        Args:
            arguments: the keyword arguments.
            default_timeout: seconds the call may take when the tool sets none (a bot passes
                ``[tools] call_timeout``); ``None``: no limit.
            threads: the executor for sync handlers.

        The arguments are not checked against the schema here (`validate_arguments` in
        ``_tools/validation.py`` does that, before); only that the handler can take them.

        Raises:
            ToolTimeoutError: the call ran past its timeout.
            ToolImportError: the handler cannot be imported.
            ArgumentsMismatch: the handler's signature does not take these arguments.
            Exception: whatever the handler raises.
        """
        seconds = self.timeout if self.timeout is not None else default_timeout
        if seconds is None:
            return await self._call(arguments, threads)
        try:
            async with asyncio.timeout(seconds) as scope:
                return await self._call(arguments, threads)
        except TimeoutError:
            if scope.expired():
                raise ToolTimeoutError(self.name, seconds) from None
            raise  # the handler's own TimeoutError

    async def _call(self, arguments: Mapping[str, Any], threads: HandlerThreads | None) -> str:
        handler = self.resolve_handler()
        kwargs = dict(arguments)
        check_binding(handler, kwargs)
        if inspect.iscoroutinefunction(handler):
            result = await handler(**kwargs)
        else:
            runner = threads if threads is not None else _SHARED_THREADS
            result = await runner.run(self.name, handler, kwargs)
            if inspect.isawaitable(result):
                result = await result
        return result_to_text(result)


@overload
def tool(fn: ToolHandler, /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[ToolHandler], Tool]: ...
def tool(
    fn: ToolHandler | None = None, /, *, name: str | None = None, description: str | None = None
) -> Tool | Callable[[ToolHandler], Tool]:
    """Make a `Tool` from a typed function; the schema comes from its signature and docstring.

    Works bare (``@tool``) or with options (``@tool(name="math.add")``).

    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> add.name, add.parameters["required"]
    ('add', ['a', 'b'])
    """

    if name is not None:
        reason = invalid_name_reason(name)
        if reason is not None:  # at decoration time, not when the catalog skips it later
            raise CatalogError(f"@tool(name={name!r}): {reason}", name=None)

    def build(func: ToolHandler) -> Tool:
        if isinstance(func, Tool | Agent) or not callable(func):
            raise CatalogError(
                f"@tool decorates a function, not {type(func).__name__} {func!r:.60}", name=name
            )
        tool_name: str = name or str(getattr(func, "__name__", ""))
        summary, parameters, model = _signature_of(func, tool_name)
        made = Tool(tool_name, description or summary, parameters, func)
        _warn_what_the_model_misses(func, made, untyped=_untyped_parameters(func))
        # Arguments are then validated and coerced by the signature, as pydantic's
        # ``validate_call`` does, rather than only by the JSON Schema derived from it.
        object.__setattr__(made, "_signature", model)
        return made

    return build if fn is None else build(fn)


_NO_SCHEMA = (pydantic.PydanticSchemaGenerationError, pydantic.PydanticInvalidForJsonSchema)
"""What pydantic raises for a type hint it cannot validate or describe as JSON Schema."""


def _signature_of(
    func: ToolHandler, tool_name: str
) -> tuple[str, dict[str, Any], type[pydantic.BaseModel]]:
    """`signature_model`, with our own message for a type hint no JSON Schema describes."""
    try:
        return signature_model(func)
    except _NO_SCHEMA:
        pass
    culprit = next(
        (
            (pname, hint)
            for pname, hint in _hints(func).items()
            if pname != "return" and not _describable(hint)
        ),
        None,
    )
    what = (
        f"parameter {culprit[0]!r} has type {getattr(culprit[1], '__name__', culprit[1])!r}"
        if culprit is not None
        else "a parameter's type"
    )
    raise CatalogError(
        f"tool {tool_name!r}: {what}, which has no JSON Schema for the model to read; use str, "
        "int, float, bool, list, dict, Literal, an Enum, a dataclass, a TypedDict or a "
        "pydantic model (or build the schema yourself with Tool(name, description, "
        "parameters, handler))",
        name=tool_name,
    ) from None


def _hints(func: ToolHandler) -> dict[str, Any]:
    try:
        return dict(inspect.get_annotations(func, eval_str=True))
    except Exception:  # a hint that does not evaluate: no culprit to name
        return {}


def _describable(hint: Any) -> bool:
    try:
        pydantic.TypeAdapter(hint).json_schema()
    except _NO_SCHEMA:
        return False
    except Exception:  # anything else is pydantic's to report in its own words
        return True
    return True


def _untyped_parameters(func: ToolHandler) -> list[str]:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [
        p.name
        for p in signature.parameters.values()
        if p.annotation is inspect.Parameter.empty and p.kind not in variadic
    ]


def _warn_what_the_model_misses(func: ToolHandler, made: Tool, *, untyped: list[str]) -> None:
    """One `ToolDefinitionWarning` per tool: what the model will see of a thin definition."""
    missing = []
    if not made.description:
        missing.append("no docstring, so the model sees an empty description")
    if untyped:
        names = ", ".join(untyped)
        missing.append(f"no type hints on {names}, so the model sees them untyped")
    if not missing:
        return
    code = getattr(func, "__code__", None)
    warnings.warn_explicit(
        f"tool {made.name!r}: {'; '.join(missing)}",
        ToolDefinitionWarning,
        filename=code.co_filename if code is not None else "<tool>",
        lineno=code.co_firstlineno if code is not None else 0,
        module=getattr(func, "__module__", None) or "<tool>",
    )


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
