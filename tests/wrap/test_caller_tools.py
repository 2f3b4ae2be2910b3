"""ToolsCache: an unchanged caller tool list is indexed once, a changed one again; the cache
counts what a list holds and keeps few lists no upstream accepted."""

from __future__ import annotations

import copy
import json
from typing import Any

from bot_toolsearch import BotSettings
from bot_toolsearch._wrap.caller_tools import _UNACCEPTED_KEPT, ToolsCache

from ._tools import chat_tools


def test_the_same_list_object_reuses_the_index() -> None:
    cache = ToolsCache()
    tools = chat_tools()
    assert cache.get(tools, "chat", "-_-") is cache.get(tools, "chat", "-_-")


def test_a_list_rebuilt_around_the_same_parameters_reuses_the_index() -> None:
    cache = ToolsCache()
    tools = chat_tools()
    first = cache.get(tools, "chat", "-_-")
    rebuilt = [{**tool, "function": {**tool["function"]}} for tool in tools]
    assert cache.get(rebuilt, "chat", "-_-") is first
    assert cache.get(tuple(copy.deepcopy(tools)), "chat", "-_-") is first


def test_a_changed_description_or_schema_is_indexed_again() -> None:
    cache = ToolsCache()
    tools = chat_tools()
    first = cache.get(tools, "chat", "-_-")
    described = copy.deepcopy(tools)
    described[3]["function"]["description"] = "Plays a chess move."
    again = cache.get(described, "chat", "-_-")
    assert again is not first
    assert again.catalog is not None
    assert again.catalog.description(described[3]["function"]["name"]) == "Plays a chess move."
    schema = copy.deepcopy(tools)
    schema[0]["function"]["parameters"]["properties"]["units"] = {"type": "string"}
    assert cache.get(schema, "chat", "-_-") not in (first, again)


def test_api_delimiter_and_length_are_part_of_the_key() -> None:
    cache = ToolsCache()
    tools = chat_tools()
    first = cache.get(tools, "chat", "-_-")
    first.pin()  # accepted: not among the few unaccepted lists kept
    cache.get(tools, "chat", "__").pin()
    assert cache.get(tools, "chat", "__") is not first
    assert cache.get(tools[:-1], "chat", "-_-") is not first
    assert cache.get(tools, "chat", "-_-") is first


def test_the_cache_is_bounded_and_most_recently_used_stays() -> None:
    cache = ToolsCache(size=2)
    a, b, c = chat_tools(70), chat_tools(71), chat_tools(72)
    index_a = cache.get(a, "chat", "-_-")
    cache.get(b, "chat", "-_-")
    assert cache.get(a, "chat", "-_-") is index_a  # a is now the most recent
    cache.get(c, "chat", "-_-")  # evicts b, not a
    assert cache.get(a, "chat", "-_-") is index_a


class _Hostile:
    """A caller entry whose comparison raises."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing me")

    __hash__ = None  # type: ignore[assignment]


def test_an_entry_that_cannot_be_compared_is_indexed_each_time_without_a_crash() -> None:
    cache = ToolsCache()
    tools: list[Any] = [*chat_tools(), _Hostile()]
    first = cache.get(tools, "chat", "-_-")
    rebuilt = [*chat_tools(), _Hostile()]
    second = cache.get(rebuilt, "chat", "-_-")
    assert second is not first
    assert len(second.others) == 1
    assert isinstance(second.others[0], _Hostile)


def test_lists_no_upstream_accepted_are_kept_few_and_leave_first() -> None:
    cache = ToolsCache(size=20)
    mine = cache.get(chat_tools(70), "chat", "-_-")
    mine.pin()
    strangers = [cache.get(chat_tools(71 + i), "chat", "-_-") for i in range(_UNACCEPTED_KEPT + 3)]
    assert len(cache) == 1 + _UNACCEPTED_KEPT  # the accepted list, the newest unaccepted ones
    assert cache.lookup(chat_tools(70), "chat", "-_-") is mine
    assert cache.lookup(chat_tools(70 + len(strangers)), "chat", "-_-") is strangers[-1]
    assert cache.lookup(chat_tools(71), "chat", "-_-") is None


def test_the_cache_counts_what_a_list_holds_index_included() -> None:
    settings = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
    cache = ToolsCache()
    tools = chat_tools()
    indexed = cache.get(tools, "chat", "-_-")
    json_size = len(json.dumps(tools))
    unindexed = cache.cached_bytes
    assert unindexed >= 5 * json_size  # entries and catalog, not the JSON bytes
    indexed.pin()
    indexed.prepare(settings)
    assert cache.cached_bytes >= unindexed + 2 * json_size  # the search index counts
    small = ToolsCache(size=10, max_bytes=unindexed + json_size)
    first = small.get(tools, "chat", "-_-")
    first.pin()
    first.prepare(settings)
    small.get(chat_tools(71), "chat", "-_-")  # over the bound: the older list leaves
    assert small.lookup(tools, "chat", "-_-") is None


def test_accepting_a_built_list_again_starts_nothing_until_its_index_is_gone() -> None:
    settings = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
    found = ToolsCache().get(chat_tools(), "chat", "-_-")
    assert found.catalog is not None
    first = found.accept(settings)
    assert first is not None
    first.result(timeout=30)
    assert found.prepared(settings)
    assert found.accept(settings) is None  # built: nothing to start, nothing under way
    found.catalog._index = None  # the index dropped (as a cache would)
    again = found.accept(settings)
    assert again is not None
    assert again is not first
    again.result(timeout=30)
    assert found.prepared(settings)


def test_the_newest_lists_own_tuple_is_found_as_the_general_path_finds_it() -> None:
    # The newest entry's very tuple is answered without the lock; any other key takes the
    # general path, which answers the same and moves what it finds to the front.
    cache = ToolsCache()
    tools = chat_tools()
    first = cache.get(tools, "chat", "-_-")
    first.pin()
    (entry,) = cache._entries
    held = entry.elements
    assert cache.lookup(held, "chat", "-_-") is first
    assert cache.lookup(held, "responses", "-_-") is None  # the same objects, another key
    assert cache.lookup(held, "chat", "__") is None
    other = cache.get(chat_tools(71), "chat", "-_-")
    other.pin()
    assert cache._entries[0].tools is other
    assert cache.lookup(held, "chat", "-_-") is first  # not the newest: the general path
    assert cache._entries[0].tools is first
    assert cache._entries[0].elements is held
    assert cache.lookup(held, "chat", "-_-") is first  # the newest again
    assert cache.lookup(list(held), "chat", "-_-") is first  # equal objects, a new tuple
    assert cache._entries[0].elements is not held  # the general path keeps the newest tuple
