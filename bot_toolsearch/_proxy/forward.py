"""Every path the proxy does not tool-search, forwarded to the upstream as it is, under the
upstream's base path.

The outgoing URL is the upstream's scheme, host and port plus its base path and the request's
normalised path (`bot_toolsearch._proxy.app`), so no spelling of a path reaches another host
or leaves the base path. Hop-by-hop headers are dropped; under the proxy's own client keys the
operator's key replaces the client's. While ``[tools] allow``/``deny`` is set, a body that
offers tools is refused (`bot_toolsearch._proxy.passthrough`). An upstream that fails is 502.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any
from urllib.parse import quote, urlsplit

from bot_toolsearch._wrap.engine import Engine

from .body import read_body
from .passthrough import refusal
from .request import Disconnected, Refused, Request, until_disconnect, within
from .upstream_http import AnswerTooLarge, failure_text

__all__ = ["Forward"]

logger = logging.getLogger("bot_toolsearch")

_INLINE_CHECK = 64 * 1024
"""Largest pass-through body checked for tool fields on the event loop (larger: a thread)."""
_HOP_HEADERS = frozenset(
    {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "accept-encoding"}
)


class Forward:
    """The pass-through of every other path.

    Args:
        upstream: the upstream's base URL.
        http: the proxy's HTTP client.
        engine: the wrapper's engine (its settings' ``[tools]``).
        max_body: the largest body in bytes.
        timeout: seconds the whole exchange may take (its answer read whole).
    """

    def __init__(
        self, upstream: str, http: Any, engine: Engine, max_body: int, timeout: float
    ) -> None:
        parts = urlsplit(upstream)
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._base_path = parts.path.rstrip("/")
        self._host = parts.hostname
        self._http, self._engine, self._max_body = http, engine, max_body
        self._timeout = timeout

    async def __call__(self, request: Request) -> None:
        """Forward ``request`` and relay the upstream's answer."""
        scope, receive, send, rest = request.scope, request.receive, request.send, request.rest
        body = await read_body(receive, request.headers, self._max_body)
        tools = self._engine.snapshot().tools
        if tools.allow or tools.deny:
            check = functools.partial(refusal, scope["method"], rest, body)
            why = await asyncio.to_thread(check) if len(body) > _INLINE_CHECK else check()
            if why is not None:
                raise Refused(403, why, code="tool_not_permitted")
        url = self._origin + quote(self._base_path + rest, safe="/:@!$&'()*+,;=~")
        query = scope.get("query_string") or b""
        if query:
            url += "?" + query.decode("latin-1")
        forward = [
            (k, v) for k, v in scope["headers"] if k.decode("latin-1").lower() not in _HOP_HEADERS
        ]
        admitted = request.admitted
        if admitted.keyed:  # the client's key is the proxy's: the operator's goes on
            forward = [
                (k, v)
                for k, v in forward
                if k.lower() not in (b"authorization", b"api-key", b"x-api-key")
            ]
            key = admitted.upstream_key(None)
            forward.append((b"authorization", f"Bearer {key}".encode()))
        outgoing = self._http.build_request(scope["method"], url, headers=forward, content=body)
        if outgoing.url.host != self._host:  # never: the URL is built from parsed parts
            raise Refused(400, "the request target is not a path")
        try:
            exchange = within(self._timeout, self._http.send(outgoing))
            response = await until_disconnect(receive, exchange)
        except Disconnected:
            raise
        except TimeoutError:
            logger.warning("proxy: upstream timed out after %s s", self._timeout)
            raise Refused(
                502,
                f"upstream failed: no answer within {self._timeout:g} s (serve --timeout)",
                "upstream_error",
                code="upstream_timeout",
            ) from None
        except Exception as exc:  # any transport failure of the SDK's HTTP library
            logger.warning("proxy: upstream request failed: %s", failure_text(exc))
            failed = f"upstream failed: {failure_text(exc)}"
            code = "upstream_answer_too_large" if isinstance(exc, AnswerTooLarge) else None
            raise Refused(502, failed, "upstream_error", code=code) from None
        if response.status_code >= 500:
            raise Refused(502, f"upstream failed: {response.text[:2000]}", "upstream_error")
        out = [(b"content-length", str(len(response.content)).encode())]
        content_type = response.headers.get("content-type")
        if content_type:
            out.append((b"content-type", content_type.encode("latin-1")))
        await send({"type": "http.response.start", "status": response.status_code, "headers": out})
        await send({"type": "http.response.body", "body": response.content})
