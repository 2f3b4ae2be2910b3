"""link_chain on real symlinks: plain links, folder links (a ConfigMap volume), loops."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot_toolsearch._config.link_chain import link_chain


def test_a_plain_file_is_its_own_chain(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("")
    assert link_chain(path) == (path,)


def test_a_missing_file_is_its_own_chain(tmp_path: Path) -> None:
    assert link_chain(tmp_path / "nope" / "config.toml") == (tmp_path / "nope" / "config.toml",)


def test_a_relative_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    assert link_chain("config.toml") == (tmp_path / "config.toml",)


def test_a_link_to_another_folder_ends_at_its_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "bot.toml"
    target.write_text("")
    link = tmp_path / "config.toml"
    link.symlink_to("real/bot.toml")
    assert link_chain(link) == (link, target)


def test_an_absolute_link_to_a_link_lists_every_hop(tmp_path: Path) -> None:
    target = tmp_path / "c.toml"
    target.write_text("")
    (tmp_path / "b.toml").symlink_to(target)
    (tmp_path / "a.toml").symlink_to(tmp_path / "b.toml")
    assert link_chain(tmp_path / "a.toml") == (tmp_path / "a.toml", tmp_path / "b.toml", target)


def test_a_configmap_volume_lists_the_folder_link(tmp_path: Path) -> None:
    # The layout Kubernetes mounts: config.toml -> ..data/config.toml, ..data -> ..<stamp>.
    (tmp_path / "..2026_12_02_a").mkdir()
    (tmp_path / "..2026_12_02_a" / "config.toml").write_text("")
    (tmp_path / "..data").symlink_to("..2026_12_02_a")
    (tmp_path / "config.toml").symlink_to("..data/config.toml")
    assert link_chain(tmp_path / "config.toml") == (
        tmp_path / "config.toml",
        tmp_path / "..data",
        tmp_path / "..2026_12_02_a" / "config.toml",
    )


def test_dot_dot_after_a_folder_link_leaves_the_real_folder(tmp_path: Path) -> None:
    # "link/../x" is the x beside the link's *target*, as the kernel resolves it.
    (tmp_path / "deep" / "inner").mkdir(parents=True)
    (tmp_path / "deep" / "x.toml").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "deep" / "inner")
    chain = link_chain(tmp_path / "link" / ".." / "x.toml")
    assert chain[-1] == tmp_path / "deep" / "x.toml"
    assert tmp_path / "link" in chain


def test_a_loop_stops_without_raising(tmp_path: Path) -> None:
    (tmp_path / "a.toml").symlink_to("b.toml")
    (tmp_path / "b.toml").symlink_to("a.toml")
    chain = link_chain(tmp_path / "a.toml")
    assert set(chain) == {tmp_path / "a.toml", tmp_path / "b.toml"}


def test_a_dangling_link_ends_at_the_missing_target(tmp_path: Path) -> None:
    (tmp_path / "config.toml").symlink_to("gone/bot.toml")
    assert link_chain(tmp_path / "config.toml") == (
        tmp_path / "config.toml",
        tmp_path / "gone" / "bot.toml",
    )
