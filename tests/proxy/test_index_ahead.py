"""The proxy builds a new tool list's keyword index, with the configured namespace
descriptions, once the upstream has accepted a request carrying it (2xx headers), in the
``index`` pool: the first keyword search builds nothing. A request the upstream refuses (no
key: 401) builds no index and spends nothing of the operator's embeddings endpoint; a
slow-drip embeddings endpoint leaves the proxy answering, with BM25."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.index import SearchIndex
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._services.indexing import index_built
from bot_toolsearch._services.threads import POOLS
from bot_toolsearch.testing import ScriptedOpenAIServer, call, error, text
from tests._helpers import served as served_app
from tests.proxy._raw import Upstream, drip, post, request
from tests.proxy._raw import served as _raw_served
from tests.proxy.test_limits import COMPLETION
from tests.wrap._tools import chat_tools
from tests.wrap.test_index_ahead import NAMESPACES, USER, dotted_tools

_KEY = "\r\nAuthorization: Bearer sk-client"
SETTINGS = BotSettings.model_validate(
    {"skills": {"tool_search_enabled": True}, "tools": {"namespaces": NAMESPACES}}
)


@pytest.fixture
def served(server: ScriptedOpenAIServer) -> Iterator[tuple[ProxyApp, str]]:
    """A proxy with ``SETTINGS`` served on 127.0.0.1, and its base URL."""
    app = ProxyApp(server.base_url, settings=SETTINGS)
    with served_app(app) as root:
        yield app, f"{root}/v1"


def indexes(catalog: ToolCatalog) -> list[SearchIndex]:
    """Every search index the catalog holds (private state, read only)."""
    built = list(catalog._indexes.values())
    return built if catalog._index is None else [catalog._index, *built]


def test_a_new_list_is_indexed_once_accepted_with_the_index_its_first_search_uses(
    server: ScriptedOpenAIServer, served: tuple[ProxyApp, str]
) -> None:
    app, url = served
    tools = dotted_tools()
    with openai.OpenAI(base_url=url, api_key="test", max_retries=0) as client:
        server.script(text("Nothing to do."))
        client.chat.completions.create(model="m", messages=[USER], tools=tools)
        assert POOLS.index.wait_idle(30)
        found = app._cache.lookup(tools, "chat", "-_-")
        assert found is not None
        assert found.catalog is not None
        catalog = found.catalog
        assert index_built(catalog, NAMESPACES)
        before = indexes(catalog)
        assert len(before) == 1

        server.script(call("tool_search", query="warehouse"), text("Found it."))
        client.chat.completions.create(model="m", messages=[USER], tools=tools)

    assert json.loads(server.requests[2].tool_outputs[0][1])["loaded"]
    assert [id(i) for i in indexes(catalog)] == [id(i) for i in before]


def _embeddings(url: str, cache: Path, **table: Any) -> BotSettings:
    wanted = {"model": "hashed-words", "base_url": url, "cache_dir": str(cache), **table}
    return BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_embeddings": wanted}}
    )


def test_keyless_requests_build_no_index_and_embed_nothing(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as server:
        server.embeddings.dimension = 64
        app = ProxyApp(server.base_url, settings=_embeddings(server.base_url, tmp_path))
        lists = [chat_tools(70 + i) for i in range(5)]
        with _raw_served(app) as port:
            for tools in lists:
                server.script(error(401, "Incorrect API key provided.", code="invalid_api_key"))
                payload = {"model": "m", "messages": [USER], "tools": tools}
                assert post(port, "/v1/chat/completions", payload).status == 401
            assert POOLS.index.wait_idle(30)
            assert POOLS.embeddings.wait_idle(30)
            assert server.embeddings.requests == []  # the operator's endpoint: untouched
            for tools in lists:
                found = app._cache.lookup(tools, "chat", "-_-")
                assert found is None or (found.catalog and not index_built(found.catalog, {}))
            # A request the upstream accepts does build and embed: the test can fail.
            server.script(text("ok"))
            payload = {"model": "m", "messages": [USER], "tools": lists[0]}
            assert post(port, "/v1/chat/completions", payload, extra=_KEY).status == 200
            assert POOLS.index.wait_idle(30)
            assert POOLS.embeddings.wait_idle(30)
        found = app._cache.lookup(lists[0], "chat", "-_-")
        assert found is not None
        assert found.catalog is not None
        assert index_built(found.catalog, {})
        assert server.embeddings.requests


def test_a_slow_drip_embeddings_endpoint_leaves_the_proxy_answering(tmp_path: Path) -> None:
    stop = threading.Event()
    endpoint = Upstream(drip(stop))  # headers, then one byte a second
    settings = _embeddings(f"{endpoint.url}/v1", tmp_path, timeout=0.5)
    try:
        with ScriptedOpenAIServer() as server:
            app = ProxyApp(server.base_url, settings=settings)
            with _raw_served(app) as port:
                for i in range(6):  # more searches than the embeddings pool has threads
                    server.script(call("tool_search", query="warehouse stock"), text("Done."))
                    payload = {"model": "m", "messages": [USER], "tools": chat_tools(70 + i)}
                    reply = post(port, "/v1/chat/completions", payload, extra=_KEY)
                    assert reply.status == 200, reply
                    health = request(port, b"GET /healthz HTTP/1.1\r\nHost: x")
                    assert health.json() == {"status": "ok"}
                server.script(text("plain"))
                payload = {"model": "m", "messages": [USER]}
                assert post(port, "/v1/chat/completions", payload, extra=_KEY).status == 200
            # Every search was answered, by BM25: the warehouse tools were found.
            outputs = [r.tool_outputs for r in server.requests if r.tool_outputs]
            assert len(outputs) == 6
            assert all(json.loads(o[0][1])["loaded"] for o in outputs)
    finally:
        stop.set()
        endpoint.close()
    # The endpoint was left alone after its first failure (RETRY_SECONDS), not asked per search.
    assert 1 <= len(endpoint.received) <= 2


def test_the_index_build_starts_at_the_upstreams_2xx_headers_before_its_body() -> None:
    tools = chat_tools(120)
    app: ProxyApp
    built_before_body: list[bool] = []

    def headers_then_body(conn: socket.socket, _: bytes) -> None:
        body = json.dumps(COMPLETION).encode()
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
        )
        # The answer's body waits for the index: built only if the build started at headers.
        end = time.monotonic() + 30
        while time.monotonic() < end:
            found = app._cache.lookup(tools, "chat", "-_-")
            if found is not None and found.catalog and index_built(found.catalog, {}):
                built_before_body.append(True)
                break
            time.sleep(0.01)
        conn.sendall(body)

    upstream = Upstream(headers_then_body)
    try:
        app = ProxyApp(upstream.url)
        with _raw_served(app) as port:
            payload = {"model": "m", "messages": [USER], "tools": tools}
            assert post(port, "/v1/chat/completions", payload, extra=_KEY).status == 200
    finally:
        upstream.close()
    assert built_before_body == [True]


async def test_a_burst_of_clients_with_one_new_list_all_get_answers(
    server: ScriptedOpenAIServer, proxy_url: str
) -> None:
    """Forty clients sending the same new list at once, cold: the list is indexed once and
    every client is answered, none refused as busy (503), as a fleet of identical agents
    starting together would send it."""
    import asyncio

    import httpx

    from tests.wrap.test_index_ahead import many_tools

    burst = 40
    server.script(*(text("Nothing to do.") for _ in range(burst)))
    body = json.dumps(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "Where is the stock?"}],
            "tools": many_tools(4_000),
        }
    ).encode()
    headers = {"authorization": "Bearer k", "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=burst)) as http:
        answers = await asyncio.gather(
            *(http.post(f"{proxy_url}/chat/completions", content=body, headers=headers)
              for _ in range(burst))
        )  # fmt: skip
    refused = [a.text for a in answers if a.status_code != 200]
    assert refused == []
    assert POOLS.index.wait_idle(30)
