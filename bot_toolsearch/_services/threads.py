"""Work an async door must not run on its event loop: searches that may call an endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["off_loop"]

_T = TypeVar("_T")


async def off_loop(semantic: bool, function: Callable[..., _T], *args: Any) -> _T:
    """``function(*args)``, in a worker thread when it may call the embeddings endpoint
    (``semantic``), so an async door's event loop never waits on it."""
    if not semantic:
        return function(*args)
    return await asyncio.to_thread(function, *args)
