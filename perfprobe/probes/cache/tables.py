"""The cache probe's tables, curve and facts: data for the renderers, built from raw numbers."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from perfprobe.model import Curve, Table
from perfprobe.probes.cache_curve import Level
from perfprobe.units import format_bytes


def _gbs(bandwidth: Mapping[str, Any], level: str, kind: str, threads: str) -> float | None:
    figures = bandwidth.get(level)
    return round(figures[kind][threads]["median"], 1) if figures else None


def level_table(levels: Sequence[Level], reported: Sequence[Mapping[str, Any]],
                bandwidth: Mapping[str, Any]) -> Table:
    """One row per level: latency, measured and reported size, read and triad GB/s."""
    sizes = {f"L{c['level']}": format_bytes(int(c["size_bytes"])) for c in reported}
    rows = []
    for i, lv in enumerate(levels):
        told = sizes.get(lv.name) if lv.name != "DRAM" else None
        rows.append((lv.name, round(lv.latency_ns, 1),
                     format_bytes(lv.end_bytes) if lv.end_bytes else None, told,
                     _gbs(bandwidth, lv.name, "read_gbs", "1t"), _gbs(bandwidth, lv.name, "read_gbs", "all"),
                     _gbs(bandwidth, lv.name, "triad_gbs", "1t"), _gbs(bandwidth, lv.name, "triad_gbs", "all")))
    columns = ("level", "latency ns", "measured size", "reported size", "read GB/s 1t",
               "read GB/s all", "triad GB/s 1t", "triad GB/s all")
    return Table("Cache levels (random-chase latency; bandwidth inside each level)", columns,
                 tuple(rows))


def pattern_table(raw: Mapping[str, Any]) -> Table:
    """Access pattern, pages and line: ns per line visit over the largest working set."""
    rows: list[tuple[Any, ...]] = []
    pattern, pages = raw.get("pattern"), raw.get("pages") or {}
    if pattern:
        size = format_bytes(pattern["size_bytes"])
        rows.append(("sequential lines", size, round(pattern["sequential_ns"]["median"], 1)))
        rows.append(("random lines", size, round(pattern["random_ns"]["median"], 1)))
    if "huge_ns" in pages:
        size = format_bytes(pages["size_bytes"])
        rows.append(("random, 4 KiB pages", size, round(pages["small_ns"]["median"], 1)))
        rows.append(("random, 2 MiB pages", size, round(pages["huge_ns"]["median"], 1)))
    test = raw.get("line") or {}
    for offset, cached, dram in zip(test.get("offsets_bytes") or [], test.get("cached_ns") or [],
                                    test.get("dram_ns") or []):
        rows.append((f"2 loads {offset} B apart", "L2 / largest",
                     f"{cached['min']:.1f} / {dram['min']:.1f}"))
    return Table("Access pattern, pages and line (ns per line visit; per 2-load block, fastest run)",
                 ("access", "working set", "ns"), tuple(rows))


def curve_view(curve: Mapping[str, Any], reported: Sequence[Mapping[str, Any]]) -> Curve:
    """Latency against working set, marked at the reported cache sizes."""
    points = tuple((float(s), round(p["median"], 2))
                   for s, p in zip(curve["sizes_bytes"], curve["latency_ns"]))
    marks = tuple((float(c["size_bytes"]), f"L{c['level']} {format_bytes(int(c['size_bytes']))}")
                  for c in reported)
    return Curve("Load latency against working set (random pointer chase)", "working set (bytes)",
                 "ns per load", points, log_x=True, log_y=True, marks=marks)


def facts_view(raw: Mapping[str, Any], levels: Sequence[Level], line: Mapping[str, Any]) -> dict:
    """The full curve with spread, the levels read off it, and how everything was measured."""
    curve = raw["curve"]
    return {
        "curve": [{"size_bytes": s, "ns": p} for s, p in zip(curve["sizes_bytes"], curve["latency_ns"])],
        "levels": [{"name": lv.name, "latency_ns": lv.latency_ns, "end_bytes": lv.end_bytes}
                   for lv in levels],
        "line": dict(line),
        "plan": dict(raw["plan"]),
        "pages": {"thp": raw.get("thp"), "curve_pages": raw.get("curve_pages"),
                  "curve_huge_fraction": raw.get("curve_huge_fraction")},
        "method": ("latency: dependent loads over a random cyclic permutation of lines (one pointer "
                   "a line), median of repeats; level end: where latency has risen a fifth of the "
                   "way to the next level; bandwidth: numba sum / STREAM triad (24 B/element), "
                   "each thread on its own share; line: cost of a second load at growing offsets "
                   "in random 1 KiB blocks, in a working set that misses L1 only"),
    }
