"""`NativeCache`: a list in the tool-search dialect is read once, by the identity of its
entries, and found again by the bytes it was parsed from once they are remembered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot_toolsearch import CatalogError
from bot_toolsearch._wrap.native import parse_native
from bot_toolsearch._wrap.native_cache import NativeCache


def _deferred(n: int) -> list[dict[str, Any]]:
    return [{"type": "function", "name": f"t{i}", "defer_loading": True} for i in range(n)]


def test_the_same_objects_are_read_once() -> None:
    cache = NativeCache()
    tools = _deferred(50)
    first = cache.read(tools, "responses")
    again = cache.read(list(tools), "responses")  # a new list around the same objects
    assert again is first
    assert cache.reads == 1
    equal = json.loads(json.dumps(tools))  # equal values, other objects: read anew
    assert cache.read(equal, "responses") is not first
    assert cache.read(tools, "chat") is not first  # another API reads another way
    assert cache.reads == 3


def test_a_request_with_a_cached_list_leaves_the_cached_read_as_read() -> None:
    cache = NativeCache()
    tools = [{"type": "tool_search", "execution": "client"}, *_deferred(3)]
    output = {"type": "tool_search_output", "call_id": "c", "tools": [{"name": "new"}]}
    kwargs = {"model": "m", "input": [output], "tools": tools}
    made = parse_native(kwargs, "responses", reader=cache.read)
    assert made is not None
    assert "new" in made.definitions
    assert "new" not in cache.read(tools, "responses").entries  # the request's own copy
    plain = parse_native(
        {"model": "m", "input": "x", "tools": tools}, "responses", reader=cache.read
    )
    assert plain is not None
    assert "new" not in plain.definitions
    assert cache.reads == 1


def test_bytes_find_the_objects_once_remembered() -> None:
    cache = NativeCache()
    tools = _deferred(5)
    raw = json.dumps({"tools": tools}).encode()
    start = raw.index(b"[")
    source = raw[start:-1]
    assert not cache.add_source(tools, source)  # never read: nothing to remember them by
    cache.read(tools, "chat")
    assert cache.add_source(tools, source)
    found = cache.by_source(raw, start, len(raw) - 1)
    assert found is not None
    assert all(a is b for a, b in zip(found, tools, strict=True))
    other = raw.replace(b"t4", b"t5")
    assert cache.by_source(other, start, len(other) - 1) is None


def test_a_refused_list_is_not_kept() -> None:
    cache = NativeCache()
    group = {"type": "namespace", "name": "a", "tools": [{"type": "function", "name": "b"}]}
    with pytest.raises(CatalogError):
        cache.read([{"type": "function", "name": "a.b"}, group], "responses")
    assert cache.reads == 0


def test_at_most_size_lists_are_kept() -> None:
    cache = NativeCache(size=2)
    lists = [_deferred(3) for _ in range(3)]
    for tools in lists:
        cache.read(tools, "responses")
    assert cache.cached(lists[0], "responses") is None
    assert cache.cached(lists[2], "responses") is not None
