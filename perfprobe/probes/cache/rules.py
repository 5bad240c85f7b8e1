"""Judging the cache probe's numbers: pure rules from figures + host facts to findings.

Each rule is one `rule_<what>(fig, host)` returning findings, applied in the order of `RULES`;
thresholds are named constants, documented in docs/probes/cache.md (rule | threshold | verdict |
why) and tested on curves recorded on real hosts.
"""

from __future__ import annotations

from typing import Callable

from perfprobe.engine.confirm import held_back
from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts, quota_bound_note
from perfprobe.probes.cache.figures import (
    SATURATED,
    CacheFigures,
    cores_to_saturate,
    gbs,
    pages_gain,
    pattern_ratio,
    sweep_points,
)
from perfprobe.probes.cache.plan import cache_size
from perfprobe.pure import vm
from perfprobe.pure.units import format_bytes

SIZE_FACTOR = 2.0          # a level measured within 2x of its reported size agrees with it
DRAM_LATENCY_NS = {"2M": 200.0, "4K": 300.0}  # random DRAM latency far above a local node's
PREFETCH_MIN_RATIO = 2.0   # sequential lines less than 2x cheaper than random: prefetch not working
HUGE_PAGE_GAIN = 1.1       # huge pages worth recommending when random latency drops 10% or more
SCALING_MIN = 0.7          # all threads below 70% of one thread's DRAM bandwidth: contention
BACKGROUND_CPUS = 0.5      # other processes kept half a CPU busy on average (or a tenth of the
BACKGROUND_SHARE = 0.1     # CPUs the probe used, on big hosts): its figures were taken under load
OLD_CAP_BASIS = "a quarter of available memory"  # recordings from before the plan named its basis

Rule = Callable[[CacheFigures, Facts], list[Finding]]


def rule_memory_cap(fig: CacheFigures, host: Facts) -> list[Finding]:
    """Say when the largest working set was capped (and by what), and whether DRAM was reached."""
    plan = fig.plan
    limited, top = plan["limited_by"], format_bytes(plan["max_bytes"])
    dram = fig.reached_dram
    if limited == "memory":
        basis = plan.get("cap_basis") or OLD_CAP_BASIS
        return [Finding(Verdict.PASS if dram else Verdict.WARN,
                        f"Working sets capped at {top}, {basis} (wanted {format_bytes(plan['wanted_bytes'])})."
                        + ("" if dram else " DRAM was not reached: DRAM figures are missing."),
                        "" if dram else "Free memory (or run on a quieter host) to measure DRAM.")]
    if not dram:
        return [Finding(Verdict.PASS, f"The curve stops at {top} ({limited}), short of 2x the "
                        f"last-level cache ({format_bytes(fig.llc_bytes)}): DRAM was not measured.",
                        "Leave --max-size out (default 4x the LLC) to measure DRAM.")]
    return []


def rule_level_sizes(fig: CacheFigures, host: Facts) -> list[Finding]:
    """Each measured level end against the reported size of the same level."""
    agree, out = [], []
    caches = [lv for lv in fig.levels if lv.name != "DRAM"]
    for level, cache in zip(caches, fig.reported):
        measured, size = level.end_bytes, cache_size(cache)
        if measured is None:
            continue
        if measured * SIZE_FACTOR < size:
            share = (f"{level.name} ends at about {format_bytes(measured)} measured, but {format_bytes(size)} "
                     f"is reported: this process gets about {100 * measured / size:.0f}% of it")
            advice = (f"Size blocks and hot data for the measured {format_bytes(measured)}, "
                      f"not the reported {format_bytes(size)}.")
            virtual = vm.virtual_machine(fig.raw.get("hypervisor"), host)
            out.append(Finding(Verdict.PASS, f"{share}: a VM's share ({virtual}), true of every shared VM.", advice)
                       if virtual else
                       Finding(Verdict.WARN, f"{share} (noisy neighbours or cache partitioning).", advice))
        else:
            agree.append(f"{level.name} {format_bytes(measured)} (reported {format_bytes(size)})")
    if agree:
        l2 = next((lv.end_bytes for lv in fig.levels if lv.name == "L2" and lv.end_bytes), None)
        advice = (f"Keep each thread's hot data under the measured L2 ({format_bytes(l2)}); "
                  "tile loops so a tile's working set fits." if l2 else "")
        out.insert(0, Finding(Verdict.PASS, "Levels found where reported (within 2x): "
                              + ", ".join(agree) + ".", advice))
    return out


def rule_missing_level(fig: CacheFigures, host: Facts) -> list[Finding]:
    """A reported cache level with no plateau of its own, on a curve that reached DRAM."""
    if not fig.reached_dram:
        return []
    seen = len(fig.levels) - 1
    virtual = vm.virtual_machine(fig.raw.get("hypervisor"), host)
    why = f": a VM's share ({virtual}), true of every shared VM" if virtual else ""
    return [Finding(Verdict.PASS if virtual else Verdict.WARN, f"L{c.get('level')} ({format_bytes(cache_size(c))} "
                    f"reported) shows no plateau of its own: its share for this process is too small to see{why}.",
                    "Treat the last level you see as the last-level cache when sizing data.")
            for c in fig.reported[seen:]]


def rule_dram_latency(fig: CacheFigures, host: Facts) -> list[Finding]:
    """Random DRAM latency far above what a local memory node gives, read at 2x the LLC in both
    presets (figures.levels_of): --quick and a full run judge the same working set. Timing-based:
    confirmed on a re-measurement of that point before it is issued."""
    if not fig.reached_dram:
        return []
    pages = fig.raw.get("curve_pages", "4K")
    dram = fig.levels[-1]
    limit, ns = DRAM_LATENCY_NS.get(pages, DRAM_LATENCY_NS["4K"]), dram.latency_ns
    sizes = fig.raw["curve"]["sizes_bytes"]
    where = f"over {format_bytes(sizes[dram.points[-1]])}" if dram.points else "over the largest set"
    if ns > limit:
        return [Finding(Verdict.WARN, f"DRAM random latency {ns:.0f} ns {where} is far above a local "
                        f"node's (over {limit:.0f} ns with {pages} pages).",
                        "Check memory is local (perfprobe numa; --bind NODE), that no other job "
                        "is loading memory, and for a VM, overcommitted or remote host memory.",
                        confirm=DRAM_KEYS, figure=ns)]
    return [Finding(Verdict.PASS, f"DRAM random latency {ns:.0f} ns {where}, within a local node's "
                    f"(at most {limit:.0f} ns with {pages} pages).",
                    "Keep random-access tables that must live in DRAM few and batched: every miss costs this.",
                    confirm=DRAM_KEYS, figure=ns)]


DRAM_KEYS = ("dram_latency",)
LINE_KEYS = ("line",)


def rule_line_size(fig: CacheFigures, host: Facts) -> list[Finding]:
    """Measured line size against the reported coherency line size. A warn needs every estimate
    to agree (docs/probes/cache.md): the pair sweep in a set that misses L1 only, the DRAM fetch
    unit (a miss never brings less than a line) and, once re-measured, the false-sharing edge (the
    coherency granule itself). Estimates that disagree are a note: the reported size stands."""
    if "line" not in fig.raw:  # not measured (the caller judged no figure of it): nothing to say
        return []
    measured, fetch, edge = fig.line["line_bytes"], fig.line["fetch_bytes"], fig.line["coherency_bytes"]
    told = int(fig.reported[0].get("line_bytes") or 0) if fig.reported else 0
    if measured is None:
        return [Finding(Verdict.PASS, "The line size could not be read from the offset sweep "
                        "(too noisy a run); the reported one stands.", "Run again on a quieter host.",
                        confirm=LINE_KEYS)]
    paired = fetch == 2 * measured
    pair = f" From DRAM, {fetch} B arrive per miss (adjacent-line prefetch)." if paired else ""
    if told and measured != told:
        doubt = line_doubt(measured, told, fetch, edge)
        if doubt:
            return [Finding(Verdict.PASS, f"Cache line estimates disagree ({doubt}): the reported {told} B "
                            "stands.", f"Pad data written by different threads to {max(told, fetch or 0)} B.",
                            confirm=LINE_KEYS, figure=measured)]
        return [Finding(Verdict.WARN, f"Cache line measured {measured} B, reported {told} B"
                        + (f" (false-sharing edge {edge} B)." if edge else "."),
                        f"Pad per-thread data to {max(measured, told)} B until this is explained.",
                        confirm=LINE_KEYS, figure=measured)]
    advice = f"Pad data written by different threads to {fetch if paired else measured} B."
    return [Finding(Verdict.PASS, f"Cache line {measured} B, as reported.{pair}", advice,
                    confirm=LINE_KEYS, figure=measured)]


def line_doubt(measured: int, told: int, fetch: int | None, edge: int | None) -> str:
    """Why a measured line that differs from the reported one is not evidence (empty: no doubt)."""
    if edge is not None and edge != measured:
        return f"pair sweep {measured} B, false-sharing edge {edge} B"
    if fetch is not None and fetch < measured:
        return f"pair sweep {measured} B, but a DRAM miss brings {fetch} B, and a miss never brings less than a line"
    return ""


def rule_prefetch(fig: CacheFigures, host: Facts) -> list[Finding]:
    """What the prefetcher buys: random against sequential line visits over the largest set."""
    pattern = fig.raw.get("pattern")
    if not pattern:
        return []
    size, ratio = format_bytes(pattern["size_bytes"]), pattern_ratio(pattern)
    if ratio < PREFETCH_MIN_RATIO:
        return [Finding(Verdict.WARN, f"Over {size}, sequential lines cost almost as much as random "
                        f"ones ({ratio:.1f}x): the hardware prefetchers look disabled.",
                        "Check BIOS prefetcher settings.", confirm=("pattern",), figure=ratio)]
    return [Finding(Verdict.PASS, f"Sequential access is {ratio:.0f}x cheaper per line than random "
                    f"over {size}: that is what the prefetcher buys.",
                    "Prefer sequential, structure-of-arrays layouts; batch or sort random lookups.",
                    confirm=("pattern",), figure=ratio)]


def rule_huge_pages(fig: CacheFigures, host: Facts) -> list[Finding]:
    """What huge pages buy on random access over a DRAM-sized table."""
    pages = fig.raw.get("pages")
    if not pages:
        return []
    if "skipped" in pages:
        skipped = pages["skipped"]
        advice = ("Run without --quick to compare." if "quick" in skipped else
                  "Set transparent_hugepage to madvise to let programs ask for huge pages.")
        return [Finding(Verdict.PASS, f"Huge pages not compared: {skipped}.", advice)]
    gain, small, huge = pages_gain(pages), pages["small_ns"]["median"], pages["huge_ns"]["median"]
    if gain >= HUGE_PAGE_GAIN:
        return [Finding(Verdict.PASS, f"Huge pages cut random DRAM latency {gain:.2f}x "
                        f"({small:.0f} -> {huge:.0f} ns).",
                        "Back large random-access tables with huge pages "
                        "(madvise(MADV_HUGEPAGE) or THP always).")]
    return [Finding(Verdict.PASS, f"Huge pages change random DRAM latency little here ({gain:.2f}x).")]


def rule_dram_scaling(fig: CacheFigures, host: Facts) -> list[Finding]:
    """All threads reading DRAM slower than one: contention or CPUs taken by others."""
    one, many = gbs(fig, "DRAM", "read_gbs", "1t"), gbs(fig, "DRAM", "read_gbs", "all")
    if one is None or many is None:
        return []
    if many < SCALING_MIN * one:
        return [Finding(Verdict.WARN, f"All threads read DRAM at {many:.1f} GB/s, below one thread's "
                        f"{one:.1f} GB/s.", "Other work is competing for these CPUs or memory; "
                        "measure on an idle host.", confirm=("bandwidth",), figure=many / one)]
    return [Finding(Verdict.PASS, f"All threads read DRAM at {many:.1f} GB/s, one thread at {one:.1f} GB/s.",
                    f"DRAM-bound loops gain up to {many / one:.1f}x from all {fig.threads} threads here.",
                    confirm=("bandwidth",), figure=many / one)]


def rule_dram_saturation(fig: CacheFigures, host: Facts) -> list[Finding]:
    """Where DRAM bandwidth saturates: a pass with numbers and advice (true of the host's kind)."""
    read, triad = sweep_points(fig.raw, "read_gbs"), sweep_points(fig.raw, "triad_gbs")
    cores = cores_to_saturate(fig.raw)
    if cores is None or len(read) < 2:
        return []
    top_n, top = max(read, key=lambda p: p[1])
    one = read[0][1]
    most = read[-1][0]
    triad_top = max((g for _, g in triad), default=0.0)
    advice = (f"A memory-bound job gets {SATURATED:.0%} of this host's DRAM bandwidth from {cores} "
              f"cores; more threads on streaming loops add little (give the other cores compute work)."
              if cores < most else
              f"DRAM bandwidth still grows at {most} threads: a memory-bound job gains from every core.")
    return [Finding(Verdict.PASS, f"DRAM read scales from {one:.1f} GB/s on 1 thread to {top:.1f} GB/s "
                    f"on {top_n} (triad up to {triad_top:.1f}); {SATURATED:.0%} of the best from "
                    f"{cores} threads, one a physical core.", advice)]


def rule_implausible_figures(fig: CacheFigures, host: Facts) -> list[Finding]:
    """Name the all-thread figures left out as impossible (figures.implausible_all), with values."""
    if not fig.left_out:
        return []
    items = [f"{lo.level} {lo.kind.split('_')[0]} all threads {lo.all_gbs:.2g} GB/s beside one "
             f"thread's {lo.one_gbs:.0f}" + (" (re-measured once, still so)" if lo.remeasured else "")
             for lo in fig.left_out]
    return [Finding(Verdict.PASS, "Left out, not a figure of this host: " + "; ".join(items)
                    + ". All threads below a tenth of one thread inside the same level means a "
                    "thread was descheduled for most of the run (other work on these CPUs).",
                    "Measure again on an idle host for all-thread bandwidth.")]


def busy_cpus(fig: CacheFigures) -> float | None:
    """Other processes' CPUs while measuring, when enough to colour the figures (None: quiet)."""
    busy = fig.raw.get("background_cpus")
    return busy if busy is not None and busy >= max(BACKGROUND_CPUS, BACKGROUND_SHARE * fig.threads) else None


def rule_background_load(fig: CacheFigures, host: Facts) -> list[Finding]:
    """Other processes busy on this host while it was measured: named with the load, as a note (a
    busy host is not a fault of the host); `findings` holds back the warns that load can produce."""
    busy = busy_cpus(fig)
    if busy is None:
        return []
    return [Finding(Verdict.PASS, f"Other processes kept {busy:.1f} of the CPUs busy while this "
                    f"was measured (this probe used {fig.threads}): figures are this host's under that "
                    "load, all-thread bandwidth most of all; the warns that load can produce are held back.",
                    "Measure again on an idle host (or with --bind to a quiet node).")]


def rule_cpu_quota(fig: CacheFigures, host: Facts) -> list[Finding]:
    """A note when a cgroup CPU quota grants fewer CPUs than the all-thread runs used."""
    note = quota_bound_note(host, fig.threads, "the all-thread bandwidth runs")
    return [Finding(Verdict.PASS, *note)] if note is not None and fig.threads > 1 else []


RULES: tuple[Rule, ...] = (
    rule_memory_cap, rule_level_sizes, rule_missing_level, rule_dram_latency, rule_line_size,
    rule_prefetch, rule_huge_pages, rule_dram_scaling, rule_dram_saturation, rule_implausible_figures,
    rule_background_load, rule_cpu_quota,
)
LOAD_SENSITIVE = ("rule_level_sizes", "rule_missing_level", "rule_dram_latency", "rule_line_size", "rule_prefetch",
                  "rule_dram_scaling")
"""Warns other work on the CPUs can produce (a neighbour's working set evicting ours, its bandwidth,
its preemption). Level sizes too: on the busy 2-vCPU guest the measured L1 read 6 KiB of 32 and the
L3 share went from 20-36% to 60% between runs, so under load a level share is no figure of the host."""


def findings(fig: CacheFigures, host: Facts) -> list[Finding]:
    """Every rule's findings, in the order of RULES; under load the load-sensitive warns held back."""
    busy = busy_cpus(fig)
    if busy is None:
        return [finding for rule in RULES for finding in rule(fig, host)]
    why = f"other processes kept {busy:.1f} CPUs busy"
    return [held_back(finding, why) if rule.__name__ in LOAD_SENSITIVE else finding
            for rule in RULES for finding in rule(fig, host)]
