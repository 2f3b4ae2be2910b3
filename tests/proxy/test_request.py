"""`until_disconnect` (issue 44): the work runs in the caller's task, one watcher reads on, and
a client that leaves cancels the work, which the caller sees as `Disconnected`; a request's key
is digested once (`Request.key_digest`)."""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import MutableMapping
from typing import Any

import pytest

from bot_toolsearch._proxy import request as request_module
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._proxy.keys import key_digest
from bot_toolsearch._proxy.limits import BodyBytes, InFlight
from bot_toolsearch._proxy.reading import Reading
from bot_toolsearch._proxy.request import Disconnected, Request, until_disconnect
from tests.wrap._tools import chat_tools

from ._raw import Upstream, answer, post, served
from .test_limits import COMPLETION, USER


class _Client:
    """A request's ``receive`` after the body: nothing until `leave` (or `fail`)."""

    def __init__(self) -> None:
        self._left = asyncio.Event()
        self.failure: Exception | None = None
        self.reads = 0

    def leave(self) -> None:
        self._left.set()

    def fail(self, exc: Exception) -> None:
        self.failure = exc
        self._left.set()

    async def receive(self) -> MutableMapping[str, Any]:
        self.reads += 1
        await self._left.wait()
        if self.failure is not None:
            raise self.failure
        return {"type": "http.disconnect"}


async def _until_cancelled(ended: list[str]) -> int:
    """Work that waits a minute, noting in ``ended`` that it was cancelled."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        ended.append("cancelled")
        raise
    return 1


async def test_the_works_result_and_no_watcher_left_running() -> None:
    client = _Client()

    async def work() -> int:
        await asyncio.sleep(0.01)
        return 7

    before = len(asyncio.all_tasks())
    assert await until_disconnect(client.receive, work()) == 7
    await asyncio.sleep(0)  # the watcher's cancellation runs
    assert len(asyncio.all_tasks()) == before
    assert client.reads == 1


async def test_a_client_that_leaves_cancels_the_work() -> None:
    client = _Client()
    ended: list[str] = []
    work = functools.partial(_until_cancelled, ended)

    asyncio.get_running_loop().call_later(0.05, client.leave)
    with pytest.raises(Disconnected):
        await until_disconnect(client.receive, work())
    assert ended == ["cancelled"]
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]


async def test_a_failure_reading_on_is_the_callers_failure() -> None:
    client = _Client()

    class Deadline(Exception):
        pass

    asyncio.get_running_loop().call_later(0.05, client.fail, Deadline())
    with pytest.raises(Deadline):
        await until_disconnect(client.receive, asyncio.sleep(60))


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    client = _Client()
    running = asyncio.ensure_future(until_disconnect(client.receive, asyncio.sleep(60)))
    await asyncio.sleep(0.05)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


async def test_a_client_leaving_after_the_work_is_over_changes_nothing() -> None:
    client = _Client()

    async def work() -> str:
        client.leave()  # the disconnect arrives as the work ends
        return "done"

    assert await until_disconnect(client.receive, work()) == "done"
    await asyncio.sleep(0.01)
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]


async def test_the_works_own_failure_passes_through() -> None:
    client = _Client()

    async def work() -> None:
        raise ValueError("upstream")

    with pytest.raises(ValueError, match="upstream"):
        await until_disconnect(client.receive, work())


async def test_the_deadline_cancels_the_work_with_a_timeout() -> None:
    client = _Client()
    ended: list[str] = []
    work = functools.partial(_until_cancelled, ended)

    with pytest.raises(TimeoutError):
        await until_disconnect(client.receive, work(), 0.05)
    assert ended == ["cancelled"]
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]
    await asyncio.sleep(0)
    assert client.reads == 1  # the watcher stopped: nothing reads on


async def test_a_client_leaving_before_the_deadline_is_a_disconnect() -> None:
    client = _Client()
    asyncio.get_running_loop().call_later(0.02, client.leave)
    with pytest.raises(Disconnected):
        await until_disconnect(client.receive, asyncio.sleep(60), 0.2)
    await asyncio.sleep(0.3)  # the deadline passes: its timer was cancelled, nothing cancelled
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]


async def test_work_done_within_the_deadline_is_its_result() -> None:
    client = _Client()
    assert await until_disconnect(client.receive, asyncio.sleep(0.01, "ok"), 5.0) == "ok"
    await asyncio.sleep(0)
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]


async def test_a_cancellation_from_elsewhere_under_a_deadline_stays_a_cancellation() -> None:
    client = _Client()
    running = asyncio.ensure_future(until_disconnect(client.receive, asyncio.sleep(60), 30.0))
    await asyncio.sleep(0.05)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


# -- the key's digest, computed once per request (issue 44) ------------------------------------


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The keys `key_digest` is computed for from now on, for `Request.key_digest`."""
    computed: list[str | None] = []

    def counted(key: str | None) -> bytes:
        computed.append(key)
        return key_digest(key)

    monkeypatch.setattr(request_module, "key_digest", counted)
    return computed


async def _nothing(_: MutableMapping[str, Any]) -> None:
    return None


def test_a_requests_key_digest_is_its_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    computed = _counting(monkeypatch)
    reading = Reading(_Client().receive, 1.0, InFlight(1), BodyBytes(1))
    request = Request({}, reading, _nothing, "/", {})
    assert request.key_digest == key_digest(None) == hashlib.sha256(b"").digest()
    for key in ("sk-" + "a" * 40, None, "sk-é"):
        request.use_key(key)
        assert request.key == key
        assert request.key_digest == hashlib.sha256((key or "").encode()).digest()
    assert computed == ["sk-" + "a" * 40, None, "sk-é"]


def test_a_served_request_digests_its_key_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The known-keys table is asked and told twice a request (known good? accepted), by one
    digest of the key, which is the key's SHA-256 as the table knew it before."""
    upstream = Upstream(answer(COMPLETION))
    try:
        app = ProxyApp(upstream.url)
        computed = _counting(monkeypatch)
        known = app._body.probe.known
        asked: list[bytes] = []
        ok = known.ok
        monkeypatch.setattr(known, "ok", lambda digest: asked.append(digest) or ok(digest))
        with served(app) as port:
            payload = {"model": "m", "messages": [USER], "tools": chat_tools()}
            for _ in range(2):
                reply = post(
                    port, "/v1/chat/completions", payload, extra="\r\nAuthorization: Bearer sk-x"
                )
                assert reply.status == 200
    finally:
        upstream.close()
    assert computed == ["sk-x", "sk-x"]  # once per request
    assert asked == [hashlib.sha256(b"sk-x").digest()] * 2
    assert known.ok(hashlib.sha256(b"sk-x").digest())  # accepted by the same digest
