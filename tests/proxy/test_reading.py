"""Slow clients over raw sockets on 127.0.0.1 (issue 41, item 4): sockets that send a head and
drip the body hold no place in flight, and are answered 408 and closed at the read deadline;
a head that never ends is answered 408 and closed too (``serve``'s h11 protocol).

Before: a request counted in flight from its head, with no deadline for its body; a dozen
drippers past ``max_in_flight`` had every legitimate request answered 429 for as long as they
dripped.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._proxy.head_deadline import HeadDeadline
from bot_toolsearch._proxy.limits import BodyBytes, InFlight
from bot_toolsearch._proxy.reading import ENV_READ_TIMEOUT, BodyTimeout, Reading

from ._raw import Upstream, answer, parse, post, request, served
from .test_limits import COMPLETION, USER

BOUND = 8
DRIPPERS = BOUND + 4


def _drip(port: int, head: bytes, stop: threading.Event, every: float = 0.25) -> bytes:
    """Send ``head``, then one space every ``every`` seconds until the proxy answers or closes
    (or ``stop``); everything the proxy sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        sock.settimeout(every)
        received = b""
        while not stop.is_set():
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                try:
                    sock.sendall(b" ")
                except OSError:  # closed by the proxy
                    break
                continue
            except OSError:
                break
            if not chunk:
                break
            received += chunk
        return received


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_drippers_hold_no_place_in_flight_and_get_408(stop: threading.Event) -> None:
    upstream = Upstream(answer(COMPLETION))
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000\r\n\r\n{"
    )
    got: list[bytes] = []
    try:
        app = ProxyApp(upstream.url, max_in_flight=BOUND, read_timeout=4)
        with served(app) as port:
            drippers = [
                threading.Thread(target=lambda: got.append(_drip(port, head, stop)))
                for _ in range(DRIPPERS)
            ]
            started = time.monotonic()
            for thread in drippers:
                thread.start()
            time.sleep(0.5)  # every dripper's head is in, its body arriving
            payload = {"model": "m", "messages": [USER]}
            statuses = [post(port, "/v1/chat/completions", payload).status for _ in range(5)]
            assert time.monotonic() - started < 4  # measured while all of them dripped
            assert statuses == [200] * 5
            for thread in drippers:
                thread.join(30)
    finally:
        upstream.close()
    assert len(got) == DRIPPERS
    for data in got:  # each answered 408, then closed (the drip loop ended)
        reply = parse(data)
        assert reply.status == 408
        assert reply.headers["connection"] == "close"
        assert reply.json()["error"]["code"] == "request_timeout"
    assert len(upstream.received) == 5  # no dripper's body went upstream


def test_the_body_deadline_counts_the_clients_time_only(stop: threading.Event) -> None:
    upstream = Upstream(answer(COMPLETION))
    try:
        with served(ProxyApp(upstream.url, read_timeout=1)) as port:
            # A whole body sent in two parts within the deadline is served.
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (len(body), body[:10])
            )
            time.sleep(0.4)
            sock.sendall(body[10:])
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
            sock.close()
            assert parse(data).status == 200
    finally:
        upstream.close()


def test_a_head_that_never_ends_gets_408_and_a_silent_connection_is_closed(
    stop: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_READ_TIMEOUT, "1.5")
    upstream = Upstream(answer(COMPLETION))
    try:
        with served(ProxyApp(upstream.url), http=HeadDeadline) as port:
            started = time.monotonic()
            head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Drip: a"
            data = _drip(port, head, stop, every=0.2)  # the header line never ends
            assert time.monotonic() - started < 20
            reply = parse(data)
            assert reply.status == 408
            assert reply.json()["error"]["code"] == "request_timeout"
            with socket.create_connection(("127.0.0.1", port), timeout=30) as silent:
                assert silent.recv(1) == b""  # closed at the deadline, nothing said
            ok = post(port, "/v1/chat/completions", {"model": "m", "messages": [USER]})
            assert ok.status == 200
            health = request(port, b"GET /healthz HTTP/1.1\r\nHost: x")
            assert health.status == 200
    finally:
        upstream.close()
    assert len(upstream.received) == 1


def test_a_read_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="read_timeout"):
        ProxyApp("http://127.0.0.1:9", read_timeout=0)


def test_bodies_still_arriving_are_bounded_by_their_bytes(stop: threading.Event) -> None:
    """Bodies no longer count in flight while they arrive, so their bytes are bounded: a body
    that would pass the bound is refused 503 (and closed) while others arrive; whole requests
    within it are served, and the bytes are given back."""
    upstream = Upstream(answer(COMPLETION))
    holding = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000\r\n\r\n{" + b" " * 60_000
    )
    try:
        app = ProxyApp(upstream.url, read_timeout=4, body_bytes=100_000)
        with served(app) as port:
            holder = threading.Thread(target=lambda: _drip(port, holding, stop, every=0.5))
            holder.start()
            time.sleep(1.0)  # 60 kB of its body held
            big = {"model": "m", "messages": [{"role": "user", "content": "x" * 50_000}]}
            refused = post(port, "/v1/chat/completions", big)
            assert refused.status == 503
            assert refused.json()["error"]["code"] == "server_busy"
            assert refused.headers["connection"] == "close"
            assert (
                post(port, "/v1/chat/completions", {"model": "m", "messages": [USER]}).status == 200
            )
            holder.join(30)  # 408 at its deadline: its bytes are given back
            assert post(port, "/v1/chat/completions", big).status == 200
    finally:
        upstream.close()


# -- the deadline itself: one timer per request (issue 44), on `Reading` directly --------------


def _reading(messages: list[tuple[float, bytes, bool]], timeout: float) -> Reading:
    """A `Reading` over a client that sends each ``(delay, body, more)`` after its delay."""
    queue = iter(messages)

    async def receive() -> dict[str, Any]:
        item = next(queue, None)
        if item is None:
            await asyncio.sleep(3600)  # the client says nothing more
            raise AssertionError("unreachable")
        delay, body, more = item
        await asyncio.sleep(delay)
        return {"type": "http.request", "body": body, "more_body": more}

    return Reading(receive, timeout, InFlight(4), BodyBytes(1 << 20))


async def _read_all(reading: Reading) -> bytes:
    body = b""
    while not reading.whole:
        body += (await reading())["body"]
    return body


async def test_the_deadline_is_for_the_whole_body_not_each_message() -> None:
    reading = _reading([(0.1, b"a", True)] * 20, timeout=0.5)  # each quick, 2 s in all
    with pytest.raises(BodyTimeout):
        await _read_all(reading)
    reading.leave()
    assert reading.size < 20


async def test_time_the_proxy_spends_between_waits_does_not_count() -> None:
    reading = _reading([(0.05, b"a", True), (0.05, b"b", False)], timeout=0.4)
    assert (await reading())["body"] == b"a"
    await asyncio.sleep(0.8)  # the proxy's own work (a key probe): twice the deadline
    assert (await reading())["body"] == b"b"
    assert reading.whole
    reading.leave()


async def test_a_deadline_spent_between_waits_fails_the_next_wait_at_once() -> None:
    reading = _reading([(0.3, b"a", True), (0.0, b"b", False)], timeout=0.2)
    with pytest.raises(BodyTimeout):
        await reading()
    with pytest.raises(BodyTimeout):
        await reading()  # the message was ready, but the deadline had passed
    reading.leave()


async def test_a_cancelled_wait_is_a_cancellation_not_a_timeout() -> None:
    reading = _reading([(10.0, b"a", False)], timeout=5.0)
    waiting = asyncio.ensure_future(reading())
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    reading.leave()


async def test_after_the_whole_body_no_deadline_is_left_to_fire() -> None:
    reading = _reading([(0.0, b"ab", False)], timeout=0.1)
    assert await _read_all(reading) == b"ab"
    await asyncio.sleep(0.3)  # past the deadline: nothing cancels the request's task
    assert asyncio.current_task() is not None
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]
    reading.leave()
