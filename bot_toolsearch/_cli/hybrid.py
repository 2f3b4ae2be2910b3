"""The embedding model ``eval`` and ``search`` rank with, as the bot would.

The config's ``[skills.tool_search_embeddings]``, or ``--local-model`` (a folder or an installed
package; with no value the default local model, ``local = true``) with ``--local-tokenizer``.
`prepare` builds the catalog's vectors before the first query (a search alone would give up
after the stage's timeout and answer with BM25) and says once, in one line, why hybrid search is
unavailable when it is; `Ranking` records which ranking answered each search.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot_toolsearch._config.settings import BotSettings, EmbeddingsSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._services.local_embedder import describe
from bot_toolsearch._services.semantic import semantic_ranker, warm_semantic

from .options import CliError

__all__ = ["DEFAULT_LOCAL", "Ranking", "add_model_options", "model_label", "prepare", "wanted"]

logger = logging.getLogger("bot_toolsearch")

DEFAULT_LOCAL = "default"
"""``--local-model`` given without a value: the default local model (``local = true``)."""


def add_model_options(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--local-model [DIR|PACKAGE]`` and ``--local-tokenizer DIR|PACKAGE``."""
    parser.add_argument(
        "--local-model",
        metavar="DIR|PACKAGE",
        nargs="?",
        const=DEFAULT_LOCAL,
        help=f"{what} with this local model (a folder, or an installed package that ships one; "
        "no value: all-MiniLM-L6-v2, as [skills.tool_search_embeddings] local = true) instead "
        "of the config's [skills.tool_search_embeddings]",
    )
    parser.add_argument(
        "--local-tokenizer",
        metavar="DIR|PACKAGE",
        help="where the local model's tokenizer.json is, when not beside the model",
    )


def _is_folder(value: str) -> bool:
    """Whether a ``--local-model`` value names a folder (else an installed package)."""
    return Path(value).is_dir() or any(c in value for c in "/\\~") or value.startswith(".")


def wanted(args: argparse.Namespace, settings: BotSettings) -> EmbeddingsSettings | None:
    """The embeddings table to rank with: ``--local-model``, else the config's."""
    if args.local_model is None:
        if args.local_tokenizer is not None:
            raise CliError("--local-tokenizer needs --local-model")
        return settings.skills.tool_search_embeddings
    table: dict[str, Any]
    if args.local_model == DEFAULT_LOCAL:
        if args.local_tokenizer is not None:
            raise CliError(
                "--local-tokenizer applies to --local-model DIR|PACKAGE; --local-model alone "
                "uses the tokenizer bot_toolsearch ships"
            )
        table = {"local": True}
    else:
        model = args.local_model
        if _is_folder(model) and not Path(model).expanduser().is_dir():
            raise CliError(f"--local-model {model}: no such folder")
        table = {"model_dir": model} if _is_folder(model) else {"package": model}
        if args.local_tokenizer is not None:
            tokenizer = args.local_tokenizer
            if _is_folder(tokenizer):
                table["tokenizer_dir"] = tokenizer
            else:
                table["tokenizer_package"] = tokenizer
    configured = settings.skills.tool_search_embeddings
    if configured is not None and configured.cache_dir is not None:
        table["cache_dir"] = configured.cache_dir
    try:
        return EmbeddingsSettings.model_validate(table)
    except ValueError as exc:
        raise CliError(f"--local-model: {exc}") from None


def model_label(embeddings: EmbeddingsSettings) -> str:
    """The model's name for people: the endpoint's model, or which local model."""
    if embeddings.is_local:
        return describe(embeddings)
    return str(embeddings.model)


class _Captured(logging.Handler):
    """The warnings the semantic stage logs while the vectors are built."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@dataclass(slots=True)
class Ranking:
    """The semantic stage of a hybrid search, recording whether it answered the last search."""

    ranker: Any
    answered: bool = False

    def __call__(self, text: str, count: int) -> Sequence[tuple[int, float]] | None:
        found = self.ranker(text, count)
        self.answered = found is not None
        return found  # type: ignore[no-any-return]


def prepare(
    settings: BotSettings, catalog: ToolCatalog, embeddings: EmbeddingsSettings
) -> tuple[BotSettings, Ranking | None, str]:
    """``(settings with embeddings, ranking or None, why)``: the catalog's vectors are built
    first, however long that takes; ``why`` is the stage's own warning when it is unavailable
    (printed by the caller, once: the warning is kept from the log)."""
    hybrid = settings.model_copy(
        update={"skills": settings.skills.model_copy(update={"tool_search_embeddings": embeddings})}
    )
    ranker = semantic_ranker(hybrid, catalog)
    captured = _Captured()
    logger.addHandler(captured)
    propagate, logger.propagate = logger.propagate, False
    try:
        started = warm_semantic(hybrid, catalog)
        if started is not None:
            with contextlib.suppress(Exception):  # the stage logged why
                started.result()
        available = ranker is not None and ranker("warm up", 1) is not None
    finally:
        logger.propagate = propagate
        logger.removeHandler(captured)
    if not available or ranker is None:
        why = captured.messages[0] if captured.messages else "the model did not answer"
        return hybrid, None, why
    return hybrid, Ranking(ranker), ""
