"""The cache probe's raw numbers, typed, and the figures read off them: what rules and tables share.

Pure. `read_figures` reads a recorded or fresh `raw` once: the levels off the latency curve, the line
figures, and the bandwidth figures that can be shown. A figure no healthy host can give (all
threads together below a tenth of one thread at the same level) is left out here, so no table,
metric or rule ever prints it; `measure` re-measures it once with the same test (`implausible_all`).
The DRAM thread sweep's readers (`sweep_points`, `cores_to_saturate`) say where DRAM saturates.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional, Sequence, TypedDict, cast

from perfprobe.engine.model import APART, MOVED, SHARED_LLC
from perfprobe.host.facts import CacheFacts, Facts
from perfprobe.probes.cache.curve import Level, read_fetch_unit, read_levels, read_line
from perfprobe.probes.cache.plan import DRAM_LLC_MULTIPLE, data_caches, planned_llc, reaches_dram
from perfprobe.pure import stats

ALL_OVER_ONE_FLOOR = 0.1   # all threads below a tenth of one thread at the same level: not a figure
SATURATED = 0.90   # a thread count reaching 90% of the sweep's best bandwidth has saturated DRAM
Kind = Literal["read_gbs", "triad_gbs"]
KINDS: tuple[Kind, ...] = ("read_gbs", "triad_gbs")
THREADS = ("1t", "all")
STAT_KEYS = tuple(stats.Stat.__annotations__)  # what summarize() returns (not the timing's steps, reps)


class Stat(stats.Stat, total=False):
    """perfprobe.pure.stats.summarize's median of the timed repeats with spread, and the timing's steps."""

    steps: int
    reps: int


class PlanRaw(TypedDict, total=False):
    max_bytes: int
    wanted_bytes: int
    cap_bytes: Optional[int]
    limited_by: str
    cap_basis: Optional[str]
    per_doubling: int
    min_points: int
    repeats: int
    run_s: float
    threads: int
    line_bytes: int
    llc_bytes: int
    llc_reported: bool
    l1_bytes: int
    compare_pages: bool
    bulk_repeats: int
    dram_bytes: Optional[int]
    """The set DRAM latency is read at (2x the LLC, both presets); absent in older recordings."""
    l3_bytes: Optional[int]
    """The set L3 latency is read at (plan.l3_set, both presets); absent in older recordings."""


class CurveRaw(TypedDict):
    sizes_bytes: list[int]
    latency_ns: list[Stat]


class PatternRaw(TypedDict):
    size_bytes: int
    random_ns: Stat
    sequential_ns: Stat


class LineRaw(TypedDict, total=False):
    block_bytes: int
    offsets_bytes: list[int]
    cached_blocks: int
    dram_blocks: int
    cached_ns: list[Stat]
    dram_ns: list[Stat]


class PagesRaw(TypedDict, total=False):
    size_bytes: int
    skipped: str
    huge_ns: Stat
    small_ns: Stat
    small_huge_fraction: Optional[float]


RatesRaw = TypedDict("RatesRaw", {"bytes_1t": int, "bytes_each": int, "1t": Stat, "all": Stat,
                                  "first_all": Stat}, total=False)
"""One bandwidth figure at one level: one thread and all threads; `first_all` is the all-thread
run that was implausible and re-measured (absent when the first run stood)."""


class LevelRates(TypedDict):
    read_gbs: RatesRaw
    triad_gbs: RatesRaw


class SweepStat(Stat, total=False):
    """One thread count's GB/s, with the CPUs its shares ran on and whether each stayed there."""

    cpus: list[int]
    pinned: bool


class SweepRaw(TypedDict, total=False):
    """The DRAM thread sweep (measure._sweep): GB/s at 1, 2, 4, ... threads, one a physical core;
    or `skipped` (why). Older recordings have none."""

    bytes: int
    threads: list[int]
    read_gbs: list[SweepStat]
    triad_gbs: list[SweepStat]
    skipped: str
    ends_only: bool
    """Read timed at one thread and the largest count only (the health check: measure._sweep)."""


class CacheRaw(TypedDict, total=False):
    """What `measure` returns (docs/probes/cache.md)."""

    plan: PlanRaw
    thp: Optional[str]
    curve_pages: str
    curve: CurveRaw
    curve_huge_fraction: Optional[float]
    pattern: PatternRaw
    line: LineRaw
    pages: PagesRaw
    bandwidth: dict[str, LevelRates]
    sweep: SweepRaw
    phase_seconds: dict[str, float]
    background_cpus: Optional[float]
    hypervisor: Optional[bool]
    """The CPU's hypervisor flag as measure read it (perfprobe/pure/vm.py; absent in older recordings)."""
    coherency: dict[str, Any]
    """Only in a re-measurement: the false-sharing edge (edge_bytes) and its sweep."""
    placement: dict[str, Any]
    """Which CPUs the multi-threaded runs used and how they were pinned (perfprobe/pure/cpu_order.py)."""
    not_judged: list[str]
    """Parts of the measurement left out because the caller judged none of their figures
    (RunConfig.judged: the health check): "pattern", "line", "pages", "sweep", "read_gbs L1", ..."""


class LineFigures(TypedDict):
    line_bytes: Optional[int]
    fetch_bytes: Optional[int]
    coherency_bytes: Optional[int]
    """The false-sharing edge (measure.remeasure measures it only when a line warn is pending)."""


@dataclass(frozen=True)
class LeftOut:
    """An all-thread figure not shown: its value, one thread's beside it, and whether it was re-measured."""

    level: str
    kind: str
    all_gbs: float
    one_gbs: float
    remeasured: bool

    @property
    def metric(self) -> str:
        return f"{self.kind}.{self.level}.all"


Bandwidth = dict[str, dict[str, dict[str, Stat]]]
"""level -> kind (read_gbs, triad_gbs) -> threads (1t, all) -> the figure's repeats (GB/s), figures
that stand only."""


@dataclass(frozen=True)
class CacheFigures:
    """Everything rules and tables read: the raw numbers and what was read off them once."""

    raw: CacheRaw
    plan: PlanRaw
    reported: list[CacheFacts]
    llc_bytes: int
    levels: list[Level]
    line: LineFigures
    bandwidth: Bandwidth
    left_out: list[LeftOut]

    @property
    def threads(self) -> int:
        return int(self.plan.get("threads") or 1)

    @property
    def reached_dram(self) -> bool:
        return bool(self.levels) and self.levels[-1].name == "DRAM"


def implausible_all(one_gbs: float, all_gbs: float) -> bool:
    """All threads together, each on its own share inside the same level, below a tenth of one
    thread: no cache does that; a thread descheduled for most of the parallel region does."""
    return one_gbs > 0 and all_gbs < ALL_OVER_ONE_FLOOR * one_gbs


def read_figures(raw: Mapping[str, Any], host: Facts) -> CacheFigures:
    """Read the raw numbers once (recorded or fresh) against the host's reported caches."""
    typed = cast(CacheRaw, raw)
    plan = typed["plan"]
    reported = data_caches(host)
    llc = int(plan.get("llc_bytes") or planned_llc(reported))  # as planned: a replay reads its recording's
    bandwidth, left_out = bandwidth_figures(typed.get("bandwidth") or {})
    return CacheFigures(raw=typed, plan=plan, reported=reported, llc_bytes=llc,
                        levels=levels_of(typed, llc, len(reported)), line=line_figures(typed),
                        bandwidth=bandwidth, left_out=left_out)


def levels_of(raw: CacheRaw, llc: int, reported_levels: int) -> list[Level]:
    """The levels read off the recorded curve (the same reading measure() used for bandwidth), each
    carrying the repeats of the points it was read from (`level_stat`), its latency their median.
    DRAM latency is the point at 2x the LLC (plan.dram_bytes; older recordings: the first point
    at or past 2x the reported LLC) and L3 latency the point at plan.l3_bytes (older recordings:
    its plateau), the same working sets in --quick and full runs."""
    curve, plan = raw["curve"], raw["plan"]
    max_bytes = int(plan["max_bytes"])
    dram_bytes = plan.get("dram_bytes") or DRAM_LLC_MULTIPLE * llc
    levels = read_levels(curve["sizes_bytes"], medians(curve["latency_ns"]), int(plan["min_points"]),
                         reaches_dram(max_bytes, llc), reported_levels, dram_bytes, fixed_sets(plan))
    out = []
    for level in levels:
        stat = level_stat([curve["latency_ns"][i] for i in level.points])
        out.append(dataclasses.replace(level, latency_ns=float(stat["median"]), stat=stat))
    return out


L1_HELD_AT = 0.75
"""Where the L1 is checked to hold: the largest curve point at most this share of the reported L1."""


def l1_held(raw: Mapping[str, Any], reported: Sequence[CacheFacts]) -> float | None:
    """The L1's latency at the curve's smallest set over its latency at three quarters of the
    reported L1 (the largest point at most L1_HELD_AT of it): 1 where the thread had the core's L1
    to itself, well below where another hardware thread on that core took part of it. None where
    no L1 is reported (a size assumed could be the wrong one) or the curve has no such point.

    Why: on the 2-vCPU EPYC guest (one thread a core as the guest sees it, 12-06 17:40 UTC) nine
    quiet runs read 1.09-1.10 ns from 4 KiB to 23 KiB and 3.8 ns past the 32 KiB L1; the tenth read
    1.18 ns at 4 KiB, 1.34 at 16 KiB and 2.16 at 23 KiB, all its repeats alike, and compare called
    its L1 latency +13% against each of the others. The guest's other vCPU, busy reading 64 KiB,
    moved nothing: the core's other hardware thread belonged to someone else."""
    if not reported or int(reported[0].get("level") or 0) != 1:
        return None
    l1 = int(reported[0].get("size_bytes") or 0)
    curve = raw.get("curve") or {}
    sizes, points = list(curve.get("sizes_bytes") or ()), list(curve.get("latency_ns") or ())
    inside = [i for i, size in enumerate(sizes) if size <= L1_HELD_AT * l1]
    if len(inside) < 2 or inside[0] != 0:
        return None
    smallest, held = float(points[0]["median"]), float(points[inside[-1]]["median"])
    return smallest / held if held > 0 else None


def fixed_sets(plan: Mapping[str, Any]) -> dict[str, int]:
    """The cache levels read at a set of the plan's rather than off their plateau: L2 at
    plan.l2_bytes, L3 at plan.l3_bytes (recordings made before them read those levels off the curve)."""
    return {name: int(plan[key]) for name, key in (("L2", "l2_bytes"), ("L3", "l3_bytes")) if plan.get(key)}


def level_stat(points: Sequence[Stat]) -> stats.Stat:
    """One level's latency as a timed figure, from the curve points it was read from: one point's
    own repeats; several points' repeats taken per repeat (the median over the points of the k-th
    run, for each k), so the spread is how runs differ, not how the points of a plateau do. Older
    recordings keep no samples: then the medians of the points' median, min and max, and the count."""
    if len(points) == 1:
        return cast(stats.Stat, {key: value for key, value in points[0].items() if key in STAT_KEYS})
    runs = [p.get("samples") or [] for p in points]
    count = min(len(r) for r in runs)
    in_order = all(len(r) == count == p.get("repeats", count) for r, p in zip(runs, points))
    if count and in_order:  # (beyond stats.MAX_SAMPLES repeats, samples are order statistics)
        return stats.summarize([statistics.median(r[k] for r in runs) for k in range(count)])
    return {"median": statistics.median(float(p["median"]) for p in points),
            "min": statistics.median(float(p.get("min", p["median"])) for p in points),
            "max": statistics.median(float(p.get("max", p["median"])) for p in points),
            "repeats": min(int(p.get("repeats") or 1) for p in points)}


def medians(points: list[Stat]) -> list[float]:
    return [float(p["median"]) for p in points]


def line_figures(raw: CacheRaw) -> LineFigures:
    """Line size (working set missing L1 only) and DRAM fetch unit, from the pair costs. The
    fastest repeat is used: interference only ever adds time, and the sweep compares neighbours."""
    test = raw.get("line") or LineRaw()
    offsets = test.get("offsets_bytes") or []
    cached = [float(p["min"]) for p in test.get("cached_ns") or []]
    dram = [float(p["min"]) for p in test.get("dram_ns") or []]
    edge = (raw.get("coherency") or {}).get("edge_bytes")
    return {"line_bytes": read_line(offsets, cached), "fetch_bytes": read_fetch_unit(offsets, dram),
            "coherency_bytes": int(edge) if edge else None}


def bandwidth_figures(raw: Mapping[str, LevelRates]) -> tuple[Bandwidth, list[LeftOut]]:
    """The repeats of each level's, kind's and thread count's GB/s; implausible all-thread figures
    left out."""
    shown: Bandwidth = {}
    left_out: list[LeftOut] = []
    for level, rates in raw.items():
        shown[level] = {}
        for kind in KINDS:
            if kind not in rates:  # not measured: no judged figure came from it (measure.PART_FIGURES)
                continue
            figure = cast(RatesRaw, rates[kind])
            one, many = float(figure["1t"]["median"]), float(figure["all"]["median"])
            shown[level][kind] = {"1t": figure["1t"]}
            if implausible_all(one, many):
                left_out.append(LeftOut(level, kind, many, one, "first_all" in figure))
            else:
                shown[level][kind]["all"] = figure["all"]
    return shown, left_out


def rate(fig: CacheFigures, level: str, kind: str, threads: str) -> Stat | None:
    """One bandwidth figure that stands, with its repeats (None: not measured, or left out)."""
    return fig.bandwidth.get(level, {}).get(kind, {}).get(threads)


def gbs(fig: CacheFigures, level: str, kind: str, threads: str) -> float | None:
    """One bandwidth figure that stands, its median GB/s (None: not measured, or left out)."""
    stat = rate(fig, level, kind, threads)
    return None if stat is None else float(stat["median"])


def pattern_ratio(pattern: PatternRaw) -> float:
    """Random over sequential ns per line over the largest working set: what prefetch buys."""
    return float(pattern["random_ns"]["median"]) / float(pattern["sequential_ns"]["median"])


def pages_gain(pages: PagesRaw) -> float:
    """4 KiB-page over 2 MiB-page random latency over the largest working set."""
    return float(pages["small_ns"]["median"]) / float(pages["huge_ns"]["median"])


def sweep_timed(raw: CacheRaw, kind: Kind) -> list[tuple[int, SweepStat]]:
    """(threads, the figure's repeats) of one kind of the DRAM thread sweep, in sweep order (empty
    when not measured: older recordings, or a sweep skipped)."""
    sweep = raw.get("sweep") or SweepRaw()
    return [(int(n), s) for n, s in zip(sweep.get("threads") or [], sweep.get(kind) or [])
            if s and s.get("median")]


def sweep_points(raw: CacheRaw, kind: Kind) -> list[tuple[int, float]]:
    """(threads, median GB/s) of one kind of the DRAM thread sweep, in sweep order."""
    return [(n, float(s["median"])) for n, s in sweep_timed(raw, kind)]


def saturating_threads(pts: list[tuple[int, float]]) -> int | None:
    """The fewest threads reaching SATURATED of the best figure of the sweep."""
    if not pts:
        return None
    best = max(gbs for _, gbs in pts)
    return min(n for n, gbs in pts if gbs >= SATURATED * best)


def cores_to_saturate(raw: CacheRaw) -> int | None:
    """Cores a memory-bound job needs here: the larger of read's and triad's saturating counts
    (None from a sweep timed at its ends only: the counts between are not known)."""
    if (raw.get("sweep") or {}).get("ends_only"):
        return None
    counts = [c for c in (saturating_threads(sweep_points(raw, k)) for k in KINDS) if c is not None]
    return max(counts) if counts else None


LLC_APART = 5.0
"""Two threads sit on two last-level caches when a line's handoff between them takes at least this
many times the run's last-level-cache latency: within one the line moves through that cache (a few
of its latencies), between two it crosses the fabric. On the 2-vCPU EPYC guest (12-07) handoffs
read 31-54 ns within one CCX's L3 (13-15 ns: at most 4.2x) and 145-257 ns between two (at least
10x); on the H100 machine's 16-vCPU Xeon guest, one L3 of 35-48 ns, every pair's handoff read
52-110 ns (at most 3.1x, five runs of 12-06)."""


def llc_latency_ns(levels: Sequence[Level]) -> float | None:
    """The last cache level's latency (the highest of L1-L3 measured), ns."""
    caches = [level for level in levels if level.name != "DRAM" and level.latency_ns]
    return float(caches[-1].latency_ns) if caches else None


def threads_placement(stat: Mapping[str, Any], llc_ns: float | None) -> str | None:
    """Where an all-thread figure's threads sat, from the handoffs timed before and after it
    (timing.handoff_ns): SHARED_LLC, APART, MOVED (the two disagree), None where not timed."""
    handoffs = [float(h) for h in stat.get("handoff_ns") or () if h is not None]
    if not handoffs or not llc_ns:
        return None
    apart = {h >= LLC_APART * llc_ns for h in handoffs}
    if len(apart) > 1:
        return MOVED
    return APART if apart.pop() else SHARED_LLC
