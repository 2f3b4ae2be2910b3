"""`PostgreSQLConversationStore`: conversations on a PostgreSQL server, shared by many bots.

The same contract as the SQLite store (`bot_toolsearch._runtime.conversations`): turns in order,
one transaction per ``append`` (all of a turn or nothing), ids of any text, a schema version
with its upgrade. Several processes and hosts may write one conversation at once: ``append``
locks the conversation's row first, so concurrent turns are numbered one after another, never
twice. It needs the ``postgres`` extra (psycopg 3, async).

Connections are kept in a small pool of this store's own (at most ``max_connections``, opened
on demand), and every operation has a total deadline (``timeout``): a server that is down or
stops answering fails the ask with `ConversationStoreError` naming the server (never its
password), and nothing is half-written. Ids and texts are kept as UTF-8 bytes, since PostgreSQL's
``text`` cannot hold the NUL character that a conversation id may contain.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

from bot_toolsearch._config.redact import redact_url
from bot_toolsearch._errors import ConversationStoreError

from .conversations import (
    ConversationHistory,
    ConversationTurn,
    _check_id,
    _dump,
    _merge,
    _names,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["SCHEMA_VERSION", "PostgreSQLConversationStore"]

logger = logging.getLogger("bot_toolsearch")

_T = TypeVar("_T")

SCHEMA_VERSION = 1
"""The version of the tables this code reads and writes."""

_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE bot_toolsearch_conversations (
            id BYTEA PRIMARY KEY,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            tools_called TEXT NOT NULL
        )""",
        """CREATE TABLE bot_toolsearch_turns (
            conversation_id BYTEA NOT NULL
                REFERENCES bot_toolsearch_conversations(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            user_text BYTEA NOT NULL,
            reply BYTEA NOT NULL,
            messages TEXT NOT NULL,
            tools_called TEXT NOT NULL,
            PRIMARY KEY (conversation_id, seq)
        )""",
    ),
}
"""The statements that take the tables from the version before each key to that version."""

_MIGRATION_LOCK = 0x626F745F74730001
"""The advisory lock two processes opening one database take, so one of them upgrades it."""


class PostgreSQLConversationStore:
    """Conversations on a PostgreSQL server (``[conversations] store = "postgresql://..."``).

    The server is reached on first use, so a bot whose database is down still answers asks
    without a conversation.

    Args:
        url: a libpq connection URL, ``postgresql://user:password@host:port/dbname``.
        timeout: seconds each operation (connecting included) may take in all.
        max_connections: most connections this store holds open at once.
    """

    def __init__(self, url: str, *, timeout: float = 5.0, max_connections: int = 4) -> None:
        if timeout <= 0 or max_connections < 1:
            raise ValueError("timeout must be positive and max_connections at least 1")
        self.url = url
        self.location = redact_url(url)
        self._timeout = timeout
        self._idle: list[AsyncConnection[Any]] = []
        self._slots = asyncio.Semaphore(max_connections)
        self._ready = False
        self._closed = False

    async def load(self, conversation: str, *, max_turns: int | None = None) -> ConversationHistory:
        """The conversation's newest ``max_turns`` turns (all when ``None``), in one snapshot.

        Raises:
            ConversationStoreError: the server cannot be reached or answers with an error.
        """
        _check_id(conversation, self.location)
        key = conversation.encode("utf-8")

        async def read(conn: AsyncConnection[Any]) -> ConversationHistory:
            async with conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                cur = await conn.execute(
                    "SELECT tools_called FROM bot_toolsearch_conversations WHERE id = %s", (key,)
                )
                row = await cur.fetchone()
                cur = await conn.execute(
                    "SELECT COUNT(*) FROM bot_toolsearch_turns WHERE conversation_id = %s", (key,)
                )
                counted = await cur.fetchone()
                cur = await conn.execute(
                    "SELECT seq, created_at, user_text, reply, messages, tools_called"
                    " FROM bot_toolsearch_turns WHERE conversation_id = %s"
                    " ORDER BY seq DESC LIMIT %s",
                    (key, max_turns),
                )
                rows = await cur.fetchall()
            turns = [t for t in (self._turn(r) for r in reversed(rows)) if t is not None]
            return ConversationHistory(
                conversation=conversation,
                turns=tuple(turns),
                tools_called=_names(row[0]) if row is not None else (),
                total_turns=int(counted[0]) if counted is not None else 0,
            )

        return await self._run(read)

    async def append(self, conversation: str, turn: ConversationTurn) -> None:
        """Add ``turn`` in one transaction: afterwards the server holds all of it or none.

        Raises:
            ConversationStoreError: the write failed; the conversation is unchanged.
        """
        _check_id(conversation, self.location)
        try:
            messages = _dump(turn.messages)
        except (TypeError, ValueError) as exc:
            raise ConversationStoreError(f"turn is not JSON: {exc}", path=self.location) from None
        try:
            messages.encode("utf-8")
            key = conversation.encode("utf-8")
            user_text = turn.user_text.encode("utf-8")
            reply = turn.reply.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate
            raise ConversationStoreError(
                f"text is not valid Unicode ({exc.reason})", path=self.location
            ) from None
        turn_called = json.dumps(list(turn.tools_called), ensure_ascii=False)

        async def write(conn: AsyncConnection[Any]) -> None:
            async with conn.transaction():
                now = await _now(conn)
                # The upsert locks the conversation's row until commit: a concurrent append of
                # the same conversation waits here, then numbers its turn after this one.
                cur = await conn.execute(
                    "INSERT INTO bot_toolsearch_conversations"
                    " (id, created_at, updated_at, tools_called) VALUES (%s, %s, %s, '[]')"
                    " ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at"
                    " RETURNING tools_called",
                    (key, now, now),
                )
                locked = await cur.fetchone()
                called = _merge(_names(locked[0] if locked else None), turn.tools_called)
                await conn.execute(
                    "UPDATE bot_toolsearch_conversations SET tools_called = %s WHERE id = %s",
                    (json.dumps(called, ensure_ascii=False), key),
                )
                await conn.execute(
                    "INSERT INTO bot_toolsearch_turns (conversation_id, seq, created_at,"
                    " user_text, reply, messages, tools_called)"
                    " SELECT %s, COALESCE(MAX(seq), 0) + 1, %s, %s, %s, %s, %s"
                    " FROM bot_toolsearch_turns WHERE conversation_id = %s",
                    (key, now, user_text, reply, messages, turn_called, key),
                )

        await self._run(write)

    async def reset(self, conversation: str) -> None:
        """Forget the conversation (its turns and its called tools), in one transaction."""
        _check_id(conversation, self.location)
        key = conversation.encode("utf-8")

        async def delete(conn: AsyncConnection[Any]) -> None:
            async with conn.transaction():
                await conn.execute(
                    "DELETE FROM bot_toolsearch_conversations WHERE id = %s", (key,)
                )  # its turns go with it (ON DELETE CASCADE)

        await self._run(delete)

    async def aclose(self) -> None:
        """Close every connection the store holds; it must not be used afterwards."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()

    async def _run(self, work: Callable[[AsyncConnection[Any]], Awaitable[_T]]) -> _T:
        if self._closed:
            raise ConversationStoreError("the store is closed", path=self.location)
        psycopg = _psycopg(self.location)
        try:
            async with asyncio.timeout(self._timeout), self._slots:
                conn = self._idle.pop() if self._idle else await self._connect()
                try:
                    if not self._ready:
                        await _upgrade(conn, psycopg)
                        self._ready = True
                    result = await work(conn)
                except BaseException:
                    await conn.close()  # an unfinished transaction is rolled back with it
                    raise
                if self._closed or conn.closed:
                    await conn.close()
                else:
                    self._idle.append(conn)
                return result
        except TimeoutError:
            raise ConversationStoreError(
                f"the PostgreSQL server did not answer within {self._timeout:g}s",
                path=self.location,
            ) from None
        except psycopg.Error as exc:
            raise ConversationStoreError(self._explain(exc), path=self.location) from None

    async def _connect(self) -> AsyncConnection[Any]:
        psycopg = _psycopg(self.location)
        conn: AsyncConnection[Any] = await psycopg.AsyncConnection.connect(
            self.url,
            connect_timeout=max(1, round(self._timeout)),
            application_name="bot_toolsearch",
        )
        return conn

    def _explain(self, exc: Exception) -> str:
        text = str(exc).strip() or type(exc).__name__
        password = _password(self.url)
        if password:
            text = text.replace(password, "REDACTED")
        if type(exc).__name__ == "OperationalError":
            return f"cannot use the PostgreSQL server: {text}"
        return f"conversation database error: {text}"

    def _turn(self, row: tuple[Any, ...]) -> ConversationTurn | None:
        seq, created_at, user_text, reply, messages, called = row
        try:
            loaded = json.loads(messages)
            if not isinstance(loaded, list) or not all(isinstance(m, dict) for m in loaded):
                raise ValueError("not a list of messages")
            user = bytes(user_text).decode("utf-8")
            answer = bytes(reply).decode("utf-8")
        except ValueError as exc:
            logger.warning("%s: skipping unreadable turn %s: %s", self.location, seq, exc)
            return None
        return ConversationTurn(
            user_text=user,
            reply=answer,
            messages=tuple(loaded),
            tools_called=_names(called),
            created_at=float(created_at),
            seq=int(seq),
        )


async def _now(conn: AsyncConnection[Any]) -> float:
    """The server's clock, so turns written from several hosts are stamped alike."""
    cur = await conn.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8")
    row = await cur.fetchone()
    return float(row[0]) if row is not None else 0.0


async def _upgrade(conn: AsyncConnection[Any], psycopg: Any) -> None:
    """Bring the tables to `SCHEMA_VERSION`, once, whichever process opens the database first.

    Raises:
        psycopg.DatabaseError: the database was written by a newer bot_toolsearch.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        await conn.execute("CREATE TABLE IF NOT EXISTS bot_toolsearch_schema (version INTEGER)")
        cur = await conn.execute("SELECT version FROM bot_toolsearch_schema")
        row = await cur.fetchone()
        version = int(row[0]) if row is not None and row[0] is not None else 0
        if version > SCHEMA_VERSION:
            raise psycopg.DatabaseError(
                f"written by a newer bot_toolsearch (schema {version}, this one reads "
                f"{SCHEMA_VERSION})"
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for statement in _MIGRATIONS[step]:
                await conn.execute(statement)
        if version < SCHEMA_VERSION:
            await conn.execute("DELETE FROM bot_toolsearch_schema")
            await conn.execute(
                "INSERT INTO bot_toolsearch_schema (version) VALUES (%s)", (SCHEMA_VERSION,)
            )


def _password(url: str) -> str:
    try:
        password = urlsplit(url).password
    except ValueError:
        return ""
    return unquote(password) if password else ""


def _psycopg(location: str) -> Any:
    try:
        import psycopg
    except ImportError:
        raise ConversationStoreError(
            "a postgresql:// store needs psycopg: pip install '.[postgres]' in the clone",
            path=location,
        ) from None
    return psycopg
