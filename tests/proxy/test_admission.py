"""``[[proxy.clients]]`` over raw sockets on 127.0.0.1: each client's key (by its SHA-256) gets its
own tool set, upstream key and in-flight bound; a key of no client is 401 before any work; the
client's name (never its key) labels the access log and metrics; an edit of the file changes
the next request."""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._proxy.app import ProxyApp

from ._raw import Upstream, answer, post, served
from .test_limits import COMPLETION, USER


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


TOOLS = [tool("weather_now"), tool("admin_wipe"), tool("files_read")]
CLIENTS = [
    {"name": "team-a", "key_sha256": digest("key-a"), "deny": ["admin_*"]},
    {
        "name": "team-b",
        "key_sha256": digest("key-b").upper(),  # any case of hex digits
        "allow": ["files_*", "admin_*"],
        "upstream_key_env": "TEAM_B_UPSTREAM_KEY",
    },
]


def settings(clients: list[dict[str, Any]] = CLIENTS, **proxy: Any) -> BotSettings:
    return BotSettings.model_validate(
        {
            "model": {"api_key": "sk-operator"},
            "skills": {"tool_search_enabled": False},
            "tools": {"deny": ["files_*_never"]},
            "proxy": {"clients": clients, **proxy},
        }
    )


def auth(key: str) -> str:
    return f"\r\nAuthorization: Bearer {key}"


def sent_tools(raw: bytes) -> list[str]:
    body = json.loads(raw.partition(b"\r\n\r\n")[2])
    return [t["function"]["name"] for t in body.get("tools", [])]


def head_of(raw: bytes) -> bytes:
    return raw.partition(b"\r\n\r\n")[0].lower()


def test_each_client_gets_its_own_tools_and_upstream_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_B_UPSTREAM_KEY", "sk-team-b")
    upstream = Upstream(answer(COMPLETION))
    payload = {"model": "m", "messages": [USER], "tools": TOOLS}
    try:
        with served(ProxyApp(upstream.url, settings=settings())) as port:
            assert post(port, "/v1/chat/completions", payload, extra=auth("key-a")).status == 200
            assert post(port, "/v1/chat/completions", payload, extra=auth("key-b")).status == 200
            choose = {**payload, "tool_choice": {"type": "function", "function": {"name": "x"}}}
            choose["tool_choice"]["function"]["name"] = "admin_wipe"
            refused = post(port, "/v1/chat/completions", choose, extra=auth("key-a"))
            assert refused.status == 403  # team-a's deny holds for tool_choice too
            assert refused.json()["error"]["code"] == "tool_not_permitted"
    finally:
        upstream.close()
    first, second = upstream.received
    assert sent_tools(first) == ["weather_now", "files_read"]
    assert sent_tools(second) == ["admin_wipe", "files_read"]  # its own allow
    assert b"authorization: bearer sk-operator" in head_of(first)
    assert b"authorization: bearer sk-team-b" in head_of(second)
    for raw in upstream.received:
        assert b"key-a" not in raw
        assert b"key-b" not in raw


def test_a_key_of_no_client_is_refused_before_any_work() -> None:
    upstream = Upstream(answer(COMPLETION))
    payload = {"model": "m", "messages": [USER], "tools": TOOLS}
    try:
        with served(ProxyApp(upstream.url, settings=settings())) as port:
            for extra in ("", auth("key-c"), auth(digest("key-a")), auth("KEY-A")):
                refused = post(port, "/v1/chat/completions", payload, extra=extra)
                assert refused.status == 401
                assert refused.json()["error"]["code"] == "invalid_api_key"
            models = post(port, "/v1/embeddings", {"input": "x"}, extra=auth("nobody"))
            assert models.status == 401
    finally:
        upstream.close()
    assert upstream.received == []


def test_the_keys_file_still_admits_with_the_global_policy(tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("k-shared\n", encoding="utf-8")
    upstream = Upstream(answer(COMPLETION))
    payload = {"model": "m", "messages": [USER], "tools": TOOLS}
    try:
        app = ProxyApp(upstream.url, settings=settings(keys=str(keys)))
        with served(app) as port:
            assert post(port, "/v1/chat/completions", payload, extra=auth("k-shared")).status == 200
            assert post(port, "/v1/chat/completions", payload, extra=auth("key-a")).status == 200
    finally:
        upstream.close()
    shared, team_a = upstream.received
    assert sent_tools(shared) == ["weather_now", "admin_wipe", "files_read"]
    assert sent_tools(team_a) == ["weather_now", "files_read"]


def test_a_client_past_its_max_in_flight_gets_429_and_others_are_served() -> None:
    release = threading.Event()

    def slow(conn: socket.socket, body: bytes) -> None:
        release.wait(30)
        answer(COMPLETION)(conn, body)

    clients = [{**CLIENTS[0], "max_in_flight": 1}, CLIENTS[1]]
    upstream = Upstream(slow)
    payload = {"model": "m", "messages": [USER]}
    results: list[int] = []
    try:
        with served(ProxyApp(upstream.url, settings=settings(clients))) as port:
            first = threading.Thread(
                target=lambda: results.append(
                    post(port, "/v1/chat/completions", payload, extra=auth("key-a")).status
                )
            )
            first.start()
            for _ in range(300):  # until the first request is with the upstream
                if upstream.received:
                    break
                time.sleep(0.02)
            busy = post(port, "/v1/chat/completions", payload, extra=auth("key-a"))
            assert busy.status == 429
            assert "team-a" in busy.json()["error"]["message"]
            release.set()
            other = post(port, "/v1/chat/completions", payload, extra=auth("key-b"))
            first.join(30)
    finally:
        release.set()
        upstream.close()
    assert results == [200]
    assert other.status == 200


def test_the_client_name_labels_the_access_log_and_metrics_never_the_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    upstream = Upstream(answer(COMPLETION))
    payload = {"model": "m", "messages": [USER]}
    try:
        app = ProxyApp(upstream.url, settings=settings())
        with (
            caplog.at_level(logging.INFO, logger="bot_toolsearch.access"),
            served(app, access_log=True) as port,
        ):
            assert post(port, "/v1/chat/completions", payload, extra=auth("key-a")).status == 200
    finally:
        upstream.close()
    records = [getattr(r, "access", None) for r in caplog.records]
    assert any(isinstance(r, dict) and r.get("client") == "team-a" for r in records)
    assert "key-a" not in caplog.text
    metrics = app.metrics.render().decode()
    assert 'bot_toolsearch_client_requests_total{client="team-a",code="2xx"} 1' in metrics
    assert "key-a" not in metrics


def test_an_edit_of_the_clients_changes_the_next_request(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"

    def write(deny: str) -> None:
        config.write_text(
            "[model]\napi_key = 'sk-operator'\n[skills]\ntool_search_enabled = false\n"
            f"[[proxy.clients]]\nname = 'team-a'\nkey_sha256 = '{digest('key-a')}'\n"
            f"deny = ['{deny}']\n",
            encoding="utf-8",
        )

    write("admin_*")
    upstream = Upstream(answer(COMPLETION))
    payload = {"model": "m", "messages": [USER], "tools": TOOLS}
    try:
        app = ProxyApp(upstream.url, config=config)
        with served(app) as port:
            assert post(port, "/v1/chat/completions", payload, extra=auth("key-a")).status == 200
            write("weather_*")
            for _ in range(200):  # the real watcher: debounce, then settle
                time.sleep(0.05)
                post(port, "/v1/chat/completions", payload, extra=auth("key-a"))
                if sent_tools(upstream.received[-1]) == ["admin_wipe", "files_read"]:
                    break
    finally:
        upstream.close()
    assert sent_tools(upstream.received[0]) == ["weather_now", "files_read"]
    assert sent_tools(upstream.received[-1]) == ["admin_wipe", "files_read"]


@pytest.mark.parametrize(
    ("clients", "problem"),
    [
        ([{"name": "a", "key_sha256": "abc"}], "key_sha256"),
        ([{"name": "bad name!", "key_sha256": digest("k")}], "name"),
        (
            [{"name": "a", "key_sha256": digest("k")}, {"name": "a", "key_sha256": digest("j")}],
            "given twice",
        ),
        (
            [{"name": "a", "key_sha256": digest("k")}, {"name": "b", "key_sha256": digest("k")}],
            "key_sha256 of another client",
        ),
    ],
)
def test_bad_client_entries_are_refused_clearly(
    clients: list[dict[str, Any]], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        settings(clients)


def test_a_client_without_any_upstream_key_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    bare = BotSettings.model_validate(
        {"proxy": {"clients": [{"name": "a", "key_sha256": digest("k")}]}}
    )
    with pytest.raises(ValueError, match="'a' has no upstream_key_env"):
        ProxyApp("http://127.0.0.1:9", settings=bare)


def test_a_client_dripping_a_body_holds_no_place_of_its_own() -> None:
    """Issue 39's leftover: a client's ``max_in_flight`` counted a request from its admission,
    while ``--max-in-flight`` counts it once its whole body has arrived; a client dripping one
    body (a slow link, or an attacker holding its key) had every other request of its own
    answered 429. Now both bounds count alike: the dripper holds no place, a whole request is
    served, and one more whole request past the bound gets the clear 429."""
    release = threading.Event()

    def slow(conn: socket.socket, body: bytes) -> None:
        release.wait(30)
        answer(COMPLETION)(conn, body)

    clients = [{**CLIENTS[0], "max_in_flight": 1}, CLIENTS[1]]
    upstream = Upstream(slow)
    payload = {"model": "m", "messages": [USER]}
    results: list[int] = []
    dripping = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
        + auth("key-a").encode()
        + b"\r\nContent-Length: 100000\r\n\r\n{"
    )
    try:
        app = ProxyApp(upstream.url, settings=settings(clients), read_timeout=60)
        with served(app) as port, socket.create_connection(("127.0.0.1", port), 30) as dripper:
            dripper.sendall(dripping)
            for _ in range(1500):  # until the dripper is admitted and its body arriving
                if app._body_bytes.held:
                    break
                time.sleep(0.02)
            assert app._body_bytes.held
            first = threading.Thread(
                target=lambda: results.append(
                    post(port, "/v1/chat/completions", payload, extra=auth("key-a")).status
                )
            )
            first.start()
            for _ in range(1500):  # until the first whole request is with the upstream
                if upstream.received or results:
                    break
                time.sleep(0.02)
            busy = post(port, "/v1/chat/completions", payload, extra=auth("key-a"))
            release.set()
            first.join(30)
    finally:
        release.set()
        upstream.close()
    assert results == [200]  # the dripper held no place of team-a's one
    assert busy.status == 429  # the second whole request is past the bound
    assert busy.headers["retry-after"] == "1"
    error = busy.json()["error"]
    assert error["code"] == "too_many_requests"
    assert "team-a" in error["message"]
    assert "key-a" not in busy.body.decode()
    assert len(upstream.received) == 1


def test_clients_on_one_cached_list_get_their_own_directories(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With tool search on, what a plan shares across calls of one list (its directory, its
    deferred set) is the client's own: the list is parsed once and then found by its bytes
    for both clients, and neither sees the other's tools listed, nor a forced one missing."""
    monkeypatch.setenv("TEAM_B_UPSTREAM_KEY", "sk-team-b")
    many = [*TOOLS, *(tool(f"files_item_{i:02d}") for i in range(20))]
    on = settings().model_copy(
        update={"skills": settings().skills.model_copy(update={"tool_search_enabled": True})}
    )
    upstream = Upstream(answer(COMPLETION))
    payload = {"model": "m", "messages": [USER], "tools": many}
    forced = {**payload, "tool_choice": {"type": "function", "function": {"name": "admin_wipe"}}}
    try:
        with served(ProxyApp(upstream.url, settings=on)) as port:
            for _ in range(3):
                for key in ("key-a", "key-b"):
                    reply = post(port, "/v1/chat/completions", payload, extra=auth(key))
                    assert reply.status == 200
            assert post(port, "/v1/chat/completions", forced, extra=auth("key-b")).status == 200
    finally:
        upstream.close()

    def directory(raw: bytes) -> str:
        body = json.loads(raw.partition(b"\r\n\r\n")[2])
        return " ".join(m["content"] for m in body["messages"] if m["role"] == "system")

    *pairs, last = upstream.received
    for raw in pairs[0::2]:  # team-a: deny admin_*
        assert "weather_now" in directory(raw)
        assert "admin_wipe" not in directory(raw)
        assert "admin_wipe" not in sent_tools(raw)
    for raw in pairs[1::2]:  # team-b: allow files_*, admin_*
        assert "admin_wipe" in directory(raw)
        assert "weather_now" not in directory(raw)
    assert "admin_wipe" in sent_tools(last)
    assert "weather_now" not in directory(last)
