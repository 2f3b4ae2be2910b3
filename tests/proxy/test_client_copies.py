"""`ClientCopies`: the upstream client of a key and forwarded headers is made once and
reused, each key keeps its own, and only the newest copies are kept."""

from __future__ import annotations

import openai

from bot_toolsearch._proxy.client_copies import ClientCopies


def _client() -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="unset", max_retries=1)


async def test_a_key_and_its_headers_get_one_client_of_their_own() -> None:
    base = _client()
    copies = ClientCopies(base)
    first = copies.get("sk-a", {"openai-organization": "org"})
    assert copies.get("sk-a", {"openai-organization": "org"}) is first
    assert copies.made == 1
    assert first.api_key == "sk-a"
    assert first.default_headers["openai-organization"] == "org"
    other = copies.get("sk-b", {"openai-organization": "org"})
    assert other is not first
    assert other.api_key == "sk-b"
    bare = copies.get("sk-a", {})
    assert bare is not first
    assert "openai-organization" not in bare.default_headers
    assert copies.made == 3
    assert base.api_key == "unset"  # the base client is never changed
    await base.close()


async def test_only_the_newest_copies_are_kept() -> None:
    base = _client()
    copies = ClientCopies(base, size=2)
    a = copies.get("a", {})
    copies.get("b", {})
    assert copies.get("a", {}) is a  # used again: now the newest
    copies.get("c", {})  # drops b, the oldest
    assert copies.get("a", {}) is a
    copies.get("b", {})
    assert copies.made == 4
    await base.close()
