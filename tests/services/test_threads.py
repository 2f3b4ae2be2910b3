"""The bounded pools: work past the queue is refused, a waiter gives up at its deadline and
its queued work is cancelled, and a pool whose queued work waits too long is stuck."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from bot_toolsearch._services.threads import Pool, PoolBusy, Pools, outcome_seen


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


def test_outcome_seen_marks_a_left_tasks_exception_retrieved() -> None:
    """A shared build whose first caller left: its failure is not reported by asyncio as an
    exception nobody retrieved once `outcome_seen` has run; without it, it is."""
    import gc

    def unretrieved(seen: bool) -> list[str]:
        loop = asyncio.new_event_loop()
        reported: list[str] = []
        loop.set_exception_handler(lambda _, context: reported.append(context["message"]))
        try:
            future = loop.create_future()
            if seen:
                future.add_done_callback(outcome_seen)
            future.set_exception(RuntimeError("the build failed"))
            loop.run_until_complete(asyncio.sleep(0))  # the callbacks run
            del future
            gc.collect()
        finally:
            loop.close()
        return reported

    assert unretrieved(seen=True) == []
    assert unretrieved(seen=False) == ["Future exception was never retrieved"]
