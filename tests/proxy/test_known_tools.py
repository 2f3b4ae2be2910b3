"""A tool list the proxy parsed before is found by the hash of its raw bytes: every body that
is not byte for byte that list (one byte apart, duplicate or escaped keys, ``tools`` inside a
string or deeper, nesting the scan does not follow) is read exactly as `json` reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch._config.settings import BotSettings, SkillsSettings
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._proxy.raw_tools import MAX_DEPTH, _opened, tools_span
from bot_toolsearch._proxy.tools import _loads, _no_constant
from bot_toolsearch._services.threads import POOLS
from bot_toolsearch._wrap.caller_tools import _HELD_PER_JSON_BYTE, _INDEX_PER_JSON_BYTE
from bot_toolsearch.testing import ScriptedOpenAIServer, text
from tests.proxy._raw import request, served
from tests.wrap._tools import chat_tools

SETTINGS = BotSettings(skills=SkillsSettings(tool_search_enabled=True))
MESSAGES = b'[{"role": "user", "content": "hi"}]'
A = json.dumps(chat_tools()).encode()
B = A.replace(b"get_weather", b"get_weathex")  # one byte apart, same length
assert len(A) == len(B)
assert A != B


def _body(*members: bytes) -> bytes:
    return b"{" + b", ".join(members) + b"}"


def _plain(tools: bytes) -> bytes:
    return _body(b'"model": "m"', b'"messages": ' + MESSAGES, b'"tools": ' + tools)


def _post(port: int, body: bytes) -> Any:
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}"
    )
    return request(port, head.encode(), body)


def _listed(seen: Any) -> str:
    """What the upstream was told about the deferred tools (the system messages' text)."""
    return " ".join(m["content"] for m in seen.body["messages"] if m["role"] == "system")


def _known(app: ProxyApp, tools: bytes) -> bool:
    body = _plain(tools)
    span = tools_span(body)
    assert span is not None
    return app._cache.by_source(body, *span) is not None


def test_a_list_one_byte_apart_is_never_served_from_another_lists_catalog() -> None:
    with ScriptedOpenAIServer() as server:
        app = ProxyApp(server.base_url, settings=SETTINGS)
        with served(app) as port:
            for tools in (A, A, B, B, A):
                server.script(text("ok"))
                assert _post(port, _plain(tools)).status == 200
            assert _known(app, A)
            assert _known(app, B)
        seen = [_listed(s) for s in server.requests]
    assert ["get_weathex" in s for s in seen] == [False, False, True, True, False]
    assert ["get_weather" in s for s in seen] == [True, True, False, False, True]
    assert app._cache.builds == 2


def _deep(inner: bytes, depth: int) -> bytes:
    return b"[" * depth + inner + b"]" * depth


# Bodies that hold list A's exact bytes somewhere while `json` reads list B (or nothing).
HOSTILE: list[tuple[str, bytes]] = [
    (
        "duplicate key, last wins",
        _body(b'"model": "m"', b'"messages": ' + MESSAGES, b'"tools": ' + A, b'"tools": ' + B),
    ),
    ("escaped key", _body(b'"model": "m"', b'"messages": ' + MESSAGES, b'"t\\u006fols": ' + B)),
    (
        "escaped duplicate key",
        _body(
            b'"model": "m"', b'"messages": ' + MESSAGES, b'"tools": ' + A, b'"t\\u006fols": ' + B
        ),
    ),
    (
        "tools inside a string",
        _body(
            b'"model": "m"',
            b'"messages": [{"role": "user", "content": '
            + json.dumps('"tools": ' + A.decode()).encode()
            + b"}]",
            b'"tools": ' + B,
        ),
    ),
    (
        "tools one level down",
        _body(
            b'"model": "m"',
            b'"messages": ' + MESSAGES,
            b'"metadata": {"tools": ' + A + b"}",
            b'"tools": ' + B,
        ),
    ),
    (
        "deeper than the scan follows",
        _body(
            b'"model": "m"',
            b'"messages": ' + MESSAGES,
            b'"extra": ' + _deep(A, MAX_DEPTH + 5),
            b'"tools": ' + B,
        ),
    ),
    ("unicode escape in the value", _plain(B.replace(b"get_weathex", b"get_w\\u0065athex"))),
]


@pytest.mark.parametrize(("name", "body"), HOSTILE, ids=[n for n, _ in HOSTILE])
def test_a_hostile_body_is_read_as_json_reads_it(name: str, body: bytes) -> None:
    assert json.loads(body)["tools"] == json.loads(B)
    with ScriptedOpenAIServer() as server:
        app = ProxyApp(server.base_url, settings=SETTINGS)
        with served(app) as port:
            for _ in range(2):  # list A is known by its bytes
                server.script(text("ok"))
                assert _post(port, _plain(A)).status == 200
            assert _known(app, A)
            for _ in range(2):
                server.script(text("ok"))
                assert _post(port, body).status == 200
        for seen in server.requests[2:]:
            assert "get_weathex" in _listed(seen)
            assert "get_weather" not in _listed(seen)


# Bodies whose ``tools`` are list A's exact bytes but whose rest `json` refuses.
BROKEN: list[tuple[str, bytes]] = [
    (
        "NaN elsewhere",
        _body(b'"model": "m"', b'"messages": ' + MESSAGES, b'"tools": ' + A, b'"temperature": NaN'),
    ),
    (
        "Infinity elsewhere",
        _body(
            b'"temperature": Infinity',
            b'"model": "m"',
            b'"messages": ' + MESSAGES,
            b'"tools": ' + A,
        ),
    ),
    ("trailing comma", _plain(A)[:-1] + b",}"),
    ("trailing garbage", _plain(A) + b" x"),
    (
        "mismatched brackets",
        _body(b'"model": "m"', b'"messages": [{"role": "user"]', b'"tools": ' + A),
    ),
    ("not UTF-8", _body(b'"model": "\xff"', b'"messages": ' + MESSAGES, b'"tools": ' + A)),
    (
        "raw control character",
        _body(b'"model": "m\x01"', b'"messages": ' + MESSAGES, b'"tools": ' + A),
    ),
    ("unclosed", _plain(A)[:-1]),
]


@pytest.mark.parametrize(("name", "body"), BROKEN, ids=[n for n, _ in BROKEN])
def test_a_broken_body_around_a_known_list_is_a_400(name: str, body: bytes) -> None:
    assert not _json_reads(body)
    with ScriptedOpenAIServer() as server:
        app = ProxyApp(server.base_url, settings=SETTINGS)
        with served(app) as port:
            for _ in range(2):
                server.script(text("ok"))
                assert _post(port, _plain(A)).status == 200
            assert _known(app, A)
            reply = _post(port, body)
        assert reply.status == 400, reply
        assert len(server.requests) == 2


def _json_reads(body: bytes) -> bool:
    """Whether `json` reads ``body`` (without ``NaN``/``Infinity``, as the proxy does)."""

    def refuse(name: str) -> None:
        raise ValueError(name)

    try:
        json.loads(body, parse_constant=refuse)
    except ValueError:
        return False
    return True


def test_a_huge_string_around_a_known_list_arrives_whole() -> None:
    content = '\\"tools": [' * 50_000 + "\u00e9\U0001f600" + '"' * 1000
    body = _body(
        b'"model": "m"',
        b'"messages": ' + json.dumps([{"role": "user", "content": content}]).encode(),
        b'"tools": ' + A,
    )
    with ScriptedOpenAIServer() as server:
        app = ProxyApp(server.base_url, settings=SETTINGS)
        with served(app) as port:
            for _ in range(3):
                server.script(text("ok"))
                assert _post(port, body).status == 200
            assert _known(app, A)
        for seen in server.requests:
            assert "get_weather" in _listed(seen)
            assert content in [m["content"] for m in seen.body["messages"]]


SPANS: list[bytes] = [
    *(b for _, b in HOSTILE),
    *(b for _, b in BROKEN),
    _plain(A),
    b' \r\n\t{"tools" : [] , "a":{"b":[{}]}}  ',
    b'{"a": "\\\\", "tools": [1, "]", {"x": "\\"}"}], "b": -1.5e3}',
    b'{"tools": 5}',
    b'{"tools": "x"}',
    b'{"tools": null}',
    b"{}",
    b"[]",
    '{"tools": [1]}'.encode("utf-16"),
    b'\xef\xbb\xbf{"tools": [1]}',
    b'{"a": ' + _deep(b"1", MAX_DEPTH) + b', "tools": [2]}',
    b'{"a": ' + _deep(b"1", MAX_DEPTH + 1) + b', "tools": [2]}',
]


@pytest.mark.parametrize("body", SPANS)
def test_the_span_is_the_value_json_reads_or_none(body: bytes) -> None:
    span = tools_span(body)
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if span is not None and isinstance(parsed, dict):
        start, end = span
        assert json.loads(body[start:end]) == parsed["tools"]
        assert tools_span(body, [end - start]) == span


def test_the_scan_finds_the_top_level_value() -> None:
    body = b' \r\n\t{"tools" : [] , "a":{"b":[{}]}}  '
    assert tools_span(body) == (body.index(b"[]"), body.index(b"[]") + 2)
    body = HOSTILE[3][1]  # "tools" inside a string, then the real one
    assert tools_span(body) == (len(body) - 1 - len(B), len(body) - 1)
    body = b'{"a": ' + _deep(b"1", MAX_DEPTH) + b', "tools": [2]}'
    assert tools_span(body) == (len(body) - 4, len(body) - 1)


def test_the_scan_refuses_what_only_json_can_decide() -> None:
    assert tools_span(HOSTILE[0][1]) is None  # duplicate key
    assert tools_span(HOSTILE[1][1]) is None  # escaped key
    assert tools_span(HOSTILE[5][1]) is None  # too deep
    assert tools_span(b'{"a": ' + _deep(b"1", MAX_DEPTH + 1) + b', "tools": [2]}') is None
    assert tools_span('{"tools": [1]}'.encode("utf-16")) is None
    assert tools_span(b'{"tools": [1]} x') is None


def test_remembered_bytes_count_against_the_cache_bound() -> None:
    with ScriptedOpenAIServer() as server:
        app = ProxyApp(server.base_url, settings=SETTINGS)
        with served(app) as port:
            server.script(text("ok"))
            assert _post(port, _plain(A)).status == 200
        assert POOLS.index.wait_idle(30)  # accepted: its search index is built
        # What the list holds: entries, catalog and one search index, per byte of its JSON.
        held = (_HELD_PER_JSON_BYTE + _INDEX_PER_JSON_BYTE) * len(json.dumps(json.loads(A)))
        assert app._cache.cached_bytes == held + len(A)
        # The same list as other objects: the old bytes no longer name the cached objects.
        app._cache.lookup(json.loads(A), "chat", SETTINGS.tools.dot_delimiter)
        assert app._cache.cached_bytes == held
        assert not _known(app, A)


def test_a_known_list_is_never_walked_again() -> None:
    """Whether a list speaks the dialect and how many tools it names are asked once of a
    list found by its bytes (`ToolFacts`), not on every request."""
    with ScriptedOpenAIServer() as server:
        app = ProxyApp(server.base_url, settings=SETTINGS)
        with served(app) as port:
            for _ in range(2):  # the first parses the list, the second finds it by its bytes
                server.script(text("ok"))
                assert _post(port, _plain(A)).status == 200
            walked = app._facts.walks
            for _ in range(3):
                server.script(text("ok"))
                assert _post(port, _plain(A)).status == 200
            assert app._facts.walks == walked
            server.script(text("ok"))
            assert _post(port, _plain(B)).status == 200  # another list is walked
            assert app._facts.walks > walked


def test_a_known_list_reaches_the_plan_as_the_caches_own_tuple(tmp_path: Path) -> None:
    """A list found by its bytes is handed on as the cache's own (immutable) tuple, so the
    engine's plan finds its catalog by one identity test instead of one per tool; a reload
    that turns tool search off passes the same request through with that tuple as its list."""
    config = tmp_path / "config.toml"
    config.write_text("[bot]\nhot_reload = false\n[skills]\ntool_search_enabled = true\n")
    with ScriptedOpenAIServer() as server:
        app = ProxyApp(server.base_url, config=config)
        engine = app._engine
        seen: list[object] = []
        plan = engine.chat_plan

        def spy(kwargs: dict[str, Any], **options: Any) -> Any:
            seen.append(kwargs.get("tools"))
            return plan(kwargs, **options)

        engine.chat_plan = spy  # type: ignore[method-assign]
        with served(app) as port:
            for _ in range(3):
                server.script(text("ok"))
                assert _post(port, _plain(A)).status == 200
            body = _plain(A)
            span = tools_span(body)
            assert span is not None
            cached = app._cache.by_source(body, *span)
            assert isinstance(cached, tuple)
            assert isinstance(seen[0], list)  # parsed the first time
            assert seen[-1] is cached
            assert "get_weather" in _listed(server.requests[-1])
            config.write_text("[bot]\nhot_reload = false\n[skills]\ntool_search_enabled = false\n")
            assert engine._reloader is not None
            assert engine._reloader.reload()
            server.script(text("ok"))
            assert _post(port, body).status == 200
        passed = server.requests[-1].body
    assert passed["tools"] == json.loads(A)
    assert seen[-1] is cached


def _outcome(read: Any, body: bytes) -> tuple[str, Any]:
    """What ``read(body)`` gives: its value, or its error's type and message."""
    try:
        return "value", read(body)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


LOADED: list[bytes] = [
    *(body for _, body in HOSTILE),
    *(body for _, body in BROKEN),
    *SPANS,
    b'{"temperature": -Infinity}',
    b'{"a": NaN}',
    b"[NaN]",
    b'"\xed\xa0\x80"',  # a lone surrogate in UTF-8: read (surrogatepass), as `json` reads it
    b'"\\ud800"',  # an escaped lone surrogate: read, as `json` reads it
    '{"é": "ü"}'.encode("utf-16-le"),
    '{"é": "ü"}'.encode("utf-32"),
    '{"é": "ü"}'.encode("utf-16-be"),
    b"\xef\xbb\xbf[1, 2]",
    b"  \n1e400 ",
    b"",
    b"{",
    b"[" * 100_000 + b"]" * 100_000,  # past the recursion limit
]


@pytest.mark.parametrize("body", LOADED)
def test_the_decoder_made_once_reads_as_json_loads(body: bytes) -> None:
    """`_loads` (one decoder for every body) gives what ``json.loads`` with a decoder of its
    own gives: the same value, or the same error with the same message."""
    expected = _outcome(lambda raw: json.loads(raw, parse_constant=_no_constant), body)
    assert _outcome(_loads, body) == expected
    assert _outcome(_loads, body) == expected  # and again: nothing kept between two bodies


OPENINGS: list[bytes] = [
    *LOADED,
    b"{",
    b"{}",
    b'{"tools": []}',
    b"{\x00",
    b"{\x00\x00\x00",
    b'{\x00"\x00',
    b" {}",
    b"\n{}",
    b"\xef\xbb\xbf{}",
    '{"tools": []}'.encode("utf-16-le"),
    '{"tools": []}'.encode("utf-32-le"),
    b"[{}]",
    b"{{",
]


@pytest.mark.parametrize("body", OPENINGS)
def test_a_body_opening_with_a_brace_is_opened_as_the_full_check_opens_it(body: bytes) -> None:
    """The scan's shortcut (``{`` then a byte other than NUL: UTF-8, opened at byte 1) holds
    exactly where `json.detect_encoding` and the opening pattern say so."""
    if not (body[:1] == b"{" and body[1:2] != b"\x00"):
        return
    assert json.detect_encoding(body[:4]) == "utf-8"
    assert _opened(body) == 1
    # A space before it takes the full check: the same span, one byte on.
    span, spaced = tools_span(body), tools_span(b" " + body)
    assert spaced == (None if span is None else (span[0] + 1, span[1] + 1))
    if span is not None:
        length = [span[1] - span[0]]
        assert tools_span(b" " + body, length, known_only=True) == spaced
        assert tools_span(body, length, known_only=True) == span
