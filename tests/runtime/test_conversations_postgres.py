"""The PostgreSQL conversation store on a real server: what SQLite's file tests check, for a server.

The contract both stores keep runs in `tests/runtime/test_conversations.py`; here: several
processes writing one conversation, the schema version and its upgrade, a server that is down
or never answers, and a write that fails midway.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from bot_toolsearch import ConversationStoreError
from bot_toolsearch._runtime import conversations_postgres
from bot_toolsearch.conversations import ConversationTurn, PostgreSQLConversationStore
from tests.runtime.postgres import fresh_database

pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")


def turn(user: str, *called: str) -> ConversationTurn:
    messages = [{"role": "user", "content": user}, {"role": "assistant", "content": f"re: {user}"}]
    return ConversationTurn(
        user_text=user, reply=f"re: {user}", messages=tuple(messages), tools_called=called
    )


async def sql(url: str, statement: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(statement)  # type: ignore[arg-type]


async def test_history_survives_a_new_store_on_the_same_database() -> None:
    url = await fresh_database()
    first = PostgreSQLConversationStore(url)
    await first.append("c", turn("remember me", "music.play"))
    await first.aclose()
    second = PostgreSQLConversationStore(url)
    history = await second.load("c")
    await second.aclose()
    assert [t.user_text for t in history.turns] == ["remember me"]
    assert history.tools_called == ("music.play",)


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from bot_toolsearch.conversations import ConversationTurn, PostgreSQLConversationStore

    async def main(url: str, name: str) -> None:
        store = PostgreSQLConversationStore(url, timeout=30)
        for i in range(15):
            text = f"{name}-{i}"
            await store.append("shared", ConversationTurn(
                user_text=text, reply=text, messages=({"role": "user", "content": text},),
                tools_called=(f"{name}.tool",)))
        await store.aclose()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


async def test_writers_in_several_processes_keep_one_conversation_contiguous() -> None:
    url = await fresh_database()
    writers = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", WRITER, url, name)
        for name in ("a", "b", "c")
    ]
    codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in writers)), 120)
    assert codes == [0, 0, 0]
    store = PostgreSQLConversationStore(url)
    history = await store.load("shared")
    await store.aclose()
    assert history.total_turns == 45
    assert [t.seq for t in history.turns] == list(range(1, 46))  # no gap, no number twice
    for name in "abc":  # each writer's turns in its own order
        mine = [t.user_text for t in history.turns if t.user_text.startswith(name)]
        assert mine == [f"{name}-{i}" for i in range(15)]
    assert sorted(history.tools_called) == ["a.tool", "b.tool", "c.tool"]


async def test_a_new_database_is_upgraded_once_even_when_two_stores_open_it_together() -> None:
    url = await fresh_database()
    stores = [PostgreSQLConversationStore(url) for _ in range(4)]
    await asyncio.gather(*(s.load("c") for s in stores))
    await asyncio.gather(*(s.append("c", turn(f"t{i}")) for i, s in enumerate(stores)))
    assert (await stores[0].load("c")).total_turns == 4
    for store in stores:
        await store.aclose()


async def test_an_older_schema_is_upgraded_and_a_newer_one_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = await fresh_database()
    await sql(url, "CREATE TABLE bot_toolsearch_schema (version INTEGER)")
    await sql(url, "INSERT INTO bot_toolsearch_schema VALUES (0)")  # the tables are not there yet
    store = PostgreSQLConversationStore(url)
    await store.append("c", turn("after the upgrade"))
    await store.aclose()

    # A later release adds version 2; this database is then upgraded from 1 to 2.
    migrations = {
        **conversations_postgres._MIGRATIONS,
        2: ("ALTER TABLE bot_toolsearch_turns ADD COLUMN note TEXT",),
    }
    monkeypatch.setattr(conversations_postgres, "_MIGRATIONS", migrations)
    monkeypatch.setattr(conversations_postgres, "SCHEMA_VERSION", 2)
    newer = PostgreSQLConversationStore(url)
    assert [t.user_text for t in (await newer.load("c")).turns] == ["after the upgrade"]
    await newer.aclose()
    monkeypatch.undo()

    older = PostgreSQLConversationStore(url)  # this release reads version 1 only
    with pytest.raises(ConversationStoreError, match=r"newer bot_toolsearch \(schema 2"):
        await older.load("c")
    await older.aclose()


async def test_an_append_that_fails_midway_rolls_back_entirely() -> None:
    url = await fresh_database()
    store = PostgreSQLConversationStore(url)
    await store.append("c", turn("first", "music.play"))
    # The conversation row is updated first; the turn insert then fails.
    await sql(
        url,
        "CREATE FUNCTION no_second() RETURNS trigger AS $$ BEGIN"
        " IF NEW.seq > 1 THEN RAISE EXCEPTION 'disk full, say'; END IF; RETURN NEW; END"
        " $$ LANGUAGE plpgsql",
    )
    await sql(
        url,
        "CREATE TRIGGER no_second BEFORE INSERT ON bot_toolsearch_turns"
        " FOR EACH ROW EXECUTE FUNCTION no_second()",
    )
    with pytest.raises(ConversationStoreError, match="disk full"):
        await store.append("c", turn("second", "weather.forecast"))
    history = await store.load("c")  # the store recovers on a fresh connection
    await store.aclose()
    assert [t.user_text for t in history.turns] == ["first"]
    assert history.tools_called == ("music.play",)  # the earlier update was rolled back


async def test_an_unreadable_stored_turn_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = await fresh_database()
    store = PostgreSQLConversationStore(url)
    await store.append("c", turn("one"))
    await store.append("c", turn("two"))
    await sql(url, "UPDATE bot_toolsearch_turns SET messages = '{broken' WHERE seq = 1")
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        history = await store.load("c")
    await store.aclose()
    assert [t.user_text for t in history.turns] == ["two"]
    assert "skipping unreadable turn 1" in caplog.text


async def test_nul_and_any_text_round_trip() -> None:
    url = await fresh_database()
    store = PostgreSQLConversationStore(url)
    odd = turn("a\x00b 群聊 \U0001f600")
    await store.append("id\x00with nul", odd)
    history = await store.load("id\x00with nul")
    await store.aclose()
    assert history.turns[0].user_text == "a\x00b 群聊 \U0001f600"
    assert json.dumps(history.turns[0].messages) == json.dumps(odd.messages)


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]  # bound, never listening: connections are refused


async def test_a_server_that_is_down_is_a_clear_error_without_the_password(
    closed_port: int,
) -> None:
    url = f"postgresql://bot:s3cret-pw@127.0.0.1:{closed_port}/bots"
    store = PostgreSQLConversationStore(url, timeout=3)
    with pytest.raises(ConversationStoreError) as info:
        await store.append("c", turn("lost?"))
    await store.aclose()
    message = str(info.value)
    assert message.startswith(f"postgresql://REDACTED@127.0.0.1:{closed_port}/bots: cannot use")
    assert "s3cret-pw" not in message
    assert "s3cret-pw" not in repr(info.value.__cause__) + repr(info.value.__context__)


async def test_a_server_that_never_answers_fails_within_the_deadline() -> None:
    # A hostile listener: accepts the connection and says nothing until the test ends.
    done = asyncio.Event()

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await done.wait()
        writer.close()

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    store = PostgreSQLConversationStore(f"postgresql://bot@127.0.0.1:{port}/bots", timeout=1)
    try:
        with pytest.raises(ConversationStoreError, match="did not answer within 1s"):
            await asyncio.wait_for(store.load("c"), 30)  # the bound of this test, not a figure
    finally:
        await store.aclose()
        done.set()
        listener.close()
        await listener.wait_closed()


def test_without_psycopg_the_error_names_the_extra() -> None:
    code = textwrap.dedent(
        """
        import asyncio, sys
        sys.modules["psycopg"] = None  # as if the postgres extra were not installed
        from bot_toolsearch import ConversationStoreError
        from bot_toolsearch.conversations import PostgreSQLConversationStore
        try:
            asyncio.run(PostgreSQLConversationStore("postgresql://db/x").load("c"))
        except ConversationStoreError as exc:
            print(exc)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "pip install '.[postgres]' in the clone" in out
