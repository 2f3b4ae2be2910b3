"""The scripted OpenAI-compatible server the product shares: the offline model and the demo.

Private: `bot_toolsearch.testing` is its public door for tests.
"""

from __future__ import annotations

from .app import Responder
from .cache import PromptCacheModel
from .request import Api, ModelRequest, UnconsumedTurns, UnexpectedModelCall, content_text
from .server import ScriptedOpenAIServer
from .turns import ScriptEntry, ToolCall, text

__all__ = [
    "Api",
    "ModelRequest",
    "PromptCacheModel",
    "Responder",
    "ScriptEntry",
    "ScriptedOpenAIServer",
    "ToolCall",
    "UnconsumedTurns",
    "UnexpectedModelCall",
    "content_text",
    "text",
]
