"""Namespaces in a session: ``select:ns.*``, paging, descriptions in search, the directory."""

from __future__ import annotations

import json
from typing import Any

from bot_toolsearch._core.query import SelectQuery, namespace_item, parse_query
from bot_toolsearch._core.session import NAMES_PAGE
from bot_toolsearch.core import ToolCatalog, ToolSearchSession

FIELDS = ["loaded", "already_loaded", "not_found", "truncated", "total_deferred_tools"]


def fn(name: str, description: str = "") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description}}


def catalog() -> ToolCatalog:
    tools = [fn(f"gh.op_{i:03d}", "Change a repository.") for i in range(120)]
    tools += [fn("mail.send", "Send an email."), fn("mail.read", "Read the inbox.")]
    tools += [fn("ghost", "Not in gh."), fn("send_message"), fn("end")]
    tools += [fn("zoo.feed", "Feed the animals in the enclosure.")]
    return ToolCatalog(tools)


def session(**kwargs: Any) -> ToolSearchSession:
    kwargs.setdefault("always_loaded", ["send_message", "end"])
    return ToolSearchSession(catalog(), **kwargs)


def test_the_parser_knows_namespace_items() -> None:
    assert namespace_item("gh.*:3") is not None
    assert namespace_item("gh.*:0") is None
    assert namespace_item(".*") is None
    assert namespace_item("gh.*:x") is None
    assert parse_query("  gh.*  ") == SelectQuery(text="gh.*", names=("gh.*",))
    assert not isinstance(parse_query("gh.* tools"), SelectQuery)


def test_a_namespace_that_fits_the_cap_is_loaded_whole() -> None:
    s = session()
    result = json.loads(s.execute({"query": "select:mail.*"}))
    assert list(result) == FIELDS  # no names field: the fixed five only
    assert result["loaded"] == ["mail.read", "mail.send"]
    # Bare form, already loaded now.
    again = s.search("MAIL.*")
    assert again.already_loaded == ("mail.read", "mail.send")
    assert again.loaded == ()


def test_a_namespace_larger_than_the_cap_lists_its_names_a_page_at_a_time() -> None:
    s = session(max_results=5)
    first = json.loads(s.execute({"query": "select:gh.*"}))
    assert first["loaded"] == []
    assert first["truncated"] is True
    assert first["names"] == [f"gh.op_{i:03d}" for i in range(NAMES_PAGE)]
    assert first["next_query"] == "select:gh.*:2"
    assert s.loaded_tool_names == frozenset({"send_message", "end"})
    second = s.search(first["next_query"])
    assert second.names[0] == f"gh.op_{NAMES_PAGE:03d}"
    last = s.search("select:gh.*:3")
    assert len(last.names) == 120 - 2 * NAMES_PAGE
    assert last.next_query is None
    assert s.search("gh.*:4").not_found == ("gh.*:4",)
    # The model then selects exactly what it needs.
    picked = s.search("select:gh.op_007,gh.op_099")
    assert picked.loaded == ("gh.op_007", "gh.op_099")


def test_max_results_decides_between_loading_and_listing() -> None:
    s = session(max_results=5)
    assert s.search("select:mail.*", max_results=1).names == ("mail.read", "mail.send")
    assert s.search("select:mail.*", max_results=2).loaded == ("mail.read", "mail.send")


def test_hidden_tools_are_not_in_a_namespace_and_unknown_namespaces_are_not_found() -> None:
    s = session(hidden=["mail.send"])
    assert s.search("select:mail.*").loaded == ("mail.read",)
    assert s.search("select:nope.*,mail.read").not_found == ("nope.*",)
    assert session(hidden=["mail.send", "mail.read"]).search("mail.*").not_found == ("mail.*",)
    # A namespace is a dotted prefix: "ghost" is not in "gh".
    assert "ghost" not in session(max_results=200).search("select:gh.*").loaded


def test_keyword_search_also_matches_namespace_descriptions() -> None:
    described = session(namespaces={"zoo": "Zoo keeping: giraffes and penguins"})
    assert described.search("giraffes").loaded == ("zoo.feed",)
    assert session().search("giraffes").not_found == ("giraffes",)
    # A tool's own words still come first.
    ranked = session(namespaces={"mail": "Email: inbox and animals"}).search("feed animals")
    assert ranked.loaded[0] == "zoo.feed"


def test_the_directory_is_computed_once_and_shared() -> None:
    shared = catalog()
    one = ToolSearchSession(shared, always_loaded=["end"], directory_budget=60)
    two = ToolSearchSession(shared, always_loaded=["end"], directory_budget=60)
    assert one.directory is two.directory
    assert one.directory.grouped
    assert "gh.* (120 tools)" in one.directory.text
    roomy = ToolSearchSession(shared, always_loaded=["end"], directory_budget=0)
    assert not roomy.directory.grouped
    assert roomy.directory.text.splitlines()[1:-1] == list(roomy.deferred_tool_names)


def test_a_spelled_directory_is_its_own_and_shared_by_the_same_spelling() -> None:
    class Wire:
        def to_wire(self, name: str) -> str:
            return name.replace(".", "-_-")

    shared, names = catalog(), Wire()
    dotted = ToolSearchSession(shared, always_loaded=["end"], directory_budget=0)
    spelled = ToolSearchSession(
        shared, always_loaded=["end"], directory_budget=0, directory_spelling=names.to_wire
    )
    again = ToolSearchSession(
        shared, always_loaded=["end"], directory_budget=0, directory_spelling=names.to_wire
    )
    assert spelled.directory is again.directory  # a bound method of one object: one key
    assert dotted.directory is not spelled.directory
    lines = spelled.directory.text.splitlines()[1:-1]
    assert lines == [n.replace(".", "-_-") for n in dotted.deferred_tool_names]
    assert "gh.op_000" in dotted.directory.text
