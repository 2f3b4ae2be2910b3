"""The door's streamable-HTTP sessions with ``[proxy] state`` on a real Redis server: two door
processes serve one session's requests in any order, with nothing lost; a session ended on one
is unknown on the other; a Redis that is down answers 503 and the door stays up; hostile
session ids cost no Redis key; without the setting, a session is its process's own."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types.version import LATEST_HANDSHAKE_VERSION

from bot_toolsearch._mcp.door import IDLE_SECONDS, McpDoor, Outcome
from bot_toolsearch._mcp.server import LOADS_NOT_KEPT, _keep_loads
from bot_toolsearch._mcp.shared import SharedSessions, _digest
from bot_toolsearch._services.shared_state import RedisState
from tests.mcp.conftest import write_config
from tests.mcp.test_door import names, text
from tests.mcp.test_server import ACCEPT, INITIALIZE, _start_door, serving

ENV = "BOT_TOOLSEARCH_TEST_REDIS"


def redis_url() -> str:
    url = os.environ.get(ENV, "")
    if not url:
        pytest.skip(f"no Redis server: {ENV} is unset (.ci/services.sh starts one; .ci/run does)")
    pytest.importorskip("redis", reason="the redis extra is not installed")
    return url


class Router(httpx2.AsyncBaseTransport):
    """A load balancer in the client: each request goes to the door at ``port`` when sent."""

    def __init__(self, port: int) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.port = port
        self.sent: Counter[tuple[str, int]] = Counter()
        self.session: str | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(port=self.port)
        self.sent[request.method, self.port] += 1
        self.session = request.headers.get("mcp-session-id") or self.session
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", maxsplit=1)[0])


@pytest.fixture
def two_doors(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two ``bot-toolsearch mcp --http`` processes sharing one Redis (``[proxy] state``)."""
    config = write_config(tmp_path, upstream=False)
    with config.open("a", encoding="utf-8") as extra:
        extra.write(f"[proxy]\nstate = '{redis_url()}'\n")
    doors = []
    try:
        for _ in range(2):
            for _ in range(3):
                started = _start_door(config, tmp_path)
                if started is not None:
                    doors.append(started)
                    break
        assert len(doors) == 2, "bot-toolsearch mcp --http did not start"
        yield doors[0][1], doors[1][1]
    finally:
        for process, _ in doors:
            process.terminate()
            process.wait(timeout=30)


async def test_two_door_processes_serve_one_session(two_doors: tuple[str, str]) -> None:
    """The official client searches on one ``bot-toolsearch mcp --http`` process and lists and
    calls the loaded tool on another (each request goes where the balancer sends it), loads on
    the second and lists them on the first; its DELETE on one ends the session on both."""
    first, second = two_doors
    a, b = _port(first), _port(second)
    router = Router(a)
    async with (
        httpx2.AsyncClient(transport=router) as http,
        streamable_http_client(first, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        found = await session.call_tool("tool_search", {"query": "select:notes.shout"})
        assert json.loads(text(found))["loaded"] == ["notes-_-shout"]
        router.port = b  # the other process from here on
        assert names(await session.list_tools()) == ["tool_search", "notes-_-shout"]
        shouted = await session.call_tool("notes-_-shout", {"text": "hi"})
        assert (shouted.is_error, text(shouted)) == (False, "HI")
        found = await session.call_tool("tool_search", {"query": "select:notes.boom"})
        assert json.loads(text(found))["loaded"] == ["notes-_-boom"]
        router.port = a
        listed = names(await session.list_tools())
        assert listed == ["tool_search", "notes-_-shout", "notes-_-boom"]
        denied = await session.call_tool("notes-_-secret", {"text": "x"})
        assert denied.is_error
        assert router.sent["POST", a] >= 3
        assert router.sent["POST", b] >= 3
        router.port = b  # the client's DELETE goes to the process that did not open it
    assert router.sent["DELETE", b] == 1
    assert router.session is not None
    headers = {
        **ACCEPT,
        "mcp-session-id": router.session,
        "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
    }
    listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    async with httpx.AsyncClient(timeout=30) as raw:
        for url in (first, second):  # ended on both
            assert (await raw.post(url, json=listing, headers=headers)).status_code == 404


RACING = 10.0
"""Seconds each Redis call may take in the racing tests: they test the bound's atomicity, not
the 1 s deadline (tested on its own), and 40 openers at once on a loaded CI machine can pass
1 s."""


@asynccontextmanager
async def shared(
    url: str, limit: int = 1024, *, call_seconds: float = 1.0
) -> AsyncIterator[SharedSessions]:
    """Sessions on Redis under a prefix of this test's own (removed after)."""
    state = RedisState(url, timeout=call_seconds)
    prefix = f"bot_toolsearch:test:{uuid.uuid4().hex}:"
    try:
        yield SharedSessions(state, limit, prefix=prefix)
    finally:
        redis: Any = state._redis
        keys = [k async for k in redis.scan_iter(f"{prefix}*")]
        if keys:
            await redis.delete(*keys)
        await state.aclose()


async def _opened(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    """A raw session opened (and initialized) at ``url``: the headers of its requests."""
    opened = await http.post(url, json=INITIALIZE, headers=ACCEPT)
    assert opened.status_code == 200, opened.text
    headers = {
        **ACCEPT,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=note, headers=headers)).status_code == 202
    return headers


async def _loaded(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    """A raw session opened at ``url`` that loaded ``notes.shout`` by search: its headers."""
    headers = await _opened(http, url)
    searched = await http.post(
        url, json=_call("tool_search", query="select:notes.shout"), headers=headers
    )
    assert "notes-_-shout" in searched.text
    return headers


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}


async def test_the_bound_holds_over_both_processes_and_never_ends_a_session_with_loads(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """Three sessions at most over two doors: a fourth ends the one holding no loads (wherever
    it was opened: it is unknown on both next), and once all three hold loads a new one gets
    503 on either door, while the sessions holding loads keep them."""
    config = write_config(tmp_path, upstream=False)
    one: McpDoor = await door_factory(config)
    two: McpDoor = await door_factory(config)
    async with (
        shared(redis_url(), limit=3) as sessions,
        serving(one, state=sessions) as (first, _),
        serving(two, state=sessions) as (second, _),
        httpx.AsyncClient(timeout=30) as http,
    ):
        loaded = [await _loaded(http, url) for url in (first, second)]
        idle = await _opened(http, first)
        assert await sessions.count() == 3
        fourth = await _opened(http, second)  # ends `idle`, not a session holding loads
        for url in (first, second):
            gone = await http.post(url, json=_call("notes-_-shout", text="x"), headers=idle)
            assert gone.status_code == 404
        searched = await http.post(
            first, json=_call("tool_search", query="select:notes.boom"), headers=fourth
        )
        assert "notes-_-boom" in searched.text
        for url in (first, second):
            refused = await http.post(url, json=INITIALIZE, headers=ACCEPT)
            assert refused.status_code == 503
            assert "every one holds loads" in refused.text
        for headers, url in zip(loaded, (second, first), strict=True):  # on the other door
            shouted = await http.post(url, json=_call("notes-_-shout", text="x"), headers=headers)
            assert '"text":"X"' in shouted.text.replace(" ", "")


async def test_hostile_session_ids_cost_no_redis_key_and_no_session(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    door: McpDoor = await door_factory(write_config(tmp_path, upstream=False))
    async with (
        shared(redis_url()) as sessions,
        serving(door, state=sessions) as (url, middleware),
        httpx.AsyncClient(timeout=30) as http,
    ):
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        for session in ("x" * 100_000, "a b", "é".encode(), uuid.uuid4().hex):
            headers = {**ACCEPT, "mcp-session-id": session}
            sent = await http.post(url, json=listing, headers=headers)
            assert sent.status_code in (404, 431), session[:8]  # 431: uvicorn's own bound
        redis: Any = sessions.state._redis
        assert [k async for k in redis.scan_iter(f"{sessions._keys.prefix}*")] == []
        assert middleware.open == {}
        assert door.client_sessions == 0


async def test_a_redis_that_is_down_answers_503_and_the_door_stays_up(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """No Redis behind ``[proxy] state``: a new session and a request of one get a clear 503
    (never the URL's password); the door keeps serving what needs no Redis."""
    pytest.importorskip("redis", reason="the redis extra is not installed")
    door: McpDoor = await door_factory(write_config(tmp_path, upstream=False))
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        down = RedisState(f"redis://:s3cret@127.0.0.1:{closed.getsockname()[1]}/0", timeout=0.5)
        try:
            async with (
                serving(door, state=SharedSessions(down, 8)) as (url, middleware),
                httpx.AsyncClient(timeout=30) as http,
            ):
                for _ in range(2):
                    opened = await http.post(url, json=INITIALIZE, headers=ACCEPT)
                    assert opened.status_code == 503
                    assert "shared session state is unavailable" in opened.text
                    assert "s3cret" not in opened.text
                    assert "mcp-session-id" not in opened.headers
                headers = {**ACCEPT, "mcp-session-id": uuid.uuid4().hex}
                listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                again = await http.post(url, json=listing, headers=headers)
                assert again.status_code == 503
                assert middleware.open == {}
                async with Client(url) as sessionless:  # 2026-07-28: nothing kept, served
                    assert names(await sessionless.list_tools()) == ["tool_search", "call_tool"]
        finally:
            await down.aclose()


async def test_without_the_setting_a_session_is_its_process_own(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    config = write_config(tmp_path, upstream=False)
    one: McpDoor = await door_factory(config)
    two: McpDoor = await door_factory(config)
    async with (
        serving(one) as (first, _),
        serving(two) as (second, _),
        httpx.AsyncClient(timeout=30) as http,
    ):
        headers = await _opened(http, first)
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert (await http.post(first, json=listing, headers=headers)).status_code == 200
        assert (await http.post(second, json=listing, headers=headers)).status_code == 404


async def test_a_session_ended_where_it_was_never_served_is_ended_everywhere(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    config = write_config(tmp_path, upstream=False)
    one: McpDoor = await door_factory(config)
    two: McpDoor = await door_factory(config)
    async with (
        shared(redis_url()) as sessions,
        serving(one, state=sessions) as (first, _),
        serving(two, state=sessions) as (second, middleware),
        httpx.AsyncClient(timeout=30) as http,
    ):
        headers = await _opened(http, first)
        assert (await http.delete(second, headers=headers)).status_code == 200
        assert middleware.local == {}  # nothing opened on the second door to end it
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        for url in (first, second):
            assert (await http.post(url, json=listing, headers=headers)).status_code == 404
        assert await sessions.count() == 0


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A Redis server of this test's own on a free 127.0.0.1 port (it may stop it)."""
    pytest.importorskip("redis", reason="the redis extra is not installed")
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server binary (.ci/services.sh installs Debian's)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0", process
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_redis_stopping_mid_session_answers_503_and_the_door_stays_up(
    tmp_path: Path,
    door_factory: Callable[..., Any],
    own_redis: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, server = own_redis
    door: McpDoor = await door_factory(write_config(tmp_path, upstream=False))
    state = RedisState(url, timeout=0.5)
    try:
        async with (
            serving(door, state=SharedSessions(state, 8)) as (mcp, _),
            httpx.AsyncClient(timeout=30) as http,
        ):
            headers = await _loaded(http, mcp)
            server.terminate()
            server.wait(timeout=30)
            listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
            down = await http.post(mcp, json=listing, headers=headers)
            assert down.status_code == 503
            assert down.headers["retry-after"] == "1"
            assert "shared session state is unavailable" in down.text
            assert (await http.post(mcp, json=INITIALIZE, headers=ACCEPT)).status_code == 503
            async with Client(mcp) as sessionless:  # the door is still up
                assert names(await sessionless.list_tools()) == ["tool_search", "call_tool"]
    finally:
        await state.aclose()


async def test_loads_redis_did_not_take_are_an_error_and_kept_nowhere(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    pytest.importorskip("redis", reason="the redis extra is not installed")
    door: McpDoor = await door_factory(write_config(tmp_path, upstream=False))
    door.client("http:s1", "c")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        down = RedisState(f"redis://127.0.0.1:{closed.getsockname()[1]}/0", timeout=0.5)
        try:
            outcome = Outcome('{"loaded":["notes-_-shout"]}', False, True, ["notes.shout"])
            kept = await _keep_loads(door, SharedSessions(down, 8), "s1", outcome)
        finally:
            await down.aclose()
    assert (kept.is_error, kept.text) == (True, LOADS_NOT_KEPT)
    assert not door.has_state("http:s1")


async def test_a_clients_next_session_on_another_process_starts_with_what_it_ran(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """``tool_search_keep_loaded = "conversation"``: the tools a client ran in a session on one
    door are loaded in its next session on the other; another client's are not."""
    config = write_config(tmp_path, upstream=False, tool_search_keep_loaded='"conversation"')
    one: McpDoor = await door_factory(config)
    two: McpDoor = await door_factory(config)
    async with (
        shared(redis_url()) as sessions,
        serving(one, state=sessions) as (first, _),
        serving(two, state=sessions) as (second, _),
        httpx.AsyncClient(timeout=30) as http,
    ):
        headers = await _opened(http, first)
        await http.post(
            first, json=_call("tool_search", query="select:notes.shout"), headers=headers
        )
        ran = await http.post(first, json=_call("notes-_-shout", text="x"), headers=headers)
        assert '"text":"X"' in ran.text.replace(" ", "")
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        again = await _opened(http, second)  # the same clientInfo name: "stranger"
        listed = await http.post(second, json=listing, headers=again)
        assert '"name":"notes-_-shout"' in listed.text.replace(" ", "")
        other = {**INITIALIZE, "params": {**INITIALIZE["params"], "clientInfo": {"name": "b"}}}
        opened = await http.post(second, json=other, headers=ACCEPT)
        headers = {
            **ACCEPT,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
        }
        listed = await http.post(second, json=listing, headers=headers)
        assert '"name":"notes-_-shout"' not in listed.text.replace(" ", "")


async def test_openers_racing_for_the_last_places_never_overshoot_the_bound() -> None:
    """Three times, 40 openers at once on four clients (as four processes would be) race for
    the last two of eight places, six of them held by sessions with loads: eight sessions stay
    open, none of them lost its loads, and no evicted session left a key behind. Once all eight hold
    loads, 40 more racing openers are all refused and nothing changes."""
    url = redis_url()
    async with shared(url, limit=8, call_seconds=RACING) as sessions:
        others = [
            SharedSessions(RedisState(url, timeout=RACING), 8, prefix=sessions._keys.prefix)
            for _ in range(3)
        ]
        try:
            doors = [sessions, *others]
            holding = [f"held-{n}" for n in range(6)]
            for n, session in enumerate(holding):
                assert await sessions.open(session, {}, "")
                await sessions.add_loaded(session, [f"tool-{n}"])

            async def opener(n: int) -> bool:
                return await doors[n % 4].open(f"new-{n}", {}, "")

            for door in doors:  # each client's connections open, as a running process's are
                await asyncio.gather(*(door.count() for _ in range(10)))
            for start in range(0, 120, 40):  # three races
                opened = await asyncio.gather(*(opener(n) for n in range(start, start + 40)))
                assert sum(opened) >= 2
                assert await sessions.count() == 8
            for n, session in enumerate(holding):
                found = await sessions.touch(session)
                assert found is not None
                assert found.loaded == (f"tool-{n}",)
            redis: Any = sessions.state._redis
            keys = [k async for k in redis.scan_iter(f"{sessions._keys.prefix}*")]
            assert len(keys) == 1 + 8 + 6  # the open set, eight records, six loads
            still = [f"new-{n}" for n in range(120) if await sessions.touch(f"new-{n}")]
            assert len(still) == 2
            for session in still:
                await sessions.add_loaded(session, ["late"])
            refused = await asyncio.gather(*(opener(n) for n in range(120, 160)))
            assert not any(refused)
            assert await sessions.count() == 8
            for session in [*holding, *still]:
                found = await sessions.touch(session)
                assert found is not None
                assert found.loaded
        finally:
            for other in others:
                await other.state.aclose()


async def test_new_sessions_racing_on_two_doors_never_overshoot_the_bound(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """Four places over two doors (each with its own Redis client), two held by sessions with
    loads: twice, 40 new sessions opened at once, half on each door, all open (each making
    room by ending a load-free one), yet four sessions stay open in all and the two holding
    loads keep them, served on either door."""
    config = write_config(tmp_path, upstream=False)
    one: McpDoor = await door_factory(config)
    two: McpDoor = await door_factory(config)
    url = redis_url()
    async with shared(url, limit=4, call_seconds=RACING) as sessions:
        other = SharedSessions(RedisState(url, timeout=RACING), 4, prefix=sessions._keys.prefix)
        try:
            async with (
                serving(one, state=sessions) as (first, _),
                serving(two, state=other) as (second, _),
                httpx.AsyncClient(timeout=30) as http,
            ):
                loaded = [await _loaded(http, url) for url in (first, second)]
                for _ in range(2):
                    opening = [
                        http.post((first, second)[n % 2], json=INITIALIZE, headers=ACCEPT)
                        for n in range(40)
                    ]
                    answers = await asyncio.gather(*opening)
                    assert [a.status_code for a in answers] == [200] * 40
                    assert await sessions.count() == 4
                for headers, url in zip(loaded, (second, first), strict=True):
                    shouted = await http.post(
                        url, json=_call("notes-_-shout", text="x"), headers=headers
                    )
                    assert '"text":"X"' in shouted.text.replace(" ", "")
        finally:
            await other.state.aclose()


async def test_a_session_idle_past_its_expiry_leaves_its_place_even_with_loads() -> None:
    """Two places, both held by sessions with loads, one of them last used more than
    `IDLE_SECONDS` ago: a new session opens in the expired one's place; with both places held
    again, the next is refused."""
    async with shared(redis_url(), limit=2) as sessions:
        for session in ("old", "held"):
            assert await sessions.open(session, {}, "")
            await sessions.add_loaded(session, ["tool"])
        redis: Any = sessions.state._redis
        digest = _digest("old")
        await redis.zadd(sessions._keys.open, {digest: time.time() - IDLE_SECONDS - 1})
        assert await sessions.open("new", {}, "")
        assert await redis.zscore(sessions._keys.open, digest) is None
        assert await sessions.count() == 2
        await sessions.add_loaded("new", ["tool"])
        assert not await sessions.open("next", {}, "")
        assert await sessions.count() == 2


async def test_opening_survives_redis_forgetting_its_scripts(
    own_redis: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """Redis restarted or its script cache flushed: the next opening loads the script again."""
    url, _ = own_redis
    async with shared(url, limit=2) as sessions:
        assert await sessions.open("first", {}, "")
        await sessions.state._redis.script_flush()
        assert await sessions.open("second", {}, "")
        assert await sessions.count() == 2
