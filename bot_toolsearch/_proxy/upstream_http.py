"""The proxy's one HTTP client to its upstream, shared by every client it serves: the SDK's
own class (httpx or httpx2, by SDK version), with two of its defaults turned off.

- Redirects are never followed: a 30x is the upstream's answer, relayed as such; following
  it would take the request, body and all, to whatever host its ``Location`` names.
- Cookies are never kept: a cookie the upstream sets answers one client's request, and a
  jar shared by every client would send it with the next client's.
"""

from __future__ import annotations

import http.cookiejar
from collections.abc import Awaitable, Callable
from typing import Any

import openai

__all__ = ["upstream_http"]


_NO_COOKIES = http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
"""No domain may set a cookie, nor have one sent (the standard library's own rule)."""


def upstream_http(
    on_request: Callable[[Any], Awaitable[None]], on_response: Callable[[Any], Awaitable[None]]
) -> Any:
    """The client, with ``on_request``/``on_response`` as its event hooks."""
    client = openai.DefaultAsyncHttpxClient(
        event_hooks={"request": [on_request], "response": [on_response]},
        follow_redirects=False,
    )
    client.cookies.jar.set_policy(_NO_COOKIES)
    return client
