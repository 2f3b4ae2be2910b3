"""A minimal pass-through proxy for the proxy benchmark's baseline: the same stack as
``bot-toolsearch serve`` (uvicorn, the SDK's HTTP client), no tool search. It reads each
request body, forwards its bytes to the upstream and relays the answer
(``python -m bench._passthrough PORT UPSTREAM``)."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import openai
import uvicorn

_Scope = MutableMapping[str, Any]
_HTTP = openai.DefaultAsyncHttpxClient(timeout=600)
_UPSTREAM = sys.argv[2] if len(sys.argv) > 2 else ""


async def app(
    scope: _Scope,
    receive: Callable[[], Awaitable[_Scope]],
    send: Callable[[_Scope], Awaitable[None]],
) -> None:
    if scope["type"] != "http":
        return
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body"):
            break
    body = b"".join(chunks)
    path = scope["path"].removeprefix("/v1")
    for attempt in range(2):  # one retry, as the proxy's (a keep-alive connection closed)
        try:
            response = await _HTTP.post(
                _UPSTREAM + path,
                content=body,
                headers={"content-type": "application/json"},
            )
            break
        except Exception:
            if attempt:
                raise
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(response.content)),
    ]
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": response.content})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
