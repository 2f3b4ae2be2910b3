"""`ToolFacts`: whether a tool list speaks the dialect and how many tools it names, walked
once for the very objects of a remembered list, and never kept for a list not remembered."""

from __future__ import annotations

import json
from typing import Any

from bot_toolsearch._wrap.native import count_named, speaks_native
from bot_toolsearch._wrap.tool_facts import ToolFacts
from tests.wrap._tools import chat_tools


def _namespace(n: int) -> dict[str, Any]:
    members = [{"type": "function", "name": f"n{i}"} for i in range(n)]
    return {"type": "namespace", "name": "ns", "description": "d", "tools": members}


def test_a_remembered_list_is_walked_once_and_found_by_its_objects() -> None:
    facts = ToolFacts()
    tools = chat_tools()
    first = facts.of(tools, "chat", remember=True)
    assert facts.of(list(tools), "chat", remember=True) is first  # a new list, same objects
    assert facts.walks == 1
    assert (first.native, first.named) == (False, len(tools))
    equal = json.loads(json.dumps(tools))  # equal values, other objects: walked anew
    assert facts.of(equal, "chat", remember=True) == first
    assert facts.of(tools, "responses", remember=True) is not first  # another API
    assert facts.walks == 3


def test_a_list_not_remembered_is_walked_each_time_and_not_kept() -> None:
    facts = ToolFacts()
    tools = chat_tools()
    facts.of(tools, "chat", remember=False)
    facts.of(tools, "chat", remember=False)
    assert facts.walks == 2
    assert facts._entries == []


def test_the_facts_are_those_of_the_walks_they_stand_for() -> None:
    facts = ToolFacts()
    lists: list[tuple[list[Any], str]] = [
        (chat_tools(), "chat"),
        ([{"type": "function", "name": "a", "defer_loading": True}], "responses"),
        ([{"type": "tool_search"}, _namespace(5)], "responses"),
        ([{"type": "function", "function": {"name": "a", "defer_loading": True}}], "chat"),
        ([_namespace(3), {"type": "function", "name": "b"}], "responses"),
    ]
    for tools, api in lists:
        for _ in range(2):
            got = facts.of(tools, api, remember=True)  # type: ignore[arg-type]
            assert got.native == speaks_native(tools, api)  # type: ignore[arg-type]
            assert got.named == count_named({"tools": tools}, api)[0]  # type: ignore[arg-type]
    assert facts.walks == len(lists)


def test_named_counts_the_resent_tools_of_the_input_every_time() -> None:
    facts = ToolFacts()
    tools = [{"type": "function", "name": "a"}, _namespace(4)]
    output = {"type": "tool_search_output", "call_id": "c", "tools": [_namespace(2)]}
    body = {"model": "m", "tools": tools, "input": [output]}
    assert facts.named(body, "responses", remember=True) == count_named(body, "responses")
    assert facts.named(body, "responses", remember=True) == (5, 2)
    body["input"] = [output, output]
    assert facts.named(body, "responses", remember=True) == (5, 4)
    assert facts.named({"model": "m", "tools": "x"}, "chat", remember=True) == (0, 0)
    assert facts.walks == 1


def test_only_the_newest_lists_are_kept() -> None:
    facts = ToolFacts(size=2)
    lists = [chat_tools() for _ in range(3)]
    for tools in lists:
        facts.of(tools, "chat", remember=True)
    facts.of(lists[0], "chat", remember=True)  # the oldest was dropped: walked again
    assert facts.walks == 4
    assert len(facts._entries) == 2
