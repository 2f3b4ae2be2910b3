"""The Messages door under test: a strict Anthropic-compatible scripted upstream (no tool
search: it refuses the search tool types, ``defer_loading`` and ``tool_reference``), the proxy
in front of it with ``upstream_api="messages"``, and the real ``anthropic`` SDK pointed at it."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator

import anthropic
import pytest
import uvicorn

from bot_toolsearch import BotSettings
from bot_toolsearch._config.settings import SkillsSettings, ToolsSettings
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._scripted.server import _bind, _serve, _ThreadServer
from bot_toolsearch.testing import ScriptedOpenAIServer


@pytest.fixture
def strict() -> Iterator[ScriptedOpenAIServer]:
    """The strict Anthropic-compatible upstream; unexpected or unused turns fail the test."""
    with ScriptedOpenAIServer(refuse_native=True) as srv:
        yield srv
        srv.assert_consumed()


@pytest.fixture
def settings() -> BotSettings:
    """Tool search on, at most 3 results a search (override per test)."""
    return BotSettings(skills=SkillsSettings(tool_search_enabled=True, tool_search_max_results=3))


def serve_app(app: ProxyApp) -> tuple[_ThreadServer, threading.Thread, str]:
    """``app`` served on 127.0.0.1 by uvicorn in a thread; its base URL (``…/v1``)."""
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
    return running, thread, f"http://127.0.0.1:{port}"


@pytest.fixture
def proxy_root(strict: ScriptedOpenAIServer, settings: BotSettings) -> Iterator[str]:
    """The proxy's root URL (the SDK's ``base_url``: it adds ``/v1/messages``)."""
    app = ProxyApp(strict.base_url, settings=settings, upstream_api="messages", timeout=30)
    running, thread, root = serve_app(app)
    yield root
    running.request_exit()
    thread.join(30)


@pytest.fixture
async def claude(proxy_root: str) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """The real ``anthropic.AsyncAnthropic`` pointed at the proxy (no retries)."""
    async with anthropic.AsyncAnthropic(
        base_url=proxy_root, api_key="sk-ant-test", max_retries=0
    ) as client:
        yield client


def deny(*patterns: str) -> BotSettings:
    """Settings with tool search on and ``[tools] deny`` set."""
    return BotSettings(
        skills=SkillsSettings(tool_search_enabled=True, tool_search_max_results=3),
        tools=ToolsSettings(deny=list(patterns)),
    )
