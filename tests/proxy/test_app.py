"""`ProxyApp.__call__` as the server calls it (ASGI, in-process): a request the server
cancels as it stops (uvicorn, past its graceful shutdown) gets 503 when nothing was sent yet,
and its task ends without an error escaping to the server (issue 44 moved the upstream call
into the request's own task, where the server's cancellation now lands)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

import pytest

from bot_toolsearch._proxy.app import ProxyApp
from tests.proxy._raw import Upstream, hang
from tests.proxy.test_limits import USER


async def test_a_request_the_server_cancels_gets_503_and_ends_quietly() -> None:
    upstream = Upstream(hang)
    app = ProxyApp(f"{upstream.url}/v1", timeout=3600)
    body = json.dumps({"model": "m", "messages": [USER]}).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "headers": [
            (b"host", b"x"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "http_version": "1.1",
        "scheme": "http",
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    never = asyncio.Event()
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        if messages:
            return messages.pop()
        await never.wait()
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    try:
        task = asyncio.ensure_future(app(scope, receive, send))
        assert await asyncio.to_thread(upstream.connected.wait, 30)
        task.cancel("the server stops")
        await task  # ends, rather than raising CancelledError to the server
        assert not task.cancelled()
        assert sent[0]["type"] == "http.response.start"
        assert sent[0]["status"] == 503
        error = json.loads(sent[1]["body"])["error"]
        assert error["code"] == "server_shutting_down"
    finally:
        await app.aclose()


def test_request_paths_normalise_the_same_on_the_plain_and_the_full_reading() -> None:
    from bot_toolsearch._proxy.app import _normalised_path
    from bot_toolsearch._proxy.request import Refused

    def normalised(raw: bytes) -> str | int:
        try:
            return _normalised_path({"raw_path": raw, "path": ""})
        except Refused as exc:
            return exc.status

    assert normalised(b"/v1/chat/completions") == "/v1/chat/completions"
    assert normalised(b"/v1/chat/completions/") == "/v1/chat/completions"
    assert normalised(b"/") == "/"
    assert normalised(b"/v1/a.b/.c") == "/v1/a.b/.c"
    assert normalised(b"/v1//chat/./completions") == "/v1/chat/completions"
    assert normalised(b"/v1/models/../chat/completions") == "/v1/chat/completions"
    assert normalised(b"/%761/models") == "/v1/models"
    assert normalised(b"/v1/..") == "/"
    assert normalised(b"/..") == 404
    assert normalised(b"/v1/%2Fchat") == 400
    assert normalised(b"/v1\\chat") == 400
    assert normalised(b"/v1/\xc3\xa9") == 400  # a raw non-ASCII target
    assert normalised(b"v1/chat") == 400


PATHS = [
    b"/",
    b"/v1",
    b"/v1/",
    b"/v1/chat/completions",
    b"/v1/chat/completions/",
    b"/v1/responses",
    b"/v1/models/gpt-4o-mini",
    b"/healthz",
    b"/metrics",
    b"/v1/a.b/.c",
    b"/v1/a..b/c.",
    b"/v1/files/file-abc_DEF~1",
    b"/v1//chat",
    b"/v1/./chat",
    b"/v1/../chat",
    b"/v1/%41",
    b"/v1\\chat",
    b"/v1/\xc3\xa9",
    b"/v1/chat/completions?x=1",
]


@pytest.mark.parametrize("raw", PATHS)
def test_a_plain_path_is_what_the_full_reading_makes_of_it(
    raw: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plain path (no encoded, empty, dot segment) is taken exactly where none of
    `_PLAIN_PATH_BREAKERS` is in an ASCII path, and gives what the full reading gives."""
    from bot_toolsearch._proxy import app as app_module
    from bot_toolsearch._proxy.request import Refused

    def outcome(read: Any) -> str | int:
        try:
            result: str = read(raw)
        except Refused as exc:
            return exc.status
        return result

    full = outcome(app_module._read_path)
    read: list[bytes] = []
    reading = app_module._read_path
    # Only this path's reading counts: a server another test left running may read its own.
    monkeypatch.setattr(
        app_module, "_read_path", lambda r: (r == raw and read.append(r)) or reading(r)
    )
    assert outcome(lambda r: app_module._normalised_path({"raw_path": r, "path": ""})) == full
    plain = raw.isascii() and not any(part in raw for part in app_module._PLAIN_PATH_BREAKERS)
    assert read == ([] if plain else [raw])


def test_the_routes_own_paths_are_their_normalised_paths() -> None:
    from bot_toolsearch._proxy import app as app_module

    assert b"/v1/chat/completions" in app_module._ROUTE_PATHS
    assert b"/v1/messages" in app_module._ROUTE_PATHS
    for raw, path in app_module._ROUTE_PATHS.items():
        assert app_module._read_path(raw) == path
        assert app_module._normalised_path({"raw_path": raw, "path": ""}) is path


HEADER_SETS: list[list[tuple[bytes, bytes]]] = [
    [],
    [(b"host", b"x"), (b"authorization", b"Bearer k"), (b"content-type", b"application/json")],
    [(b"Content-Type", b"text/plain"), (b"X-Custom", b"\xe9t\xe9"), (b"x-api-key", b"k")],
    [(b"accept", b"a"), (b"Accept", b"b"), (b"accept", b"c")],  # repeated: the last wins
    [(b"x-stainless-os", b"Linux"), (b"caf\xe9", b"1"), (b"HOST", b"y"), (b"host", b"z")],
]


@pytest.mark.parametrize("raw", HEADER_SETS)
def test_headers_by_their_common_names_are_read_as_every_name_is(
    raw: list[tuple[bytes, bytes]],
) -> None:
    from bot_toolsearch._proxy import app as app_module

    full = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
    headers = app_module._headers(raw)
    assert headers == full
    assert list(headers) == list(full)
    for name, spelled in app_module._HEADER_NAMES.items():
        assert spelled == name.decode("latin-1").lower()  # each is its own name, lower case
