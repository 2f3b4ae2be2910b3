"""A non-streamed round posted with the SDK's own HTTP client, the SDK's request built once.

The SDK's ``post`` builds every request anew: request options copied per attempt, headers
merged and validated, auth and provider hooks, a raw-response wrapper around the answer
(about half the proxy's CPU per request beyond a byte pass-through, issue 44). For a client
that is a plain ``openai.AsyncOpenAI`` (no provider, workload identity, key provider, custom
auth or idempotency header) none of that changes between two rounds, so the SDK builds it
once per client and path (`_template`: the URL with its query, the headers, the timeout),
checked against the client's settings before each use, and each round is one
``build_request``/``send`` on the client's own HTTP client with the JSON the SDK's encoder
makes, the directory's spliced in as encoded once (`bot_toolsearch._wrap.encoded`). A first
attempt's request is made from the headers merged once, as ``build_request`` would make it,
while the HTTP client's own headers, cookies and query are unchanged.
What the caller sees is what ``post`` gives, from the SDK's own parts:

- retries: ``max_retries`` attempts more on a timeout, a connection error, and a status the
  SDK's ``_should_retry`` takes (408, 409, 429, 5xx, ``x-should-retry``; not past a
  ``retry-after`` longer than the SDK waits, two minutes in openai 3.63), waiting what its
  ``_calculate_retry_timeout`` says (``retry-after-ms``/``retry-after``, else its backoff),
  with ``x-stainless-retry-count``;
- the timeout: the client's, per attempt, as the HTTP client applies it;
- errors: ``APITimeoutError``, ``APIConnectionError``, and the status error the SDK's
  ``_make_status_error_from_response`` makes of the last answer (its body read);
- the reply: the SDK's ``LegacyAPIResponse`` over the HTTP response, as
  ``with_raw_response`` returns it.

Anything else (a stream, per-call headers, query or timeout, another client class, an SDK
whose parts differ) takes the SDK's ``post`` (`bot_toolsearch._wrap.send`).
"""

from __future__ import annotations

import logging
import ssl
import sys
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import openai
from openai._legacy_response import LegacyAPIResponse
from openai._models import FinalRequestOptions

__all__ = ["post_direct"]

from . import encoded

_dumps: Callable[[Any], bytes] | None = None if encoded.sdk_dumps is None else encoded.dumps
"""The SDK's own JSON encoder (openai 3), the directory spliced in pre-encoded
(`bot_toolsearch._wrap.encoded`); without it, every round takes ``post``."""

_SDK_LOG = logging.getLogger("openai._base_client")
"""The SDK's own logger, where its ``post`` says it retries."""
_RAW_RESPONSE = {"X-Stainless-Raw-Response": "true"}
"""The header ``with_raw_response`` sends: the request goes out as the SDK's would."""
_RETRY_COUNT = "x-stainless-retry-count"
_LEFT_OUT = frozenset({_RETRY_COUNT, "content-length", "transfer-encoding"})


class _Template:
    """What the SDK would send for one client and path, but the body and the retry count."""

    __slots__ = (
        "errors",
        "extensions",
        "first",
        "headers",
        "merged_from",
        "options",
        "source",
        "stream",
        "timeouts",
        "url",
    )

    def __init__(self, client: Any, path: str, source: tuple[Any, ...]) -> None:
        if _base_url(client) is not client._base_url:
            raise LookupError("the base URL is not the one `_source` reads")
        self.source = source
        self.options = FinalRequestOptions.construct(
            method="post", url=path, json_data={}, headers=_RAW_RESPONSE
        )
        built = client._build_request(self.options, retries_taken=0)
        self.url = built.url
        self.extensions = {"timeout": built.extensions["timeout"]}
        sent = client._build_headers(self.options, retries_taken=0)
        self.headers = [(k, v) for k, v in sent.multi_items() if k.lower() not in _LEFT_OUT]
        http = client._client
        library = _library(http)
        self.stream: Callable[[bytes], Any] = library.ByteStream
        self.merged_from = list(http.headers._list)
        sample = http.build_request(
            "POST",
            self.url,
            headers=[*self.headers, (_RETRY_COUNT, "0")],
            content=b"{}",
            extensions=self.extensions,
        )
        self.first: Any = _first(sample)
        """What ``build_request`` made of the first attempt but its body (`_request`: used
        while the client's headers, cookies and query are still the ones merged here): the
        request's attributes, and its headers' (``Host``, the HTTP client's own, the SDK's)
        but the body's ``Content-Length``, last; ``None`` when they are not the ones known."""
        self.timeouts: tuple[type[BaseException], ...] = (library.TimeoutException,)
        self.errors: tuple[type[BaseException], ...] = (
            library.RequestError,
            ssl.SSLError,
            anyio.EndOfStream,
        )


_TEMPLATES: weakref.WeakKeyDictionary[Any, dict[str, _Template]] = weakref.WeakKeyDictionary()
_REFUSED: weakref.WeakSet[Any] = weakref.WeakSet()
"""Clients whose SDK's private parts are not the ones known: its own ``post`` always."""


def _library(http: Any) -> Any:
    """The HTTP library ``http`` (the SDK's HTTP client) is built on: httpx or httpx2."""
    return next(
        sys.modules[base.__module__.partition(".")[0]]
        for base in type(http).__mro__
        if base.__module__.partition(".")[0] not in ("openai", "builtins")
    )


def _base_url(client: Any) -> Any:
    """The client's base URL where the SDK keeps it: ``_configured_base_url`` (openai 3, read
    without the ``_base_url`` property over it and its import per call), else ``_base_url``
    (openai 2, a plain attribute)."""
    found = client.__dict__.get("_configured_base_url")
    return client._base_url if found is None else found


def _source(client: Any) -> tuple[Any, ...]:
    """The client settings a template is made of (a template made of others is made again).

    The base URL is read where the SDK's ``base_url`` property reads it (that property and
    ``_base_url`` over it, with an import per call, cost most of a check); a template is made
    only while the two are the same object (`_Template`), else the client takes ``post``."""
    return (
        client.api_key,
        client.organization,
        client.project,
        client._custom_headers,
        client._custom_query,
        _base_url(client),
        client.timeout,
        client._platform,
        client._client,
    )


def _plain(client: Any) -> bool:
    """Whether ``client`` sends exactly what the template holds: no hook of its own."""
    return (
        type(client) is openai.AsyncOpenAI
        and _dumps is not None
        and client._platform is not None  # found by the SDK's first request
        and getattr(client, "_provider_runtime", None) is None
        and getattr(client, "_workload_identity_auth", None) is None
        and getattr(client, "_api_key_provider", None) is None
        and getattr(client, "_idempotency_header", None) is None
        and client.custom_auth is None
        and bool(client.api_key)
    )


def _template(client: Any, path: str) -> _Template | None:
    """The client's template for ``path``, made (by the SDK) when missing or out of date;
    ``None`` when the client is not plain, or its SDK's parts are not the ones known."""
    try:
        source = _source(client)
    except AttributeError:
        return None
    made = _TEMPLATES.get(client)
    found = None if made is None else made.get(path)
    if found is not None and found.source == source:
        return found
    if not _plain(client) or client in _REFUSED:
        return None
    try:
        template = _Template(client, path, source)
    except Exception:  # an SDK whose private parts differ: its own ``post`` then
        _REFUSED.add(client)
        return None
    _TEMPLATES.setdefault(client, {})[path] = template
    return template


async def post_direct(
    client: Any,
    path: str,
    body: Mapping[str, Any],
    extra: Mapping[str, Any] | None,
    cast_to: type[Any],
) -> Any | None:
    """``client.post(path, body=body, options={"extra_json": extra}, cast_to=cast_to)`` with
    the raw-response header, sent as the SDK sends it (see the module); ``None`` when
    ``client`` needs the SDK's ``post`` (then nothing was sent).

    Raises:
        openai.APIStatusError: the upstream's last answer was not 2xx.
        openai.APITimeoutError: the last attempt timed out.
        openai.APIConnectionError: the last attempt could not connect or was cut.
    """
    template = _template(client, path)
    if template is None:
        return None
    if extra:
        body = {**body, **extra}
    body = {k: v for k, v in body.items() if not isinstance(v, openai.Omit)}
    assert _dumps is not None  # a template is made only with it
    content = _dumps(body)
    http = client._client
    retries = client.max_retries
    for taken in range(retries + 1):
        headers = template.headers
        if taken:
            sent = client._build_headers(template.options, retries_taken=taken)
            headers = [(k, v) for k, v in sent.multi_items() if k.lower() not in _LEFT_OUT]
        request = (
            _request(http, template, content)
            if not taken
            else http.build_request(
                "POST",
                template.url,
                headers=[*headers, (_RETRY_COUNT, str(taken))],
                content=content,
                extensions=template.extensions,
            )
        )
        left = retries - taken
        try:
            response = await http.send(request)
        except template.timeouts as exc:
            if left > 0:
                await _wait(client, template, taken, None)
                continue
            raise openai.APITimeoutError(request=request) from exc
        except openai.OpenAIError:
            raise
        except template.errors as exc:
            if left > 0:
                await _wait(client, template, taken, None)
                continue
            raise openai.APIConnectionError(request=request) from exc
        if not response.is_success:
            if left > 0 and client._should_retry(response):
                await response.aclose()
                await _wait(client, template, taken, response.headers)
                continue
            raise client._make_status_error_from_response(response) from None
        return LegacyAPIResponse(
            raw=response,
            cast_to=cast_to,
            client=client,
            stream=False,
            stream_cls=None,
            options=template.options,
            retries_taken=taken,
        )
    raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover


_KNOWN_REQUEST = frozenset(("method", "url", "headers", "extensions", "stream", "_content"))
"""The attributes of a read request (httpx and httpx2): the ones `_request` sets."""


def _first(sample: Any) -> tuple[type[Any], dict[str, Any], type[Any], list[Any], Any] | None:
    """A sample first request's parts `_request` makes the next ones of: its class and
    attributes, its headers' class, items but the ``Content-Length`` (last) and encoding;
    ``None`` when the request or its headers hold anything else."""
    headers = sample.headers
    parts = vars(sample)
    if (
        parts.keys() != _KNOWN_REQUEST
        or vars(headers).keys() != {"_list", "_encoding"}
        or not headers._list
        or headers._list[-1] != (b"Content-Length", b"content-length", b"2")
        or type(sample.stream).__name__ != "ByteStream"
    ):
        return None
    return type(sample), parts, type(headers), headers._list[:-1], headers._encoding


def _request(http: Any, template: _Template, content: bytes) -> Any:
    """The first attempt's request: what ``http.build_request`` makes of the template (the
    same method, URL, headers in the same order, body and extensions: the same attributes,
    `_first`), made of the parts it made once, so that neither the headers (18 with the
    SDK's) are normalised and merged again nor the request built (most of
    ``build_request``'s cost); ``build_request`` itself when the client's headers, cookies
    or query are no longer the ones merged, or the body is empty."""
    first = template.first
    if (
        first is None
        or not content
        or http.headers._list != template.merged_from
        or http.cookies.jar._cookies  # (a jar emptied by name may keep empty folders)
        or http.params
    ):
        return http.build_request(
            "POST",
            template.url,
            headers=[*template.headers, (_RETRY_COUNT, "0")],
            content=content,
            extensions=template.extensions,
        )
    request_class, parts, headers_class, items, encoding = first
    headers = headers_class.__new__(headers_class)
    headers._list = [*items, (b"Content-Length", b"content-length", b"%d" % len(content))]
    headers._encoding = encoding
    request = request_class.__new__(request_class)
    request.__dict__.update(parts)
    request.headers = headers
    request.extensions = dict(template.extensions)
    request.stream = template.stream(content)
    request._content = content
    return request


async def _wait(client: Any, template: _Template, taken: int, headers: Any) -> None:
    """Wait before the next attempt as the SDK does, and log it as the SDK does."""
    retries = client.max_retries
    wait = client._calculate_retry_timeout(retries - taken, template.options, headers)
    _SDK_LOG.info("Retrying request in %f seconds (retry %i of %s)", wait, taken + 1, retries)
    await anyio.sleep(wait)
