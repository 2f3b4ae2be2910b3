"""Sample-data tool specs: files, to-dos, smart home, travel and contacts."""

from __future__ import annotations

from ._schema_helpers import SampleSpec, arr, boolean, enum, integer, number, string

__all__ = ["SAMPLES_MORE"]

_PATH = string("Path inside the user's cloud drive, e.g. /Documents/report.pdf.")
_ROOM = string("Room name, e.g. living room.")

SAMPLES_MORE: tuple[SampleSpec, ...] = (
    (
        "files.list",
        "List the files and folders in a cloud drive folder.",
        {"folder": _PATH},
        (),
        {"entries": [{"name": "report.pdf", "size_bytes": 48213}, {"name": "Photos/"}]},
    ),
    (
        "files.read_text",
        "Read the text content of a document in the cloud drive.",
        {"path": _PATH},
        ("path",),
        {"content": "(sample document text)"},
    ),
    (
        "files.search",
        "Search the cloud drive for files by name or content.",
        {"query": string("File name or words inside.")},
        ("query",),
        {"matches": ["/Documents/report.pdf"]},
    ),
    (
        "files.get_info",
        "File metadata: size, owner, modified time, sharing.",
        {"path": _PATH},
        ("path",),
        {"size_bytes": 48213, "modified": "2025-01-10T08:00:00Z"},
    ),
    (
        "files.create_folder",
        "Create a new folder in the cloud drive.",
        {"path": _PATH},
        ("path",),
        {"status": "created"},
    ),
    (
        "files.move",
        "Move or rename a file.",
        {"source": _PATH, "destination": _PATH},
        ("source", "destination"),
        {"status": "moved"},
    ),
    (
        "files.delete",
        "Delete a file or folder (to the recycle bin).",
        {"path": _PATH},
        ("path",),
        {"status": "deleted"},
    ),
    (
        "files.share_link",
        "Create a share link for a file.",
        {"path": _PATH, "expires_days": integer("Link lifetime in days.", 1)},
        ("path",),
        {"url": "https://example.invalid/s/abc123"},
    ),
    (
        "todo.add",
        "Add a task to the to-do list, with an optional due date.",
        {
            "task": string("What to do."),
            "due": string("Due date, ISO format."),
            "priority": enum("Priority.", "low", "normal", "high"),
        },
        ("task",),
        {"task_id": "t_9"},
    ),
    (
        "todo.list",
        "List open tasks on the to-do list.",
        {"include_done": boolean("Show done.")},
        (),
        {"tasks": [{"task_id": "t_8", "task": "Buy milk"}]},
    ),
    (
        "todo.complete",
        "Mark a to-do task as done.",
        {"task_id": string("Task id.")},
        ("task_id",),
        {"status": "done"},
    ),
    (
        "todo.delete",
        "Remove a task from the to-do list.",
        {"task_id": string("Task id.")},
        ("task_id",),
        {"status": "deleted"},
    ),
    (
        "home.lights",
        "Turn smart lights on or off, or dim them, in a room.",
        {"room": _ROOM, "on": boolean("Lights on."), "brightness": integer("Percent.", 0)},
        ("room",),
        {"status": "ok"},
    ),
    (
        "home.thermostat",
        "Set the thermostat target temperature.",
        {"temperature_c": number("Target in Celsius."), "room": _ROOM},
        ("temperature_c",),
        {"target_c": 21.0},
    ),
    (
        "home.lock_door",
        "Lock or unlock a smart door lock.",
        {"door": string("Door name."), "locked": boolean("True to lock.")},
        ("door", "locked"),
        {"status": "locked"},
    ),
    (
        "home.devices",
        "List the connected smart home devices and their state.",
        {},
        (),
        {"devices": [{"name": "Hall lamp", "state": "off"}]},
    ),
    (
        "home.camera_snapshot",
        "Take a snapshot from a security camera.",
        {"camera": string("Camera name.")},
        ("camera",),
        {"image_url": "https://example.invalid/c"},
    ),
    (
        "travel.search_flights",
        "Search flights between two airports or cities on a date.",
        {
            "origin": string("From city or IATA code."),
            "destination": string("To city or code."),
            "date": string("Departure date."),
            "passengers": integer("Passengers.", 1),
        },
        ("origin", "destination", "date"),
        {"flights": [{"flight": "XX123", "price": 420}]},
    ),
    (
        "travel.search_hotels",
        "Search hotels in a city for given dates.",
        {
            "city": string("City."),
            "check_in": string("Check-in date."),
            "check_out": string("Check-out date."),
        },
        ("city",),
        {"hotels": [{"name": "Sample Inn", "price_per_night": 130}]},
    ),
    (
        "travel.flight_status",
        "Live status of a flight: delays, gate, terminal.",
        {"flight_number": string("e.g. LH123.")},
        ("flight_number",),
        {"status": "on time", "gate": "B12"},
    ),
    (
        "travel.visa_requirements",
        "Visa requirements for a passport travelling to a country.",
        {"passport": string("Passport country."), "destination": string("Destination country.")},
        ("passport", "destination"),
        {"visa_required": False, "max_stay_days": 90},
    ),
    (
        "contacts.search",
        "Find a contact by name, phone or email.",
        {"query": string("Name, phone or email.")},
        ("query",),
        {"contacts": [{"name": "Alice Example", "phone": "+1 555 0100"}]},
    ),
    (
        "contacts.add",
        "Add a new contact to the address book.",
        {
            "name": string("Full name."),
            "phone": string("Phone."),
            "email": string("Email."),
            "tags": arr("Labels.", string("Label.")),
        },
        ("name",),
        {"contact_id": "c_31"},
    ),
    (
        "contacts.birthdays",
        "Upcoming birthdays of contacts.",
        {"days": integer("Days ahead.", 1)},
        (),
        {"birthdays": [{"name": "Alice Example", "date": "06-14"}]},
    ),
)
