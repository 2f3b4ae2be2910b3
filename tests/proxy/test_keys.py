"""The proxy's own client keys over raw sockets on 127.0.0.1: without one of them a request
is refused 401 before anything reaches the upstream; with one, the operator's key goes
upstream, never the client's; the keys come from ``api_keys`` or the ``[proxy] keys`` file.
Without client keys, a large body is parsed only once the upstream took its key."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._proxy.keys import ClientKeys, read_keys
from tests.wrap._tools import chat_tools

from ._raw import Upstream, answer, drip, hang, parse, post, request, served
from .test_limits import COMPLETION, USER, _until

OPERATOR = BotSettings.model_validate({"model": {"api_key": "sk-operator"}})


def _auth(key: str) -> str:
    return f"\r\nAuthorization: Bearer {key}"


def test_a_request_without_a_client_key_never_reaches_the_upstream() -> None:
    upstream = Upstream(answer(COMPLETION))
    try:
        app = ProxyApp(upstream.url, settings=OPERATOR, api_keys=["k-one", "k-two"])
        with served(app) as port:
            payload = {"model": "m", "messages": [USER]}
            for extra in ("", _auth("sk-client"), _auth("k-one-and-more")):
                refused = post(port, "/v1/chat/completions", payload, extra=extra)
                assert refused.status == 401
                assert refused.json()["error"]["code"] == "invalid_api_key"
            models = request(port, b"GET /v1/models HTTP/1.1\r\nHost: x")
            assert models.status == 401
            assert upstream.received == []
            assert post(port, "/v1/chat/completions", payload, extra=_auth("k-two")).status == 200
            assert request(port, b"GET /v1/models HTTP/1.1\r\nHost: x" + _auth("k-one").encode())
    finally:
        upstream.close()
    assert len(upstream.received) == 2
    for sent in upstream.received:
        head = sent.partition(b"\r\n\r\n")[0].lower()
        assert b"authorization: bearer sk-operator" in head
        assert b"k-one" not in head
        assert b"k-two" not in head


def test_the_keys_file_of_the_config_is_read(tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("# the team's keys\nk-file\n\n", encoding="utf-8")
    assert read_keys(keys) == ["k-file"]
    settings = BotSettings.model_validate(
        {"model": {"api_key": "sk-operator"}, "proxy": {"keys": str(keys)}}
    )
    upstream = Upstream(answer(COMPLETION))
    try:
        with served(ProxyApp(upstream.url, settings=settings)) as port:
            payload = {"model": "m", "messages": [USER]}
            assert post(port, "/v1/chat/completions", payload).status == 401
            assert post(port, "/v1/chat/completions", payload, extra=_auth("k-file")).status == 200
    finally:
        upstream.close()


def test_client_keys_need_an_upstream_key_and_hide_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="upstream key must come from the operator"):
        ProxyApp("http://127.0.0.1:9", api_keys=["k"])
    empty = tmp_path / "keys.txt"
    empty.write_text("# none yet\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no client key"):
        read_keys(empty)
    assert "secret" not in repr(ClientKeys(["secret"], "sk-operator"))


def test_a_large_body_with_a_refused_key_is_never_parsed() -> None:
    denied = {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}
    upstream: Upstream

    def keyed(conn: socket.socket, body: bytes) -> None:
        head = upstream.received[-1].partition(b"\r\n\r\n")[0].lower()
        if b"authorization: bearer sk-good" in head:
            answer({"object": "list", "data": []} if head.startswith(b"get") else COMPLETION)(
                conn, body
            )
            return
        raw = json.dumps(denied).encode()
        conn.sendall(
            b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(raw), raw)
        )

    upstream = Upstream(keyed)
    long = {"role": "user", "content": "word " * 250_000}  # more than a megabyte of JSON
    payload = {"model": "m", "messages": [long], "tools": chat_tools(70)}
    try:
        app = ProxyApp(upstream.url)
        with served(app) as port:
            for _ in range(3):
                refused = post(port, "/v1/chat/completions", payload)
                assert refused.status == 401
                assert refused.json() == denied
            assert upstream.paths == ["/models"]  # asked once, remembered; no POST
            assert len(app._cache) == 0  # nothing parsed, nothing indexed
            accepted = post(port, "/v1/chat/completions", payload, extra=_auth("sk-good"))
            assert accepted.status == 200
            assert upstream.paths == ["/models", "/models", "/chat/completions"]
            again = post(port, "/v1/chat/completions", payload, extra=_auth("sk-good"))
            assert again.status == 200  # the key is known good: no second question
            assert upstream.paths[-2:] == ["/chat/completions", "/chat/completions"]
    finally:
        upstream.close()


LARGE_HEAD = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Authorization: Bearer sk-stranger\r\nContent-Length: 2000000\r\n\r\n"
)


def test_no_key_probe_for_a_body_that_never_starts() -> None:
    """Issue 41, item 8: a head announcing a large body was enough for an upstream call."""
    upstream = Upstream(answer({"object": "list", "data": []}))
    try:
        with served(ProxyApp(upstream.url)) as port:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                sock.sendall(LARGE_HEAD)
                time.sleep(1.0)
            time.sleep(0.5)
            assert request(port, b"GET /healthz HTTP/1.1\r\nHost: x").status == 200
    finally:
        upstream.close()
    assert upstream.received == []


def test_the_key_probe_is_cancelled_when_the_client_leaves() -> None:
    """Issue 41, item 8: the probe ran to its timeout after the client had gone."""
    upstream = Upstream(hang)
    try:
        with served(ProxyApp(upstream.url, timeout=60)) as port:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                sock.sendall(LARGE_HEAD + b'{"model": "m", ')  # the body has started
                _until(lambda: upstream.received)  # the probe is asked
            assert upstream.closed.wait(10)  # and dropped when the client left
    finally:
        upstream.close()
    assert upstream.paths == ["/models"]


def test_an_upstream_answer_naming_the_operators_key_is_masked() -> None:
    """Issue 41, item 8: an upstream's 401 "Incorrect API key provided: <key>" passed the
    operator's key to any client holding a client key."""
    secret = "sk-operator-secret-1"
    settings = BotSettings.model_validate({"model": {"api_key": secret}})
    naming = json.dumps({"error": {"message": f"Incorrect API key provided: {secret}."}})

    def denied(conn: socket.socket, _: bytes) -> None:
        head = upstream.received[-1].partition(b"\r\n")[0]
        status = b"500 Internal Server Error" if b"/embeddings" in head else b"401 Unauthorized"
        raw = naming.encode()
        conn.sendall(
            b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s" % (status, len(raw), raw)
        )

    upstream = Upstream(denied)
    try:
        app = ProxyApp(upstream.url, settings=settings, api_keys=["k-one"])
        with served(app) as port:
            payload = {"model": "m", "messages": [USER]}
            replies = [
                post(port, "/v1/chat/completions", payload, extra=_auth("k-one")),
                request(port, b"GET /v1/models HTTP/1.1\r\nHost: x" + _auth("k-one").encode()),
                post(port, "/v1/embeddings", {"input": "x"}, extra=_auth("k-one")),
            ]
    finally:
        upstream.close()
    assert [reply.status for reply in replies] == [401, 401, 502]
    assert len(upstream.received) == 3  # each reached the upstream with the operator's key
    for reply in replies:
        assert secret.encode() not in reply.body
        assert "*" * len(secret) in str(reply.json())  # still whole JSON, key masked


def _messages_tools(count: int) -> list[dict[str, object]]:
    """An Anthropic tool list with tool search: one tool loaded, ``count`` deferred."""
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    tools: list[dict[str, object]] = [
        {"name": "send_message", "description": "Send a message.", "input_schema": schema}
    ]
    tools += [
        {
            "name": f"weather_{i}",
            "description": f"Weather report number {i} for a city.",
            "input_schema": schema,
            "defer_loading": True,
        }
        for i in range(count)
    ]
    return [*tools, {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}]


def test_a_keyless_large_messages_body_waits_for_the_key_probe() -> None:
    """Issue 37, item 6: ``POST /v1/messages`` read, parsed and indexed any body before the
    upstream saw its key; a keyless client could make it parse megabytes and build catalogs.
    Now it has the OpenAI routes' rule: the upstream is asked (``GET /models``, with the
    Messages headers) as soon as the body starts, its 401 is the answer, and the body is
    never parsed."""
    denied = {"type": "error", "error": {"type": "authentication_error", "message": "no key"}}
    raw = json.dumps(denied).encode()

    def refuse(conn: socket.socket, _: bytes) -> None:
        conn.sendall(
            b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(raw), raw)
        )

    upstream = Upstream(refuse)
    long = {"role": "user", "content": "word " * 250_000}  # more than a megabyte of JSON
    payload = {"model": "m", "max_tokens": 5, "messages": [long], "tools": _messages_tools(70)}
    body = json.dumps(payload).encode()
    head = (
        b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"anthropic-version: 2023-06-01\r\nContent-Length: %d" % len(body)
    )
    try:
        app = ProxyApp(upstream.url, upstream_api="messages")
        with served(app) as port:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                sock.sendall(head + b"\r\nConnection: close\r\n\r\n" + body[:65536])
                _until(lambda: upstream.received)  # asked while the body is still coming
                sock.sendall(body[65536:])
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
            refused = parse(data)
            assert refused.status == 401
            assert refused.json() == denied
            again = request(port, head, body)  # the refusal is remembered
            assert again.status == 401
            assert len(app._cache) == 0  # nothing parsed, nothing indexed
    finally:
        upstream.close()
    assert upstream.paths == ["/models"]  # asked once; nothing was ever POSTed
    probe = upstream.received[0].lower()
    assert b"anthropic-version: 2023-06-01" in probe


def test_a_keyless_small_messages_body_naming_many_deferred_tools_waits_for_the_key_probe() -> None:
    """The OpenAI routes' other rule on ``POST /v1/messages``: a body under 1 MiB whose new
    tool list speaks the tool-search dialect and names more than 256 tools is not read into a
    catalog until the upstream takes the key; its 401 is the answer, nothing indexed. The same
    list under a key the upstream takes is served (the probe asked once)."""
    denied = {"type": "error", "error": {"type": "authentication_error", "message": "no key"}}
    raw = json.dumps(denied).encode()
    good = {"data": [], "object": "list"}
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "Hello."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }

    def judge(conn: socket.socket, _: bytes) -> None:
        head = upstream.received[-1].partition(b"\r\n\r\n")[0]
        if b"x-api-key: good" in head.lower():
            data = json.dumps(good if head.startswith(b"GET") else reply).encode()
            status = b"200 OK"
        else:
            data, status = raw, b"401 Unauthorized"
        conn.sendall(
            b"HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (status, len(data), data)
        )

    upstream = Upstream(judge)
    payload = {"model": "m", "max_tokens": 5, "messages": [USER], "tools": _messages_tools(300)}
    body = json.dumps(payload).encode()
    assert len(body) < 1024 * 1024

    def head(key: bytes) -> bytes:
        return (
            b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"anthropic-version: 2023-06-01\r\nx-api-key: %s\r\nContent-Length: %d"
            % (key, len(body))
        )

    try:
        app = ProxyApp(upstream.url, upstream_api="messages")
        with served(app) as port:
            refused = request(port, head(b"stranger"), body)
            assert refused.status == 401
            assert refused.json() == denied
            assert len(app._cache) == 0  # the new list was never read into a catalog
            assert upstream.paths == ["/models"]  # asked; nothing was POSTed
            served_ok = request(port, head(b"good"), body)
            assert served_ok.status == 200, served_ok.body
            assert len(app._cache) == 1
    finally:
        upstream.close()
    assert upstream.paths == ["/models", "/models", "/messages"]


def test_a_key_probe_the_upstream_answers_without_end_gives_up_at_the_timeout() -> None:
    """The key probe is an outbound call too: an upstream that drips its ``GET /models``
    answer (each read within any per-read timeout) holds the request only until
    ``timeout``; then the request goes on, as after any answer other than 401/403."""
    stop = threading.Event()
    upstream: Upstream

    def routed(conn: socket.socket, body: bytes) -> None:
        if upstream.received[-1].startswith(b"GET "):
            drip(stop, every=0.1)(conn, body)
        else:
            answer(COMPLETION)(conn, body)

    upstream = Upstream(routed)
    long = {"role": "user", "content": "word " * 250_000}  # more than a megabyte of JSON
    payload = {"model": "m", "messages": [long], "tools": chat_tools(70)}
    try:
        with served(ProxyApp(upstream.url, timeout=1.0)) as port:
            reply = post(port, "/v1/chat/completions", payload, extra=_auth("sk-new"))
        assert reply.status == 200
        assert upstream.paths == ["/models", "/chat/completions"]
    finally:
        stop.set()
        upstream.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_searched_reply_naming_the_operators_key_is_masked(stream: bool) -> None:
    """The masking is in the one send wrapper a tool-searched reply goes through (issue 44):
    a whole reply and each event of a stream have the key masked."""
    secret = "sk-operator-secret-2"
    settings = BotSettings.model_validate({"model": {"api_key": secret}})
    message = {"role": "assistant", "content": f"your key is {secret}"}
    said = {**COMPLETION, "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}
    if stream:
        chunk = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": f"key {secret}"}, "finish_reason": None}],
        }
        events = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
        upstream = Upstream(answer(events, content_type="text/event-stream"))
    else:
        upstream = Upstream(answer(said))
    try:
        with served(ProxyApp(upstream.url, settings=settings, api_keys=["k-one"])) as port:
            payload = {"model": "m", "messages": [USER], "stream": stream}
            reply = post(port, "/v1/chat/completions", payload, extra=_auth("k-one"))
    finally:
        upstream.close()
    assert reply.status == 200
    assert upstream.received  # the upstream was called, and named the key
    assert secret.encode() not in reply.body
    assert b"*" * len(secret) in reply.body
