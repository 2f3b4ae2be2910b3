"""Conversation stores: where a `Bot` keeps each conversation's turns between asks.

A turn is one ask: the user's message and what the ask added to the history (tool calls with
their results, the reply), as JSON, plus the tools it called. It is written in one transaction
when the ask has succeeded, so a failed or killed ask leaves its conversation as it was.

`SQLiteConversationStore` uses the standard library's ``sqlite3`` on one dedicated thread (one
connection, never shared between threads), in WAL mode so readers in other processes never wait
for the writer. The protocol is shaped for a server database such as PostgreSQL: two tables,
keyed by the conversation id (any string, always passed as a bound parameter), one transaction
per ``append``; porting it means the same three statements on a connection pool.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from bot_toolsearch._errors import ConversationStoreError

__all__ = [
    "ConversationHistory",
    "ConversationStore",
    "ConversationTurn",
    "MemoryConversationStore",
    "SQLiteConversationStore",
]

logger = logging.getLogger("bot_toolsearch")

_T = TypeVar("_T")
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationTurn:
    """One finished ask of a conversation."""

    user_text: str
    """The user's message."""
    reply: str
    """The reply the ask returned (``AskResult.reply``)."""
    messages: tuple[Mapping[str, Any], ...]
    """Chat Completions shaped messages with canonical tool names: the user message, then each
    kept tool call with its result right after it, then the final text, if any."""
    tools_called: tuple[str, ...] = ()
    """Canonical names of the tools the ask ran, in first-call order."""
    created_at: float = 0.0
    """When the turn was stored (seconds since the epoch); set by the store."""
    seq: int = 0
    """1-based position in the conversation; set by the store."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationHistory:
    """What a store holds about one conversation (a new one is empty)."""

    conversation: str
    """The conversation id."""
    turns: tuple[ConversationTurn, ...] = ()
    """The newest turns, oldest first (at most the ``max_turns`` asked for)."""
    tools_called: tuple[str, ...] = ()
    """Every tool the whole conversation ran, in first-call order."""
    total_turns: int = 0
    """How many turns the conversation has in all."""


@runtime_checkable
class ConversationStore(Protocol):
    """Keeps conversations; a `Bot` loads one before an ask and appends the ask's turn after.

    ``append`` must be atomic: after it, the store holds the whole turn or nothing of it.
    Failures raise `ConversationStoreError` naming the store's location.
    """

    location: str
    """Where the conversations live (a file path, or ``memory``), for messages."""

    async def load(self, conversation: str, *, max_turns: int | None = None) -> ConversationHistory:
        """The conversation's newest ``max_turns`` turns (all when ``None``)."""
        ...

    async def append(self, conversation: str, turn: ConversationTurn) -> None:
        """Add ``turn`` at the end of the conversation, atomically."""
        ...

    async def reset(self, conversation: str) -> None:
        """Forget the conversation entirely."""
        ...

    async def aclose(self) -> None:
        """Release the store's resources; it must not be used afterwards."""
        ...


def _merge(called: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*called, *new)))


def _dump(messages: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(list(messages), ensure_ascii=False, separators=(",", ":"))


def _check_id(conversation: str, location: str) -> None:
    """Refuse an id no store can keep as UTF-8 text (a lone surrogate such as ``"\\ud800"``)."""
    try:
        conversation.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConversationStoreError(
            f"conversation id {conversation!r} is not valid Unicode text ({exc.reason} at"
            f" index {exc.start})",
            path=location,
        ) from None


class MemoryConversationStore:
    """Conversations in this process's memory (lost on exit); the default of ``Bot(...)``."""

    location = "memory"

    def __init__(self) -> None:
        self._turns: dict[str, list[ConversationTurn]] = {}
        self._called: dict[str, tuple[str, ...]] = {}

    async def load(self, conversation: str, *, max_turns: int | None = None) -> ConversationHistory:
        """The conversation's newest ``max_turns`` turns (all when ``None``)."""
        _check_id(conversation, self.location)
        turns = self._turns.get(conversation, [])
        shown = turns if max_turns is None else turns[max(len(turns) - max_turns, 0) :]
        return ConversationHistory(
            conversation=conversation,
            turns=tuple(shown),
            tools_called=self._called.get(conversation, ()),
            total_turns=len(turns),
        )

    async def append(self, conversation: str, turn: ConversationTurn) -> None:
        """Add ``turn`` (a JSON copy of its messages, as the SQLite store keeps)."""
        _check_id(conversation, self.location)
        try:
            messages = tuple(json.loads(_dump(turn.messages)))
        except (TypeError, ValueError) as exc:
            raise ConversationStoreError(f"turn is not JSON: {exc}", path=self.location) from None
        turns = self._turns.setdefault(conversation, [])
        stored = replace(turn, messages=messages, created_at=time.time(), seq=len(turns) + 1)
        turns.append(stored)
        self._called[conversation] = _merge(self._called.get(conversation, ()), turn.tools_called)

    async def reset(self, conversation: str) -> None:
        """Forget the conversation."""
        _check_id(conversation, self.location)
        self._turns.pop(conversation, None)
        self._called.pop(conversation, None)

    async def aclose(self) -> None:
        """Nothing to release."""


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS conversations (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        tools_called TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS turns (
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        created_at REAL NOT NULL,
        user_text TEXT NOT NULL,
        reply TEXT NOT NULL,
        messages TEXT NOT NULL,
        tools_called TEXT NOT NULL,
        PRIMARY KEY (conversation_id, seq)
    )""",
)


class SQLiteConversationStore:
    """Conversations in one SQLite file (WAL mode); the default of ``Bot.from_config``.

    The file is opened on first use, so a bot with a broken file still answers asks without a
    conversation. Several processes on one host may share the file; each conversation's asks
    should still go to one process (the `Bot` serialises them per process only).

    Args:
        path: the database file; its folder is created if missing.
        timeout: seconds to wait for another process's write lock before failing.
    """

    def __init__(self, path: str | Path, *, timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self._timeout = timeout
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    async def load(self, conversation: str, *, max_turns: int | None = None) -> ConversationHistory:
        """The conversation's newest ``max_turns`` turns (all when ``None``).

        A stored turn that cannot be read back is skipped with a warning, never sent on.

        Raises:
            ConversationStoreError: the file is not a usable database, or stays locked.
        """
        _check_id(conversation, self.location)

        def read(conn: sqlite3.Connection) -> ConversationHistory:
            conn.execute("BEGIN")  # one snapshot for the three reads
            try:
                row = conn.execute(
                    "SELECT tools_called FROM conversations WHERE id = ?", (conversation,)
                ).fetchone()
                (total,) = conn.execute(
                    "SELECT COUNT(*) FROM turns WHERE conversation_id = ?", (conversation,)
                ).fetchone()
                rows = conn.execute(
                    "SELECT seq, created_at, user_text, reply, messages, tools_called FROM turns"
                    " WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?",
                    (conversation, -1 if max_turns is None else max_turns),
                ).fetchall()
            finally:
                conn.execute("COMMIT")
            called = _names(row[0]) if row is not None else ()
            turns = [t for t in (self._turn(r) for r in reversed(rows)) if t is not None]
            return ConversationHistory(
                conversation=conversation,
                turns=tuple(turns),
                tools_called=called,
                total_turns=int(total),
            )

        return await self._run(read)

    async def append(self, conversation: str, turn: ConversationTurn) -> None:
        """Add ``turn`` in one transaction: afterwards the file holds all of it or none.

        Raises:
            ConversationStoreError: the write failed; the conversation is unchanged.
        """
        _check_id(conversation, self.location)
        try:
            messages = _dump(turn.messages)
        except (TypeError, ValueError) as exc:
            raise ConversationStoreError(f"turn is not JSON: {exc}", path=self.location) from None

        def write(conn: sqlite3.Connection) -> None:
            now = time.time()
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT tools_called FROM conversations WHERE id = ?", (conversation,)
                ).fetchone()
                called = _merge(_names(row[0]) if row else (), turn.tools_called)
                conn.execute(
                    "INSERT INTO conversations (id, created_at, updated_at, tools_called)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                    " updated_at = excluded.updated_at, tools_called = excluded.tools_called",
                    (conversation, now, now, json.dumps(called, ensure_ascii=False)),
                )
                conn.execute(
                    "INSERT INTO turns (conversation_id, seq, created_at, user_text, reply,"
                    " messages, tools_called) SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ?, ?"
                    " FROM turns WHERE conversation_id = ?",
                    (
                        conversation,
                        now,
                        turn.user_text,
                        turn.reply,
                        messages,
                        json.dumps(list(turn.tools_called), ensure_ascii=False),
                        conversation,
                    ),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        await self._run(write)

    async def reset(self, conversation: str) -> None:
        """Forget the conversation (its turns and its called tools), in one transaction."""
        _check_id(conversation, self.location)

        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM turns WHERE conversation_id = ?", (conversation,))
                conn.execute("DELETE FROM conversations WHERE id = ?", (conversation,))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        await self._run(delete)

    async def aclose(self) -> None:
        """Close the connection and stop the store's thread."""
        executor, self._executor = self._executor, None
        if executor is None:
            return

        def close() -> None:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

        await asyncio.get_running_loop().run_in_executor(executor, close)
        executor.shutdown(wait=False)

    async def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="bot_toolsearch-sqlite")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, work)

    def _call(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        # Runs on the store's one thread: the connection never crosses threads.
        try:
            if self._conn is None:
                self._conn = self._open()
            return work(self._conn)
        except sqlite3.Error as exc:
            raise ConversationStoreError(_explain(exc, self._timeout), path=self.location) from exc
        except UnicodeEncodeError as exc:  # text SQLite cannot store: a lone surrogate
            raise ConversationStoreError(
                f"text is not valid Unicode ({exc.reason})", path=self.location
            ) from None
        except OSError as exc:
            raise ConversationStoreError(
                f"cannot create its folder: {exc}", path=self.location
            ) from exc

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if version > SCHEMA_VERSION:
                raise sqlite3.DatabaseError(
                    f"written by a newer bot_toolsearch (schema {version}, this one reads "
                    f"{SCHEMA_VERSION})"
                )
            if version < SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        return conn

    def _turn(self, row: tuple[Any, ...]) -> ConversationTurn | None:
        seq, created_at, user_text, reply, messages, called = row
        try:
            loaded = json.loads(messages)
            if not isinstance(loaded, list) or not all(isinstance(m, dict) for m in loaded):
                raise ValueError("not a list of messages")
        except ValueError as exc:
            logger.warning("%s: skipping unreadable turn %s: %s", self.location, seq, exc)
            return None
        return ConversationTurn(
            user_text=str(user_text),
            reply=str(reply),
            messages=tuple(loaded),
            tools_called=_names(called),
            created_at=float(created_at),
            seq=int(seq),
        )


def _names(raw: object) -> tuple[str, ...]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return ()
    return tuple(n for n in value if isinstance(n, str)) if isinstance(value, list) else ()


def _explain(exc: sqlite3.Error, timeout: float) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return (
            f"the conversation database is locked by another process (waited {timeout:g}s): {text}"
        )
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return (
            f"not a usable conversation database ({text}); move the file away or point "
            "[conversations] store elsewhere"
        )
    return f"conversation database error: {text}"
