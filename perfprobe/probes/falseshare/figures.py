"""Pure readers of falseshare's raw numbers: what rules and tables both read.

The raw dict is measure()'s (or one recorded on another host); the TypedDicts name its shape.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, TypedDict, cast

from perfprobe.host.facts import Facts, caches_of
from perfprobe.pure.stats import Stat

WITHIN = 0.15            # a spacing "does not interfere" when within 15% of the widest
KINDS = ("atomic", "plain")


class CaseRecord(TypedDict, total=False):
    kind: str
    threads: int
    cpus: list[int]
    spacing_bytes: int
    iterations: int
    ns_per_update: Stat
    disturbed_runs: int


class Placement(TypedDict):
    cpus: list[int]
    smt_shared: list[list[int]]


class PingPair(TypedDict, total=False):
    a: int
    b: int
    rounds: int
    disturbed_runs: int
    one_way_ns: Stat


class PingPong(TypedDict):
    cpus: list[int]
    sampled: bool
    usable: int
    pairs: list[PingPair]


class PlainCheck(TypedDict, total=False):
    touches_memory: bool
    how: str


class FalseshareRaw(TypedDict, total=False):
    """measure()'s dict."""

    method: str
    threads: int
    thread_counts: list[int]
    usable_cpus: list[int]
    placement: dict[str, Placement]
    spacings_bytes: list[int]
    cases: list[CaseRecord]
    plain_check: PlainCheck
    pingpong: PingPong
    repeats: int
    quick: bool
    hypervisor: bool | None
    """The CPU's hypervisor flag as measure read it (absent in older recordings)."""


def typed(raw: Mapping[str, Any]) -> FalseshareRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(FalseshareRaw, raw)


def median(c: CaseRecord) -> float:
    return float(c["ns_per_update"]["median"])


def fastest(c: CaseRecord) -> float:
    """The fastest repeat: other work and a vCPU's host only ever add time, so the judged figures
    (distance, scaling) use it. On the H200's 16-vCPU guest the padded 16-thread runs were
    bimodal (about 9.5 or 20 ns an update, run to run), which moved the median and flipped both."""
    return float(c["ns_per_update"].get("min", c["ns_per_update"]["median"]))


def cost_by_spacing(raw: FalseshareRaw, kind: str, threads: int, stat: str = "median") -> dict[int, float]:
    """ns/update per spacing (spacing > 0) for one kind and thread count (median, or "min")."""
    read = fastest if stat == "min" else median
    return {c["spacing_bytes"]: read(c) for c in raw["cases"]
            if c["kind"] == kind and c["threads"] == threads and c["spacing_bytes"] > 0}


def case(raw: FalseshareRaw, kind: str, threads: int, spacing: int) -> CaseRecord | None:
    """The recorded case with these parameters, if any."""
    for c in raw["cases"]:
        if (c["kind"], c["threads"], c["spacing_bytes"]) == (kind, threads, spacing):
            return c
    return None


def slowdowns(costs: Mapping[int, float]) -> dict[int, float]:
    """Each spacing's cost relative to the widest spacing's."""
    widest = costs[max(costs)]
    return {s: v / widest for s, v in sorted(costs.items())}


def destructive_distance(costs: Mapping[int, float], within: float = WITHIN) -> int:
    """Smallest spacing from which every wider spacing costs within `within` of the widest."""
    slow = slowdowns(costs)
    distance = max(slow)
    for spacing in sorted(slow, reverse=True):
        if slow[spacing] > 1 + within:
            break
        distance = spacing
    return distance


def line_bytes(host: Facts) -> int | None:
    """The coherency line size the host reports (L1 data cache first), None when unknown."""
    ranked = sorted(caches_of(host), key=lambda c: (c.get("level") or 9, c.get("type") != "Data"))
    return next((int(line) for c in ranked if (line := c.get("line_bytes"))), None)


def padding(distance: int, line: int | None) -> int:
    """Bytes to keep between counters: the distance or the line, whichever is larger, as a power of 2."""
    need = max(distance, line or 0, 8)
    return 1 << (need - 1).bit_length()


def efficiency(raw: FalseshareRaw, kind: str) -> float | None:
    """One thread's ns/update over each of T threads' on padded counters (1.0 = perfect scaling,
    its ceiling: T threads on their own lines cannot each run faster than one alone, so a figure
    above it is the repeats' noise and reads 1)."""
    return _padded_ratio(raw, kind, fastest)


def kept_speed(raw: FalseshareRaw, kind: str) -> float | None:
    """`efficiency` of the medians: one thread's median ns/update over each of T threads' median on
    padded counters (capped at 1). The figures are medians, so this says whether the typical repeat
    kept speed where `efficiency` says whether the best one did: on the 2-vCPU Xeon guest a run's
    two-thread medians slowed 15-20% while its fastest repeats did not (0.81 here, 0.97 there)."""
    return _padded_ratio(raw, kind, median)


def _padded_ratio(raw: FalseshareRaw, kind: str, read: Callable[[CaseRecord], float]) -> float | None:
    """One thread's ns/update over each of T threads' at the widest spacing, read by `read`, capped at 1."""
    widest = max(raw["spacings_bytes"])
    alone, many = case(raw, kind, 1, widest), case(raw, kind, raw["threads"], widest)
    if not alone or not many:
        return None
    return min(1.0, read(alone) / read(many))


def disturbed_fraction(raw: FalseshareRaw) -> float:
    """Share of the kept timed runs in which some thread was preempted by other work."""
    cases = raw["cases"]
    runs = sum(c["ns_per_update"]["repeats"] for c in cases)
    return sum(c.get("disturbed_runs", 0) for c in cases) / runs if runs else 0.0


def atomic_costs(raw: FalseshareRaw) -> dict[int, float]:
    """The atomic sweep at T threads, fastest repeats: the one that shows interference clearly, and is judged."""
    return cost_by_spacing(raw, "atomic", raw["threads"], "min")


def distance_and_padding(raw: FalseshareRaw, host: Facts) -> tuple[int, int | None, int]:
    """(destructive distance of the atomic sweep, the reported line or None, the padding to use)."""
    distance, line = destructive_distance(atomic_costs(raw)), line_bytes(host)
    return distance, line, padding(distance, line)
