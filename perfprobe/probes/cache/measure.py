"""`perfprobe cache` measurement: plan, then time the numba kernels, and return the raw numbers.

The only module of the probe that imports numba or the kernels (both inside `measure`, so importing
this module costs nothing). The shape of what it returns is figures.CacheRaw (docs/probes/cache.md).
"""

from __future__ import annotations

import os
import time
from functools import partial
from types import ModuleType
from typing import Any, Callable, Optional, Sequence

import numpy as np

from perfprobe.engine.probe import ProbeContext
from perfprobe.errors import ProbeSkipped
from perfprobe.probes.cache import timing as m
from perfprobe.probes.cache import trials as tr
from perfprobe.probes.cache.background import BackgroundMeter
from perfprobe.probes.cache.buffers import huge_fraction, page_buffer
from perfprobe.probes.cache.curve import curve_sizes, point_at, read_levels
from perfprobe.probes.cache.figures import KINDS, fixed_sets, implausible_all
from perfprobe.probes.cache.plan import (
    PAIR_BLOCK,
    PAIR_OFFSETS,
    PRESETS,
    Placement,
    Plan,
    bandwidth_targets,
    data_caches,
    make_plan,
    plan_placement,
    reaches_dram,
    threads_dram_bytes,
    threads_dram_bytes_beside,
    too_little_memory,
)
from perfprobe.pure.units import format_bytes
from perfprobe.system.bind import usable_cpus
from perfprobe.system.budget import host_memory_budget

Toucher = Optional[Callable[[np.ndarray], None]]
PAGE_WORDS = 4096 // 8
"""uint64 words of a 4 KiB page: the first touch writes one a page (a huge page's first faults it)."""


def first_toucher(ctx: ProbeContext, k: ModuleType, cpus: Sequence[int]) -> Toucher:
    """Faults a fresh buffer in with one thread on each of `cpus` (k.touch_pages_placed), or None
    where they are fewer than two or span NUMA nodes: the latency chases run on the calling thread,
    and first touch places a page on its toucher's node. Why: on the 2-vCPU Firecracker guest a
    fresh huge page costs the host about 8 ms to back (0.08-0.12 GB/s on one thread, twice that on
    two, 2026-12-06), and the DRAM trials hold 1.25 GiB; the calling thread's CPUs are restored
    after, so the chases run where they ran before."""
    if len(cpus) < 2 or not tr.one_node(ctx.host, cpus):
        return None

    def touch(buf: np.ndarray) -> None:
        allowed = os.sched_getaffinity(0)
        placed = k.Placed(cpus)
        try:
            k.touch_pages_placed(buf.view(np.uint64), PAGE_WORDS, placed.masks, placed.where)
        finally:
            os.sched_setaffinity(0, allowed)

    return touch


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Run every cache measurement and return the raw numbers (see docs/probes/cache.md)."""
    from perfprobe.kernels import cache_kernels as k
    from perfprobe.kernels import placement as kp

    place = _placement(ctx)
    threads = _set_threads(len(place.cpus))
    plan = make_plan(ctx.host, ctx.config.options, ctx.config.preset(PRESETS), threads,
                     host_memory_budget(ctx.host, ctx.config.bind))
    if too_little_memory(plan):
        raise ProbeSkipped(f"only {format_bytes(plan.cap_bytes or 0)} may be used ({plan.cap_basis}), "
                           "too little to measure", "free some memory and run again")
    timing, key = _timing(plan), _timing(plan, key=True)
    thp = (ctx.host.get("thp") or {}).get("enabled")  # the runner read it once, with the host facts
    huge = thp in ("always", "madvise")
    raw: dict[str, Any] = {"plan": plan.as_raw(), "thp": thp, "curve_pages": "2M" if huge else "4K"}
    clock, background, parts = _PhaseClock(), BackgroundMeter(), _Parts(ctx)
    dram_read = None
    toucher = first_toucher(ctx, k, place.cpus)
    one_cpu = place.one_thread  # the calling thread times the one-thread figures there (kp.pinned_pool)
    with kp.pinned_pool(one_cpu), page_buffer(plan.max_bytes, huge, np.uint64, toucher) as buf:
        raw["curve"] = clock.run("curve", _curve, ctx, k, buf, plan, key)
        one_pinned = os.sched_getaffinity(0) == {one_cpu}  # where the curve was timed, read back
        raw["curve_huge_fraction"] = huge_fraction(buf)
        if parts.wanted("pattern"):
            raw["pattern"] = clock.run("pattern", _pattern, k, buf, plan, timing)
        if parts.wanted("line"):
            raw["line"] = clock.run("line", _line, k, buf, plan, timing)
        if plan.l3_bytes:
            clock.run("l3 trials", _l3_trials, k, plan, key, huge, raw, toucher)
        if plan.dram_bytes:
            dram_read = clock.run("dram trials", _dram_trials, ctx, k, buf, plan, key, huge, place.cpus, raw,
                                  toucher)
        del buf  # the mapping closes only once no view of it is left
    if parts.wanted("pages"):
        huge_ns = raw["pattern"]["random_ns"] if huge else None
        with kp.pinned_pool(one_cpu):
            raw["pages"] = clock.run("pages", _pages, k, plan, timing, thp, huge_ns)
    with kp.pinned_pool(one_cpu) as pool:
        raw["bandwidth"] = clock.run("bandwidth", _bandwidth, ctx, k, plan, raw["curve"], place.cpus,
                                     dram_read, parts, None, huge)
        if parts.wanted("sweep"):
            raw["sweep"] = clock.run("sweep", _sweep, ctx, k, plan, timing, place, huge)
        elif ctx.judges("read_gbs.DRAM.all"):  # its relations rest on the sweep's ends: time those
            parts.partly("sweep", "sweep between one thread and the most, and its triad")
            raw["sweep"] = clock.run("sweep ends", _sweep, ctx, k, plan, timing, place, huge, True)
    raw["placement"] = {**pool, **placement_raw(ctx, place), "one_thread_pinned": one_pinned}
    if parts.left_out:
        raw["not_judged"] = parts.left_out
    raw["phase_seconds"] = clock.seconds
    raw["background_cpus"] = background.share()
    return raw


PART_FIGURES = {
    "pattern": ("seq_over_random", "latency_ns.DRAM_4K_pages", "latency_ns.DRAM_2M_pages"),
    "line": ("line_bytes", "fetch_bytes.DRAM"),
    "pages": ("latency_ns.DRAM_4K_pages", "latency_ns.DRAM_2M_pages"),
    "sweep": ("dram_read_gbs.t1", "dram_triad_gbs.t1", "cores_to_saturate_dram"),
}
"""The figures each optional part of the measurement gives (tables.metrics; pages time against the
pattern's random chase): a part whose figures the caller does not judge (RunConfig.judged, the
health check) is left out. The latency curve and the DRAM trials give the key figures and always
run; bandwidth is chosen per level and kind (`_bandwidth`)."""


class _Parts:
    """Which optional parts run, and the names of those left out (kept in the raw numbers)."""

    def __init__(self, ctx: ProbeContext) -> None:
        self.ctx = ctx
        self.left_out: list[str] = []

    def wanted(self, part: str, *figures: str) -> bool:
        if self.ctx.judges(*(figures or PART_FIGURES[part])):
            return True
        self.left_out.append(part)
        return False

    def partly(self, part: str, left_out: str) -> None:
        """A part `wanted` left out runs in part after all: `left_out` says what of it does not."""
        self.left_out = [left_out if name == part else name for name in self.left_out]


def _timing(plan: Plan, key: bool = False) -> m.Timing:
    """How a figure is timed: a key figure (the latency curve, DRAM read on one and all threads)
    in `plan.repeats` runs each `plan.key_share` as long as another figure's; the others in
    `plan.other_repeats` runs of `plan.run_s` (all-thread runs at least ALL_THREADS_RUN_S)."""
    if key:
        share = plan.key_share
        return m.Timing(plan.run_s * share, plan.repeats, m.ALL_THREADS_RUN_S * share)
    return m.Timing(plan.run_s, plan.other_repeats)


class _PhaseClock:
    """Seconds spent in each phase (kept in the raw numbers: where a run's time went)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def run(self, name: str, fn: Any, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.seconds[name] = round(time.perf_counter() - started, 3)


def _set_threads(wanted: int) -> int:
    """Use `wanted` numba threads (at most the pool numba started with); the runner restores it."""
    import numba

    threads = max(1, min(wanted, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    numba.set_num_threads(threads)
    return threads


def _curve(ctx: ProbeContext, k: ModuleType, buf: Any, plan: Plan, timing: m.Timing) -> dict[str, Any]:
    """Random-chase latency at each working-set size, 4 KiB to the largest (and at the sets L3 and
    DRAM latency are read at, plan.l2_bytes, plan.l3_bytes and 2x the LLC, whichever the preset)."""
    sizes = curve_sizes(plan.max_bytes, plan.per_doubling, plan.line_bytes,
                        tuple(at for at in (plan.l2_bytes, plan.l3_bytes, plan.dram_bytes) if at))
    latencies = []
    m.random_chase_ns(k, buf, sizes[0], plan.line_bytes, m.Timing(0.05, 1))  # clocks up, code hot
    with ctx.progress("cache latency curve", len(sizes)) as task:
        for size in sizes:
            dram = plan.dram_bytes is not None and size >= plan.dram_bytes
            latencies.append(m.random_chase_ns(k, buf, size, plan.line_bytes, timing, dram=dram))
            task.advance()
    return {"sizes_bytes": sizes, "latency_ns": latencies}


def _l3_trials(k: ModuleType, plan: Plan, timing: m.Timing, huge: bool, raw: dict[str, Any],
               touch: Toucher = None) -> None:
    """L3 latency over trial buffers (trials.py) at the plan's L3 set: the curve's point there
    becomes the figure over the trials, the curve's own timing its first. Why trials: on a shared
    VM, buffers at different physical pages meet the guest's share of the LLC differently, and a
    point of one buffer, timed once, moved with what a neighbour did in that moment."""
    more = tr.more_buffers(int(plan.l3_bytes or 0), plan.cap_bytes, plan.max_bytes)
    raw["curve"] = point_over_trials(k, raw["curve"], int(plan.l3_bytes or 0), plan.line_bytes, timing, huge,
                                     more, keep_first=True, seed=2, touch=touch)


def point_over_trials(k: ModuleType, curve: dict[str, Any], at_bytes: int, line: int, timing: m.Timing,
                      huge: bool, count: int, keep_first: bool, seed: int, touch: Toucher = None,
                      dram: bool = False) -> dict[str, Any]:
    """`curve` with its point at `at_bytes` timed over `count` fresh buffers held at once
    (trials.latency_trials), each linked with its own permutation from `seed` on; `keep_first`:
    the point's own timing is the first trial (a measurement), else it is replaced (a re-measurement);
    `dram`: the point is DRAM latency's (its warm-up is shorter: timing.warm_loads)."""
    sizes = list(curve["sizes_bytes"])
    at = point_at(sizes, at_bytes)
    latency = list(curve["latency_ns"])
    with tr.held_buffers(count, sizes[at], huge, touch) as held:
        latency[at] = tr.latency_trials(k, held, sizes[at], line, timing,
                                        first=latency[at] if keep_first else None, seed=seed, dram=dram)
        del held
    return {**curve, "latency_ns": latency}


def _dram_trials(ctx: ProbeContext, k: ModuleType, buf: Any, plan: Plan, timing: m.Timing, huge: bool,
                 cpus: Sequence[int], raw: dict[str, Any], touch: Toucher = None) -> dict[str, Any]:
    """DRAM latency and DRAM read over trial buffers held beside the curve's (trials.py): the
    curve's point at the DRAM set becomes the latency over the trials (the curve's own timing its
    first trial), and the DRAM read figure is returned for `_bandwidth`. Records `dram_trials`."""
    size = int(plan.dram_bytes or 0)
    extra = tr.more_buffers(size, plan.cap_bytes, plan.max_bytes)
    curve = raw["curve"]
    at = point_at(curve["sizes_bytes"], size)
    shared = tr.one_node(ctx.host, cpus)
    with tr.held_together(extra, size, huge, touch) as (span, more):
        latency = list(curve["latency_ns"])
        latency[at] = tr.latency_trials(k, more, size, plan.line_bytes, timing, first=latency[at], seed=2,
                                        dram=True)
        raw["curve"] = {**curve, "latency_ns": latency}
        if shared:
            together = threads_dram_bytes_beside(plan, len(cpus), size, plan.max_bytes + extra * size)
            read = tr.read_trials(k, [buf, *more], size, cpus, timing, together, huge, room=span)
        del more, span
    if not shared:  # each read trial first touched by its readers, on their nodes
        with tr.held_buffers(extra + 1, size, huge) as placed:
            together = threads_dram_bytes_beside(plan, len(cpus), size, plan.max_bytes + (extra + 1) * size)
            read = tr.read_trials(k, placed, size, cpus, timing, together, huge)
            del placed
    raw["dram_trials"] = {"buffers": extra + 1, "bytes": size, "read_buffers": "the latency trials'"
                          if shared else "their own, first touched by their readers"}
    return read


def _pattern(k: ModuleType, buf: Any, plan: Plan, timing: m.Timing) -> dict[str, Any]:
    """Random then sequential chase over the largest working set (the random cycle is still
    linked from the curve's last point)."""
    random_ns = m.time_chase(k, buf, timing, warm_steps=1 << 16)
    sequential = m.sequential_chase_ns(k, buf, plan.max_bytes, plan.line_bytes, timing)
    return {"size_bytes": plan.max_bytes, "random_ns": random_ns, "sequential_ns": sequential}


def _line(k: ModuleType, buf: Any, plan: Plan, timing: m.Timing) -> dict[str, Any]:
    """Cost of a second load at growing offsets within random blocks: in a working set that
    misses L1 only (the line, unblurred by prefetch) and over the largest one (DRAM)."""
    dram_blocks = plan.max_bytes // PAIR_BLOCK
    cached_blocks = min(max(64, 4 * plan.l1_bytes // (2 * plan.line_bytes)), dram_blocks)
    offsets = list(PAIR_OFFSETS)
    return {"block_bytes": PAIR_BLOCK, "offsets_bytes": offsets,
            "cached_blocks": cached_blocks, "dram_blocks": dram_blocks,
            "cached_ns": m.pair_costs(k, buf, cached_blocks, PAIR_BLOCK, offsets, timing, 1 << 20),
            # two lines touched per KiB of a buffer of 2-4x the LLC: warming would only cost time
            "dram_ns": m.pair_costs(k, buf, dram_blocks, PAIR_BLOCK, offsets, timing, 1 << 14)}


def _pages(k: ModuleType, plan: Plan, timing: m.Timing, thp: str | None,
           huge_ns: dict[str, Any] | None) -> dict[str, Any]:
    """Random latency over the largest working set in 4 KiB pages, beside the huge-page figure
    (full runs only: linking a second buffer of that size is the longest step of a quick run)."""
    if huge_ns is None:
        return {"size_bytes": plan.max_bytes, "skipped": f"transparent huge pages are {thp or 'absent'}"}
    if not plan.compare_pages:
        return {"size_bytes": plan.max_bytes, "skipped": "a --quick run leaves it out"}
    with page_buffer(plan.max_bytes, huge=False, dtype=np.uint64) as small:
        small_ns = m.random_chase_ns(k, small, plan.max_bytes, plan.line_bytes, timing)
        fraction = huge_fraction(small)
        del small
    return {"size_bytes": plan.max_bytes, "huge_ns": huge_ns, "small_ns": small_ns,
            "small_huge_fraction": fraction}


def _placement(ctx: ProbeContext) -> Placement:
    """The CPUs of the multi-threaded runs: one thread per physical core of the usable CPUs; the
    one-thread figures off the CPUs the caller asks to avoid (RunConfig.avoid_cpus)."""
    import numba

    pool = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    return plan_placement(ctx.host, usable_cpus(ctx.host), pool, ctx.config.avoid_cpus)


def placement_raw(ctx: ProbeContext, place: Placement) -> dict[str, Any]:
    """The placement record of the raw numbers: the one-thread CPU, the order, the all-thread
    CPUs, the sweep's."""
    from perfprobe.pure.cpu_order import cpu_cores, describe

    cores = cpu_cores(ctx.host)
    return {"one_thread": place.one_thread, "order": list(place.order), "all": describe(place.cpus, cores),
            "sweep": {str(n): describe(place.sweep_cpus(n), cores) for n in place.counts}}


def _sweep(ctx: ProbeContext, k: ModuleType, plan: Plan, timing: m.Timing,
           place: Placement, huge: bool = False, ends_only: bool = False) -> dict[str, Any]:
    """DRAM read and triad GB/s at 1, 2, 4, ... threads, one a physical core (the first n of the
    placement order), each count on arrays placed by its own threads, each thread's share as large
    as the largest working set where memory allows (plan.threads_dram_bytes; `bytes_together`).
    `ends_only`: read at one thread and the largest count only (`ends_only` in the record), what
    the all-thread DRAM read's relations rest on, where nothing else of the sweep is judged (the
    health check): on the H100 machine's 16-vCPU guest (12-06 21:25 UTC) 4 of 20 checks drained on
    that figure at 128-139 GB/s against 194, with no sweep to show the trials had read low."""
    if not reaches_dram(plan.max_bytes, plan.llc_bytes):
        return {"skipped": "the largest working set does not reach past the last-level cache"}
    counts = [place.counts[0], place.counts[-1]] if ends_only and len(place.counts) > 1 else list(place.counts)
    kinds = KINDS[:1] if ends_only else KINDS
    together = [threads_dram_bytes(plan, n, plan.max_bytes) for n in counts]
    out: dict[str, Any] = {"bytes": plan.max_bytes, "threads": counts, "bytes_together": together}
    if ends_only:
        out["ends_only"] = True
    with ctx.progress("DRAM thread sweep", len(kinds) * len(counts)) as task:
        for kind in kinds:
            out[kind] = []
            for n, total in zip(counts, together):
                cpus = place.sweep_cpus(n)
                run = partial(m.placed_rate, k, kind, total, cpus, timing, huge)
                top_read = kind == KINDS[0] and n == counts[-1]  # placed, as the all-thread read is
                out[kind].append(m.with_handoffs(cpus, run) if top_read else run())
                task.advance()
    return out


def _bandwidth(ctx: ProbeContext, k: ModuleType, plan: Plan, curve: dict[str, Any],
               cpus: Sequence[int], dram_read: dict[str, Any] | None = None,
               parts: _Parts | None = None, only: Sequence[str] | None = None, huge: bool = False) -> dict[str, Any]:
    """Read and triad GB/s inside each measured level and in DRAM, 1 thread and all threads
    (one a physical core, `cpus`); DRAM read, a key figure, is `dram_read` (measured over trial
    buffers, trials.read_trials) where given, else timed as a key figure (`_timing`). With `parts`,
    a level's kind no judged figure comes from is left out ("read_gbs L1"); with `only`, the
    levels not named are. `huge`: DRAM's triad arrays get 2 MiB pages asked (triad_rates), as its
    read's trial buffers and the sweep's arrays have; the cache levels' get no advice, as before."""
    ns = [p["median"] for p in curve["latency_ns"]]
    levels = read_levels(curve["sizes_bytes"], ns, plan.min_points,
                         reaches_dram(plan.max_bytes, plan.llc_bytes), len(data_caches(ctx.host)),
                         fixed=fixed_sets(plan.as_raw()))
    targets = {name: sets for name, sets in bandwidth_targets(levels, ctx.host, plan).items()
               if only is None or name in only}
    out: dict[str, Any] = {}
    with ctx.progress("cache bandwidth", 2 * len(targets)) as task:
        for name, (one, each) in targets.items():
            out[name] = {}
            for kind in KINDS:
                if parts and not parts.wanted(f"{kind} {name}", f"{kind}.{name}.1t", f"{kind}.{name}.all"):
                    task.advance()
                    continue
                key_figure = (name, kind) == ("DRAM", "read_gbs")
                rate = m.read_rates if kind == "read_gbs" else partial(m.triad_rates, huge=huge if name == "DRAM" else None)
                out[name][kind] = (dram_read if key_figure and dram_read else once_more_if_implausible(
                    partial(rate, k, one, each, cpus, _timing(plan, key=key_figure))))
                task.advance()
    return {name: kinds for name, kinds in out.items() if kinds}


def once_more_if_implausible(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`run()`; when its all-thread figure cannot be right (figures.implausible_all), run it once
    more and keep the second, with the first all-thread figure beside it as `first_all`."""
    first = run()
    if not implausible_all(first["1t"]["median"], first["all"]["median"]):
        return first
    second = run()
    second["first_all"] = first["all"]
    return second


def remeasure(ctx: ProbeContext, raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Confirmation (perfprobe/engine/confirm.py) and the stability re-measurement (`RE_MEASURES`):
    measure again only what a pending warn or an unstable figure rests on —
    "line": the offset sweeps and the false-sharing edge (the coherency granule, independent of
    the prefetchers that blur the sweep); "pattern": random against sequential over the largest
    set; "bandwidth": DRAM read and triad; "dram_latency": the curve's point at the set DRAM
    latency is read at (2x the LLC); "core": a core's own caches (core_figures) — and return
    `raw` with those parts replaced."""
    from perfprobe.kernels import cache_kernels as k
    from perfprobe.kernels import placement as kp

    place = _placement(ctx)
    threads = _set_threads(len(place.cpus))
    plan = make_plan(ctx.host, ctx.config.options, ctx.config.preset(PRESETS), threads,
                     host_memory_budget(ctx.host, ctx.config.bind))
    timing, key, out = _timing(plan), _timing(plan, key=True), dict(raw)
    huge = raw.get("curve_pages") == "2M"
    trials = max(1, tr.more_buffers(plan.dram_bytes or 0, plan.cap_bytes, 0, tr.TRIALS))  # none held yet
    toucher = first_toucher(ctx, k, place.cpus)
    one_cpu = place.one_thread
    if "dram_latency" in keys:
        with kp.pinned_pool(one_cpu):
            out["curve"] = dram_latency_trials(k, plan, key, huge, raw["curve"], trials, toucher)
    if "line" in keys or "pattern" in keys:
        with kp.pinned_pool(one_cpu), page_buffer(plan.max_bytes, huge, np.uint64) as buf:
            if "line" in keys:
                out["line"] = _line(k, buf, plan, timing)
            if "pattern" in keys:
                random_ns = m.random_chase_ns(k, buf, plan.max_bytes, plan.line_bytes, timing)
                out["pattern"] = {"size_bytes": plan.max_bytes, "random_ns": random_ns,
                                  "sequential_ns": m.sequential_chase_ns(k, buf, plan.max_bytes,
                                                                         plan.line_bytes, timing)}
            del buf
    if "line" in keys:
        out["coherency"] = coherency_edge(usable_cpus(ctx.host))
    if "core" in keys:
        with kp.pinned_pool(one_cpu):
            out.update(core_figures(ctx, k, plan, key, huge, out, place.cpus))  # after dram_latency's
    if "bandwidth" in keys and "DRAM" in (raw.get("bandwidth") or {}):
        one = plan.max_bytes
        each = threads_dram_bytes(plan, len(place.cpus), one) // len(place.cpus)
        with kp.pinned_pool(one_cpu):
            if plan.dram_bytes:
                with tr.held_together(trials, plan.dram_bytes, huge, toucher) as (span, held):
                    together = threads_dram_bytes_beside(plan, len(place.cpus), plan.dram_bytes,
                                                         trials * plan.dram_bytes)
                    read = tr.read_trials(k, held, plan.dram_bytes, place.cpus, key, together, huge,
                                          room=span if tr.one_node(ctx.host, place.cpus) else None)
                    del held, span
            else:
                read = m.read_rates(k, one, each, place.cpus, key)
            out["bandwidth"] = {**out["bandwidth"], "DRAM": {
                "read_gbs": read, "triad_gbs": m.triad_rates(k, one, each, place.cpus, timing, huge)}}
    return out


def core_figures(ctx: ProbeContext, k: ModuleType, plan: Plan, timing: m.Timing, huge: bool,
                 raw: dict[str, Any], cpus: Sequence[int]) -> dict[str, Any]:
    """A re-measurement of what times a core's own caches (`CORE_PRIVATE_FIGURES` and the `l1_held`
    witness): the curve's points up to the L2 set (plan.l2_bytes, else the reported L2) timed
    again, and read and triad inside L1 and L2; `curve` and `bandwidth` of `raw` (what the
    re-measurement holds so far) with those replaced. Why not the whole probe: on the EPYC guest
    (12-07 02:45 UTC) the L1 witness broke in 3 of 8 quick runs, and each re-measured everything
    for 2.7 s, most of it DRAM."""
    curve = raw["curve"]
    sizes = list(curve["sizes_bytes"])
    l2 = data_caches(ctx.host)[1:2]
    top = int(plan.l2_bytes or (l2[0].get("size_bytes") if l2 else 0) or 0)
    again = [i for i, size in enumerate(sizes) if size <= top]
    latency = list(curve["latency_ns"])
    if again:
        with page_buffer(sizes[again[-1]], huge, np.uint64) as buf:
            m.random_chase_ns(k, buf, sizes[0], plan.line_bytes, m.Timing(0.05, 1))  # clocks up, code hot
            for i in again:
                latency[i] = m.random_chase_ns(k, buf, sizes[i], plan.line_bytes, timing)
            del buf
    merged = {**curve, "latency_ns": latency}
    fresh = _bandwidth(ctx, k, plan, merged, cpus, parts=_Parts(ctx), only=("L1", "L2"))
    return {"curve": merged, "bandwidth": {**(raw.get("bandwidth") or {}), **fresh}}


def dram_latency_trials(k: ModuleType, plan: Plan, timing: m.Timing, huge: bool, curve: dict[str, Any],
                        trials: int, touch: Toucher = None) -> dict[str, Any]:
    """A re-measurement: `curve` with its point at the set DRAM latency is read at (2x the LLC)
    timed again over `trials` fresh buffers held at once, linked with other permutations than the
    first measurement's."""
    return point_over_trials(k, curve, plan.dram_bytes or curve["sizes_bytes"][-1], plan.line_bytes, timing,
                             huge, trials, keep_first=False, seed=1 + tr.TRIALS, touch=touch,
                             dram=plan.dram_bytes is not None)


EDGE_SPACINGS = (8, 16, 32, 64, 128, 256, 512)


def coherency_edge(cpus: list[int], iterations: int = 200_000, repeats: int = 3) -> dict[str, Any]:
    """The false-sharing edge between two CPUs: the smallest counter spacing from which atomic
    updates cost as little as the widest (falseshare's destructive distance, fastest of `repeats`).
    Lines are what coherency moves, so this is the line as the cores see it. Empty with one CPU."""
    from perfprobe.kernels import falseshare_kernels as fk
    from perfprobe.probes.falseshare.figures import destructive_distance

    if len(cpus) < 2:
        return {}
    pair = (cpus[0], cpus[1])
    fk.run_counters(pair, EDGE_SPACINGS[-1], iterations // 10, "atomic")  # compile, warm
    costs = {s: min(fk.run_counters(pair, s, iterations, "atomic").span_ns / iterations for _ in range(repeats))
             for s in EDGE_SPACINGS}
    return {"cpus": list(pair), "ns_per_update": costs, "edge_bytes": destructive_distance(costs)}
