"""``bot-toolsearch chat`` and ``ask``: talk to the configured bot, interactively or once.

With ``--offline``, or when neither ``[model] base_url`` nor ``OPENAI_API_KEY``/``OPENAI_BASE_URL``
is set (the same thing), the bot talks to the embedded offline model (the demo's deterministic
planner behind a ``ScriptedOpenAIServer`` on 127.0.0.1), with the demo's tools when no others
are given, so a newcomer can try it without a key. Without a config file tool search is on, as
in every door; each run says once at start-up whether tool search is on and why.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib
import importlib.util
import json
import logging
import os
import queue
import signal
import sys
import uuid
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TextIO

import openai

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._errors import ConfigError, ConversationStoreError, ToolSearchError
from bot_toolsearch._protocol.engine import ToolSearchProtocol
from bot_toolsearch._runtime.ask_result import AskResult, RoundTrace
from bot_toolsearch._runtime.bot import Bot
from bot_toolsearch._runtime.conversation_store import open_store
from bot_toolsearch._runtime.endpoint_errors import describe_endpoint_error
from bot_toolsearch._runtime.toolset import END, SEND_MESSAGE, not_a_tool
from bot_toolsearch._services.mode import SearchMode, search_mode
from bot_toolsearch._tools.tool import Agent, Tool

from .options import (
    INTERRUPTED,
    CliConfig,
    CliError,
    add_config_option,
    load_cli_config,
    plural,
    report_error,
    searching_by_default,
)

__all__ = ["INSTRUCTIONS", "add_chat_subparsers", "load_tools", "print_trace"]

INSTRUCTIONS = (
    "You are a helpful chat bot. Answer with send_message, then call end. "
    "Use the tools; do not guess results."
)
"""The system prompt of the bot ``chat`` and ``ask`` run."""

_PROMPT = "you> "
_GOES_ON = (
    "the chat goes on: fix [model] in the config file (an edit is applied to the next "
    "message) and send the message again"
)
_NO_TOOLS = (
    "note: no tools yet, so the bot can only talk: `--offline` brings the demo's tools with "
    "the offline model, `--tools MODULE:ATTR` your own, [tools] dirs in the config a folder"
)
_RESULT_WIDTH = 100
_NAMES_SHOWN = 8
_CLOSE_TIMEOUT = 3.0  # seconds to close the bot after Ctrl-C before leaving anyway


def add_chat_subparsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``chat`` (interactive) and ``ask`` (one shot) commands."""
    chat = subparsers.add_parser("chat", help="chat with the configured bot (Ctrl-D to quit)")
    _add_common(chat)
    _add_conversation_option(chat, chat=True)
    chat.set_defaults(func=_chat)
    ask = subparsers.add_parser("ask", help="ask the configured bot one question")
    ask.add_argument("text", metavar="TEXT", help="the user message")
    _add_common(ask)
    ask.add_argument(
        "--json", action="store_true", help="print the whole result (reply, trace, stats) as JSON"
    )
    _add_conversation_option(ask, chat=False)
    ask.set_defaults(func=_ask)


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument(
        "--trace", action="store_true", help="print each round on stderr as it happens"
    )
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
        raise ValueError(f"--tools {target!r}: {not_a_tool(bad)}")
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


class _Interrupted(Exception):
    """Ctrl-C cancelled the running ask."""


@dataclass(slots=True)
class _Session:
    """What a ``chat`` or ``ask`` body works with: the loop, the bot and its config."""

    runner: asyncio.Runner
    bot: Bot
    args: argparse.Namespace
    config: CliConfig
    offline: bool
    interrupted: bool = False
    notices: queue.SimpleQueue[str] = field(default_factory=queue.SimpleQueue)
    conversation: str | None = None
    """The conversation asks continue (``--conversation``, or chat's fresh one); ``None``:
    single-shot."""

    def ask(self, text: str, *, fatal: bool) -> AskResult | None:
        """One ask; ``None`` when Ctrl-C cancelled it or (unless ``fatal``) an HTTP error."""
        context = {"on_round": _print_round} if self.args.trace else None
        asking = self.bot.ask(text, context=context, conversation=self.conversation)
        try:
            return _ask_bot(self.runner, asking, fatal=fatal)
        except _Interrupted:
            self.interrupted = True
            print("interrupted: the answer was cancelled", file=sys.stderr, flush=True)
            return None

    def flush_notices(self) -> None:
        """Print the config reload notices that arrived meanwhile (never over the prompt)."""
        while True:
            try:
                line = self.notices.get_nowait()
            except queue.Empty:
                return
            print(line, file=sys.stderr, flush=True)


def _run(args: argparse.Namespace, body: Callable[[_Session], int]) -> int:
    try:
        tools, agents = load_tools(args.tools) if args.tools else ((), ())
    except ValueError as exc:
        raise CliError(str(exc)) from None
    config = load_cli_config(args)
    if args.trace:  # once per ask: how many tools the permissions hid (never their names)
        logging.getLogger("bot_toolsearch.permissions").setLevel(logging.INFO)
    settings = config.loaded.settings
    # No endpoint and no key is --offline: the offline model with the demo's tools.
    offline = args.offline or not _configured(settings)
    demo = offline and not args.tools and not (settings.tools.dirs or settings.tools.mcp_servers)
    if demo:
        from bot_toolsearch._demo.catalog import demo_tools

        tools = tuple(demo_tools())  # --offline alone: the demo's model and its tools
    with (
        _own_mode_line(),
        asyncio.Runner() as runner,
        _model(settings, offline=offline) as client,
    ):
        try:
            bot = _build_bot(config, tools, agents, client)
        except ToolSearchError as exc:  # CatalogError (a duplicate name), ConfigError
            raise CliError(str(exc)) from None
        except ValueError as exc:  # [conversations] store from the environment, unusable
            raise CliError(str(exc)) from None
        session = _Session(runner, bot, args, config, offline=client is not None)
        status = INTERRUPTED
        try:
            status = body(session)
        except CliError as exc:
            report_error(exc)
            status = exc.status
        finally:
            _close(session, client)
        if session.interrupted:
            # A cancelled synchronous tool may still run in a worker thread, which Python
            # would wait for at exit: leave now, as the user asked.
            _exit_now(status)
        return status


@contextlib.contextmanager
def _own_mode_line() -> Iterator[None]:
    """The CLI states the mode itself, once (`_mode_line`): the Bot's own start-up line
    (logger ``bot_toolsearch.mode``) would repeat it, so it is held back meanwhile."""
    mode_log = logging.getLogger("bot_toolsearch.mode")
    hush = _DropAll()
    mode_log.addFilter(hush)
    try:
        yield
    finally:
        mode_log.removeFilter(hush)


class _DropAll(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        del record  # every record of the logger it filters is dropped
        return False


def _build_bot(
    config: CliConfig,
    tools: Sequence[Tool],
    agents: Sequence[Agent],
    client: openai.AsyncOpenAI | None,
) -> Bot:
    if config.path is not None:
        return Bot.from_config(config.path, tools, agents, client=client, instructions=INSTRUCTIONS)
    # No file: the defaults and the environment. Conversations go where `from_config` keeps
    # them ([conversations] store, SQLite ./bot.db by default), so --conversation ID
    # continues in a later process too.
    settings = config.loaded.settings  # no file: tool search on (`load_cli_config`)
    store = open_store(settings.conversations.store)
    return Bot(
        settings, tools, agents, client=client, instructions=INSTRUCTIONS, conversations=store
    )


def _close(session: _Session, client: openai.AsyncOpenAI | None) -> None:
    """Close the bot and the offline client; after Ctrl-C, briefly and Ctrl-C leaves at once."""
    if session.interrupted:
        with contextlib.suppress(ValueError):  # not the main thread
            signal.signal(signal.SIGINT, lambda *_: _exit_now(INTERRUPTED))

    async def close() -> None:
        async with asyncio.timeout(_CLOSE_TIMEOUT if session.interrupted else None):
            await session.bot.aclose()
            if session.config.path is None:  # the store `_build_bot` opened (from_config
                await session.bot.conversations.aclose()  # closes its own)
            if client is not None:
                await client.close()

    with contextlib.suppress(KeyboardInterrupt, TimeoutError):
        session.runner.run(close())


def _exit_now(status: int) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def _configured(settings: BotSettings) -> bool:
    """Whether a model endpoint or key is set (else the CLI runs as ``--offline``)."""
    env = os.environ
    return bool(settings.model.base_url or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY"))


def _mode_line(session: _Session, *, name_file: bool = True) -> str:
    """Which tool-search mode the bot runs in, and why (said once at start-up); the config
    file is named unless the line names it already (``name_file=False``)."""
    if searching_by_default(session.config):
        mode = SearchMode(session.bot.settings.skills.tool_search_enabled, _NO_FILE)
    else:
        path = session.config.path
        # "in the config file config.toml", never "in the config config.toml"
        source = "environment" if path is None else f"config file {path}" if name_file else "config"
        mode = search_mode(session.bot.settings, source=source, plugins=True)
    return str(mode)


_NO_FILE = "no config file: the defaults, with tool search on"


@contextlib.contextmanager
def _model(settings: BotSettings, *, offline: bool) -> Iterator[openai.AsyncOpenAI | None]:
    """The embedded offline model's client, or ``None`` for the client `Bot` builds itself."""
    if not offline:
        yield None
        return
    from bot_toolsearch._demo.planner import OFFLINE_MODEL_NAME, OfflinePlanner
    from bot_toolsearch._scripted import ScriptedOpenAIServer

    planner = OfflinePlanner(dot_delimiter=settings.tools.dot_delimiter)
    models = (OFFLINE_MODEL_NAME, settings.model.name)
    with ScriptedOpenAIServer(responder=planner, models=models) as server:
        yield openai.AsyncOpenAI(base_url=server.base_url, api_key="offline-demo", max_retries=0)


def _model_label(session: _Session) -> str:
    if session.offline:
        return "the EMBEDDED OFFLINE MODEL (a deterministic planner, not an LLM)"
    model = session.config.loaded.settings.model
    where = model.base_url or os.environ.get("OPENAI_BASE_URL") or "api.openai.com"
    return f"{model.name} at {where}"


def _one_shot(session: _Session) -> int:
    # Said once, on stderr, so stdout holds only the answer.
    print(f"model: {_model_label(session)}; {_mode_line(session)}", file=sys.stderr)
    session.conversation = session.args.conversation
    try:
        result = session.ask(session.args.text, fatal=True)
    except ConversationStoreError as exc:
        if isinstance(exc.result, AskResult):  # answered; only storing the turn failed
            print(exc.result.reply)
        raise CliError(str(exc)) from None
    if result is None:
        return INTERRUPTED
    if session.conversation is not None:  # say where the turn went (./bot.db by default)
        print(
            f"conversation: {session.conversation} (kept in {session.bot.conversations.location})",
            file=sys.stderr,
        )
    if session.args.json:
        print(json.dumps(dataclasses.asdict(result), ensure_ascii=False, indent=2))
    else:
        print(result.reply)
    return 0


def _interactive(session: _Session) -> int:
    _enable_line_editing()
    bot, runner = session.bot, session.runner
    runner.run(bot.start())  # MCP servers connect now, so the tool count is right
    print(
        f"chat: {session.config.describe()}; {plural(len(bot.toolset.catalog), 'tool')}; "
        f"{_mode_line(session, name_file=False)}; model: {_model_label(session)}. "
        "Ctrl-D quits, Ctrl-C stops an answer.",
        file=sys.stderr,
        flush=True,
    )
    if all(name in (SEND_MESSAGE, END) for name in bot.toolset.names):
        print(_NO_TOOLS, file=sys.stderr, flush=True)
    session.conversation = session.args.conversation or _fresh_id()
    chat = _ChatSession(session)
    print(chat.banner(bot), file=sys.stderr, flush=True)
    with _reload_notices(session):
        while True:
            session.flush_notices()
            try:
                line = input(_PROMPT)
            except EOFError:
                print()  # end the prompt line
                return 0
            except KeyboardInterrupt:
                print(file=sys.stderr)
                return INTERRUPTED  # Ctrl-C at the prompt: 130, as documented
            if not line.strip() or chat.command(runner, bot, line):
                continue
            # A reload applied while the user typed is this message's: say so before its trace.
            session.flush_notices()
            result = chat.ask(line)
            session.flush_notices()
            if result is not None:
                print(f"bot> {result.reply}", flush=True)


def _enable_line_editing() -> None:
    """Line editing and history at the prompt (stdlib ``readline``), on a terminal only."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return
    with contextlib.suppress(ImportError):  # not on every platform
        import readline  # noqa: F401 - importing it is what makes input() edit lines


@contextlib.contextmanager
def _reload_notices(session: _Session) -> Iterator[None]:
    """Queue a line for each config reload (applied or refused), printed between prompts.

    The library's own reload log lines are held back meanwhile: they say the same in terms of
    snapshot generations, from the watcher thread, over whatever the prompt shows.
    """
    reloader = session.bot.reloader
    if reloader is None:
        yield
        return
    path = reloader.path

    def applied(_: BotSettings) -> None:
        session.notices.put(f"config: {path} reloaded; the next message uses it")

    def refused(error: ConfigError) -> None:
        session.notices.put(f"config: edit not applied ({error}); the previous settings stay")

    config_log = logging.getLogger("bot_toolsearch.config")
    hush = _ReloadLogFilter()
    config_log.addFilter(hush)
    undo = reloader.subscribe(applied, on_error=refused)
    try:
        yield
    finally:
        undo()
        config_log.removeFilter(hush)


class _ReloadLogFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.module != "reload"


def _ask_bot(
    runner: asyncio.Runner, asking: Coroutine[Any, Any, AskResult], *, fatal: bool
) -> AskResult | None:
    """One ask; an endpoint error ends ``ask`` (``fatal``) and is printed in ``chat``.

    ``chat`` goes on after an endpoint error, so the user can fix ``[model] base_url`` or the
    key in the config file (hot reload applies it) and send the message again.

    Raises:
        _Interrupted: Ctrl-C cancelled it.
    """
    try:
        return _run_cancellable(runner, asking)
    except openai.OpenAIError as exc:
        message = describe_endpoint_error(exc)
        if fatal:
            raise CliError(message) from None
        report_error(message)
        print(_GOES_ON, file=sys.stderr, flush=True)
        return None


def _run_cancellable(runner: asyncio.Runner, asking: Coroutine[Any, Any, AskResult]) -> AskResult:
    """Run the ask; the first Ctrl-C cancels it (`_Interrupted`), a second one exits at once."""
    loop = runner.get_loop()
    task = loop.create_task(asking)
    presses = 0

    def on_sigint(*_: object) -> None:
        nonlocal presses
        presses += 1
        if presses > 1:
            _exit_now(INTERRUPTED)
        print("\nstopping the answer (Ctrl-C again quits at once)", file=sys.stderr, flush=True)
        loop.call_soon_threadsafe(task.cancel)

    try:
        previous = signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main thread: no signal handling of our own
        previous = None
    try:
        return runner.run(_wait(task))
    except asyncio.CancelledError:
        if presses:
            raise _Interrupted from None
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


async def _wait(task: asyncio.Task[AskResult]) -> AskResult:
    return await task


# -- conversations (issue 15): --conversation, /reset, /history, /tools ----------------------

_COMMANDS = "/reset (forget this conversation), /history, /tools (what is loaded), /help"
_HELP = (
    "commands: /reset forgets this conversation; /history shows its turns; /tools shows what "
    "is loaded; /help shows this. Ctrl-D quits, Ctrl-C stops an answer."
)


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

    def __init__(self, session: _Session) -> None:
        self.session = session
        self.last: AskResult | None = None

    @property
    def conversation(self) -> str | None:
        return self.session.conversation

    @conversation.setter
    def conversation(self, value: str | None) -> None:
        self.session.conversation = value

    def banner(self, bot: Bot) -> str:
        return (
            f"conversation: {self.conversation} (kept in {bot.conversations.location}; "
            f"--conversation {self.conversation} continues it); commands: {_COMMANDS}"
        )

    def ask(self, text: str) -> AskResult | None:
        """One ask in the conversation; a store failure leaves the chat single-shot."""
        try:
            result = self.session.ask(text, fatal=False)
        except ConversationStoreError as exc:
            self._lost(exc)
            kept = exc.result
            if isinstance(kept, AskResult):  # answered, but the turn could not be stored
                self.last = kept
                return kept
            result = self.session.ask(text, fatal=False)
        if result is not None:
            self.last = result
        return result

    def command(self, runner: asyncio.Runner, bot: Bot, line: str) -> bool:
        """Run ``line`` if it is a slash command; whether it was one."""
        word = line.strip()
        if word == "/help":
            print(_HELP, flush=True)
            return True
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
                f"error: {exc}; going on without conversation memory",
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
            kept = _kept(bot, history.tools_called)
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


def _kept(bot: Bot, called: Sequence[str]) -> tuple[str, ...]:
    """The tools the next ask of the conversation keeps loaded: the protocol's replay rule,
    the one the `Bot` applies (permitted, deferred, in first-call order)."""
    settings = bot.settings
    toolset = bot.toolset
    permitted = toolset.pattern_permitted(settings.tools.allow, settings.tools.deny)
    protocol = ToolSearchProtocol(
        toolset.catalog,
        settings,
        api=settings.model.api,
        names=toolset.wire_names(settings.tools.dot_delimiter, permitted),
        permitted=permitted,
        hidden=toolset.view(permitted).hidden,
        report=_quiet,
    )
    return tuple(name for name, _ in protocol.replay(called))


def _quiet(level: int, text: str) -> None:
    """The chat's ``/tools`` says nothing about mode fallbacks (the next ask logs them)."""
    del level, text


def print_trace(trace: Sequence[RoundTrace], file: TextIO | None = None) -> None:
    """Print each round: the tools sent, the calls with their outcomes, results truncated."""
    for round_ in trace:
        _print_round(round_, file)


def _print_round(round_: RoundTrace, file: TextIO | None = None) -> None:
    """One round of the trace, on stderr by default, as soon as the round is over."""
    out = sys.stderr if file is None else file
    names = round_.tool_names
    shown = ", ".join(names[:_NAMES_SHOWN])
    if len(names) > _NAMES_SHOWN:
        shown += f", … (+{len(names) - _NAMES_SHOWN} more)"
    print(f"  round {round_.index}: sent {plural(len(names), 'tool')}: {shown}", file=out)
    for call in round_.calls:
        why = f" ({call.reason})" if call.reason else ""
        print(f"    call {call.name}({_cut(call.arguments)}) -> {call.outcome}{why}", file=out)
        print(f"      result: {_cut(call.result)}", file=out)
    if round_.text:
        print(f"    text: {_cut(round_.text)}", file=out)
    out.flush()


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _RESULT_WIDTH else flat[: _RESULT_WIDTH - 1] + "…"
