"""What the cache probe will measure on this host: sizes, caps, repeats. Pure, from host facts.

Kept apart from the timing code so the size and memory decisions are tested without a kernel. The
memory budget comes in from outside (perfprobe.system.budget reads free memory now): the plan only caps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Collection, Sequence

from perfprobe.engine.config import Knobs, Presets
from perfprobe.host.facts import CacheFacts, Facts, caches_of, plausible_cache_bytes
from perfprobe.probes.cache.curve import Level
from perfprobe.pure.cpu_order import cpu_cores, cpus_for, physical_cores, placement_order, sweep_counts
from perfprobe.system.budget import MemoryBudget

DEFAULT_LINE = 64
DEFAULT_LLC = 32 << 20         # assumed when the host reports no cache at all (said in a note)
DEFAULT_L1 = 48 << 10
MIN_MAX_BYTES = 64 << 10
PAIR_BLOCK = 1024              # bytes per block in the line-size test (offsets up to half of it)
PAIR_OFFSETS = (8, 16, 32, 64, 128, 256, 512)
DRAM_LLC_MULTIPLE = 2          # DRAM latency is read at 2x the LLC in both presets (quick's largest set)


@dataclass(frozen=True)
class Effort:
    """How hard a run tries: one of the two presets."""

    llc_multiple: int          # DRAM figures at this many times the last-level cache
    per_doubling: int          # curve points per doubling of the working set
    min_points: int            # shortest run of points that counts as a level
    repeats: int               # timed runs of a key figure (latency curve, DRAM read 1t/all)
    bulk_repeats: int          # timed runs of every other figure
    run_s: float               # seconds per timed run of the other figures (key: see Plan.key_share)
    compare_pages: bool        # time the largest set again in 4 KiB pages


PRESETS = Presets(
    full=Effort(llc_multiple=4, per_doubling=4, min_points=3, repeats=5, bulk_repeats=5, run_s=0.004,
                compare_pages=True),
    # --quick: 2x the LLC (still past it, half the linking and page faults), coarser, no 4K-page run,
    # three repeats; the key figures five (compare tests their samples: issue 25), each that much
    # shorter, so they take what three took
    quick=Effort(llc_multiple=2, per_doubling=2, min_points=2, repeats=5, bulk_repeats=3, run_s=0.002,
                 compare_pages=False),
)


@dataclass(frozen=True)
class Plan:
    """Everything measure() needs to decide before it starts."""

    max_bytes: int
    wanted_bytes: int
    cap_bytes: int | None
    limited_by: str            # "4x LLC", "--max-size" or "memory"
    per_doubling: int
    min_points: int
    repeats: int
    run_s: float
    threads: int
    line_bytes: int
    llc_bytes: int
    llc_reported: bool
    l1_bytes: int
    cap_basis: str | None = None  # what the cap is a share of ("a quarter of the host's available memory")
    compare_pages: bool = True
    bulk_repeats: int | None = None  # timed runs of the figures that are no key figure (None: `repeats`)
    dram_bytes: int | None = None    # the set DRAM latency is read at: 2x the LLC, in both presets
    l3_bytes: int | None = None      # the set L3 latency is read at (l3_set), in both presets
    l2_bytes: int | None = None      # the set L2 latency is read at (l2_set), in both presets

    def as_raw(self) -> dict[str, Any]:
        """The plan as recorded in the raw numbers (`raw.plan`)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def other_repeats(self) -> int:
        return self.bulk_repeats or self.repeats

    @property
    def key_share(self) -> float:
        """How much shorter a key figure's timed run is than another's: its repeats take what the
        others' do (5 x 1.2 ms where 3 x 2 ms; 1 in a full run, where both are 5)."""
        return min(1.0, self.other_repeats / self.repeats)


def data_caches(host: Facts) -> list[CacheFacts]:
    """Reported data/unified caches, one per level (lowest level first)."""
    by_level: dict[int, CacheFacts] = {}
    for cache in caches_of(host, "Data", "Unified"):
        if cache.get("size_bytes"):
            by_level.setdefault(int(cache.get("level") or 0), cache)
    return [by_level[k] for k in sorted(by_level)]


def cache_size(cache: CacheFacts) -> int:
    """A reported cache's size in bytes (data_caches keeps only caches that report one)."""
    return int(cache.get("size_bytes") or 0)


def make_plan(host: Facts, knobs: Knobs, effort: Effort, threads: int, budget: MemoryBudget) -> Plan:
    """Sizes and effort for this run: a multiple of the LLC or --max-size, capped at the budget
    (a budget of 0 bytes is one that could not be read: nothing is capped)."""
    caches = data_caches(host)
    llc = planned_llc(caches)
    line = int((caches[0].get("line_bytes") if caches else None) or DEFAULT_LINE)
    asked = knobs.max_size
    wanted = int(asked) if asked else effort.llc_multiple * llc
    cap = budget.bytes if budget.bytes > 0 else None
    max_bytes, limited_by = wanted, "--max-size" if asked else f"{effort.llc_multiple}x LLC"
    if cap is not None and wanted > cap:
        max_bytes, limited_by = cap, "memory"
    max_bytes = max(max_bytes, MIN_MAX_BYTES)
    return Plan(max_bytes=max_bytes, wanted_bytes=wanted, cap_bytes=cap,
                limited_by=limited_by, per_doubling=effort.per_doubling, min_points=effort.min_points,
                repeats=int(knobs.repeats or effort.repeats), run_s=effort.run_s, threads=threads,
                line_bytes=line, llc_bytes=llc, llc_reported=bool(caches),
                l1_bytes=cache_size(caches[0]) if caches else DEFAULT_L1,
                cap_basis=budget.basis if cap is not None else None, compare_pages=effort.compare_pages,
                bulk_repeats=int(knobs.repeats or effort.bulk_repeats),
                dram_bytes=dram_set(max_bytes, llc, line), l3_bytes=l3_set(caches, max_bytes, line),
                l2_bytes=l2_set(caches, max_bytes, line))


def dram_set(max_bytes: int, llc_bytes: int, line: int = DEFAULT_LINE) -> int | None:
    """The working set DRAM latency is read (and judged) at: DRAM_LLC_MULTIPLE x the LLC in whole
    lines, the same in both presets, so --quick and a full run judge the same figure (issue 25: on a
    2-vCPU guest --quick's 600 MiB read 175 ns, a full run's 1.17 GiB 212-236 ns: a miss costs more
    over a larger set, whatever the bound).
    None when the curve stops short of it (DRAM is not reached then)."""
    target = DRAM_LLC_MULTIPLE * llc_bytes // line * line
    return target if reaches_dram(max_bytes, llc_bytes) else None


L2_OVER_L1 = 2
"""L2 latency is read at this many L1s (or the geometric middle of L1 and L2, where that is less)."""


def l2_set(caches: Sequence[CacheFacts], max_bytes: int, line: int = DEFAULT_LINE) -> int | None:
    """The working set L2 latency is read (and compared) at: twice the L1 in whole lines (64 KiB
    beside a 32 KiB L1, 96 KiB beside 48), or the geometric middle of L1 and L2 where the L2 holds
    fewer than four L1s; the same in both presets and every run.

    Why not the L2 plateau off the curve (issue 25): the plateau runs on into sets the data TLB no
    longer covers, and how far it ran moved its median. On the 2-vCPU EPYC guest (32 KiB L1, 1 MiB
    L2; 30 quick runs of 12-06) the plateau took 45-724 KiB: 3.84-4.31 ns where its 64 KiB point
    read 3.80-3.94 ns in 25 of the 30 runs (3.98-4.14 in the rest); compare called L2 +11% in three
    pairs of ten runs, and a planted 5% slowdown moved the figure 3-8% (the points the plateau took
    changed with it). The H100 guest's Xeon (48 KiB L1, 2 MiB L2) read 5.21-5.40 ns at every point
    from 64 KiB to 1.4 MiB in five runs. None without a reported L2, or where the curve stops short
    of the set."""
    if len(caches) < 2:
        return None
    l1, l2 = cache_size(caches[0]), cache_size(caches[1])
    if not l1 or l2 <= l1:
        return None
    target = int(min(L2_OVER_L1 * l1, math.sqrt(l1 * l2))) // line * line
    return target if target < max_bytes else None


L3_OVER_L2 = 4
"""L3 latency is read between the L2 and this many L2s (or the L3's end, where that is less)."""


def l3_set(caches: Sequence[CacheFacts], max_bytes: int, line: int = DEFAULT_LINE) -> int | None:
    """The working set L3 latency is read (and compared) at: the geometric middle of the L2 and
    min(L3, L3_OVER_L2 x L2) in whole lines — 4 MiB beside a 2 MiB L2 — the same in both presets
    and every run, where the bench's C reference reads L3 too (docs/benchmarks.md, "cache").

    Why not the L3 plateau off the curve (issue 25): on shared VMs "L3" is a slope, not a plateau
    (the guest's share of a shared LLC: 30-36 ns at 2.9 MiB, 67-200 ns at 8 MiB on the 2-vCPU Xeon
    guest), and which of its points the level reader took moved the figure 37-51 ns between six
    quiet runs. At this set, over five trial buffers warmed alike (timing.WARM_PASSES), six runs
    read 34.6-38.0 ns. None without a reported L3, or where the curve stops short of the set."""
    if len(caches) < 3:
        return None
    l2, l3 = cache_size(caches[1]), cache_size(caches[2])
    if not l2 or l3 <= l2:
        return None
    target = int(math.sqrt(l2 * min(l3, L3_OVER_L2 * l2))) // line * line
    return target if target < max_bytes else None


def planned_llc(caches: Sequence[CacheFacts]) -> int:
    """The LLC the plan sizes everything from (`Plan.llc_bytes`): the reported one, at most
    host.facts.MAX_LLC_PER_CPU for each CPU reported sharing it (no bound where none is reported), or
    DEFAULT_LLC where no cache is. A guest that reports its host's 480 MiB L3 over 2 CPUs reads its
    curve to 256 MiB (512 MiB in full) and DRAM latency at 256 MiB, not 960 MiB, in both presets;
    its five trial buffers cost a quarter of the faulting, and its health check fits its deadline."""
    return plausible_cache_bytes(caches[-1]) if caches else DEFAULT_LLC


def too_little_memory(plan: Plan) -> bool:
    """The budget is below even the smallest curve: nothing worth measuring fits."""
    return plan.cap_bytes is not None and plan.cap_bytes < plan.max_bytes


def reaches_dram(plan_max: int, llc_bytes: int) -> bool:
    """The largest working set is far enough past the LLC for its plateau to be DRAM."""
    return plan_max >= 2 * llc_bytes


def sharers(host: Facts, count: int, threads: int) -> list[int]:
    """For reported level i+1: how many of our `threads` share one instance of it (SMT siblings
    on an L1, a socket's cores on an L3). Levels not reported: all threads."""
    caches = data_caches(host)
    out = [max(1, min(threads, len(c.get("shared_cpus") or []) or 1)) for c in caches]
    return (out + [threads] * count)[:count]


def level_working_sets(levels: Sequence[Level], sharing: Sequence[int], threads: int
                       ) -> dict[str, tuple[int, int]]:
    """(bytes for one thread, bytes per thread for all threads) inside each measured cache level.

    One thread: the geometric middle between the previous level's end and this one's (half the
    end for L1). All threads: the threads sharing one instance of the level split that working
    set, each share kept past the previous level where the level is big enough.
    """
    out: dict[str, tuple[int, int]] = {}
    prev = 0
    for level, share in zip(levels, sharing):
        if level.end_bytes is None:
            break
        end = level.end_bytes
        one = int(math.sqrt(prev * end)) if prev else end // 2
        each = one
        if share > 1 and threads > 1:
            each = max(one // share, int(1.5 * prev))
            each = min(each, int(0.75 * end / share))
        out[level.name] = (one // 64 * 64, max(each // 64 * 64, 4096))
        prev = end
    return out


def bandwidth_targets(levels: Sequence[Level], host: Facts, plan: Plan) -> dict[str, tuple[int, int]]:
    """Working sets for the bandwidth runs: inside each measured level, and the largest set for
    DRAM (one thread over all of it; all threads each over a set that large: threads_dram_bytes)."""
    targets = level_working_sets(levels, sharers(host, len(levels), plan.threads), plan.threads)
    if levels and levels[-1].name == "DRAM":
        targets["DRAM"] = (plan.max_bytes, threads_dram_bytes(plan, plan.threads, plan.max_bytes) // plan.threads)
    return targets


ALL_THREADS_DRAM_MAX = 1 << 30
"""The most bytes the threads of one DRAM run read (or triad) together: on a host with many CPUs the
shares shrink below one thread's set, which a set this far past the LLC allows."""


def threads_dram_bytes(plan: Plan, threads: int, share: int) -> int:
    """The bytes `threads` threads read (or triad) in DRAM together: `share` each, the set one
    thread reads (2x the LLC or more), so no thread's part fits a cache of the LLC's size even
    where it has one to itself; at most ALL_THREADS_DRAM_MAX and the memory cap, never less than
    `share` (the largest set, which the plan already fits to the cap).

    Why (issue 25): the 2-vCPU EPYC guest reports one 32 MiB L3 for both its vCPUs, but its host
    runs them on two CCXs at times, each with an L3 of its own. Two threads splitting a 64 MiB set,
    32 MiB each, read 107-118 GB/s in 5 of 6 rounds (28.4 in the sixth) where one thread read 30-33
    over the 64 MiB; with 64 MiB each they read 57-67 GB/s, with 128 MiB each 61-64 (12-06 23:33
    UTC, the three in turn in one process). The relations had marked the all-thread figure and the
    sweep's top count unstable in 3 of 4 runs, each time after a re-measurement of 2.4-2.9 s."""
    return max(share, min(threads * share, _room(plan, 0)))


def threads_dram_bytes_beside(plan: Plan, threads: int, share: int, held: int) -> int | None:
    """threads_dram_bytes while `held` bytes are held (the DRAM trial buffers); None where the cap
    leaves no room for `share` more: the caller splits a buffer it holds among the threads, as every
    all-thread DRAM run did before."""
    room = _room(plan, held)
    return None if room < share else min(threads * share, room)


def _room(plan: Plan, held: int) -> int:
    return min(ALL_THREADS_DRAM_MAX, plan.cap_bytes - held) if plan.cap_bytes else ALL_THREADS_DRAM_MAX


@dataclass(frozen=True)
class Placement:
    """Which CPUs the multi-threaded runs use: `cpus` for the all-thread figures (one thread per
    physical core), `order` for the sweep (the first n of it for n threads), `counts` the sweep."""

    order: tuple[int, ...]
    cpus: tuple[int, ...]
    counts: tuple[int, ...]

    def sweep_cpus(self, n: int) -> list[int]:
        return cpus_for(self.order, n)

    @property
    def one_thread(self) -> int:
        """The CPU the one-thread figures are timed on: the latency curve, each level's one-thread
        read and triad (the calling thread, pinned there), the sweep's first point."""
        return self.cpus[0]

    def avoiding(self, avoid: Collection[int]) -> Placement:
        """This placement with its one-thread CPU moved off `avoid`: the first of `cpus` (one a
        physical core) not in it goes first in `cpus` and `order`, the rest keeping their order;
        unchanged where every core is avoided. Where only the first is avoided (the health check's
        confirmation), the chosen CPU is the second, so each sweep count past one uses the same
        CPUs as before, the first two swapped."""
        chosen = next((cpu for cpu in self.cpus if cpu not in avoid), None)
        if chosen is None or chosen == self.cpus[0]:
            return self
        return Placement(_first(self.order, chosen), _first(self.cpus, chosen), self.counts)


def _first(cpus: tuple[int, ...], chosen: int) -> tuple[int, ...]:
    return (chosen, *(cpu for cpu in cpus if cpu != chosen))


def plan_placement(host: Facts, usable: Sequence[int], pool: int, avoid: Collection[int] = ()) -> Placement:
    """One thread per physical core of the usable CPUs for "all threads" (SMT siblings only in the
    sweep's last point, when there are some), at most `pool` (numba's thread pool) threads; the
    one-thread figures on a core not in `avoid` where there is one (Placement.avoiding)."""
    order = placement_order(usable, cpu_cores(host))[:max(1, pool)] or [0]
    cores = physical_cores(order, cpu_cores(host))
    return Placement(tuple(order), tuple(order[:cores]), tuple(sweep_counts(cores, len(order)))).avoiding(avoid)
