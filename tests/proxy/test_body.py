"""The body stage's helpers (issue 44): the client headers passed upstream are found as the
full reading of every header finds them."""

from __future__ import annotations

import pytest

from bot_toolsearch._proxy.body import _FORWARDED, forwarded

HEADERS: list[dict[str, str]] = [
    {},
    {"host": "x", "authorization": "Bearer k", "content-type": "application/json"},
    {"host": "x", "openai-beta": "assistants=v2"},
    {"openai-project": "p", "host": "x", "openai-organization": "org"},
    {"openai-organization": "orgé", "openai-beta": "b"},  # not ASCII: not passed on
    {"openai-organizations": "x", "x-openai-beta": "y", "OpenAI-Beta": "z"},
]


@pytest.mark.parametrize("headers", HEADERS)
def test_the_forwarded_headers_are_the_full_readings(headers: dict[str, str]) -> None:
    full = {k: v for k, v in headers.items() if k in _FORWARDED and v.isascii()}
    found = forwarded(headers)
    assert found == full
    assert list(found) == list(full)  # in the request's order
