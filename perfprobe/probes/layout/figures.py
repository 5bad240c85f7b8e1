"""Pure readers of layout's raw numbers: what rules and tables both read."""

from __future__ import annotations

import statistics
from typing import Any, Literal, Mapping, Optional, TypedDict, cast

from perfprobe.probes.layout.plan import aligned, splits_line
from perfprobe.pure.stats import Stat, relative_spread, summarize

SOA_MATTERS = 1.5        # SoA at least this much faster: the layout decides the loop's speed
SPLIT_MATTERS = 1.3      # a split at least this much slower than aligned: worth avoiding


class Load(TypedDict, total=False):
    """One load offset: ns per load of independent loads (throughput) and of a dependent chain (latency)."""

    offset: int
    offset_in_page: int
    throughput_ns: Stat
    latency_ns: Stat


class Split(TypedDict):
    loads_per_run: int
    chain_steps: int
    by_width: dict[str, list[Load]]
    """The line sweep per load width (bytes, as a string): one Load per offset."""


class Level(TypedDict, total=False):
    name: str
    bytes: int
    capped_by: Optional[str]


class Record(TypedDict):
    """One AoS or SoA loop: the level its records fit, K fields, the op, ns per record."""

    level: str
    fields: int
    records: int
    layout: str
    op: str
    passes: int
    ns_per_record: Stat


class Vector(TypedDict, total=False):
    vector_bytes: int
    how: str


class LayoutRaw(TypedDict, total=False):
    """What measure() returns (docs/probes/layout.md)."""

    method: str
    line_bytes: int
    split_lines: int
    split: Split
    page: dict[str, dict[str, Load]]
    """Per load width: "aligned" at a page start and "split" across a page boundary."""
    levels: list[Level]
    records: list[Record]
    vector: dict[str, Vector]
    """"aos.sum", "soa.update", ...: the widest vector the compiled loop uses."""
    dram_flush: str
    quick: bool
    repeats: int


Raw = LayoutRaw


def typed(raw: Mapping[str, Any]) -> LayoutRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(LayoutRaw, raw)


def timing(load: Load, kind: str) -> Stat:
    """A load's throughput or latency repeats."""
    return load["throughput_ns"] if kind == "throughput" else load["latency_ns"]


def widths(raw: Raw) -> list[int]:
    return sorted(int(w) for w in raw["split"]["by_width"])


def statistic(kind: str) -> Literal["min", "median"]:
    """Which of a point's repeats stands for it: the fastest for throughput (what the core sustains,
    as STREAM reports its best run: on the Zen 4 guest back-to-back runs of one loop switch between
    ~0.75 and ~1 cycle a load for line-splitting 8-byte loads, in C and numba alike, so a median
    lands on either), the median for latency."""
    return "min" if kind == "throughput" else "median"


def sweep(raw: Raw, width: int, kind: str = "throughput") -> list[tuple[int, float]]:
    """(offset, ns per load) of the line sweep; kind: throughput (best repeat) or latency (median)."""
    key = statistic(kind)
    return [(int(p["offset"]), float(timing(p, kind)[key])) for p in raw["split"]["by_width"][str(width)]]


def _where(raw: Raw, width: int, kind: str, keep: Any) -> list[float]:
    return [v for o, v in sweep(raw, width, kind) if keep(o)]


def _median_where(raw: Raw, width: int, kind: str, keep: Any) -> Optional[float]:
    values = _where(raw, width, kind, keep)
    return statistics.median(values) if values else None


def aligned_ns(raw: Raw, width: int, kind: str = "throughput") -> Optional[float]:
    return _median_where(raw, width, kind, lambda o: aligned(o, width))


def aligned_stat(raw: Raw, width: int, kind: str = "throughput") -> Optional[Stat]:
    """The aligned offsets' figures (each offset's fastest repeat for throughput, its median for
    latency) summarized: their median is `aligned_ns`, their spread the offsets' (one sample each)."""
    values = _where(raw, width, kind, lambda o: aligned(o, width))
    return summarize(values) if values else None


def line_split_ns(raw: Raw, width: int, kind: str = "throughput") -> Optional[float]:
    return _median_where(raw, width, kind, lambda o: splits_line(o, width))


def misaligned_ns(raw: Raw, width: int, kind: str = "throughput") -> Optional[float]:
    """Unaligned offsets that stay within one line."""
    return _median_where(raw, width, kind, lambda o: not aligned(o, width) and not splits_line(o, width))


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def line_penalty(raw: Raw, width: int, kind: str = "throughput") -> Optional[float]:
    """A line-splitting load's time over an aligned one's (median over offsets)."""
    return _ratio(line_split_ns(raw, width, kind), aligned_ns(raw, width, kind))


def misaligned_penalty(raw: Raw, width: int, kind: str = "throughput") -> Optional[float]:
    return _ratio(misaligned_ns(raw, width, kind), aligned_ns(raw, width, kind))


def page_ns(raw: Raw, width: int, case: str, kind: str = "throughput") -> float:
    return float(timing(raw["page"][str(width)][case], kind)[statistic(kind)])


def page_penalty(raw: Raw, width: int, kind: str = "throughput") -> float:
    """A page-splitting load's time over an aligned one at a page start."""
    return page_ns(raw, width, "split", kind) / page_ns(raw, width, "aligned", kind)


def record_stat(raw: Raw, level: str, fields: int, layout: str, op: str) -> Optional[Stat]:
    """One record point's repeats (median, spread), None when not measured."""
    for p in raw["records"]:
        if (p["level"], p["fields"], p["layout"], p["op"]) == (level, fields, layout, op):
            return p["ns_per_record"]
    return None


def record_ns(raw: Raw, level: str, fields: int, layout: str, op: str) -> Optional[float]:
    stat = record_stat(raw, level, fields, layout, op)
    return None if stat is None else float(stat["median"])


def levels(raw: Raw) -> list[str]:
    return [lv["name"] for lv in raw["levels"]]


def level_bytes(raw: Raw, level: str) -> int:
    return int(next(lv["bytes"] for lv in raw["levels"] if lv["name"] == level))


def fields(raw: Raw) -> list[int]:
    return sorted({int(p["fields"]) for p in raw["records"]})


def soa_speedup(raw: Raw, level: str, k: int, op: str = "sum") -> Optional[float]:
    """AoS time over SoA time (above 1: SoA faster)."""
    return _ratio(record_ns(raw, level, k, "aos", op), record_ns(raw, level, k, "soa", op))


def soa_from(raw: Raw, level: str, op: str = "sum") -> Optional[int]:
    """The smallest field count from which SoA is at least SOA_MATTERS faster for every larger K."""
    found: Optional[int] = None
    for k in reversed(fields(raw)):
        s = soa_speedup(raw, level, k, op)
        if s is None or s < SOA_MATTERS:
            break
        found = k
    return found


def vector_bytes(raw: Raw, layout: str, op: str) -> Optional[int]:
    entry = (raw.get("vector") or {}).get(f"{layout}.{op}")
    return int(entry["vector_bytes"]) if entry else None


def disturbed_fraction(raw: Raw, limit: float) -> float:
    """Share of record and aligned-load points whose repeats disagree by more than `limit`."""
    stats = [p["ns_per_record"] for p in raw["records"]]
    for w in widths(raw):
        stats += [p["throughput_ns"] for p in raw["split"]["by_width"][str(w)] if aligned(int(p["offset"]), w)]
    return sum(relative_spread(s) > limit for s in stats) / len(stats) if stats else 0.0
