"""The bounded pools: work past the queue is refused, a waiter gives up at its deadline and
its queued work is cancelled, and a pool whose queued work waits too long is stuck."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from bot_toolsearch._services.threads import Pool, PoolBusy, Pools, SharedWork


def _blocked(pool: Pool, release: threading.Event, count: int) -> None:
    for _ in range(count):
        pool.submit(release.wait, 30)


def test_work_past_the_queue_is_refused_not_queued() -> None:
    pool = Pool("test", workers=1, queue=2, deadline=60)
    release = threading.Event()
    try:
        _blocked(pool, release, 3)  # one running, two waiting
        with pytest.raises(PoolBusy, match="the test pool is busy"):
            pool.submit(release.wait, 30)
    finally:
        release.set()
    assert pool.wait_idle(30)
    assert pool.submit(int, "7").result(30) == 7


async def test_a_waiter_gives_up_at_its_deadline_and_its_queued_work_is_dropped() -> None:
    pool = Pool("test", workers=1, queue=4, deadline=60)
    release = threading.Event()
    ran: list[int] = []
    try:
        _blocked(pool, release, 1)
        with pytest.raises(TimeoutError):
            await pool.run(ran.append, 1, deadline=0.05)
        assert pool.status().queued == 0  # cancelled before it started
    finally:
        release.set()
    assert await asyncio.to_thread(pool.wait_idle, 30)
    assert ran == []


def test_a_pool_whose_queued_work_waits_past_the_deadline_is_stuck() -> None:
    pool = Pool("test", workers=1, queue=4, deadline=0.05)
    release = threading.Event()
    try:
        _blocked(pool, release, 2)
        status = pool.status()
        while not status.stuck:  # the queued task's wait passes the deadline
            time.sleep(0.01)
            status = pool.status()
        assert (status.busy, status.queued) == (1, 1)
        assert status.as_json()["stuck"] is True
    finally:
        release.set()
    assert pool.wait_idle(30)
    assert not pool.stuck()


def test_the_index_pool_can_be_resized_before_use() -> None:
    pools = Pools()
    pools.configure(index_builds=3, index_queue=5)
    assert (pools.index.workers, pools.index.queue) == (3, 5)
    with pytest.raises(ValueError, match="workers >= 1"):
        pools.configure(index_builds=0)


async def test_run_carries_the_callers_context_variables() -> None:
    # A proxy request's bookkeeping (and a span's parent) lives in context variables: work
    # sent to a pool must see them, as with asyncio.to_thread.
    request: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")
    request.set("req-1")
    pool = Pool("context", workers=1, queue=1, deadline=30)
    assert await pool.run(request.get) == "req-1"


async def test_shared_work_runs_once_for_waiting_callers_and_survives_a_caller_leaving() -> None:
    """Callers that need work under way wait for it instead of starting it again; the first
    caller leaving does not cancel it for them; its failure is its caller's alone (and never
    reported by asyncio as an exception nobody retrieved)."""
    shared = SharedWork()
    started: list[str] = []
    release = asyncio.Event()

    async def build(name: str, fail: bool = False) -> str:
        started.append(name)
        await release.wait()
        if fail:
            raise RuntimeError("the build failed")
        return name

    first = asyncio.ensure_future(shared.run("list", build("first")))
    await asyncio.sleep(0)
    assert len(shared) == 1
    waiters = [asyncio.ensure_future(shared.wait("list")) for _ in range(5)]
    assert not await shared.wait("other")  # nothing under way for another key
    first.cancel()  # the first caller leaves ...
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiters) == [True] * 5  # ... the work still finished
    assert started == ["first"]
    assert len(shared) == 0

    reported: list[str] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, c: reported.append(c["message"]))
    failing = asyncio.ensure_future(shared.run("list", build("second", fail=True)))
    waiter = asyncio.ensure_future(shared.wait("list"))
    await asyncio.sleep(0)
    failing.cancel()  # its caller left: nobody reads the failure
    assert await waiter is True  # the waiter is not handed the other caller's error
    import gc

    gc.collect()
    assert reported == []
