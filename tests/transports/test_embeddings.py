"""The embeddings client against hostile endpoints on 127.0.0.1: a call is bounded as a whole
(not per read) and by the size of its answer."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from bot_toolsearch._config.settings import EmbeddingsSettings
from bot_toolsearch._transports.embeddings import (
    EmbeddingsClient,
    EmbeddingsError,
    max_answer_bytes,
)
from tests.proxy._raw import Upstream, answer, drip, status


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def _client(url: str, **table: object) -> EmbeddingsClient:
    settings = EmbeddingsSettings.model_validate(
        {"model": "m", "base_url": f"{url}/v1", "timeout": 0.5, **table}
    )
    return EmbeddingsClient(settings)


def test_a_slow_drip_answer_ends_at_the_calls_deadline(stop: threading.Event) -> None:
    upstream = Upstream(drip(stop, every=0.1))  # each read gets a byte well within 0.5 s
    try:
        with pytest.raises(EmbeddingsError, match=r"no answer within 0\.5 s"):
            _client(upstream.url).embed(["hello"])
    finally:
        upstream.close()
    assert len(upstream.received) == 1


def test_an_answer_larger_than_its_cap_is_cut_off() -> None:
    cap = max_answer_bytes(1)
    body = b'{"data": [' + b" " * (cap + 1) + b"]}"

    def huge(conn: socket.socket, _: bytes) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(OSError):  # the client stops reading
            conn.sendall(head.encode() + body)

    upstream = Upstream(huge)
    try:
        with pytest.raises(EmbeddingsError, match=f"larger than {max_answer_bytes(1)} bytes"):
            _client(upstream.url, batch_size=1, timeout=10.0).embed(["hello"])
    finally:
        upstream.close()


def test_a_redirect_is_never_followed_to_another_host() -> None:
    victim = Upstream(answer({"data": [{"index": 0, "embedding": [1.0]}]}), host="127.0.0.2")
    elsewhere = f"http://127.0.0.2:{victim.port}/v1/embeddings"
    upstream = Upstream(status(307, {}, f"Location: {elsewhere}\r\n"))
    try:
        with pytest.raises(EmbeddingsError):
            _client(upstream.url, timeout=10.0).embed(["hello"])
    finally:
        upstream.close()
        victim.close()
    assert not victim.connected.is_set()
    assert len(upstream.received) == 1
