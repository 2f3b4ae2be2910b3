"""A catalog of 10,000+ tools from real tool definitions, for the scale benchmark (issue 14).

``load_scale_catalog(n)`` returns the first ``n`` tools of one fixed, ordered pool, so the
catalogs nest (the 1,000-tool catalog is a prefix of the 5,000-tool one, and so on). The pool is
built once per process and cached; the same package versions give the same pool, byte for byte.

Sources, in pool order (the first definition of a name wins; names are compared casefolded):

1. **The benchmark's own catalog**: ``catalog.json`` in the bench data folder (``../shared/bench``
   or ``BOT_TOOLSEARCH_BENCH_DATA``), unchanged and first, so every expected tool of the query
   set is in every catalog of 769 tools or more. Derived from BFCL (``bfcl-eval`` on PyPI,
   Apache-2.0, Gorilla / BFCL authors); see that folder's README.
2. **The rest of BFCL**: the function docs of the ``bfcl-eval==2026.3.23`` wheel (Apache-2.0)
   that the benchmark catalog does not hold: irrelevance, live_simple, live_multiple,
   live_parallel, live_parallel_multiple, live_relevance, live_irrelevance (functions that
   real users contributed), simple_java, simple_javascript, the multi-turn API docs
   (``multi_turn_func_doc``) and the executable categories under ``unused_datasets``. Converted
   to Chat Completions schemas the way the benchmark catalog was (``dict`` -> ``object``,
   ``float`` -> ``number``, ``tuple`` -> ``array``, ``any`` -> no type, the non-standard
   ``optional`` key dropped); Java and JavaScript parameters become strings, as BFCL's own
   OpenAI handler sends them. ``bfcl-eval`` itself cannot be a dev dependency (it pulls in
   sentence-transformers with torch, faiss, vllm-era pins, and five model SDKs), so the pure-data
   wheel is fetched with ``pip download --no-deps`` into a cache folder
   (``BOT_TOOLSEARCH_BENCH_CACHE``, default ``~/.cache/bot-toolsearch/bench``), checked against
   its SHA-256 and read as a zip file; ``BOT_TOOLSEARCH_BFCL_WHEEL`` names a local copy instead.
3. **Google's API discovery documents** shipped inside ``google-api-python-client==2.202.0``
   (PyPI, Apache-2.0, a pinned ``dev`` extra): one tool per API method, named by the method's
   id (``drive.files.list``), with its own description and parameters (type, description,
   enum, required; a repeated parameter becomes an array) and, where the method takes a
   request body, a ``body`` object parameter described by the body resource's description.
   One version per API: stable before alpha/beta, then the highest version. APIs are taken
   whole, in the order of the SHA-256 of their names (a fixed shuffle, so a prefix of the pool
   is not all cloud APIs starting with "a"), as an operator mounts whole services. These are
   the operations Google's own API-to-tool bridges expose; nothing is generated.

Only if ``n`` exceeds the real pool (15,644 tools) are **distractor copies** added: the
pool's real tools again, in order, under the namespace ``mirror<k>.`` (the same tool offered by
a second service, as overlapping MCP servers do). At 10,000 tools there are none;
``scale_composition(n)`` says how many tools of each source a catalog holds.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

from bot_toolsearch.core import TOOL_SEARCH_NAME

from .bench_quality import DATA

__all__ = [
    "BFCL_VERSION",
    "GOOGLE_CLIENT_VERSION",
    "load_scale_catalog",
    "scale_composition",
    "scale_namespaces",
]

Schema = dict[str, Any]

BFCL_VERSION = "2026.3.23"
BFCL_WHEEL = f"bfcl_eval-{BFCL_VERSION}-py3-none-any.whl"
BFCL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
GOOGLE_CLIENT_VERSION = "2.202.0"

# BFCL files whose function docs join the pool, in this order (the four categories the benchmark
# catalog came from add no new names, so they are not read again).
_BFCL_FILES = (
    "BFCL_v4_irrelevance.json",
    "BFCL_v4_live_simple.json",
    "BFCL_v4_live_multiple.json",
    "BFCL_v4_live_parallel.json",
    "BFCL_v4_live_parallel_multiple.json",
    "BFCL_v4_live_relevance.json",
    "BFCL_v4_live_irrelevance.json",
    "BFCL_v4_simple_java.json",
    "BFCL_v4_simple_javascript.json",
    "multi_turn_func_doc/",
    "unused_datasets/question/BFCL_v4_exec_simple.json",
    "unused_datasets/question/BFCL_v4_exec_multiple.json",
    "unused_datasets/question/BFCL_v4_exec_parallel.json",
    "unused_datasets/question/BFCL_v4_exec_parallel_multiple.json",
)
# Casefolded BFCL (Python, Java or JavaScript flavoured) type names -> JSON Schema types.
_BFCL_TYPES = {
    "dict": "object",
    "hashmap": "object",
    "map": "object",
    "float": "number",
    "double": "number",
    "tuple": "array",
    "list": "array",
    "arraylist": "array",
    "int": "integer",
    "long": "integer",
    "str": "string",
    "char": "string",
    "bool": "boolean",
    "any": None,
    "": None,
}
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
# A name every provider accepts on one line; linear-time (a single character class).
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,256}")

SOURCE_BENCH = "bench catalog (BFCL)"
SOURCE_BFCL = "BFCL, other categories"
SOURCE_GOOGLE = "Google API discovery"
SOURCE_MIRROR = "distractor copies"


# --- BFCL -----------------------------------------------------------------------------------


def _cache_dir() -> Path:
    configured = os.environ.get("BOT_TOOLSEARCH_BENCH_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "bot-toolsearch" / "bench"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bfcl_wheel() -> Path:
    """The verified ``bfcl-eval`` wheel: a local copy, the cache, or a fresh ``pip download``."""
    configured = os.environ.get("BOT_TOOLSEARCH_BFCL_WHEEL")
    path = Path(configured) if configured else _cache_dir() / BFCL_WHEEL
    if not path.is_file() and not configured:
        path.parent.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
            "--no-deps", "--only-binary=:all:", "--dest", str(path.parent),
            f"bfcl-eval=={BFCL_VERSION}",
        ]  # fmt: skip
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        if done.returncode != 0 or not path.is_file():
            raise RuntimeError(
                f"could not download bfcl-eval=={BFCL_VERSION} ({' '.join(command)}):\n"
                f"{done.stderr.strip()}\nSet BOT_TOOLSEARCH_BFCL_WHEEL to a local copy of "
                f"{BFCL_WHEEL}."
            )
    if not path.is_file():
        raise RuntimeError(f"BOT_TOOLSEARCH_BFCL_WHEEL={path} is not a file")
    digest = _sha256(path)
    if digest != BFCL_SHA256:
        raise RuntimeError(f"{path}: SHA-256 {digest}, expected {BFCL_SHA256} ({BFCL_WHEEL})")
    return path


def _convert_bfcl(node: object) -> object:
    """A BFCL parameter schema as JSON Schema (see the module docstring)."""
    if isinstance(node, list):
        return [_convert_bfcl(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "optional":
            continue
        if key == "type" and isinstance(value, str) and value not in _JSON_TYPES:
            folded = value.casefold()
            converted = folded if folded in _JSON_TYPES else _BFCL_TYPES.get(folded, value)
            if converted is not None:
                out[key] = converted
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _convert_bfcl(prop) for name, prop in value.items()}
        else:
            out[key] = _convert_bfcl(value)
    return out


def _bfcl_function_docs(data: bytes) -> list[dict[str, Any]]:
    """Function docs of one BFCL file: JSON lines of entries with ``function``, or of docs."""
    docs: list[dict[str, Any]] = []
    for line in data.decode("utf-8").splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        if "function" in entry:
            functions = entry["function"]
            docs.extend([functions] if isinstance(functions, dict) else functions)
        elif "name" in entry and "parameters" in entry:
            docs.append(entry)
    return docs


def _bfcl_schemas(wheel: Path) -> list[Schema]:
    schemas: list[Schema] = []
    with zipfile.ZipFile(wheel) as archive:
        members = sorted(archive.namelist())
        for wanted in _BFCL_FILES:
            path = f"bfcl_eval/data/{wanted}"
            files = [m for m in members if m.startswith(path)] if wanted.endswith("/") else [path]
            string_only = "java" in wanted  # simple_java, simple_javascript
            for member in files:
                for doc in _bfcl_function_docs(archive.read(member)):
                    params = doc.get("parameters") or {"type": "dict", "properties": {}}
                    converted = _convert_bfcl(params)
                    if string_only and isinstance(converted, dict):
                        props = converted.get("properties", {})
                        converted["properties"] = {
                            key: {**prop, "type": "string"} for key, prop in props.items()
                        }
                    function = {
                        "name": doc["name"],
                        "description": str(doc.get("description", "")),
                        "parameters": converted,
                    }
                    schemas.append({"type": "function", "function": function})
    return schemas


# --- Google API discovery documents ---------------------------------------------------------


def _discovery_folder() -> Path:
    spec = importlib.util.find_spec("googleapiclient")  # finds, does not import, the package
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "google-api-python-client is not installed: it is in the dev extra "
            "(pip install -e '.[dev]')"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "discovery_cache" / "documents"


def _version_key(version: str) -> tuple[bool, list[tuple[int, str]]]:
    unstable = "alpha" in version or "beta" in version
    parts = [(int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"(\d+)", version) if p]
    return (not unstable, parts)


def _google_parameter(param: dict[str, Any]) -> Schema:
    prop: Schema = {}
    kind = param.get("type")
    if kind in _JSON_TYPES:
        prop["type"] = kind
    description = str(param.get("description", "")).strip()
    if description:
        prop["description"] = description
    enum = param.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        prop["enum"] = list(enum)
    if param.get("repeated"):
        items = {k: v for k, v in prop.items() if k != "description"}
        prop = {"type": "array", "items": items}
        if description:
            prop["description"] = description
    return prop


def _google_methods(resource: dict[str, Any]) -> list[dict[str, Any]]:
    out = list((resource.get("methods") or {}).values())
    for child in (resource.get("resources") or {}).values():
        out.extend(_google_methods(child))
    return out


def _google_tool(method: dict[str, Any], schemas: dict[str, Any]) -> Schema:
    params = method.get("parameters") or {}
    properties = {name: _google_parameter(p) for name, p in params.items()}
    required = [name for name, p in params.items() if p.get("required")]
    body = (method.get("request") or {}).get("$ref")
    if isinstance(body, str):
        what = str((schemas.get(body) or {}).get("description", "")).strip()
        properties["body"] = {
            "type": "object",
            "description": f"The request body, a {body} resource" + (f": {what}" if what else "."),
        }
    parameters: Schema = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    function = {
        "name": method["id"],
        "description": str(method.get("description", "")).strip(),
        "parameters": parameters,
    }
    return {"type": "function", "function": function}


@functools.cache
def _google_documents() -> tuple[dict[str, Any], ...]:
    """One discovery document per API, in the fixed shuffled order (module docstring)."""
    best: dict[str, tuple[tuple[bool, list[tuple[int, str]]], Path]] = {}
    for path in sorted(_discovery_folder().glob("*.json")):
        if path.name == "index.json":
            continue
        api, _, rest = path.name.partition(".")
        version = rest.removesuffix(".json")
        key = _version_key(version)
        if api not in best or key > best[api][0]:
            best[api] = (key, path)
    order = sorted(best, key=lambda api: hashlib.sha256(api.encode()).hexdigest())
    return tuple(json.loads(best[api][1].read_text(encoding="utf-8")) for api in order)


# --- the pool -------------------------------------------------------------------------------


@functools.cache
def _real_pool() -> tuple[tuple[Schema, str], ...]:
    """Every real tool, in pool order, with its source."""
    catalog_path = DATA / "catalog.json"
    if not catalog_path.is_file():
        raise RuntimeError(f"no benchmark catalog at {catalog_path} (BOT_TOOLSEARCH_BENCH_DATA)")
    pool: list[tuple[Schema, str]] = []
    seen = {TOOL_SEARCH_NAME}  # BFCL has a real tool of that name; the catalog reserves it

    def add(schema: Schema, source: str) -> None:
        name = schema["function"]["name"]
        if isinstance(name, str) and _NAME.fullmatch(name) and name.casefold() not in seen:
            seen.add(name.casefold())
            pool.append((schema, source))

    for schema in json.loads(catalog_path.read_text(encoding="utf-8")):
        pool.append((schema, SOURCE_BENCH))  # all of it, unchanged
        seen.add(str(schema["function"]["name"]).casefold())
    for schema in _bfcl_schemas(bfcl_wheel()):
        add(schema, SOURCE_BFCL)
    for document in _google_documents():
        for method in _google_methods(document):
            add(_google_tool(method, document.get("schemas") or {}), SOURCE_GOOGLE)
    return tuple(pool)


@functools.cache
def _pool(n: int) -> tuple[tuple[Schema, str], ...]:
    real = _real_pool()
    if n <= len(real):
        return real[:n]
    extra: list[tuple[Schema, str]] = []
    copy = 0
    while len(real) + len(extra) < n:
        schema = real[copy % len(real)][0]
        function = {**schema["function"]}
        function["name"] = f"mirror{copy // len(real) + 1}.{function['name']}"
        extra.append(({**schema, "function": function}, SOURCE_MIRROR))
        copy += 1
    return real + tuple(extra)


def load_scale_catalog(n: int = 10_000) -> list[Schema]:
    """The first ``n`` tools of the scale pool as Chat Completions tool schemas.

    Deterministic and cached per process (the pool is read once). The schema dictionaries are
    shared between calls: treat them as read-only (``copy.deepcopy`` before changing one).
    Catalogs of 769 tools or more hold every tool of the benchmark catalog, so every expected
    tool of the query set.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return [schema for schema, _ in _pool(n)]


def scale_composition(n: int = 10_000) -> dict[str, int]:
    """How many of the first ``n`` tools come from each source (module docstring)."""
    return dict(Counter(source for _, source in _pool(n)))


@functools.cache
def scale_namespaces() -> dict[str, str]:
    """Each Google API's name and its own one-line description (title and description).

    For the grouped directory: these are the namespace descriptions a service ships.
    """
    out = {}
    for document in _google_documents():
        title = str(document.get("title", "")).strip()
        description = str(document.get("description", "")).strip()
        out[str(document["name"])] = f"{title}: {description}" if description else title
    return out
