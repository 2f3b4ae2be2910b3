"""The many-tools bot's catalog: the demo's 178 tools plus its own ``notes.*`` and ``shop.*``.

A host loads it with ``--tools examples/many_tools_bot/catalog.py:tools`` (CLI) or by calling
`tools()` (see ``bot.py``). Tool search keeps all ~200 schemas out of the first request.
"""

from __future__ import annotations

from typing import Any

from bot_toolsearch import Tool, tool
from bot_toolsearch.offline import demo_tools  # example data shipped with the package

_NOTES: list[str] = []


@tool(name="notes.add")
def add_note(text: str) -> dict[str, Any]:
    """Save a short note (kept in memory while the bot runs).

    Args:
        text: the note to save.
    """
    _NOTES.append(text)
    return {"saved": text, "count": len(_NOTES)}


@tool(name="notes.list")
def list_notes() -> list[str]:
    """List every saved note, oldest first."""
    return list(_NOTES)


@tool(name="notes.search")
def search_notes(words: str) -> list[str]:
    """Find saved notes containing all the given words.

    Args:
        words: words that must all appear in the note.
    """
    wanted = words.lower().split()
    return [note for note in _NOTES if all(word in note.lower() for word in wanted)]


@tool(name="notes.clear")
def clear_notes() -> str:
    """Delete every saved note."""
    _NOTES.clear()
    return "cleared"


# name, description, parameter -> (sample) answer: a generated family, as a real shop bot's
# tools often are. The answers are clearly marked sample data.
_SHOP = {
    "stock": "Check how many units of a product are in stock in the warehouse",
    "price": "Look up the current price of a product in the shop",
    "reviews": "Show the latest customer reviews and star rating of a product",
    "discounts": "List the discounts and coupons that apply to a product",
    "shipping": "Estimate shipping cost and delivery days for a product",
    "related": "Suggest products often bought together with a product",
    "returns": "Explain the return policy and return window for a product",
    "warranty": "Show warranty length and coverage for a product",
    "restock_date": "Predict when an out-of-stock product will be restocked",
    "sizes": "List the available sizes and colours of a product",
    "supplier": "Name the supplier and country of origin of a product",
    "compare": "Compare a product with its closest alternative side by side",
    "bestsellers": "List this week's bestselling products in a product's category",
    "wishlist_count": "Count how many customers have a product on their wishlist",
    "price_history": "Show the price history of a product over the last 90 days",
    "bundle": "Find bundle offers that include a product",
    "gift_wrap": "Check whether a product can be gift-wrapped and what it costs",
}


def _shop_tool(action: str, description: str) -> Tool:
    def answer(product: str) -> dict[str, Any]:
        return {"product": product, "action": action, "sample_data": True, "answer": "(sample)"}

    parameters = {
        "type": "object",
        "properties": {"product": {"type": "string", "description": "product name or SKU"}},
        "required": ["product"],
    }
    return Tool(f"shop.{action}", description, parameters, answer)


def tools() -> tuple[Tool, ...]:
    """Every tool of this bot: the demo catalog, then ``notes.*`` and ``shop.*``."""
    own = [add_note, list_notes, search_notes, clear_notes]
    return (*demo_tools(), *own, *(_shop_tool(a, d) for a, d in _SHOP.items()))
