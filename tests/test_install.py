"""How to install, as the README says it (issue 32): no command names a registry release that
does not exist, every extra it names exists, the wheel it names is the one the build makes,
and ``make demo`` installs only what the demo imports."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
EXTRAS = PROJECT["optional-dependencies"]
TEXTS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "bot_toolsearch").rglob("*.py")),
    REPO / "config.example.toml",
]


def install_commands() -> list[list[str]]:
    """Every ``pip install ...`` of the README's install section, split as a shell would."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Install") :]
    section = section[: section.index("\n## ", 1)]
    commands = []
    for line in section.splitlines():
        if line.startswith("pip "):
            commands.append(shlex.split(line, comments=True))
    return commands


def test_no_page_tells_to_install_a_registry_release() -> None:
    """`bot-toolsearch` is not on the registry: a requirement naming it must say where from."""
    said = []
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"pip install ([^`\n]*)", text):
            args = match.group(1).split(" #")[0]  # not the shell comment after it
            if re.search(r"(?<![\w-])bot-toolsearch(\[[\w,]+\])?(?![\w-])", args) and (
                " @ " not in args
            ):
                said.append(f"{path.relative_to(REPO)}: {match.group(0)}")
    assert said == []


def test_the_readme_install_commands_name_this_project_and_its_extras() -> None:
    commands = install_commands()
    installs = [c for c in commands if c[:2] == ["pip", "install"]]
    assert [
        ".",
    ] in [c[2:] for c in installs]
    for command in installs:
        (target,) = command[2:]
        name, _, source = target.partition(" @ ")
        extras = re.fullmatch(r"([.\w-]+)(?:\[([\w,]+)\])?", name)
        assert extras is not None, target
        assert extras.group(1) in (".", PROJECT["name"]), target
        for extra in filter(None, (extras.group(2) or "").split(",")):
            assert extra in EXTRAS, f"{target}: no extra {extra!r} in pyproject.toml"
        if source:
            assert source.startswith("git+https://<git-host>/"), source  # a placeholder host
    wheel = [c for c in commands if c[:2] == ["pip", "wheel"]]
    assert len(wheel) == 1
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    name = PROJECT["name"].replace("-", "_")
    assert f"dist/{name}-{PROJECT['version']}-py3-none-any.whl" in readme
    assert "wheel" in PYPROJECT["tool"]["hatch"]["build"]["targets"]  # a pure-Python wheel


def make_dry_run(target: str, tmp_path: Path) -> list[str]:
    """What ``make TARGET`` would run on a machine without ``.venv`` (``make -n``)."""
    # Run under `make test` too: a sub-make inherits MAKEFLAGS/MAKELEVEL and would print its
    # "Entering/Leaving directory" lines; this one is a make of its own.
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", f"VENV={tmp_path / 'venv'}", target],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.splitlines()


def test_make_demo_installs_only_the_tokens_extra_and_make_test_the_dev_set(
    tmp_path: Path,
) -> None:
    demo = make_dry_run("demo", tmp_path)
    assert any(line.endswith(" -m venv " + str(tmp_path / "venv")) for line in demo), demo
    installs = [line for line in demo if " -m pip install " in line and "--upgrade pip" not in line]
    assert installs == [f"{tmp_path / 'venv'}/bin/python -m pip install --quiet -e '.[tokens]'"]
    assert demo[-1] == f"{tmp_path / 'venv'}/bin/bot-toolsearch demo"
    test = make_dry_run("pytest", tmp_path)
    assert any(line.endswith("-e '.[dev]'") for line in test), test


DEV_ONLY = sorted(
    {
        module
        for requirement in EXTRAS["dev"]
        for distribution in [re.split(r"[\[<>=! ]", requirement)[0].lower()]
        if not any(
            re.split(r"[\[<>=! ]", r)[0].lower() == distribution
            for r in [*PROJECT["dependencies"], *EXTRAS["tokens"]]
        )
        for module, names in importlib.metadata.packages_distributions().items()
        if distribution in {n.lower() for n in names}
    }
)

BLOCKER = """
import importlib.abc, runpy, sys
BLOCKED = set(sys.argv[1].split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not installed by make demo")
sys.meta_path.insert(0, Block())
sys.argv = ["bot_toolsearch", "demo"]
runpy.run_module("bot_toolsearch", run_name="__main__")
"""


def test_the_demo_runs_without_the_dev_only_packages() -> None:
    assert {"numpy", "pytest", "langchain", "agents", "mypy"} <= set(DEV_ONLY)
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER, ",".join(DEV_ONLY)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "tokens: o200k_base" in done.stdout  # the tokens extra is what it counts with
