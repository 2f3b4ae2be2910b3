"""The proxy builds a new tool list's keyword index, with the configured namespace
descriptions, in the thread that indexes the list: the first keyword search builds nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import openai
import pytest
import uvicorn

from bot_toolsearch import BotSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.index import SearchIndex
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._scripted.server import _bind, _serve, _ThreadServer
from bot_toolsearch._services.indexing import index_built
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.wrap.test_index_ahead import NAMESPACES, USER, dotted_tools

SETTINGS = BotSettings.model_validate(
    {"skills": {"tool_search_enabled": True}, "tools": {"namespaces": NAMESPACES}}
)


@pytest.fixture
def served(server: ScriptedOpenAIServer) -> Iterator[tuple[ProxyApp, str]]:
    """A proxy with ``SETTINGS`` served on 127.0.0.1, and its base URL."""
    app = ProxyApp(server.base_url, settings=SETTINGS)
    sock = _bind(None)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        loop="asyncio",
        http="h11",
        ws="none",
        lifespan="on",
        log_config=None,
        access_log=False,
    )
    running = _ThreadServer(config)
    thread = threading.Thread(target=_serve, args=(running, sock), daemon=True)
    thread.start()
    assert running.ready.wait(30)
    assert running.started
    yield app, f"http://127.0.0.1:{port}/v1"
    running.request_exit()
    thread.join(30)


def indexes(catalog: ToolCatalog) -> list[SearchIndex]:
    """Every search index the catalog holds (private state, read only)."""
    built = list(catalog._indexes.values())
    return built if catalog._index is None else [catalog._index, *built]


def test_a_new_list_is_indexed_with_the_index_its_first_search_uses(
    server: ScriptedOpenAIServer, served: tuple[ProxyApp, str]
) -> None:
    app, url = served
    tools = dotted_tools()
    with openai.OpenAI(base_url=url, api_key="test", max_retries=0) as client:
        server.script(text("Nothing to do."))
        client.chat.completions.create(model="m", messages=[USER], tools=tools)
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
