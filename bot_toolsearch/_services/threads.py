"""Work an async door must not run on its event loop, in bounded pools of threads of its own.

Three pools, one per kind of work, so that one kind stuck never starves another and never
the event loop's default executor (which uvicorn, anyio and the SDK use too):

- ``index``: a new tool list's catalog and keyword index (CPU, in proportion to the list);
- ``search``: the searches of one model round, when they may call the embeddings endpoint;
- ``embeddings``: every call to the embeddings endpoint (a catalog's vectors, a query).

A pool has a fixed number of workers and a bounded queue: past it `Pool.submit` raises
`PoolBusy` (a server answers 503 with ``Retry-After``), never queues without end. A pool
whose queued work has waited longer than its ``deadline`` for a worker is *stuck*
(`Pool.stuck`; the proxy's ``/healthz`` says so). A waiter gives up after its deadline
(`Pool.run`); the work it gave up on is cancelled when it has not started yet.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import itertools
import threading
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["POOLS", "Pool", "PoolBusy", "PoolStatus", "Pools", "SharedWork", "off_loop"]

_T = TypeVar("_T")


class PoolBusy(Exception):
    """A pool's queue is full: the work was refused, not queued (try again later)."""

    def __init__(self, pool: str, queued: int) -> None:
        super().__init__(f"the {pool} pool is busy ({queued} tasks waiting)")
        self.pool = pool


@dataclass(frozen=True, slots=True)
class PoolStatus:
    """What a pool is doing now (``/healthz`` reports it)."""

    name: str
    workers: int
    busy: int
    queued: int
    waited: float
    """Seconds the oldest queued task has waited for a worker (0 when none waits)."""
    stuck: bool
    """Queued work has waited longer than the pool's deadline: every worker is held."""

    def as_json(self) -> dict[str, object]:
        """The status as a JSON object."""
        return {
            "workers": self.workers,
            "busy": self.busy,
            "queued": self.queued,
            "waited_s": round(self.waited, 3),
            "stuck": self.stuck,
        }


class Pool:
    """A bounded pool of named daemon threads (see the module docstring).

    Args:
        name: the pool's name (also its threads' name prefix ``bot_toolsearch-<name>``).
        workers: threads at most.
        queue: tasks that may wait for a worker at most; one more raises `PoolBusy`.
        deadline: seconds a waiter waits by default (`run`), and after which waiting work
            makes the pool `stuck`.
    """

    def __init__(self, name: str, workers: int, queue: int, deadline: float) -> None:
        if workers < 1 or queue < 0 or deadline <= 0:
            raise ValueError(f"pool {name}: workers >= 1, queue >= 0 and deadline > 0")
        self.name = name
        self.workers = workers
        self.queue = queue
        self.deadline = deadline
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._waiting: dict[int, float] = {}
        self._running: dict[int, float] = {}
        self._idle = threading.Condition(self._lock)

    def submit(self, function: Callable[..., _T], *args: Any) -> concurrent.futures.Future[_T]:
        """Run ``function(*args)`` in a worker.

        Raises:
            PoolBusy: ``queue`` tasks wait for a worker already.
        """
        with self._lock:
            if len(self._waiting) >= self.queue + max(0, self.workers - len(self._running)):
                raise PoolBusy(self.name, len(self._waiting))
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    self.workers, thread_name_prefix=f"bot_toolsearch-{self.name}"
                )
            task = next(self._ids)
            self._waiting[task] = time.monotonic()
            executor = self._executor
        future = executor.submit(self._run, task, function, *args)
        future.add_done_callback(lambda _: self._forget(task))
        return future

    def _run(self, task: int, function: Callable[..., _T], *args: Any) -> _T:
        with self._lock:
            self._waiting.pop(task, None)
            self._running[task] = time.monotonic()
        try:
            return function(*args)
        finally:
            with self._lock:
                self._running.pop(task, None)
                self._idle.notify_all()

    def _forget(self, task: int) -> None:
        """A task cancelled before it started leaves the queue."""
        with self._lock:
            self._waiting.pop(task, None)
            self._idle.notify_all()

    async def run(
        self, function: Callable[..., _T], *args: Any, deadline: float | None = None
    ) -> _T:
        """``function(*args)`` in a worker, in a copy of the caller's context, awaited for at
        most ``deadline`` seconds (the pool's own when ``None``; ``0`` waits without end).

        Raises:
            PoolBusy: the queue is full.
            TimeoutError: no result within the deadline (the work is cancelled when it has
                not started; a started one finishes in its thread).
        """
        # The caller's context variables go along, as with `asyncio.to_thread` (a proxy
        # request's bookkeeping, a span's parent).
        context = contextvars.copy_context()
        future = self.submit(context.run, function, *args)
        wait = self.deadline if deadline is None else deadline
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), wait or None)
        finally:
            future.cancel()  # nothing when it is done or running

    def status(self) -> PoolStatus:
        """What the pool is doing now."""
        now = time.monotonic()
        with self._lock:
            busy, queued = len(self._running), len(self._waiting)
            waited = now - min(self._waiting.values()) if self._waiting else 0.0
        return PoolStatus(self.name, self.workers, busy, queued, waited, waited > self.deadline)

    def stuck(self) -> bool:
        """Whether queued work has waited longer than the deadline for a worker."""
        return self.status().stuck

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no task runs or waits (at most ``timeout`` s); whether it is idle."""
        end = time.monotonic() + timeout
        with self._idle:
            while self._running or self._waiting:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True


class Pools:
    """The three pools of a process (`POOLS`); their sizes can be changed before first use
    (`configure`, what ``serve --index-builds`` does)."""

    def __init__(self) -> None:
        self.index = Pool("index", workers=2, queue=8, deadline=60.0)
        self.search = Pool("search", workers=8, queue=256, deadline=60.0)
        self.embeddings = Pool("embeddings", workers=4, queue=64, deadline=60.0)

    def all(self) -> tuple[Pool, Pool, Pool]:
        """Every pool."""
        return self.index, self.search, self.embeddings

    def configure(self, *, index_builds: int | None = None, index_queue: int | None = None) -> None:
        """Resize the index pool (``index_builds`` concurrent builds, ``index_queue`` waiting);
        a pool already started keeps its threads until the process ends.

        Raises:
            ValueError: a bound below 1 (builds) or 0 (queue).
        """
        workers = self.index.workers if index_builds is None else index_builds
        queue = self.index.queue if index_queue is None else index_queue
        if (workers, queue) != (self.index.workers, self.index.queue):
            self.index = Pool("index", workers, queue, self.index.deadline)

    def stuck(self) -> list[PoolStatus]:
        """The status of every stuck pool."""
        return [status for status in (p.status() for p in self.all()) if status.stuck]


POOLS = Pools()
"""The process's pools (the proxy, the wrapper and the `Bot` share them)."""


async def off_loop(slow: bool, function: Callable[..., _T], *args: Any) -> _T:
    """``function(*args)``, in the ``search`` pool when it may take long (``slow``: a search
    that may call the embeddings endpoint or build a keyword index), so an async door's event
    loop never waits on it. The semantic stage bounds its own waits (its ``timeout``), so the
    search is awaited to its end.

    Raises:
        PoolBusy: the search pool's queue is full.
    """
    if not slow:
        return function(*args)
    return await POOLS.search.run(function, *args, deadline=0)


class SharedWork:
    """Async work shared by key: a caller that needs work already under way waits for it
    instead of starting it again (a burst of requests with one new tool list builds it once,
    rather than each taking a place in a pool's bounded queue).

    The work runs as its own task, so a caller that leaves (is cancelled) leaves it to finish
    for the others; its outcome is its first caller's, and the others check again for what
    they need once it is over. A task belongs to the loop that runs it: a caller used from
    several loops puts its loop in the key.
    """

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[Any]] = {}

    def __len__(self) -> int:
        return len(self._running)

    async def wait(self, key: Hashable) -> bool:
        """Wait for the work of ``key`` under way, whatever its outcome; whether there was."""
        running = self._running.get(key)
        if running is None:
            return False
        with contextlib.suppress(Exception):  # that caller's error, not this one's
            await asyncio.shield(running)
        return True

    async def run(self, key: Hashable | None, work: Awaitable[_T]) -> _T:
        """Run ``work`` as the work of ``key`` (``None``: not shared) and wait for it."""
        task = asyncio.ensure_future(work)
        if key is not None:
            running = self._running
            running[key] = task
            task.add_done_callback(lambda t: running.pop(key) if running.get(key) is t else None)
        # A cancelled caller's shield marks the task's exception retrieved when it ends.
        return await asyncio.shield(task)
