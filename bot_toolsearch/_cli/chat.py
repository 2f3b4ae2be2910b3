"""``bot-toolsearch chat`` and ``ask``: talk to the configured bot, interactively or once.

With ``--offline``, or when neither ``[model] base_url`` nor ``OPENAI_API_KEY``/``OPENAI_BASE_URL``
is set, the bot talks to the embedded offline model (the demo's deterministic planner behind a
``ScriptedOpenAIServer`` on 127.0.0.1), so a newcomer can try it without a key.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import openai

from bot_toolsearch._config.file import load_settings
from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._errors import ConversationStoreError, ToolSearchError
from bot_toolsearch._runtime.ask_result import AskResult, RoundTrace
from bot_toolsearch._runtime.bot import Bot
from bot_toolsearch._tools.tool import Agent, Tool

from .options import add_config_option

__all__ = ["INSTRUCTIONS", "add_chat_subparsers", "load_tools", "print_trace"]

INSTRUCTIONS = (
    "You are a helpful chat bot. Answer with send_message, then call end. "
    "Use the tools; do not guess results."
)
"""The system prompt of the bot ``chat`` and ``ask`` run."""

_PROMPT = "you> "
_RESULT_WIDTH = 100
_NAMES_SHOWN = 8


_Body = Callable[[asyncio.Runner, Bot, argparse.Namespace], int]


class _CliError(Exception):
    """One line for stderr and the exit status; never a traceback."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def add_chat_subparsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``chat`` (interactive) and ``ask`` (one shot) commands."""
    chat = subparsers.add_parser("chat", help="chat with the configured bot (Ctrl-D to quit)")
    _add_common(chat)
    _add_conversation_option(chat, chat=True)
    chat.set_defaults(func=_chat)
    ask = subparsers.add_parser("ask", help="ask the configured bot one question")
    ask.add_argument("text", metavar="TEXT", help="the user message")
    _add_common(ask)
    _add_conversation_option(ask, chat=False)
    ask.set_defaults(func=_ask)


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--trace", action="store_true", help="print the round-by-round trace")
    parser.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="tools to load: a sequence of Tool (or a callable returning one), named as "
        "package.module:attribute or path/to/file.py:attribute",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="use the embedded offline model (default when no endpoint or API key is set)",
    )


def load_tools(target: str) -> tuple[tuple[Tool, ...], tuple[Agent, ...]]:
    """The tools and agents named by ``package.module:attr`` or ``path/to/file.py:attr``.

    ``attr`` is a sequence of `Tool`/`Agent` or a callable returning one.

    Raises:
        ValueError: the target cannot be imported or does not hold tools (one-line message).
    """
    module_name, _, attr = target.rpartition(":")
    if not module_name or not attr:
        raise ValueError(f"--tools {target!r}: expected MODULE:ATTR, e.g. mypkg.tools:TOOLS")
    try:
        module = _import(module_name)
    except Exception as exc:  # the user's module may raise anything while importing
        raise ValueError(
            f"--tools {target!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    if not hasattr(module, attr):
        raise ValueError(f"--tools {target!r}: {module_name!r} has no attribute {attr!r}")
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, Tool | Agent):
        try:
            value = value()
        except Exception as exc:
            raise ValueError(
                f"--tools {target!r}: calling {attr}() failed: {type(exc).__name__}: {exc}"
            ) from None
    items = (value,) if isinstance(value, Tool | Agent) else value
    if isinstance(items, str | bytes) or not isinstance(items, Sequence | tuple | list):
        raise ValueError(
            f"--tools {target!r}: expected a sequence of Tool, got {type(value).__name__}"
        )
    bad = next((item for item in items if not isinstance(item, Tool | Agent)), None)
    if bad is not None:
        raise ValueError(f"--tools {target!r}: not a Tool: {type(bad).__name__} {bad!r:.60}")
    tools = tuple(item for item in items if isinstance(item, Tool))
    agents = tuple(item for item in items if isinstance(item, Agent))
    return tools, agents


def _import(name: str) -> object:
    if name.endswith(".py") or os.sep in name or "/" in name:
        path = Path(name)
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {name}")
        spec = importlib.util.spec_from_file_location(f"_bot_toolsearch_tools_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {name}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    # As with `python -m`, modules in the current directory are importable.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(name)


def _ask(args: argparse.Namespace) -> int:
    return _run(args, _one_shot)


def _chat(args: argparse.Namespace) -> int:
    return _run(args, _interactive)


def _run(args: argparse.Namespace, body: _Body) -> int:
    name = f"bot-toolsearch {args.command}"
    try:
        try:
            tools, agents = load_tools(args.tools) if args.tools else ((), ())
        except ValueError as exc:
            raise _CliError(str(exc)) from None
        if not Path(args.config).exists():
            raise _CliError(f"{args.config}: config file not found (pass --config PATH)")
        settings = load_settings(args.config)
        with asyncio.Runner() as runner, _model(args, settings) as client:
            bot = Bot.from_config(
                args.config, tools, agents, client=client, instructions=INSTRUCTIONS
            )
            if client is not None:  # said once the bot is up, so errors stay one line
                print(
                    f"model: EMBEDDED OFFLINE MODEL at {client.base_url} (a deterministic "
                    "planner, not an LLM; set [model] base_url or OPENAI_API_KEY for a real one)",
                    file=sys.stderr,
                )
            try:
                return body(runner, bot, args)
            finally:
                with contextlib.suppress(KeyboardInterrupt):
                    runner.run(bot.aclose())
                    if client is not None:
                        runner.run(client.close())
    except KeyboardInterrupt:
        print(file=sys.stderr)
        # Leaving a chat with Ctrl-C is normal; an interrupted one-shot ask did not finish.
        return 0 if args.command == "chat" else 130
    except _CliError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return exc.status
    except ToolSearchError as exc:  # ConfigError (file:line:column), CatalogError
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 1


@contextlib.contextmanager
def _model(args: argparse.Namespace, settings: BotSettings) -> Iterator[openai.AsyncOpenAI | None]:
    """The embedded offline model's client, or ``None`` for the client `Bot` builds itself."""
    env = os.environ
    configured = settings.model.base_url or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY")
    if configured and not args.offline:
        yield None
        return
    from bot_toolsearch._demo.planner import OFFLINE_MODEL_NAME, OfflinePlanner
    from bot_toolsearch.testing import ScriptedOpenAIServer

    planner = OfflinePlanner(dot_delimiter=settings.tools.dot_delimiter)
    models = (OFFLINE_MODEL_NAME, settings.model.name)
    with ScriptedOpenAIServer(responder=planner, models=models) as server:
        yield openai.AsyncOpenAI(base_url=server.base_url, api_key="offline-demo", max_retries=0)


def _one_shot(runner: asyncio.Runner, bot: Bot, args: argparse.Namespace) -> int:
    try:
        result = _ask_bot(runner, bot, args.text, fatal=True, conversation=args.conversation)
    except ConversationStoreError as exc:
        if isinstance(exc.result, AskResult):  # answered; only storing the turn failed
            print(exc.result.reply)
        raise
    assert result is not None  # fatal=True raises instead
    if args.trace:
        print_trace(result.trace)
    print(result.reply)
    return 0


def _interactive(runner: asyncio.Runner, bot: Bot, args: argparse.Namespace) -> int:
    session = _ChatSession(args.conversation or _fresh_id())
    print(session.banner(bot), file=sys.stderr, flush=True)
    while True:
        try:
            line = input(_PROMPT)
        except EOFError:
            print()  # end the prompt line
            return 0
        if not line.strip():
            continue
        if session.command(runner, bot, line):
            continue
        result = session.ask(runner, bot, line)
        if result is None:
            continue
        if args.trace:
            print_trace(result.trace)
        print(f"bot> {result.reply}", flush=True)


def _ask_bot(
    runner: asyncio.Runner, bot: Bot, text: str, *, fatal: bool, conversation: str | None = None
) -> AskResult | None:
    """One ask; endpoint and key problems are fatal, other HTTP errors only with ``fatal``."""
    try:
        return runner.run(bot.ask(text, conversation=conversation))
    except openai.AuthenticationError as exc:
        raise _CliError(
            f"{_where(exc)} rejected the API key (HTTP 401: {_message(exc)}); "
            "check [model] api_key or OPENAI_API_KEY"
        ) from None
    except openai.APITimeoutError as exc:
        raise _CliError(f"{_where(exc)} did not answer in time ([model] timeout)") from None
    except openai.APIConnectionError as exc:
        raise _CliError(
            f"cannot reach the model endpoint {_where(exc)}; check [model] base_url"
        ) from None
    except openai.APIStatusError as exc:
        message = f"{_where(exc)} answered HTTP {exc.status_code}: {_message(exc)}"
        if fatal:
            raise _CliError(message) from None
        print(f"bot-toolsearch chat: error: {message}", file=sys.stderr, flush=True)
        return None
    except openai.OpenAIError as exc:  # e.g. no API key at all when the client is built
        raise _CliError(" ".join(str(exc).split())) from None


# -- conversations (issue 15): --conversation, /reset, /history, /tools ----------------------

_COMMANDS = "/reset (forget this conversation), /history, /tools (what is loaded)"


def _add_conversation_option(parser: argparse.ArgumentParser, *, chat: bool) -> None:
    parser.add_argument(
        "--conversation",
        metavar="ID",
        help="the conversation to continue, kept in [conversations] store "
        + ("(default: a fresh one per session, printed at start)" if chat else "(default: none)"),
    )


def _fresh_id() -> str:
    return f"chat-{uuid.uuid4().hex[:12]}"


class _ChatSession:
    """One ``chat`` session's conversation and its slash commands."""

    def __init__(self, conversation: str) -> None:
        self.conversation: str | None = conversation
        self.last: AskResult | None = None

    def banner(self, bot: Bot) -> str:
        return (
            f"conversation: {self.conversation} (kept in {bot.conversations.location}; "
            f"--conversation {self.conversation} continues it); commands: {_COMMANDS}"
        )

    def ask(self, runner: asyncio.Runner, bot: Bot, text: str) -> AskResult | None:
        """One ask in the conversation; a store failure leaves the chat single-shot."""
        try:
            result = _ask_bot(runner, bot, text, fatal=False, conversation=self.conversation)
        except ConversationStoreError as exc:
            self._lost(exc)
            kept = exc.result
            if isinstance(kept, AskResult):  # answered, but the turn could not be stored
                self.last = kept
                return kept
            result = _ask_bot(runner, bot, text, fatal=False)
        if result is not None:
            self.last = result
        return result

    def command(self, runner: asyncio.Runner, bot: Bot, line: str) -> bool:
        """Run ``line`` if it is a slash command; whether it was one."""
        word = line.strip()
        if word not in ("/reset", "/history", "/tools"):
            if word.startswith("/") and word[1:].isalpha():
                print(f"unknown command {word}; commands: {_COMMANDS}", flush=True)
                return True
            return False
        try:
            if word == "/reset":
                self._reset(runner, bot)
            elif word == "/history":
                self._history(runner, bot)
            else:
                self._tools(runner, bot)
        except ConversationStoreError as exc:
            self._lost(exc)
        return True

    def _lost(self, exc: ConversationStoreError) -> None:
        if self.conversation is not None:
            print(
                f"bot-toolsearch chat: error: {exc}; going on without conversation memory",
                file=sys.stderr,
                flush=True,
            )
        self.conversation = None

    def _reset(self, runner: asyncio.Runner, bot: Bot) -> None:
        if self.conversation is not None:
            runner.run(bot.reset_conversation(self.conversation))
        self.last = None
        print(f"conversation {self.conversation} forgotten", flush=True)

    def _history(self, runner: asyncio.Runner, bot: Bot) -> None:
        if self.conversation is None:
            print("(no conversation memory)", flush=True)
            return
        history = runner.run(bot.conversations.load(self.conversation))
        if not history.turns:
            print("(no turns yet)", flush=True)
        for turn in history.turns:
            print(f"[{turn.seq}] you> {_cut(turn.user_text)}", flush=True)
            print(f"[{turn.seq}] bot> {_cut(turn.reply)}", flush=True)

    def _tools(self, runner: asyncio.Runner, bot: Bot) -> None:
        settings = bot.settings
        skills = settings.skills
        names = set(bot.toolset.names)
        always = [n for n in skills.tool_search_always_loaded if n in names]
        if not skills.tool_search_enabled:
            print(f"tool search is off: every tool is sent ({len(names)} tools)", flush=True)
            return
        print(f"always loaded: {', '.join(always) or '(none)'}", flush=True)
        kept: tuple[str, ...] = ()
        if skills.tool_search_keep_loaded == "conversation" and self.conversation is not None:
            history = runner.run(bot.conversations.load(self.conversation, max_turns=1))
            permitted = bot.toolset.pattern_permitted(settings.tools.allow, settings.tools.deny)
            kept = tuple(n for n in history.tools_called if n in permitted and n not in always)
            print(f"kept for this conversation: {', '.join(kept) or '(none yet)'}", flush=True)
        else:
            print(
                'loaded per message (tool_search_keep_loaded = "ask"): the next message '
                "starts from the always-loaded tools",
                flush=True,
            )
        if self.last is not None:
            loaded = self.last.stats.tools_loaded
            print(f"the last message loaded: {', '.join(loaded) or '(none)'}", flush=True)


def _where(exc: openai.APIError | openai.APIConnectionError) -> str:
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    if url is None:
        return "the model endpoint"
    return f"{url.scheme}://{url.netloc.decode()}"


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return " ".join(inner["message"].split())
    return " ".join(exc.message.split())


def print_trace(trace: Sequence[RoundTrace]) -> None:
    """Print each round: the tools sent, the calls with their outcomes, results truncated."""
    for round_ in trace:
        names = round_.tool_names
        shown = ", ".join(names[:_NAMES_SHOWN])
        if len(names) > _NAMES_SHOWN:
            shown += f", … (+{len(names) - _NAMES_SHOWN} more)"
        print(f"  round {round_.index}: sent {len(names)} tools: {shown}")
        for call in round_.calls:
            why = f" ({call.reason})" if call.reason else ""
            print(f"    call {call.name}({_cut(call.arguments)}) -> {call.outcome}{why}")
            print(f"      result: {_cut(call.result)}")
        if round_.text:
            print(f"    text: {_cut(round_.text)}")


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _RESULT_WIDTH else flat[: _RESULT_WIDTH - 1] + "…"
