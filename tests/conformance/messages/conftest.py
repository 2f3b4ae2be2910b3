"""The Messages door under test: a strict Anthropic-compatible scripted upstream (no tool
search: it refuses the search tool types, ``defer_loading`` and ``tool_reference``), the proxy
in front of it with ``upstream_api="messages"``, and the real ``anthropic`` SDK pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anthropic
import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._config.settings import SkillsSettings, ToolsSettings
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch.testing import ScriptedOpenAIServer
from tests._helpers import served


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


@pytest.fixture
def proxy_root(strict: ScriptedOpenAIServer, settings: BotSettings) -> Iterator[str]:
    """The proxy's root URL (the SDK's ``base_url``: it adds ``/v1/messages``)."""
    app = ProxyApp(strict.base_url, settings=settings, upstream_api="messages", timeout=30)
    with served(app) as root:
        yield root


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
