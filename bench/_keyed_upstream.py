"""An instant upstream that checks keys, for the keyless-attack benchmark
(``python -m bench._keyed_upstream PORT``): 401 unless ``Authorization: Bearer sk-good``,
else a fixed chat completion. It reads the whole body, as a real API does, and parses none."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn

from ._instant_upstream import _BODY

_DENIED = json.dumps(
    {
        "error": {
            "message": "Incorrect API key provided.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
).encode()


async def app(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] != "http":
        return
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body"):
            break
    headers = dict(scope["headers"])
    good = headers.get(b"authorization") == b"Bearer sk-good"
    status, body = (200, _BODY) if good else (401, _DENIED)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"x-should-retry", b"false"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
