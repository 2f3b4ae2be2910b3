"""The deferred-tools directory under a token budget: the full list, or grouped by namespace."""

from __future__ import annotations

import pytest

from bot_toolsearch._core.directory import (
    DESCRIPTION_CHARS,
    build_directory,
    clean_description,
    count_tokens,
    estimate_tokens,
    namespace_of,
)
from bot_toolsearch.core import render_deferred_tools


def sorted_names(names: list[str]) -> list[str]:
    return sorted(set(names), key=lambda n: (n.casefold(), n))


# 40 GitHub tools in two sub-namespaces, 30 Slack tools, 12 loose names.
NAMES = sorted_names(
    [f"github.issues.op_{i}" for i in range(20)]
    + [f"github.pulls.op_{i}" for i in range(20)]
    + [f"slack.op_{i}" for i in range(30)]
    + [f"loose_tool_{i}" for i in range(12)]
    + ["single.only_one"]
)


def test_while_the_list_fits_the_directory_is_the_plain_list() -> None:
    plain = render_deferred_tools(NAMES, budget=0)
    fitting = build_directory(NAMES, budget=count_tokens(plain))
    assert not fitting.grouped
    assert fitting.text == plain
    assert plain.splitlines()[1:-1] == NAMES
    assert render_deferred_tools(NAMES, budget=count_tokens(plain)) == plain


@pytest.mark.parametrize("budget", [40, 60, 90, 120, 200, 300, 450])
@pytest.mark.parametrize("count", [count_tokens, estimate_tokens])
def test_a_grouped_directory_always_stays_under_the_budget(budget: int, count: object) -> None:
    assert callable(count)
    directory = build_directory(NAMES, budget=budget, count=count)
    assert directory.grouped == (count(render_deferred_tools(NAMES, budget=0)) > budget)
    assert count(directory.text) <= budget
    assert directory.text.startswith("<available_deferred_tools>\n")
    assert directory.text.endswith("\n</available_deferred_tools>")
    # Every tool is either a listed name, inside a namespace line, or counted in the footer.
    lines = directory.text.splitlines()[1:-1]
    covered = sum(int(line.split("(")[1].split()[0]) for line in lines if ".* (" in line)
    listed = [line for line in lines if line in NAMES]
    assert covered + len(listed) + directory.unlisted == len(NAMES)
    assert directory.listed == len(listed)


def test_namespaces_collapse_level_by_level_until_the_budget_holds() -> None:
    roomy = build_directory(NAMES, budget=400, descriptions={"slack": "Slack: channels"})
    assert "github.issues.* (20 tools): op" not in roomy.text  # derived words exclude the name
    assert roomy.namespaces == ("github.issues", "github.pulls", "slack")
    assert "slack.* (30 tools): Slack: channels" in roomy.text.splitlines()
    tight = build_directory(NAMES, budget=50, descriptions={"slack": "Slack: channels"})
    assert tight.namespaces == ("github", "slack")
    assert any(line.startswith("github.* (40 tools)") for line in tight.text.splitlines())


def test_loose_names_fill_the_rest_and_the_footer_counts_what_is_not_shown() -> None:
    directory = build_directory(NAMES, budget=80)
    lines = directory.text.splitlines()
    assert directory.unlisted > 0
    footer = f"({directory.unlisted} more tools are not listed here; keyword search finds them.)"
    assert lines[-2] == footer


def test_the_grouped_directory_is_byte_stable_and_ordered() -> None:
    one = build_directory(NAMES, budget=120, descriptions={"github": "GitHub"})
    two = build_directory(list(NAMES), budget=120, descriptions={"github": "GitHub"})
    assert one.text == two.text
    body = [line for line in one.text.splitlines()[1:-1] if not line.startswith("(")]
    assert body == sorted(body, key=lambda line: (line.casefold(), line))


def test_namespaces_of_always_loaded_tools_come_first_when_not_all_fit() -> None:
    names = sorted_names([f"big.t{i}" for i in range(40)] + [f"small.t{i}" for i in range(3)])
    plain = build_directory(names, budget=50, count=estimate_tokens)
    assert plain.namespaces == ("big",)
    adjacent = build_directory(
        names, budget=50, always_loaded=["small.main"], count=estimate_tokens
    )
    assert adjacent.namespaces == ("small",)


def test_derived_descriptions_use_the_most_distinctive_words() -> None:
    names = sorted_names(
        ["maps.route", "maps.geocode", "maps.distance", "mail.send"]
        + [f"other.x{i}" for i in range(30)]
    )
    texts = {
        "maps.route": "Plan a driving route between places.",
        "maps.geocode": "Turn an address into map coordinates for places.",
        "maps.distance": "Driving distance between places.",
    }
    directory = build_directory(
        names, budget=80, tool_descriptions=lambda n: texts.get(n, ""), count=estimate_tokens
    )
    line = next(line for line in directory.text.splitlines() if line.startswith("maps.*"))
    description = line.split(": ", 1)[1]
    assert description.split(", ")[:2] == ["places", "driving"]


def test_budget_zero_and_bad_budgets() -> None:
    assert not build_directory(NAMES, budget=0).grouped
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="budget"):
            build_directory(NAMES, budget=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="budget"):
            render_deferred_tools(NAMES, budget=bad)  # type: ignore[arg-type]
    assert build_directory([], budget=10).text == ""


def test_descriptions_are_one_safe_line() -> None:
    assert clean_description("a <b>\n c") == "a b c"
    long = clean_description("word " * 50)
    assert len(long) <= DESCRIPTION_CHARS
    assert long.endswith("…")
    assert namespace_of("a.b.c") == "a.b"
    assert namespace_of("plain") == ""


def test_the_estimate_errs_high_on_ordinary_names_and_prose() -> None:
    names = ["weather.forecast", "drive.files.list", "calculate_bmi", "music.search_songs"]
    text = "\n".join(names) + "\nGoogle Drive API: Manages files in Drive including uploading."
    assert estimate_tokens(text) >= count_tokens(text)


def wire(name: str) -> str:
    """The MCP door's spelling of a name under the default delimiter."""
    return name.replace(".", "-_-")


def test_a_spelled_list_is_counted_as_written_not_as_the_dotted_names() -> None:
    dotted = render_deferred_tools(NAMES, budget=0)
    budget = count_tokens(dotted)  # the dotted list just fits; its wire spelling does not
    assert count_tokens("\n".join(map(wire, dotted.split("\n")))) > budget
    spelled = build_directory(NAMES, budget=budget, spell=wire)
    assert spelled.grouped
    assert spelled.tokens == count_tokens(spelled.text) <= budget
    roomy = build_directory(NAMES, budget=budget * 2, spell=wire)
    assert not roomy.grouped
    assert roomy.text.splitlines()[1:-1] == [wire(n) for n in NAMES]  # canonical order


# NAMES plus 30 namespaces of one tool each: loose names that the wire spelling makes longer.
SOLO = sorted_names(NAMES + [f"solo_{i}.lookup_{i}" for i in range(30)])


@pytest.mark.parametrize("budget", [200, 300, 400, 500])
@pytest.mark.parametrize("count", [count_tokens, estimate_tokens])
def test_a_spelled_grouped_directory_stays_under_the_budget(budget: int, count: object) -> None:
    assert callable(count)
    directory = build_directory(SOLO, budget=budget, count=count, spell=wire)
    assert count(directory.text) <= budget
    lines = directory.text.splitlines()[1:-1]
    loose = [line for line in lines if ".* (" not in line and not line.startswith("(")]
    assert any("-_-" in line for line in loose)
    assert set(loose) <= {wire(n) for n in SOLO}  # names as the model sees them
    assert all("-_-" not in line.split(".* (")[0] for line in lines if ".* (" in line)
    assert directory.listed == len(loose)
    covered = sum(int(line.split("(")[1].split()[0]) for line in lines if ".* (" in line)
    assert covered + len(loose) + directory.unlisted == len(SOLO)
