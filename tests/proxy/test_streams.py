"""Streams, cancellation, timeouts and shutdown, against raw-socket upstreams on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import openai
import pytest

from bot_toolsearch._config.settings import BotSettings, ModelSettings, SkillsSettings
from bot_toolsearch._proxy.app import ProxyApp
from tests._helpers import spare_port
from tests.proxy._raw import Upstream, hang, parse, post, request, served, sse
from tests.wrap._tools import chat_tools

USER = {"role": "user", "content": "hi"}


def _chunk(content: str) -> bytes:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _cut(conn: socket.socket) -> None:
    """End the connection in the middle of a chunked stream (no last chunk)."""
    conn.sendall(b'40\r\ndata: {"id": "c", "obj')
    conn.shutdown(socket.SHUT_RDWR)


def test_a_chat_stream_the_upstream_cuts_is_an_error_the_sdk_raises() -> None:
    upstream = Upstream(sse([_chunk("Hel"), _chunk("lo")], then=_cut))
    with served(ProxyApp(upstream.url)) as port:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
        got: list[Any] = []
        stream = client.chat.completions.create(
            model="m",
            messages=[USER],
            tools=chat_tools(),
            stream=True,  # type: ignore[list-item]
        )
        with pytest.raises(openai.APIError, match="upstream failed"):
            got.extend(stream)
        client.close()
        raw = post(port, "/v1/chat/completions", {"model": "m", "messages": [USER], "stream": True})
    assert raw.status == 200
    assert b"[DONE]" not in raw.body
    assert b'"finish_reason": "stop"' not in raw.body
    assert b'"error"' in raw.body
    upstream.close()


def _event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def test_a_responses_stream_the_upstream_cuts_is_an_error_the_sdk_raises() -> None:
    response = {
        "id": "r",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "in_progress",
        "output": [],
        "tool_choice": "auto",
        "tools": [],
        "parallel_tool_calls": True,
    }
    created = _event("response.created", response=response, sequence_number=0)
    upstream = Upstream(sse([created], then=_cut))
    with served(ProxyApp(upstream.url)) as port:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
        tools = [{"type": "function", **t["function"]} for t in chat_tools()]
        stream = client.responses.create(model="m", input="hi", tools=tools, stream=True)  # type: ignore[call-overload]
        with pytest.raises(openai.APIError, match="upstream failed"):
            list(stream)
        client.close()
    upstream.close()


def test_a_client_that_leaves_a_stream_cancels_the_upstream_request() -> None:
    def endless(conn: socket.socket) -> None:
        for _ in range(100_000):  # until the proxy closes the connection
            event = _chunk("x")
            conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
            time.sleep(0.01)

    upstream = Upstream(sse([_chunk("start")], then=endless))
    with served(ProxyApp(upstream.url)) as port:
        body = json.dumps({"model": "m", "messages": [USER], "stream": True}).encode()
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(head + body)
            seen = b""
            while b"start" not in seen:
                seen += sock.recv(65536)
        # The client left: the upstream connection is closed, its generation stops.
        assert upstream.closed.wait(30)
    upstream.close()


def test_a_client_that_leaves_before_the_answer_cancels_the_upstream_request() -> None:
    upstream = Upstream(hang)
    with served(ProxyApp(upstream.url)) as port:
        body = json.dumps({"model": "m", "messages": [USER]}).encode()
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(head + body)
            assert upstream.connected.wait(30)
            while not upstream.received:
                time.sleep(0.01)
        assert upstream.closed.wait(30)
    upstream.close()


@pytest.mark.parametrize("source", ["argument", "config"])
def test_the_timeout_holds_and_a_body_cannot_override_it(source: str) -> None:
    upstream = Upstream(hang)
    if source == "argument":
        app = ProxyApp(upstream.url, timeout=3.0)
    else:
        settings = BotSettings(
            skills=SkillsSettings(tool_search_enabled=True), model=ModelSettings(timeout=3.0)
        )
        app = ProxyApp(upstream.url, settings=settings)
    assert app.timeout == 3.0
    with served(app) as port:
        payload = {"model": "m", "messages": [USER], "tools": chat_tools(), "timeout": 3600}
        reply = post(port, "/v1/chat/completions", payload)
    assert reply.status == 502
    assert reply.json()["error"]["type"] == "upstream_error"
    assert upstream.closed.wait(30)  # the proxy gave up on the request and closed it
    assert upstream.received
    assert all(b"3600" not in received for received in upstream.received)
    upstream.close()


def _free_port() -> int:
    return spare_port()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is POSIX")
def test_sigterm_with_a_hung_upstream_request_ends_serve() -> None:
    upstream = Upstream(hang)
    port = _free_port()
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot_toolsearch",
            "serve",
            "--upstream",
            f"{upstream.url}/v1",
            "--port",
            str(port),
            "--timeout",
            "3600",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        for _ in range(600):
            try:
                if request(port, b"GET /healthz HTTP/1.1\r\nHost: x").status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        body = json.dumps({"model": "m", "messages": [USER]}).encode()
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(head + body)
            assert upstream.connected.wait(30)
            serve.send_signal(signal.SIGTERM)
            assert serve.wait(timeout=15) in (0, -signal.SIGTERM)  # uvicorn re-raises it
            answer = b""
            while chunk := client.recv(65536):
                answer += chunk
        assert upstream.closed.wait(15)
        if answer:  # the request in flight may get an answer or a closed connection
            assert parse(answer).status >= 500
        _, errors = serve.communicate(timeout=15)
        assert b"Traceback" not in errors
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(15)
        upstream.close()


def _hold(conn: socket.socket) -> None:
    """Keep the stream open (no more chunks) until the proxy leaves."""
    while conn.recv(65536):
        pass


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is POSIX")
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
def test_sigterm_ends_an_open_stream_with_an_error_event(path: str) -> None:
    """Issue 41, item 8: an open stream was cut at the end of the grace period, with no event
    saying why (the openai SDK then sees a stream that simply stops)."""
    first = _chunk("Hel")
    if path == "/v1/responses":
        created = {"type": "response.created", "sequence_number": 0}
        created["response"] = {"id": "r", "object": "response", "status": "in_progress"}
        first = b"event: response.created\ndata: " + json.dumps(created).encode() + b"\n\n"
    upstream = Upstream(sse([first], then=_hold))
    port = _free_port()
    serve = subprocess.Popen(
        [
            *(sys.executable, "-m", "bot_toolsearch", "serve", "--port", str(port)),
            *("--upstream", f"{upstream.url}/v1", "--access-log", "off"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        for _ in range(600):
            try:
                if request(port, b"GET /healthz HTTP/1.1\r\nHost: x").status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        payload = {"model": "m", "stream": True}
        payload |= {"messages": [USER]} if path.endswith("completions") else {"input": "hi"}
        body = json.dumps(payload).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(head + body)
            answer = b""
            while b"data: " not in answer:  # the first event is relayed
                chunk = client.recv(65536)
                assert chunk, answer
                answer += chunk
            serve.send_signal(signal.SIGTERM)
            while chunk := client.recv(65536):  # until serve closes the connection
                answer += chunk
        assert serve.wait(timeout=30) in (0, -signal.SIGTERM)
        reply = parse(answer)
        assert reply.status == 200
        events = [e for e in reply.body.decode().split("\n\n") if "data: " in e]
        last = json.loads(events[-1].rpartition("data: ")[2])
        error = last["error"]
        assert error["code"] == "server_shutting_down"
        assert "shutting down" in error["message"]
        _, errors = serve.communicate(timeout=15)
        assert b"Traceback" not in errors
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(15)
        upstream.close()
