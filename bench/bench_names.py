"""WireNames: building the map for a 10,000-tool catalog and looking names up both ways."""

from __future__ import annotations

from bot_toolsearch._transports.names import WireNames

from ._table import Row, median_seconds, us

SIZE = 10_000


def _catalog(size: int) -> list[str]:
    # A realistic mix: mostly dotted names, some legal ones, some colliding and some too long.
    names = []
    for i in range(size):
        kind = i % 10
        if kind < 6:
            names.append(f"ns{i % 50}.group{i % 7}.tool_{i}")
        elif kind == 6:
            names.append(f"plain_tool_{i}")
        elif kind == 7:
            names.append(f"ns{(i + 1) % 50}_tool_{i + 1}")  # the legal twin of the next name
        elif kind == 8:
            names.append(f"ns{i % 50} tool {i}")  # encodes to its twin's spelling: a collision
        else:
            names.append("very_long." * 8 + str(i))
    return names


def run() -> list[Row]:
    """Median timings; asserts the map round-trips so a broken build cannot look fast."""
    names = _catalog(SIZE)
    built = WireNames.build(names)
    wires = [built.to_wire(n) for n in names]
    assert len(set(wires)) == len(set(names))
    assert all(built.to_canonical(w) == n for w, n in zip(wires, names, strict=True))

    build = median_seconds(lambda: WireNames.build(names), repeat=20, warmup=2)
    probe_names, probe_wires = names[::100], wires[::100]

    def to_wire() -> None:
        for name in probe_names:
            built.to_wire(name)

    def to_canonical() -> None:
        for wire in probe_wires:
            built.to_canonical(wire)

    per_wire = median_seconds(to_wire) / len(probe_names)
    per_canonical = median_seconds(to_canonical) / len(probe_wires)
    unknown = median_seconds(lambda: built.to_wire("not.in.the.catalog"))
    section = "names"
    return [
        Row(section, f"WireNames.build ({len(names):,} names)", f"{build * 1e3:.1f} ms"),
        Row(section, "to_wire (known name)", us(per_wire), "median per lookup"),
        Row(section, "to_wire (unknown name)", us(unknown), "encoded on the fly"),
        Row(section, "to_canonical (wire name)", us(per_canonical), "median per lookup"),
    ]
