"""Namespace descriptions are searchable: indexed in the namespace field of their tools
(issue 22 item 11), in the core session and through a `Bot`'s ``tool_search``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from bot_toolsearch import Tool
from bot_toolsearch._core.catalog import search_index
from bot_toolsearch.core import ToolCatalog, ToolSearchSession
from bot_toolsearch.testing import ScriptedOpenAIServer, call

if TYPE_CHECKING:
    from tests.conftest import BotFactory

DESCRIBED = {"svc": "bonded warehouse customs"}
SVC = ("svc.file_entry", "svc.release_goods")


def texts() -> list[tuple[str, str]]:
    """Two tools whose own words never name their service, among many that share its words."""
    pairs = [("svc.file_entry", "File an entry."), ("svc.release_goods", "Release the goods.")]
    pairs += [(f"stock.report_{i:02d}", "Warehouse stock report.") for i in range(30)]
    pairs += [(f"trade.tariff_{i:02d}", "Customs tariff lookup.") for i in range(30)]
    pairs.append(("trade.customs_declaration", "Declare goods."))
    return pairs


def schemas() -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": name, "description": text}}
        for name, text in texts()
    ]


def test_a_search_for_a_namespace_description_finds_its_tools() -> None:
    catalog = ToolCatalog(schemas())
    found = ToolSearchSession(catalog, namespaces=DESCRIBED).search("bonded warehouse customs")
    assert sorted(found.loaded[:2]) == list(SVC)
    # Without the description the words find other tools only.
    plain = ToolSearchSession(catalog).search("bonded warehouse customs")
    assert not set(SVC) & set(plain.loaded)


def test_a_required_term_may_come_from_the_namespace_description() -> None:
    session = ToolSearchSession(ToolCatalog(schemas()), namespaces=DESCRIBED)
    assert sorted(session.search("goods +bonded").loaded) == list(SVC)


def test_a_description_word_is_not_a_name_hit_for_a_one_term_query() -> None:
    # "customs" names trade.customs_declaration: that name hit outranks every tool that only
    # has the word in its namespace's description (or its own description).
    session = ToolSearchSession(ToolCatalog(schemas()), namespaces=DESCRIBED, max_results=3)
    assert session.search("customs").loaded[0] == "trade.customs_declaration"


def test_each_set_of_descriptions_has_its_own_index_and_explain_shows_them() -> None:
    catalog = ToolCatalog(schemas())
    described = tuple(DESCRIBED.items())
    assert search_index(catalog, described) is search_index(catalog, described)
    assert search_index(catalog, described) is not catalog.index
    assert search_index(catalog) is catalog.index
    assert "bond" in search_index(catalog, described)
    assert "bond" not in catalog.index
    document = catalog.document("svc.file_entry", described)
    assert len(catalog.document("svc.file_entry")) == 5
    hits = search_index(catalog, described).explain(["bond"], document)
    assert hits == ((), (), (), (), (), ("bond",))


async def test_a_bots_tool_search_finds_tools_by_their_configured_namespace_description(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    tools = [Tool(name, text, None, lambda: "ok") for name, text in texts()]
    server.script(call("tool_search", query="bonded warehouse customs"), call("end"))
    await make_bot(tools, tools_table={"namespaces": DESCRIBED}).ask("x")

    loaded = json.loads(server.requests[1].tool_outputs[0][1])["loaded"]
    assert sorted(loaded[:2]) == list(SVC)
