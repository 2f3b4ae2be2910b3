"""Conversation stores, public: where ``Bot.ask(..., conversation=...)`` keeps its turns.

from bot_toolsearch.conversations import SQLiteConversationStore
from bot_toolsearch.conversations import PostgreSQLConversationStore  # the postgres extra
"""

from __future__ import annotations

from bot_toolsearch import _set_public_module
from bot_toolsearch._runtime.conversations import (
    ConversationHistory,
    ConversationStore,
    ConversationTurn,
    MemoryConversationStore,
    SQLiteConversationStore,
)
from bot_toolsearch._runtime.conversations_postgres import PostgreSQLConversationStore

__all__ = [
    "ConversationHistory",
    "ConversationStore",
    "ConversationTurn",
    "MemoryConversationStore",
    "PostgreSQLConversationStore",
    "SQLiteConversationStore",
]


_set_public_module(__name__, __all__)
