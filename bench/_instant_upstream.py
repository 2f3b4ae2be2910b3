"""An instant OpenAI-compatible upstream for the proxy benchmarks: reads the whole body, as a
real API does, parses none, and answers a fixed chat completion
(``python -m bench._instant_upstream PORT``). With ``--key KEY`` (the keyless-attack
benchmark) it answers 401 unless ``Authorization: Bearer KEY``. No state."""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

_BODY = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()
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


def upstream(key: str | None = None) -> App:
    """The ASGI app: every request answered ``ok``, or, with ``key``, 401 without it."""
    wanted = None if key is None else f"Bearer {key}".encode()

    async def app(scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while True:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        good = wanted is None or dict(scope["headers"]).get(b"authorization") == wanted
        status, body = (200, _BODY) if good else (401, _DENIED)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
            (b"x-should-retry", b"false"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--key", help="answer 401 unless Authorization: Bearer KEY")
    args = parser.parse_args()
    uvicorn.run(upstream(args.key), host="127.0.0.1", port=args.port, log_level="warning")
