"""One proxied request as it goes down the stages: what each stage found, and how a stage
refuses it.

`app` makes a `Request` of the ASGI scope (its path normalised, its headers read once) and
passes it down in one direction: admission (`admission`), the body (`body`), the tool list
(`tools`), then the call upstream and the answer (`relay`). Each stage fills in what it found
(who the client is, the upstream key, the body's bytes, the parsed body, its tools), so no
later stage reads or parses the same thing again. A stage that answers with an error of the
proxy's own raises `Refused`; a client that leaves raises `Disconnected` wherever it is
noticed (`until_disconnect`).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from bot_toolsearch._services.client_policy import ClientPolicy

from .keys import key_digest
from .limits import RETRY_AFTER
from .reading import Reading

__all__ = [
    "ADMITTED",
    "OPEN",
    "Admitted",
    "Disconnected",
    "Receive",
    "Refused",
    "Request",
    "Scope",
    "Send",
    "busy",
    "until_disconnect",
    "within",
]

Scope: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send: TypeAlias = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_T = TypeVar("_T")

KEYLESS = key_digest(None)
"""The digest of no key (`Request.key_digest` before `Request.use_key`)."""


@dataclass(frozen=True, slots=True)
class Admitted:
    """One admitted request: whose it is, and which key goes upstream (`admission`)."""

    keyed: bool
    """The request carried one of the proxy's own keys (not a key for the upstream)."""
    policy: ClientPolicy | None = None
    """The named client's policy; ``None``: the settings' own ``[tools]``."""
    operator_key: str = ""

    def upstream_key(self, client_key: str | None) -> str | None:
        """The key to send upstream: the client's own when the proxy has no keys, else the
        named client's ``upstream_key_env``, else the operator's."""
        if not self.keyed:
            return client_key
        env = self.policy.upstream_key_env if self.policy is not None else None
        if env:
            return os.environ.get(env, "").strip() or self.operator_key
        return self.operator_key


OPEN = Admitted(keyed=False)
"""A proxy without keys: the client's own key goes upstream."""

ADMITTED: contextvars.ContextVar[Admitted] = contextvars.ContextVar(
    "bot_toolsearch_proxy_admitted", default=OPEN
)
"""The admission of the request being served."""


class Refused(Exception):
    """A request the proxy answers with an error of its own (the client's fault, or 502)."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        *,
        code: str | None = None,
        param: str | None = None,
        retry_after: int | None = None,
        close: bool = False,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.code, self.param = (
            status,
            message,
            kind,
            code,
            param,
        )
        self.retry_after = retry_after
        self.close = close
        """Close the connection after the answer (the request's framing or body is not
        trusted to end where the next request would begin)."""


def busy(what: str, option: str) -> Refused:
    """503 with ``Retry-After``: a bounded pool cannot take the work now."""
    return Refused(
        503,
        f"the proxy is busy: {what} ({option}); retry after {RETRY_AFTER} s",
        "server_error",
        code="server_busy",
        retry_after=RETRY_AFTER,
    )


class Disconnected(Exception):
    """The client left before its answer was ready."""


@dataclass(slots=True, eq=False)
class Request:
    """One HTTP request on its way down the stages."""

    scope: Scope
    receive: Reading
    """The body's reader: its deadline, and its bounds (`count_also`)."""
    send: Send
    path: str
    """The normalised path (`app`)."""
    headers: dict[str, str]
    """The headers, names lower-cased."""
    admitted: Admitted = OPEN
    """Who the client is (`admission`)."""
    key: str | None = None
    """The key that goes upstream (`body`; set with `use_key`)."""
    key_digest: bytes = field(default=KEYLESS, repr=False)
    """``key``'s SHA-256, what `bot_toolsearch._proxy.keys.KnownKeys` knows it by: computed
    once per request (`use_key`), though the table is asked up to three times."""
    extra: dict[str, str] = field(default_factory=dict)
    """Client headers passed upstream (organisation, project, beta flags; `body`)."""
    auth: dict[str, str] = field(default_factory=dict)
    """The headers that carry ``key`` upstream in the route's dialect, for the key probe."""
    raw: bytes = b""
    """The body's bytes (`body`)."""
    body: dict[str, Any] = field(default_factory=dict)
    """The parsed body (`tools`)."""
    chat: bool = True
    """Chat Completions, else the Responses API."""
    tools: Sequence[Any] | None = None
    """The body's ``tools`` (`tools`)."""
    known: bool = False
    """``tools`` is a cached list found by its bytes, not parsed (`tools`)."""
    native: bool = False
    """``tools`` speaks the client's own tool-search dialect (`tools`)."""
    builds: int = 0
    """The tool-list cache's builds before this request's (`tools`)."""

    @property
    def method(self) -> str:
        method: str = self.scope["method"]
        return method

    def use_key(self, key: str | None) -> None:
        """``key`` goes upstream: it, and its digest (`key_digest`)."""
        self.key, self.key_digest = key, key_digest(key)

    @property
    def rest(self) -> str:
        """The path under ``/v1`` (the path itself when it is not under ``/v1``)."""
        path = self.path
        return path[3:] or "/" if path == "/v1" or path.startswith("/v1/") else path


async def until_disconnect(
    receive: Receive, work: Awaitable[_T], seconds: float | None = None
) -> _T:
    """``work``'s result; cancelled, raising `Disconnected`, when the client leaves first (or
    what reading on raised: a body deadline of `bot_toolsearch._proxy.reading`); with
    ``seconds``, cancelled too, raising `TimeoutError`, once they have passed (as `within`
    does, without its own timeout context). Shared by every route, the Messages one included.

    ``work`` runs in the caller's own task; one watcher task reads on meanwhile and cancels
    it when the client leaves (a task for the work too, and a wait on both, cost the proxy
    about 40 µs a request, issue 44). Whichever of the client leaving and the deadline comes
    first cancels the work; the other then does nothing."""
    task = asyncio.current_task()
    assert task is not None, "until_disconnect runs in a task"
    loop = task.get_loop()  # not asked again (each time a system call, issue 44)
    watch = _Watch(task)
    watcher = loop.create_task(watch.run(receive))
    timer = None if seconds is None else loop.call_later(seconds, watch.expire)
    cancelling = task.cancelling()
    counted = False  # the deadline's cancel taken back
    try:
        return await work
    except asyncio.CancelledError:
        if watch.fired or watch.expired:
            counted = True
            if task.uncancel() <= cancelling:  # the cancel was ours, not another's
                if watch.expired:
                    raise TimeoutError from None
                failure = watch.failure
                watch.failure = None  # no cycle (the exception, its traceback, this frame)
                raise failure if failure is not None else Disconnected() from None
        raise
    finally:
        watch.over = True
        watcher.cancel()
        if timer is not None:
            timer.cancel()
            if watch.expired and not counted:  # the work swallowed it: as `asyncio.timeout`
                task.uncancel()
        del watcher, watch


class _Watch:
    """The watcher of `until_disconnect`: reads on until the client leaves (or reading
    fails), then cancels ``task``, unless the work is over by then; or its deadline does."""

    __slots__ = ("expired", "failure", "fired", "over", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task: asyncio.Task[Any] | None = task
        self.fired = False
        self.expired = False
        self.over = False
        self.failure: BaseException | None = None

    async def run(self, receive: Receive) -> None:
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
        except Exception as exc:  # reading on failed (a body deadline): the work's failure
            self.failure = exc
        task, self.task = self.task, None
        if self.over or task is None:
            self.failure = None
            return
        self.fired = True
        task.cancel()

    def expire(self) -> None:
        """The deadline passed: the work is cancelled, unless it is over or cancelled."""
        task, self.task = self.task, None
        if self.over or task is None:
            return
        self.expired = True
        task.cancel()


async def within(seconds: float, work: Awaitable[_T]) -> _T:
    """``work``'s result, or `TimeoutError` after ``seconds`` (no task of its own, unlike
    `asyncio.wait_for` on Python 3.11, whose task would hold a failure's traceback in a
    cycle with the request's frames)."""
    async with asyncio.timeout(seconds):
        return await work
