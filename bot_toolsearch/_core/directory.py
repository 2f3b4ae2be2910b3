"""The ``<available_deferred_tools>`` directory under a token budget, grouped by namespace.

While the full list of deferred names fits the budget, the directory is that list, one name per
line, exactly as :func:`~bot_toolsearch.render_deferred_tools` always wrote it. When it does
not, the directory is **grouped**:

- A tool's *namespace* is the part of its canonical name before its last ``.``
  (``drive.files.list`` -> ``drive.files``); MCP tools are ``<server>.<tool>``, so a server is a
  namespace. At *level* ``L`` a namespace keeps only its first ``L`` dot-separated parts, so
  nested namespaces collapse level by level (``drive.files`` -> ``drive``).
- A namespace with two or more deferred tools is one line, ``<namespace>.* (<n> tools):
  <description>``; a namespace of one tool, and a name without a dot, is a *loose* name.
- The level is the deepest one, walking down from level 1, at which every namespace line,
  description included, fits the budget. If even level 1 does not fit, level 1 is used
  with bare lines (``<namespace>.* (<n> tools)``); namespaces of lowest priority are left
  out until the bare lines fit, then descriptions are added in priority order while they fit.
- Loose names fill what budget is left, most useful first. A footer line counts the tools the
  directory does not show (keyword search still finds every one).
- A host that shows the model other spellings of the names (the MCP door's wire names,
  ``drive-_-files-_-list``) passes them as ``spell``: every name line is written, and counted,
  in that spelling, so the budget holds for the very text the model reads. Namespace lines keep
  the canonical namespace (``select:drive.*`` takes it); order stays the canonical one.
- Priority: *adjacent* first (a namespace holding, or a name sharing the namespace of, an
  always-loaded tool), then the larger namespace, then ``(casefold, name)`` order. Lines are
  written in ``(casefold, text)`` order, so the block is byte-stable for a given catalog,
  permitted set, always-loaded set, descriptions and budget.

A namespace's description is the operator's or the tool source's (``[tools.namespaces]``, an
MCP server's instructions, a tool folder's README), else derived from its tools: the words that
are most frequent in the namespace and rarest in the rest of the directory (ties by word). It is
cut to one line of at most `DESCRIPTION_CHARS` characters.

Token counting (`count_tokens`) uses the ``o200k_base`` BPE of ``bpe-openai`` when that
optional package is installed (imported lazily, on the first grouped directory), else an
estimate: one token per CJK or other wide character plus one per three other characters,
rounded up. Real tool names and English descriptions average about five characters per token
in ``o200k_base`` (4.9 for the 10,000 names of the scale benchmark), so the estimate usually
errs high; names made mostly of digits and separators (``op_17``) can average under three, so
without the tokenizer a budget is approximate.
"""

from __future__ import annotations

import functools
import gc
import importlib
import math
import re
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .tokens import STOP_WORDS, split_name

__all__ = [
    "DEFAULT_DIRECTORY_BUDGET",
    "DESCRIPTION_CHARS",
    "DeferredDirectory",
    "build_directory",
    "clean_description",
    "count_tokens",
    "estimate_tokens",
    "namespace_of",
    "tokenizer_label",
]

DEFAULT_DIRECTORY_BUDGET = 4000
"""Default ``[skills] tool_search_directory_budget``, in tokens; 0 means no limit."""
DESCRIPTION_CHARS = 80
"""The longest namespace description a directory line carries (cut at a word, with ``…``)."""

OPEN = "<available_deferred_tools>"
CLOSE = "</available_deferred_tools>"
_DERIVED_WORDS = 4
_DESCRIPTION_WORDS = 24  # words of a tool description that feed a derived description
_MIN_GROUP = 2
_FIT_ATTEMPTS = 6
_MIN_LINE_TOKENS = 5  # "x.* (2 tools)" and its newline, in any counter


# --- token counting --------------------------------------------------------------------------


@functools.cache
def _bpe() -> Callable[[str], int] | None:
    try:
        with warnings.catch_warnings():  # bpe-openai 0.1 uses a deprecated importlib API
            warnings.simplefilter("ignore", DeprecationWarning)
            module: Any = importlib.import_module("bpe_openai")
            encoding: Any = module.get_encoding("o200k_base")
    except Exception:  # a missing or broken optional package: fall back to the estimate
        return None

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count


def estimate_tokens(text: str) -> int:
    """The documented estimate: one token per wide (CJK) character, one per 3 others, rounded up.

    >>> estimate_tokens("drive.files.list"), estimate_tokens("天气")
    (6, 2)
    """
    wide = sum(1 for c in text if ord(c) > 0x2E7F) if not text.isascii() else 0
    return wide + math.ceil((len(text) - wide) / 3)


def count_tokens(text: str) -> int:
    """Tokens of ``text``: ``o200k_base`` with ``bpe-openai`` installed, else `estimate_tokens`."""
    bpe = _bpe()
    return bpe(text) if bpe is not None else estimate_tokens(text)


def tokenizer_label() -> str:
    """Which counter `count_tokens` uses."""
    if _bpe() is None:
        return "estimate (1 token per 3 characters, 1 per CJK character)"
    return "o200k_base (bpe-openai)"


# --- namespaces ------------------------------------------------------------------------------


def namespace_of(name: str) -> str:
    """The namespace of a canonical tool name: everything before its last ``.`` (or ``""``).

    >>> namespace_of("drive.files.list"), namespace_of("weather")
    ('drive.files', '')
    """
    return name.rpartition(".")[0]


def _prefixes(name: str) -> tuple[str, ...]:
    """The namespaces of ``name`` at levels 1, 2, ...: ``a.b.c`` -> ``("a", "a.b")``."""
    out: list[str] = []
    dot = name.find(".")
    while dot != -1:
        out.append(name[:dot])
        dot = name.find(".", dot + 1)
    return tuple(out)


def clean_description(text: object) -> str:
    """``text`` as one directory line: whitespace collapsed, ``<``/``>`` dropped, cut short.

    >>> clean_description("  Reads and\\nwrites <b>Sheets</b>.  ")
    'Reads and writes bSheets/b.'
    """
    if not isinstance(text, str):
        return ""
    one_line = " ".join(text.replace("<", "").replace(">", "").split())
    if len(one_line) <= DESCRIPTION_CHARS:
        return one_line
    cut = one_line[: DESCRIPTION_CHARS - 1]
    space = cut.rfind(" ")
    if space > DESCRIPTION_CHARS // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


_WORD = re.compile(r"[a-z]{3,}")  # one character class: linear time


def _tool_words(name: str, description: str) -> frozenset[str]:
    # Every part of the name: a collapsed namespace (``drive``) is described by the parts
    # below it too (``files``, ``permissions``); its own parts are left out later.
    words = _WORD.findall(" ".join(split_name(name)))
    words += _WORD.findall(
        " ".join(description.split(None, _DESCRIPTION_WORDS)[:_DESCRIPTION_WORDS]).lower()
    )
    return frozenset(words) - STOP_WORDS


def _derive(
    groups: Mapping[str, Sequence[str]],
    words: Mapping[str, frozenset[str]],
    frequency: Counter[str],
    total: int,
) -> dict[str, str]:
    """A description per namespace from its tools' most distinctive words (deterministic)."""
    out: dict[str, str] = {}
    for namespace, members in groups.items():
        own = set(split_name(namespace))
        counts: Counter[str] = Counter()
        for name in members:
            counts.update(words.get(name, ()))
        scored = sorted(
            (
                (-(count * math.log(1.0 + total / frequency[word])), word)
                for word, count in counts.items()
                if word not in own and (count > 1 or len(members) < 4)
            ),
        )
        out[namespace] = ", ".join(word for _, word in scored[:_DERIVED_WORDS])
    return out


# --- the directory ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeferredDirectory:
    """One rendered directory and what it shows."""

    text: str
    """The whole ``<available_deferred_tools>`` block, or ``""`` when there are no names."""
    grouped: bool
    """True when the names did not fit the budget and namespaces stand in for them."""
    namespaces: tuple[str, ...] = ()
    """The namespaces written as lines (``drive`` for the line ``drive.* (...)``)."""
    listed: int = 0
    """How many names are written one per line."""
    unlisted: int = 0
    """How many deferred tools the block neither lists nor covers by a namespace line."""
    tokens: int = 0
    """The block's size by the counter used; 0 when nothing was counted (budget 0)."""


def _plain(names: Sequence[str], spell: Callable[[str], str] | None) -> str:
    if not names:
        return ""
    return "\n".join((OPEN, *(map(spell, names) if spell else names), CLOSE))


def _footer(count: int) -> str:
    noun = "tool is" if count == 1 else "tools are"
    return f"({count} more {noun} not listed here; keyword search finds them.)"


def _bare(namespace: str, size: int) -> str:
    return f"{namespace}.* ({size} tools)"


@dataclass(slots=True)
class _Plan:
    groups: dict[str, list[str]]
    loose: list[str]


def _plan(prefixes: Mapping[str, tuple[str, ...]], names: Sequence[str], level: int) -> _Plan:
    members: dict[str, list[str]] = {}
    loose: list[str] = []
    for name in names:
        own = prefixes.get(name)
        if own:
            members.setdefault(own[min(level, len(own)) - 1], []).append(name)
        else:
            loose.append(name)
    groups: dict[str, list[str]] = {}
    for namespace, group in members.items():
        if len(group) >= _MIN_GROUP:
            groups[namespace] = group
        else:
            loose.extend(group)
    return _Plan(groups, loose)


class _Builder:
    """The greedy fitting of one grouped directory (see the module docstring)."""

    def __init__(  # noqa: PLR0917 (private; one call site)
        self,
        names: Sequence[str],
        budget: int,
        descriptions: Mapping[str, str],
        always_loaded: Collection[str],
        tool_descriptions: Callable[[str], str] | None,
        count: Callable[[str], int],
        spell: Callable[[str], str] | None,
    ) -> None:
        self.names = names
        self.spell = spell or str
        self.budget = budget
        self.configured = {ns: clean_description(text) for ns, text in descriptions.items()}
        self.adjacent_namespaces = {namespace_of(n) for n in always_loaded} - {""}
        self.count = count
        self._tokens: dict[str, int] = {}
        self._describe = tool_descriptions or (lambda _name: "")
        self._words: dict[str, frozenset[str]] | None = None
        self.frequency: Counter[str] = Counter()
        self.prefixes = {n: _prefixes(n) for n in names if "." in n}
        self.max_level = max(map(len, self.prefixes.values()), default=0)

    @property
    def words(self) -> dict[str, frozenset[str]]:
        """Each dotted name's descriptive words (computed on first use: only when a level's
        namespace lines fit at all are descriptions needed)."""
        if self._words is None:
            describe = self._describe
            self._words = {n: _tool_words(n, describe(n)) for n in self.names if "." in n}
            for found in self._words.values():
                self.frequency.update(found)
        return self._words

    def tokens(self, line: str) -> int:
        """Tokens of one line plus its newline."""
        cost = self._tokens.get(line)
        if cost is None:
            cost = self._tokens[line] = self.count(line) + 1
        return cost

    def adjacent_group(self, namespace: str) -> bool:
        prefix = namespace + "."
        return any(a == namespace or a.startswith(prefix) for a in self.adjacent_namespaces)

    def descriptions(self, groups: Mapping[str, list[str]]) -> dict[str, str]:
        derive = {ns: m for ns, m in groups.items() if not self.configured.get(ns)}
        words = self.words
        derived = _derive(derive, words, self.frequency, max(1, len(words)))
        return {
            ns: self.configured.get(ns) or clean_description(derived.get(ns, "")) for ns in groups
        }

    def build(self) -> DeferredDirectory:
        budget = self.budget
        for _ in range(_FIT_ATTEMPTS):
            directory = self._fit(budget)
            if directory.tokens <= self.budget or budget <= 0:
                return directory
            budget -= directory.tokens - self.budget + 4
        return self._fit(0)

    def _fit(self, budget: int) -> DeferredDirectory:
        frame = self.tokens(OPEN) + self.count(CLOSE)
        # The footer's size depends on its count; reserve the largest it can be.
        reserve = self.tokens(_footer(len(self.names)))
        available = budget - frame - reserve
        # Shallow to deep: deeper levels have more (or as many) lines, so the first level that
        # does not fit ends the walk; the deepest one that did is used.
        best: tuple[_Plan, dict[str, str]] | None = None
        for level in range(1, self.max_level + 1):
            plan = _plan(self.prefixes, self.names, level)
            if len(plan.groups) * _MIN_LINE_TOKENS > available:
                break  # cannot fit: skip counting thousands of lines
            bare = sum(self.tokens(_bare(ns, len(m))) for ns, m in plan.groups.items())
            if bare > available:
                break
            described = self.descriptions(plan.groups)
            full = {ns: self._line(ns, len(m), described[ns]) for ns, m in plan.groups.items()}
            if sum(self.tokens(line) for line in full.values()) > available:
                break
            best = (plan, full)
        if best is not None:
            return self._finish(best[0], best[1], available)
        plan = _plan(self.prefixes, self.names, 1)
        return self._finish_top(plan, available)

    @staticmethod
    def _line(namespace: str, size: int, description: str) -> str:
        bare = _bare(namespace, size)
        return f"{bare}: {description}" if description else bare

    def _priority(self, plan: _Plan) -> list[str]:
        return sorted(
            plan.groups,
            key=lambda ns: (
                not self.adjacent_group(ns),
                -len(plan.groups[ns]),
                ns.casefold(),
                ns,
            ),
        )

    def _finish_top(self, plan: _Plan, available: int) -> DeferredDirectory:
        """Level 1 when even its described lines do not fit: bare lines, then descriptions."""
        order = self._priority(plan)
        lines: dict[str, str] = {}
        used = 0
        for ns in order:
            line = _bare(ns, len(plan.groups[ns]))
            if used + self.tokens(line) <= available:
                lines[ns] = line
                used += self.tokens(line)
        kept = {ns: plan.groups[ns] for ns in order if ns in lines}
        described = self.descriptions(kept)
        for ns in order:
            if ns not in lines or not described[ns]:
                continue
            line = self._line(ns, len(kept[ns]), described[ns])
            extra = self.tokens(line) - self.tokens(lines[ns])
            if used + extra <= available:
                lines[ns] = line
                used += extra
        dropped = [name for ns, m in plan.groups.items() if ns not in lines for name in m]
        return self._assemble(lines, plan, available - used, dropped)

    def _finish(self, plan: _Plan, lines: dict[str, str], available: int) -> DeferredDirectory:
        used = sum(self.tokens(line) for line in lines.values())
        return self._assemble(lines, plan, available - used, [])

    def _assemble(
        self, lines: dict[str, str], plan: _Plan, left: int, dropped: list[str]
    ) -> DeferredDirectory:
        sizes = Counter(namespace_of(n) for n in plan.loose)
        adjacent = self.adjacent_namespaces
        order = sorted(
            plan.loose,
            key=lambda n: (
                namespace_of(n) not in adjacent,
                -sizes[namespace_of(n)],
                n.casefold(),
                n,
            ),
        )
        spell = self.spell
        listed: list[tuple[str, str]] = []  # (canonical, as written)
        for name in order:
            written = spell(name)
            cost = self.tokens(written)
            if cost <= left:
                listed.append((name, written))
                left -= cost
        unlisted = len(plan.loose) - len(listed) + len(dropped)
        # Ordered by the canonical text, whatever the spelling: the order does not move with it.
        entries = [*((line, line) for line in lines.values()), *listed]
        entries.sort(key=lambda entry: (entry[0].casefold(), entry[0]))
        body = [written for _, written in entries]
        if unlisted:
            body.append(_footer(unlisted))
        text = "\n".join((OPEN, *body, CLOSE))
        return DeferredDirectory(
            text=text,
            grouped=True,
            namespaces=tuple(sorted(lines, key=lambda ns: (ns.casefold(), ns))),
            listed=len(listed),
            unlisted=unlisted,
            tokens=self.count(text),
        )


def build_directory(
    names: Sequence[str],
    *,
    budget: int = DEFAULT_DIRECTORY_BUDGET,
    descriptions: Mapping[str, str] | None = None,
    always_loaded: Iterable[str] = (),
    tool_descriptions: Callable[[str], str] | None = None,
    count: Callable[[str], int] | None = None,
    spell: Callable[[str], str] | None = None,
) -> DeferredDirectory:
    """The directory of ``names`` under ``budget`` tokens (see the module docstring).

    Args:
        names: valid, distinct deferred names in ``(casefold, name)`` order.
        budget: tokens the block may take; 0 means no limit (always the full list).
        descriptions: namespace -> description from the operator or the tool source.
        always_loaded: the always-loaded names (their namespaces come first).
        tool_descriptions: a tool's description by name, for derived namespace descriptions.
        count: the token counter; `count_tokens` by default.
        spell: how a name is written in the block (``WireNames.to_wire`` where the model sees
            wire names); the budget counts that spelling. By default, as given.

    Raises:
        ValueError: ``budget`` is negative or not an integer.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be an integer >= 0, got {budget!r}")
    counter = count or count_tokens
    full = _plain(names, spell)
    if not full:
        return DeferredDirectory(text="", grouped=False)
    if budget == 0:
        return DeferredDirectory(text=full, grouped=False, listed=len(names))
    # Names cost at least a token each: a list far over the budget is not worth counting.
    if len(names) <= budget:
        tokens = counter(full)
        if tokens <= budget:
            return DeferredDirectory(text=full, grouped=False, listed=len(names), tokens=tokens)
    # Like the catalog build: many long-lived objects, no cycles; the collector only costs.
    collecting = gc.isenabled()
    gc.disable()
    try:
        builder = _Builder(
            names,
            budget,
            descriptions or {},
            frozenset(always_loaded),
            tool_descriptions,
            counter,
            spell,
        )
        return builder.build()
    finally:
        if collecting:
            gc.enable()
