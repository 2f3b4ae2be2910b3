"""`open_store`: the conversation store a ``[conversations] store`` value names.

``memory``, ``sqlite:///<path>`` (`SQLiteConversationStore`) or ``postgresql://...``
(`PostgreSQLConversationStore`, with the ``postgres`` extra).
"""

from __future__ import annotations

from pathlib import Path

from .conversations import ConversationStore, MemoryConversationStore, SQLiteConversationStore
from .conversations_postgres import PostgreSQLConversationStore

__all__ = ["STORE_FORMS", "open_store"]

STORE_FORMS = "'memory', 'sqlite:///<path>' or 'postgresql://<user>@<host>/<database>'"
"""The forms a ``[conversations] store`` value takes, for messages."""


def open_store(spec: str, base_dir: Path | None = None) -> ConversationStore:
    """The store ``spec`` names; nothing is opened or connected until its first use.

    A relative SQLite path is relative to ``base_dir`` (the config file's folder), else to the
    current directory; ``sqlite:////abs/path.db`` is absolute. A PostgreSQL URL is a libpq
    URL (``postgresql://`` or ``postgres://``).

    Raises:
        ValueError: ``spec`` is none of the forms.
    """
    if spec == "memory":
        return MemoryConversationStore()
    if spec.startswith(("postgresql://", "postgres://")) and len(spec.split("://", 1)[1]) > 0:
        return PostgreSQLConversationStore(spec)
    prefix = "sqlite:///"
    if not spec.startswith(prefix) or len(spec) == len(prefix):
        raise ValueError(f"expected {STORE_FORMS}, got {spec!r}")
    path = Path(spec[len(prefix) :])
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return SQLiteConversationStore(path)
