"""``with_raw_response`` and ``with_streaming_response`` of the wrapped ``create`` methods.

Frameworks reach ``create`` through these too: the OpenAI Agents SDK streams Responses with
``responses.with_streaming_response.create``, LangChain asks ``with_raw_response`` for
headers. A request the wrapper passes through (no tools, tool search off) goes to the given
client's own ``with_raw_response``/``with_streaming_response``, HTTP details and all. A request
with tool search may take several upstream requests, so there is no one HTTP response to
show: ``parse()`` returns what ``create`` returns (the final answer, or the caller's stream),
``request_id`` is ``None`` and ``headers`` is empty.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, Protocol

import openai

__all__ = ["AsyncRaw", "AsyncStreaming", "SyncRaw", "SyncStreaming"]

# The ``Headers`` class of the HTTP library the installed SDK is built on (httpx for openai 2,
# httpx2 for openai 3): the package declares only ``openai``, so it imports neither by name.
_HEADERS: Any = next(
    sys.modules[base.__module__.partition(".")[0]].Headers
    for base in openai.DefaultHttpxClient.__mro__
    if base.__module__.partition(".")[0] not in ("openai", "builtins")
)


class _AsyncResource(Protocol):
    _inner: Any

    async def _aplan(self, kwargs: dict[str, Any]) -> Any: ...

    async def _run(self, plan: Any, kwargs: dict[str, Any]) -> Any: ...


class _SyncResource(Protocol):
    _inner: Any

    def _plan(self, kwargs: dict[str, Any]) -> Any: ...

    def _run(self, plan: Any, kwargs: dict[str, Any]) -> Any: ...


class _Handled:
    """The stand-in for the HTTP response of a call the wrapper handled."""

    request_id: str | None = None
    status_code = 200

    def __init__(self, result: Any) -> None:
        self._result = result
        self.headers = _HEADERS()

    def parse(self) -> Any:
        """What ``create`` returned."""
        return self._result


class _AsyncHandled(_Handled):
    async def parse(self) -> Any:  # async, as AsyncAPIResponse.parse
        """What ``create`` returned."""
        return self._result


class AsyncRaw:
    """``<resource>.with_raw_response`` of an async wrapped resource."""

    def __init__(self, resource: _AsyncResource) -> None:
        self._resource = resource

    async def create(self, **kwargs: Any) -> Any:
        """As the SDK's: the response, whose ``parse()`` gives what ``create`` gives."""
        plan = await self._resource._aplan(kwargs)
        if plan is None:
            return await self._resource._inner.with_raw_response.create(**kwargs)
        return _Handled(await self._resource._run(plan, kwargs))


class SyncRaw:
    """``<resource>.with_raw_response`` of a sync wrapped resource."""

    def __init__(self, resource: _SyncResource) -> None:
        self._resource = resource

    def create(self, **kwargs: Any) -> Any:
        """As the SDK's: the response, whose ``parse()`` gives what ``create`` gives."""
        plan = self._resource._plan(kwargs)
        if plan is None:
            return self._resource._inner.with_raw_response.create(**kwargs)
        return _Handled(self._resource._run(plan, kwargs))


class AsyncStreaming:
    """``<resource>.with_streaming_response`` of an async wrapped resource."""

    def __init__(self, resource: _AsyncResource) -> None:
        self._resource = resource

    def create(self, **kwargs: Any) -> _AsyncContext:
        """As the SDK's: an async context manager giving the response."""
        return _AsyncContext(self._resource, kwargs)


class _AsyncContext:
    def __init__(self, resource: _AsyncResource, kwargs: dict[str, Any]) -> None:
        self._resource = resource
        self._kwargs = kwargs
        self._inner: Any = None
        self._result: Any = None

    async def __aenter__(self) -> Any:
        plan = await self._resource._aplan(self._kwargs)
        if plan is None:
            self._inner = self._resource._inner.with_streaming_response.create(**self._kwargs)
            return await self._inner.__aenter__()
        self._result = await self._resource._run(plan, self._kwargs)
        return _AsyncHandled(self._result)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._inner is not None:
            await self._inner.__aexit__(exc_type, exc, tb)
        elif callable(getattr(self._result, "close", None)):
            await self._result.close()


class SyncStreaming:
    """``<resource>.with_streaming_response`` of a sync wrapped resource."""

    def __init__(self, resource: _SyncResource) -> None:
        self._resource = resource

    def create(self, **kwargs: Any) -> _SyncContext:
        """As the SDK's: a context manager giving the response."""
        return _SyncContext(self._resource, kwargs)


class _SyncContext:
    def __init__(self, resource: _SyncResource, kwargs: dict[str, Any]) -> None:
        self._resource = resource
        self._kwargs = kwargs
        self._inner: Any = None
        self._result: Any = None

    def __enter__(self) -> Any:
        plan = self._resource._plan(self._kwargs)
        if plan is None:
            self._inner = self._resource._inner.with_streaming_response.create(**self._kwargs)
            return self._inner.__enter__()
        self._result = self._resource._run(plan, self._kwargs)
        return _Handled(self._result)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._inner is not None:
            self._inner.__exit__(exc_type, exc, tb)
        elif callable(getattr(self._result, "close", None)):
            self._result.close()
