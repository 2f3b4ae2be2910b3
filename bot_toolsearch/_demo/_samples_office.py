"""Sample-data tool specs (English): email, maps, news, finance."""

from __future__ import annotations

from ._schema_helpers import SampleSpec, arr, boolean, enum, integer, number, string

__all__ = ["SAMPLES_OFFICE"]

_MSG = string("Message identifier returned by email.list_inbox or email.search.")
_DAY = string("Date in ISO format, e.g. 2025-06-01.")

SAMPLES_OFFICE: tuple[SampleSpec, ...] = (
    (
        "email.send",
        "Send an email to one or more recipients.",
        {
            "to": arr("Recipient addresses.", string("Email.")),
            "subject": string("Subject line."),
            "body": string("Message text."),
            "cc": arr("CC addresses.", string("Email.")),
        },
        ("to", "subject", "body"),
        {"message_id": "m_501", "status": "sent"},
    ),
    (
        "email.list_inbox",
        "List the newest emails in the inbox.",
        {"limit": integer("How many emails.", 1), "unread_only": boolean("Only unread.")},
        (),
        {"emails": [{"message_id": "m_17", "from": "alice@example.com", "subject": "Lunch?"}]},
    ),
    (
        "email.read",
        "Read the full text of one email.",
        {"message_id": _MSG},
        ("message_id",),
        {"from": "alice@example.com", "subject": "Lunch?", "body": "Noon at the usual place?"},
    ),
    (
        "email.search",
        "Search emails by sender, subject or words in the body.",
        {"query": string("Search words, e.g. from:alice invoice.")},
        ("query",),
        {"emails": [{"message_id": "m_12", "subject": "Invoice #12"}]},
    ),
    (
        "email.reply",
        "Reply to an email.",
        {"message_id": _MSG, "body": string("Reply text.")},
        ("message_id", "body"),
        {"status": "sent"},
    ),
    (
        "email.forward",
        "Forward an email to other recipients.",
        {"message_id": _MSG, "to": arr("Recipients.", string("Email."))},
        ("message_id", "to"),
        {"status": "forwarded"},
    ),
    (
        "email.delete",
        "Move an email to the trash.",
        {"message_id": _MSG},
        ("message_id",),
        {"status": "trashed"},
    ),
    (
        "email.mark_read",
        "Mark an email as read or unread.",
        {"message_id": _MSG, "read": boolean("True for read.")},
        ("message_id",),
        {"status": "updated"},
    ),
    (
        "email.create_draft",
        "Save an email draft without sending it.",
        {
            "to": arr("Recipients.", string("Email.")),
            "subject": string("Subject."),
            "body": string("Text."),
        },
        ("subject",),
        {"draft_id": "d_3"},
    ),
    (
        "email.list_attachments",
        "List the attachments of an email.",
        {"message_id": _MSG},
        ("message_id",),
        {"attachments": [{"name": "report.pdf", "size_bytes": 48213}]},
    ),
    (
        "maps.geocode",
        "Turn a street address into latitude and longitude coordinates.",
        {"address": string("Full address.")},
        ("address",),
        {"latitude": 48.8584, "longitude": 2.2945},
    ),
    (
        "maps.reverse_geocode",
        "Turn latitude and longitude into the nearest street address.",
        {"latitude": number("Latitude."), "longitude": number("Longitude.")},
        ("latitude", "longitude"),
        {"address": "1 Sample Street"},
    ),
    (
        "maps.directions",
        "Step-by-step route directions between two places.",
        {
            "origin": string("Start."),
            "destination": string("End."),
            "mode": enum("Travel mode.", "driving", "walking", "cycling", "transit"),
        },
        ("origin", "destination"),
        {"steps": ["Head north", "Turn right"], "duration_min": 24},
    ),
    (
        "maps.search_nearby",
        "Find nearby places such as restaurants, cafes or pharmacies.",
        {
            "category": string("Kind of place, e.g. cafe."),
            "near": string("Address or city."),
            "radius_m": integer("Search radius in metres.", 1),
        },
        ("category",),
        {"places": [{"name": "Sample Cafe", "distance_m": 180, "rating": 4.5}]},
    ),
    (
        "maps.place_details",
        "Opening hours, phone and rating of a place.",
        {"place_id": string("Place id from maps.search_nearby.")},
        ("place_id",),
        {"hours": "08:00-18:00", "rating": 4.5},
    ),
    (
        "maps.traffic",
        "Live traffic conditions and delays on a route.",
        {"origin": string("Start."), "destination": string("End.")},
        ("origin", "destination"),
        {"delay_min": 7, "level": "moderate"},
    ),
    (
        "news.top_headlines",
        "Top news headlines now, optionally for a country.",
        {"country": string("ISO country code.")},
        (),
        {"headlines": ["Sample headline one"]},
    ),
    (
        "news.search",
        "Search news articles by keywords.",
        {"query": string("Keywords."), "from_date": _DAY},
        ("query",),
        {"articles": [{"title": "Sample article", "source": "Example News"}]},
    ),
    (
        "news.by_category",
        "Latest news in a category.",
        {"category": enum("Section.", "business", "sports", "technology", "science", "health")},
        ("category",),
        {"articles": [{"title": "Sample tech story"}]},
    ),
    (
        "news.trending_topics",
        "Topics trending in the news and social media.",
        {},
        (),
        {"topics": ["sample topic"]},
    ),
    (
        "finance.stock_quote",
        "Latest stock price, change and volume for a ticker symbol.",
        {"symbol": string("Ticker, e.g. AAPL.")},
        ("symbol",),
        {"price": 123.45, "change_percent": 0.8, "currency": "USD"},
    ),
    (
        "finance.exchange_rate",
        "Currency exchange rate between two currencies.",
        {"base": string("ISO currency, e.g. USD."), "quote": string("ISO currency, e.g. CNY.")},
        ("base", "quote"),
        {"rate": 7.1},
    ),
    (
        "finance.crypto_price",
        "Price of a cryptocurrency such as bitcoin or ether.",
        {"coin": string("Coin name or symbol.")},
        ("coin",),
        {"price_usd": 50000.0},
    ),
    (
        "finance.portfolio_summary",
        "Value and daily gain of the user's investment portfolio.",
        {},
        (),
        {"value": 25000.0, "day_change_percent": -0.3},
    ),
)
