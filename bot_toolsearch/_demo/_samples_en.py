"""Sample-data tool specs (English): weather, calendar, music."""

from __future__ import annotations

from ._schema_helpers import SampleSpec, arr, boolean, enum, integer, string

__all__ = ["SAMPLES_EN"]

_CITY = string("City name, e.g. Paris, Tokyo or 北京.")
_UNITS = enum("Units for temperatures and speeds.", "metric", "imperial")
_DAY = string("Date in ISO format, e.g. 2025-06-01.")
_EVENT = string("Event identifier returned by calendar.list_events.")

SAMPLES_EN: tuple[SampleSpec, ...] = (
    (
        "weather.current",
        "Get the current weather for a city: temperature, humidity, wind, sky.",
        {"city": _CITY, "units": _UNITS},
        ("city",),
        {
            "temperature_c": 18.5,
            "condition": "partly cloudy",
            "humidity_percent": 62,
            "wind_kmh": 11,
        },
    ),
    (
        "weather.forecast",
        "Daily weather forecast for a city for the next days (max 10).",
        {"city": _CITY, "days": integer("Number of days, 1-10.", 1), "units": _UNITS},
        ("city",),
        {
            "days": [
                {"date": "day+1", "high_c": 21, "low_c": 12, "condition": "sunny"},
                {"date": "day+2", "high_c": 17, "low_c": 10, "condition": "light rain"},
            ]
        },
    ),
    (
        "weather.hourly_forecast",
        "Hour-by-hour forecast of temperature and rain for the next 48h.",
        {"city": _CITY, "hours": integer("Hours ahead, 1-48.", 1)},
        ("city",),
        {"hours": [{"hour": "+1h", "temperature_c": 17, "rain_chance_percent": 10}]},
    ),
    (
        "weather.air_quality",
        "Air quality index (AQI) and pollutants PM2.5, PM10, ozone for a city.",
        {"city": _CITY},
        ("city",),
        {"aqi": 42, "category": "good", "pm25": 9.1, "pm10": 17.0},
    ),
    (
        "weather.uv_index",
        "Current and maximum UV index with sun protection advice.",
        {"city": _CITY},
        ("city",),
        {"uv_index": 5, "risk": "moderate"},
    ),
    (
        "weather.alerts",
        "Active severe weather warnings (storms, floods, heat) for a region.",
        {"region": string("City or region name.")},
        ("region",),
        {"alerts": []},
    ),
    (
        "weather.sunrise_sunset",
        "Sunrise, sunset and day length for a city on a date.",
        {"city": _CITY, "date": _DAY},
        ("city",),
        {"sunrise": "06:12", "sunset": "19:48", "day_length": "13h36m"},
    ),
    (
        "weather.historical",
        "Observed weather of a past date for a city.",
        {"city": _CITY, "date": _DAY},
        ("city", "date"),
        {"high_c": 24.0, "low_c": 15.2, "precipitation_mm": 0.0},
    ),
    (
        "weather.precipitation",
        "Rain and snow totals and probability for today and tomorrow.",
        {"city": _CITY},
        ("city",),
        {"today_mm": 2.4, "tomorrow_mm": 0.0, "chance_percent": 40},
    ),
    (
        "weather.pollen",
        "Pollen count forecast (tree, grass, weed) for allergy sufferers.",
        {"city": _CITY},
        ("city",),
        {"tree": "low", "grass": "moderate", "weed": "low"},
    ),
    (
        "calendar.create_event",
        "Create a calendar event with title, start, end and attendees.",
        {
            "title": string("Event title."),
            "start": string("Start, ISO date-time."),
            "end": string("End, ISO date-time."),
            "attendees": arr("Email addresses.", string("Email.")),
            "location": string("Where it takes place."),
        },
        ("title", "start"),
        {"event_id": "evt_1001", "status": "created"},
    ),
    (
        "calendar.list_events",
        "List calendar events between two dates.",
        {"start_date": _DAY, "end_date": _DAY, "calendar": string("Calendar name.")},
        (),
        {"events": [{"event_id": "evt_1001", "title": "Team sync", "start": "09:30"}]},
    ),
    (
        "calendar.get_event",
        "Get the full details of one calendar event.",
        {"event_id": _EVENT},
        ("event_id",),
        {"title": "Team sync", "attendees": 4, "location": "Room 2"},
    ),
    (
        "calendar.update_event",
        "Change the time, title or location of an existing event.",
        {
            "event_id": _EVENT,
            "title": string("New title."),
            "start": string("New start."),
            "location": string("New location."),
        },
        ("event_id",),
        {"status": "updated"},
    ),
    (
        "calendar.delete_event",
        "Cancel and delete a calendar event, notifying attendees.",
        {"event_id": _EVENT, "notify": boolean("Email the attendees.")},
        ("event_id",),
        {"status": "deleted"},
    ),
    (
        "calendar.find_free_slots",
        "Find free time slots when all attendees are available.",
        {
            "attendees": arr("Email addresses.", string("Email.")),
            "date": _DAY,
            "duration_minutes": integer("Meeting length in minutes.", 5),
        },
        ("attendees", "date"),
        {"slots": ["10:00-10:30", "14:00-15:00"]},
    ),
    (
        "calendar.set_reminder",
        "Set a reminder notification before an event.",
        {"event_id": _EVENT, "minutes_before": integer("Minutes before the start.", 0)},
        ("event_id",),
        {"status": "reminder set"},
    ),
    (
        "calendar.respond_invitation",
        "Accept, decline or tentatively accept a meeting invitation.",
        {"event_id": _EVENT, "response": enum("Your answer.", "accept", "decline", "tentative")},
        ("event_id", "response"),
        {"status": "response sent"},
    ),
    (
        "calendar.list_calendars",
        "List the user's calendars (work, personal, shared).",
        {},
        (),
        {"calendars": ["Work", "Personal", "Family"]},
    ),
    (
        "calendar.public_holidays",
        "Public holidays of a country in a year.",
        {"country": string("ISO country code, e.g. CN, US, DE."), "year": integer("Year.")},
        ("country",),
        {"holidays": [{"date": "01-01", "name": "New Year's Day"}]},
    ),
    (
        "music.search_songs",
        "Search the music library for songs by title, artist or lyrics.",
        {
            "query": string("Song title, artist or lyric words."),
            "limit": integer("Max results.", 1),
        },
        ("query",),
        {"songs": [{"song_id": "s_42", "title": "Blue Sky", "artist": "The Examples"}]},
    ),
    (
        "music.play_song",
        "Start playing a song on the current speaker.",
        {"song_id": string("Song id from music.search_songs."), "title": string("Song title.")},
        (),
        {"status": "playing"},
    ),
    ("music.pause", "Pause music playback.", {}, (), {"status": "paused"}),
    ("music.resume", "Resume paused music playback.", {}, (), {"status": "playing"}),
    ("music.next_track", "Skip to the next track in the queue.", {}, (), {"status": "skipped"}),
    ("music.previous_track", "Go back to the previous track.", {}, (), {"status": "rewound"}),
    (
        "music.set_volume",
        "Set the playback volume from 0 to 100.",
        {"level": integer("Volume percent, 0-100.", 0)},
        ("level",),
        {"volume": 40},
    ),
    (
        "music.now_playing",
        "Show the song that is playing now, with artist and progress.",
        {},
        (),
        {"title": "Blue Sky", "artist": "The Examples", "position": "1:12/3:40"},
    ),
    (
        "music.get_lyrics",
        "Get the lyrics of a song.",
        {"title": string("Song title."), "artist": string("Artist name.")},
        ("title",),
        {"lyrics": "(sample lyrics) la la la"},
    ),
    (
        "music.create_playlist",
        "Create a new playlist.",
        {"name": string("Playlist name."), "public": boolean("Visible to others.")},
        ("name",),
        {"playlist_id": "pl_7", "status": "created"},
    ),
    (
        "music.add_to_playlist",
        "Add a song to a playlist.",
        {"playlist_id": string("Playlist id."), "song_id": string("Song id.")},
        ("playlist_id", "song_id"),
        {"status": "added"},
    ),
    (
        "music.list_playlists",
        "List the user's playlists.",
        {},
        (),
        {"playlists": [{"playlist_id": "pl_7", "name": "Focus", "songs": 23}]},
    ),
    (
        "music.artist_info",
        "Biography, genres and top songs of a music artist.",
        {"artist": string("Artist name.")},
        ("artist",),
        {"genres": ["indie pop"], "top_song": "x"},
    ),
    (
        "music.recommend",
        "Recommend songs similar to a song, artist or mood.",
        {"seed": string("Song, artist or mood, e.g. relaxing jazz.")},
        ("seed",),
        {"songs": [{"title": "Slow Morning", "artist": "Sample Trio"}]},
    ),
    (
        "music.top_charts",
        "Current top chart songs for a country.",
        {"country": string("ISO country code.")},
        (),
        {"chart": [{"rank": 1, "title": "Hit"}]},
    ),
    (
        "music.shuffle",
        "Turn shuffle play on or off.",
        {"enabled": boolean("Shuffle on.")},
        ("enabled",),
        {"shuffle": True},
    ),
)
