"""The proxy's bounds over raw sockets on 127.0.0.1: requests in flight past the bound get
429, new tool lists past the index pool's bound get 503, both with ``Retry-After``; a stuck
pool turns ``/healthz`` into a 503 that names it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._services.threads import POOLS
from bot_toolsearch._wrap import caller_tools
from bot_toolsearch.testing import ScriptedOpenAIServer, text
from tests.wrap._tools import chat_tools

from ._raw import Reply, Upstream, answer, post, request, served

USER = {"role": "user", "content": "hi"}
COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
    ],
}


def _until(condition: Any) -> None:
    """Wait for an observable state (at most 30 s)."""
    end = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < end
        time.sleep(0.01)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_requests_past_the_in_flight_bound_get_429_with_retry_after(
    release: threading.Event,
) -> None:
    def held(conn: socket.socket, body: bytes) -> None:
        release.wait(30)
        answer(COMPLETION)(conn, body)

    upstream = Upstream(held)
    replies: list[Reply] = []
    try:
        with served(ProxyApp(upstream.url, max_in_flight=1)) as port:
            payload = {"model": "m", "messages": [USER]}
            first = threading.Thread(
                target=lambda: replies.append(post(port, "/v1/chat/completions", payload))
            )
            first.start()
            _until(lambda: upstream.received)  # the first request is in flight
            refused = post(port, "/v1/chat/completions", payload)
            assert refused.status == 429
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["code"] == "too_many_requests"
            assert len(upstream.received) == 1  # never sent upstream
            health = request(port, b"GET /healthz HTTP/1.1\r\nHost: x")
            assert health.status == 200  # not counted: always answers
            release.set()
            first.join(30)
            assert replies[0].status == 200
            assert post(port, "/v1/chat/completions", payload).status == 200  # room again
    finally:
        upstream.close()


def test_new_tool_lists_past_the_index_pool_get_503_with_retry_after(
    release: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = caller_tools.CallerTools.build

    def slow_build(tools: Any, api: Any, dot_delimiter: str) -> Any:
        release.wait(30)
        return build(tools, api, dot_delimiter)

    monkeypatch.setattr(caller_tools.CallerTools, "build", slow_build)
    replies: list[Reply] = []
    threads = []
    with ScriptedOpenAIServer() as server:
        app = ProxyApp(server.base_url, index_builds=1)  # one build, four waiting
        with served(app) as port:
            for i in range(5):
                server.script(text("ok"))
                payload = {"model": "m", "messages": [USER], "tools": chat_tools(70 + i)}
                thread = threading.Thread(
                    target=lambda p=payload: replies.append(post(port, "/v1/chat/completions", p))
                )
                thread.start()
                threads.append(thread)
                _until(lambda i=i: POOLS.index.status().busy + POOLS.index.status().queued > i)
            payload = {"model": "m", "messages": [USER], "tools": chat_tools(80)}
            refused = post(port, "/v1/chat/completions", payload)
            assert refused.status == 503
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["code"] == "server_busy"
            assert "serve --index-builds" in refused.json()["error"]["message"]
            # Requests without a new list are served meanwhile.
            server.script(text("plain"))
            assert post(port, "/v1/chat/completions", {"model": "m", "messages": [USER]}).status
            release.set()
            for thread in threads:
                thread.join(30)
    assert sorted(r.status for r in replies) == [200] * 5


def test_healthz_names_a_stuck_pool(release: threading.Event) -> None:
    pool = POOLS.embeddings
    deadline = pool.deadline
    with ScriptedOpenAIServer() as server, served(ProxyApp(server.base_url)) as port:
        assert request(port, b"GET /healthz HTTP/1.1\r\nHost: x").status == 200
        pool.deadline = 0.05
        try:
            for _ in range(pool.workers + 1):
                pool.submit(release.wait, 30)
            _until(pool.stuck)
            health = request(port, b"GET /healthz HTTP/1.1\r\nHost: x")
            assert health.status == 503
            body = health.json()
            assert body["status"] == "stuck"
            assert list(body["pools"]) == ["embeddings"]  # type: ignore[call-overload]
            assert body["pools"]["embeddings"]["queued"] == 1  # type: ignore[index]
        finally:
            release.set()
            assert pool.wait_idle(30)
            pool.deadline = deadline
        assert request(port, b"GET /healthz HTTP/1.1\r\nHost: x").json() == {"status": "ok"}
