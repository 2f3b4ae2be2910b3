"""Registry start-up with 1,000 tool folders (lazy vs eager handlers) and catalog swap time."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._table import Row

N_TOOLS = 1_000
SECTION = "registry"

# A handler of realistic size: a few helpers, a class and module-level data, so importing it
# costs what a real tool's handler would (compile + exec + module objects).
_HANDLER = '''"""Handler of tool {i}."""
import dataclasses
import json
import re

_PATTERN = re.compile(r"[a-z]+{i}")
_TABLE = {{f"key{{n}}": n * {i} for n in range(64)}}


@dataclasses.dataclass
class Result:
    name: str
    score: float
    tags: tuple[str, ...] = ()

    def render(self) -> str:
        return json.dumps(dataclasses.asdict(self))


def _normalise(text: str) -> str:
    return " ".join(_PATTERN.findall(text.lower())) or text


def _score(text: str) -> float:
    return sum(_TABLE.get(f"key{{len(w) % 64}}", 0) for w in text.split()) / 64.0


def execute(query: str = "", limit: int = 5) -> str:
    text = _normalise(query)
    return Result(text, _score(text), tuple(text.split()[:limit])).render()
'''

_MEASURE = r"""
import json, resource, sys, time, tracemalloc, importlib.util
sys.path.insert(0, sys.argv[1])
eager = sys.argv[3] == "eager"
import bot_toolsearch._tools.registry as registry_module  # the package import is not measured
def resident():
    # Current (not peak) resident memory: the package import's peak must not hide the delta.
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()
rss_before = resident()
tracemalloc.start()
start = time.perf_counter()
registry = registry_module.ToolRegistry([sys.argv[2]])
snapshot = registry.snapshot()
if eager:
    # What an eager registry does: import every handler.py at start-up.
    for i, tool in enumerate(snapshot.tools.values()):
        path = sys.argv[2] + "/" + tool.name.replace(".", "/") + "/handler.py"
        spec = importlib.util.spec_from_file_location(f"_eager_{i}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
elapsed = time.perf_counter() - start
_, peak = tracemalloc.get_traced_memory()
rss = resident() - rss_before
print(json.dumps({"tools": len(snapshot.tools), "seconds": elapsed, "peak": peak, "rss": rss}))
"""


def _make_folders(root: Path) -> None:
    for i in range(N_TOOLS):
        folder = root / f"ns{i % 20}" / f"tool_{i}"
        folder.mkdir(parents=True)
        config = {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": f"Tool number {i}: searches the catalogue of group {i % 20}.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What to look for."},
                        "limit": {"type": "integer", "minimum": 1},
                    },
                    "required": ["query"],
                },
            },
        }
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        (folder / "handler.py").write_text(_HANDLER.format(i=i), encoding="utf-8")


def _start_up(repo: Path, tools: Path, mode: str) -> dict[str, float]:
    # -B: no bytecode cache, so every run compiles like a first start (and runs stay equal).
    done = subprocess.run(
        [sys.executable, "-B", "-c", _MEASURE, str(repo), str(tools), mode],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"start-up measurement ({mode}) failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    assert result["tools"] == N_TOOLS, result
    return result


def _swap_times(tools: Path) -> tuple[float, float]:
    from bot_toolsearch._tools.registry import ToolRegistry

    registry = ToolRegistry([tools])
    config = tools / "ns0" / "tool_0" / "config.json"
    original = config.read_text(encoding="utf-8")
    changed, unchanged = [], []
    try:
        for n in range(10):
            data = json.loads(original)
            data["function"]["description"] = f"edit {n}"
            config.write_text(json.dumps(data), encoding="utf-8")
            start = time.perf_counter()
            snap = registry.reload()
            changed.append(time.perf_counter() - start)
            assert snap.generation == n + 1
            start = time.perf_counter()
            assert registry.reload() is snap
            unchanged.append(time.perf_counter() - start)
    finally:
        config.write_text(original, encoding="utf-8")
    return statistics.median(changed), statistics.median(unchanged)


def run() -> list[Row]:
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        tools = Path(tmp) / "tools"
        _make_folders(tools)
        lazy = _start_up(repo, tools, "lazy")
        eager = _start_up(repo, tools, "eager")
        changed, unchanged = _swap_times(tools)
    ms = 1e3

    def memory(result: dict[str, float]) -> str:
        peak, rss = result["peak"] / 2**20, result["rss"] / 2**20
        return f"traced peak {peak:.1f} MiB, resident +{rss:.1f} MiB"

    return [
        Row(SECTION, "start-up, 1,000 folders, lazy", f"{lazy['seconds'] * ms:.0f} ms",
            memory(lazy)),
        Row(SECTION, "start-up, 1,000 folders, eager", f"{eager['seconds'] * ms:.0f} ms",
            memory(eager)),
        Row(SECTION, "eager / lazy start-up time", f"{eager['seconds'] / lazy['seconds']:.1f}x",
            "one run each, fresh process, no bytecode cache, under tracemalloc"),
        Row(SECTION, "eager / lazy traced memory", f"{eager['peak'] / lazy['peak']:.1f}x"),
        Row(SECTION, "eager / lazy resident memory", f"{eager['rss'] / lazy['rss']:.1f}x",
            "growth of the process's resident set during start-up"),
        Row(SECTION, "reload + swap, 1 config edited", f"{changed * ms:.1f} ms",
            "rescan 1,000 config.json + rebuild ToolCatalog + swap (median of 10)"),
        Row(SECTION, "reload, nothing changed", f"{unchanged * ms:.1f} ms",
            "rescan only; fingerprint equal, no swap"),
    ]  # fmt: skip
