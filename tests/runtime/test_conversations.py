"""Conversation stores: the contract both keep, and the SQLite file's faults, on real files."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot_toolsearch import ConversationStoreError
from bot_toolsearch._runtime.conversation_store import open_store
from bot_toolsearch.conversations import (
    ConversationStore,
    ConversationTurn,
    MemoryConversationStore,
    PostgreSQLConversationStore,
    SQLiteConversationStore,
)
from tests.runtime.postgres import fresh_database

ODD_IDS = [
    "'; DROP TABLE turns; --",
    "",
    "群聊 #42 / user 小明",
    "a\x00b",
    "x" * 10_000,
    "%_*?[]",
]


def turn(user: str, *called: str) -> ConversationTurn:
    messages = [{"role": "user", "content": user}, {"role": "assistant", "content": f"re: {user}"}]
    return ConversationTurn(
        user_text=user, reply=f"re: {user}", messages=tuple(messages), tools_called=called
    )


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ConversationStore]:
    made: ConversationStore
    if request.param == "postgresql":
        made = PostgreSQLConversationStore(await fresh_database())
    elif request.param == "sqlite":
        made = SQLiteConversationStore(tmp_path / "bot.db")
    else:
        made = MemoryConversationStore()
    yield made
    await made.aclose()


async def test_turns_come_back_in_order_with_their_sequence_numbers(
    store: ConversationStore,
) -> None:
    for text in ("one", "two", "three"):
        await store.append("c", turn(text))
    history = await store.load("c")
    assert [t.user_text for t in history.turns] == ["one", "two", "three"]
    assert [t.seq for t in history.turns] == [1, 2, 3]
    assert history.turns[1].messages == (
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "re: two"},
    )
    assert history.total_turns == 3
    assert all(t.created_at > 0 for t in history.turns)


async def test_max_turns_returns_the_newest_oldest_first(store: ConversationStore) -> None:
    for text in ("one", "two", "three"):
        await store.append("c", turn(text))
    history = await store.load("c", max_turns=2)
    assert [t.user_text for t in history.turns] == ["two", "three"]
    assert history.total_turns == 3


async def test_tools_called_merge_in_first_call_order(store: ConversationStore) -> None:
    await store.append("c", turn("one", "weather.forecast", "calendar.add"))
    await store.append("c", turn("two", "music.play", "weather.forecast"))
    history = await store.load("c", max_turns=1)
    assert history.tools_called == ("weather.forecast", "calendar.add", "music.play")
    assert history.turns[0].tools_called == ("music.play", "weather.forecast")


@pytest.mark.parametrize("conversation", ODD_IDS, ids=range(len(ODD_IDS)))
async def test_any_string_is_a_conversation_id_and_ids_do_not_mix(
    store: ConversationStore, conversation: str
) -> None:
    await store.append(conversation, turn("mine"))
    await store.append("other", turn("theirs"))
    assert [t.user_text for t in (await store.load(conversation)).turns] == ["mine"]
    assert [t.user_text for t in (await store.load("other")).turns] == ["theirs"]


async def test_reset_forgets_one_conversation_only(store: ConversationStore) -> None:
    await store.append("a", turn("one", "music.play"))
    await store.append("b", turn("two"))
    await store.reset("a")
    gone = await store.load("a")
    assert (gone.turns, gone.tools_called, gone.total_turns) == ((), (), 0)
    assert (await store.load("b")).total_turns == 1
    await store.append("a", turn("again"))
    assert [t.seq for t in (await store.load("a")).turns] == [1]


async def test_a_turn_that_is_not_json_is_refused_and_nothing_is_stored(
    store: ConversationStore,
) -> None:
    bad = ConversationTurn(user_text="x", reply="", messages=({"content": object()},))
    with pytest.raises(ConversationStoreError, match="not JSON"):
        await store.append("c", bad)
    assert (await store.load("c")).total_turns == 0


async def test_history_survives_a_new_store_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    first = SQLiteConversationStore(path)
    await first.append("c", turn("remember me", "music.play"))
    await first.aclose()
    second = SQLiteConversationStore(path)
    history = await second.load("c")
    await second.aclose()
    assert [t.user_text for t in history.turns] == ["remember me"]
    assert history.tools_called == ("music.play",)


async def test_the_file_is_in_wal_mode_and_its_folder_is_created(tmp_path: Path) -> None:
    path = tmp_path / "data" / "nested" / "bot.db"
    store = SQLiteConversationStore(path)
    await store.append("c", turn("x"))
    await store.aclose()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_a_corrupt_file_is_a_clear_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    path.write_bytes(b"this is not a database, just some text " * 200)
    store = SQLiteConversationStore(path)
    with pytest.raises(ConversationStoreError) as info:
        await store.load("c")
    await store.aclose()
    assert info.value.path == str(path)
    assert str(info.value).startswith(f"{path}: not a usable conversation database")
    assert path.read_bytes().startswith(b"this is not a database")  # left as it was


async def test_a_locked_file_is_a_clear_error_and_works_once_released(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    store = SQLiteConversationStore(path, timeout=0.2)
    await store.append("c", turn("before"))
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
        with pytest.raises(ConversationStoreError, match="locked by another process") as info:
            await store.append("c", turn("during"))
        assert info.value.path == str(path)
        # Readers are not blocked by a writer in WAL mode.
        assert (await store.load("c")).total_turns == 1
    finally:
        other.execute("ROLLBACK")
        other.close()
    await store.append("c", turn("after"))
    assert [t.user_text for t in (await store.load("c")).turns] == ["before", "after"]
    await store.aclose()


async def test_an_append_that_fails_midway_rolls_back_entirely(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    store = SQLiteConversationStore(path)
    await store.append("c", turn("first", "music.play"))
    with sqlite3.connect(path) as conn:
        # The conversation row is updated first; the turn insert then fails.
        conn.execute(
            "CREATE TRIGGER no_second BEFORE INSERT ON turns WHEN NEW.seq > 1"
            " BEGIN SELECT RAISE(ABORT, 'disk full, say'); END"
        )
    with pytest.raises(ConversationStoreError, match="disk full"):
        await store.append("c", turn("second", "weather.forecast"))
    history = await store.load("c")
    await store.aclose()
    assert [t.user_text for t in history.turns] == ["first"]
    assert history.tools_called == ("music.play",)  # the earlier update was rolled back


async def test_an_unreadable_stored_turn_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "bot.db"
    store = SQLiteConversationStore(path)
    await store.append("c", turn("one"))
    await store.append("c", turn("two"))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE turns SET messages = '{broken' WHERE seq = 1")
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        history = await store.load("c")
    await store.aclose()
    assert [t.user_text for t in history.turns] == ["two"]
    assert "skipping unreadable turn 1" in caplog.text


async def test_a_file_from_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    store = SQLiteConversationStore(path)
    with pytest.raises(ConversationStoreError, match="newer bot_toolsearch"):
        await store.load("c")
    await store.aclose()


@pytest.mark.parametrize(
    ("spec", "check"),
    [
        ("memory", lambda s, _: isinstance(s, MemoryConversationStore)),
        ("sqlite:///bot.db", lambda s, base: s.path == base / "bot.db"),
        ("sqlite:///sub/x.db", lambda s, base: s.path == base / "sub" / "x.db"),
        ("sqlite:////abs/x.db", lambda s, _: s.path == Path("/abs/x.db")),
        (
            "postgresql://bot:pw@db.internal/bots",
            lambda s, _: s.location == "postgresql://REDACTED@db.internal/bots",
        ),
        ("postgres://db/bots", lambda s, _: isinstance(s, PostgreSQLConversationStore)),
    ],
)
def test_open_store_reads_the_config_value(
    spec: str, check: Callable[[ConversationStore, Path], bool], tmp_path: Path
) -> None:
    assert check(open_store(spec, tmp_path), tmp_path)


@pytest.mark.parametrize(
    "spec", ["sqlite://", "sqlite:///", "postgresql://", "mysql://x", "Memory"]
)
def test_open_store_refuses_other_values(spec: str) -> None:
    with pytest.raises(ValueError, match="expected 'memory', 'sqlite:///<path>' or 'postgresql:"):
        open_store(spec)


async def test_a_conversation_id_with_a_lone_surrogate_is_refused_clearly(
    store: ConversationStore,
) -> None:
    for operation in (
        store.load("abc\ud800"),
        store.append("abc\ud800", turn("hi")),
        store.reset("\udfffx"),
    ):
        with pytest.raises(ConversationStoreError, match="not valid Unicode"):
            await operation
    await store.append("abc", turn("hi"))
    assert (await store.load("abc")).total_turns == 1


async def test_a_turn_with_a_lone_surrogate_in_its_text_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    store = SQLiteConversationStore(tmp_path / "bot.db")
    with pytest.raises(ConversationStoreError, match="not valid Unicode"):
        await store.append("c", turn("bad \ud800 text"))
    assert (await store.load("c")).total_turns == 0
    await store.aclose()
