"""Judging the cache probe's numbers: pure functions from raw numbers + host facts to findings.

Each rule is one function returning findings; thresholds are named constants, documented in
docs/probes/cache.md (rule | threshold | verdict | why) and tested on curves recorded on real hosts.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from perfprobe.model import Assessment, Finding, Metric, Verdict
from perfprobe.probes.cache_curve import Level, read_fetch_unit, read_levels, read_line
from perfprobe.probes.cache_plan import data_caches, reaches_dram
from perfprobe.probes.cache_views import curve_view, facts_view, level_table, pattern_table
from perfprobe.units import format_bytes

SIZE_FACTOR = 2.0          # a level measured within 2x of its reported size agrees with it
DRAM_LATENCY_NS = {"2M": 200.0, "4K": 300.0}  # random DRAM latency far above a local node's
PREFETCH_MIN_RATIO = 2.0   # sequential lines less than 2x cheaper than random: prefetch not working
HUGE_PAGE_GAIN = 1.1       # huge pages worth recommending when random latency drops 10% or more
SCALING_MIN = 0.7          # all threads below 70% of one thread's DRAM bandwidth: contention
BACKGROUND_CPUS = 0.5      # other processes kept half a CPU busy on average (or a tenth of the
BACKGROUND_SHARE = 0.1     # CPUs the probe used, on big hosts): its figures were taken under load


def judge(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Assessment:
    """Levels, bandwidth, line and pages read off the raw numbers, judged against the host."""
    plan = raw["plan"]
    reported = data_caches(host)
    llc = int(reported[-1]["size_bytes"]) if reported else int(plan["llc_bytes"])
    levels = levels_of(raw, llc, len(reported))
    line = line_figures(raw)
    findings = (
        memory_cap_rule(plan, llc, levels)
        + level_size_rule(levels, reported)
        + missing_level_rule(levels, reported)
        + dram_latency_rule(levels, raw.get("curve_pages", "4K"))
        + line_rule(line, reported)
        + prefetch_rule(raw.get("pattern"))
        + pages_rule(raw.get("pages"))
        + scaling_rule(raw.get("bandwidth", {}))
        + background_rule(raw.get("background_cpus"), int(plan.get("threads") or 1))
    )
    return Assessment(
        summary=summary(levels), metrics=metrics(levels, raw, line),
        findings=tuple(findings),
        tables=(level_table(levels, reported, raw.get("bandwidth", {})),
                pattern_table(raw)),
        curves=(curve_view(raw["curve"], reported),),
        facts=facts_view(raw, levels, line), key_figure=key_figure(levels))


def levels_of(raw: Mapping[str, Any], llc: int, reported_levels: int) -> list[Level]:
    """The levels read off the recorded curve (same reading measure() used for bandwidth)."""
    curve, plan = raw["curve"], raw["plan"]
    ns = [p["median"] for p in curve["latency_ns"]]
    return read_levels(curve["sizes_bytes"], ns, int(plan["min_points"]),
                       reaches_dram(int(plan["max_bytes"]), llc), reported_levels)


def line_figures(raw: Mapping[str, Any]) -> dict[str, int | None]:
    """Line size (working set missing L1 only) and DRAM fetch unit, from the pair costs. The
    fastest repeat is used: interference only ever adds time, and the sweep compares neighbours."""
    test = raw.get("line") or {}
    offsets = test.get("offsets_bytes") or []
    cached = [p["min"] for p in test.get("cached_ns") or []]
    dram = [p["min"] for p in test.get("dram_ns") or []]
    return {"line_bytes": read_line(offsets, cached), "fetch_bytes": read_fetch_unit(offsets, dram)}


def memory_cap_rule(plan: Mapping[str, Any], llc: int, levels: Sequence[Level]) -> list[Finding]:
    """Say when the largest working set was capped, and whether DRAM was still reached."""
    limited, top = plan["limited_by"], format_bytes(plan["max_bytes"])
    dram = bool(levels) and levels[-1].name == "DRAM"
    if limited == "memory":
        verdict = Verdict.PASS if dram else Verdict.WARN
        return [Finding(verdict, f"Working sets capped at {top}, a quarter of available memory "
                        f"(wanted {format_bytes(plan['wanted_bytes'])})."
                        + ("" if dram else " DRAM was not reached: DRAM figures are missing."),
                        "" if dram else "Free memory (or run on a quieter host) to measure DRAM.")]
    if not dram:
        return [Finding(Verdict.PASS, f"The curve stops at {top} ({limited}), short of 2x the "
                        f"last-level cache ({format_bytes(llc)}): DRAM was not measured.",
                        "Leave --max-size out (default 4x the LLC) to measure DRAM.")]
    return []


def level_size_rule(levels: Sequence[Level], reported: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Each measured level end against the reported size of the same level."""
    agree, out = [], []
    for level, cache in _paired(levels, reported):
        measured, size = level.end_bytes, int(cache["size_bytes"])
        if measured is None:
            continue
        if measured * SIZE_FACTOR < size:
            out.append(Finding(
                Verdict.WARN,
                f"{level.name} ends at about {format_bytes(measured)} measured, but "
                f"{format_bytes(size)} is reported: this process gets about "
                f"{100 * measured / size:.0f}% of it (shared VM, noisy neighbours or cache "
                "partitioning).",
                f"Size blocks and hot data for the measured {format_bytes(measured)}, "
                f"not the reported {format_bytes(size)}."))
        else:
            agree.append(f"{level.name} {format_bytes(measured)} (reported {format_bytes(size)})")
    if agree:
        l2 = next((lv for lv in levels if lv.name == "L2" and lv.end_bytes), None)
        advice = (f"Keep each thread's hot data under the measured L2 ({format_bytes(l2.end_bytes)}); "
                  "tile loops so a tile's working set fits." if l2 else "")
        out.insert(0, Finding(Verdict.PASS, "Levels found where reported (within 2x): "
                              + ", ".join(agree) + ".", advice))
    return out


def missing_level_rule(levels: Sequence[Level], reported: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """A reported cache level with no plateau of its own, on a curve that reached DRAM."""
    if not levels or levels[-1].name != "DRAM":
        return []
    seen = len(levels) - 1
    return [Finding(Verdict.WARN, f"L{c['level']} ({format_bytes(int(c['size_bytes']))} reported) "
                    "shows no plateau of its own: its share for this process is too small to see.",
                    "Treat the last level you see as the last-level cache when sizing data.")
            for c in reported[seen:]]


def dram_latency_rule(levels: Sequence[Level], pages: str) -> list[Finding]:
    """Random DRAM latency far above what a local memory node gives."""
    if not levels or levels[-1].name != "DRAM":
        return []
    limit, ns = DRAM_LATENCY_NS.get(pages, DRAM_LATENCY_NS["4K"]), levels[-1].latency_ns
    if ns > limit:
        return [Finding(Verdict.WARN, f"DRAM random latency {ns:.0f} ns is far above a local "
                        f"node's (over {limit:.0f} ns with {pages} pages).",
                        "Check memory is local (perfprobe numa; --bind NODE), that no other job "
                        "is loading memory, and for a VM, overcommitted or remote host memory.")]
    return []


def line_rule(line: Mapping[str, int | None], reported: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Measured line size against the reported coherency line size; the DRAM fetch pair."""
    measured, fetch = line["line_bytes"], line["fetch_bytes"]
    told = int(reported[0].get("line_bytes") or 0) if reported else 0
    if measured is None:
        return [Finding(Verdict.PASS, "The line size could not be read from the offset sweep "
                        "(too noisy a run); the reported one stands.", "Run again on a quieter host.")]
    paired = fetch == 2 * measured
    pair = f" From DRAM, {fetch} B arrive per miss (adjacent-line prefetch)." if paired else ""
    if told and measured != told:
        return [Finding(Verdict.WARN, f"Cache line measured {measured} B, reported {told} B.",
                        f"Pad per-thread data to {max(measured, told)} B until this is explained.")]
    advice = f"Pad data written by different threads to {fetch if paired else measured} B."
    return [Finding(Verdict.PASS, f"Cache line {measured} B, as reported.{pair}", advice)]


def prefetch_rule(pattern: Mapping[str, Any] | None) -> list[Finding]:
    """What the prefetcher buys: random against sequential line visits over the largest set."""
    if not pattern:
        return []
    size = format_bytes(pattern["size_bytes"])
    ratio = pattern["random_ns"]["median"] / pattern["sequential_ns"]["median"]
    if ratio < PREFETCH_MIN_RATIO:
        return [Finding(Verdict.WARN, f"Over {size}, sequential lines cost almost as much as random "
                        f"ones ({ratio:.1f}x): the hardware prefetchers look disabled.",
                        "Check BIOS prefetcher settings.")]
    return [Finding(Verdict.PASS, f"Sequential access is {ratio:.0f}x cheaper per line than random "
                    f"over {size}: that is what the prefetcher buys.",
                    "Prefer sequential, structure-of-arrays layouts; batch or sort random lookups.")]


def pages_rule(pages: Mapping[str, Any] | None) -> list[Finding]:
    """What huge pages buy on random access over a DRAM-sized table."""
    if not pages:
        return []
    if "skipped" in pages:
        advice = ("Run without --quick to compare." if "quick" in pages["skipped"] else
                  "Set transparent_hugepage to madvise to let programs ask for huge pages.")
        return [Finding(Verdict.PASS, f"Huge pages not compared: {pages['skipped']}.", advice)]
    gain = pages["small_ns"]["median"] / pages["huge_ns"]["median"]
    if gain >= HUGE_PAGE_GAIN:
        return [Finding(Verdict.PASS, f"Huge pages cut random DRAM latency {gain:.2f}x "
                        f"({pages['small_ns']['median']:.0f} -> {pages['huge_ns']['median']:.0f} ns).",
                        "Back large random-access tables with huge pages "
                        "(madvise(MADV_HUGEPAGE) or THP always).")]
    return [Finding(Verdict.PASS, f"Huge pages change random DRAM latency little here ({gain:.2f}x).")]


def scaling_rule(bandwidth: Mapping[str, Any]) -> list[Finding]:
    """All threads reading DRAM slower than one: contention or CPUs taken by others."""
    dram = bandwidth.get("DRAM")
    if not dram:
        return []
    one, many = dram["read_gbs"]["1t"]["median"], dram["read_gbs"]["all"]["median"]
    if many < SCALING_MIN * one:
        return [Finding(Verdict.WARN, f"All threads read DRAM at {many:.1f} GB/s, below one thread's "
                        f"{one:.1f} GB/s.", "Other work is competing for these CPUs or memory; "
                        "measure on an idle host.")]
    return []


def background_rule(busy_cpus: float | None, threads: int) -> list[Finding]:
    """Other processes busy on this host while it was measured."""
    if busy_cpus is None or busy_cpus < max(BACKGROUND_CPUS, BACKGROUND_SHARE * threads):
        return []
    return [Finding(Verdict.WARN, f"Other processes kept {busy_cpus:.1f} of the CPUs busy while this "
                    f"was measured (this probe used {threads}): figures are this host's under that "
                    "load, all-thread bandwidth most of all.",
                    "Measure again on an idle host (or with --bind to a quiet node).")]


def _paired(levels: Sequence[Level], reported: Sequence[Mapping[str, Any]]
            ) -> list[tuple[Level, Mapping[str, Any]]]:
    """(measured cache level, reported cache) for levels present in both, in order."""
    caches = [lv for lv in levels if lv.name != "DRAM"]
    return list(zip(caches, reported))


def metrics(levels: Sequence[Level], raw: Mapping[str, Any], line: Mapping[str, Any]) -> dict[str, Metric]:
    """The JSON metrics: latency and size per level, bandwidth, line, prefetch and page ratios."""
    out: dict[str, Metric] = {}
    for level in levels:
        out[f"latency_ns.{level.name}"] = Metric(round(level.latency_ns, 2), "ns")
        if level.end_bytes is not None:
            out[f"size_bytes.{level.name}"] = Metric(level.end_bytes, "bytes")
    for name, figures in (raw.get("bandwidth") or {}).items():
        for kind in ("read_gbs", "triad_gbs"):
            for threads in ("1t", "all"):
                out[f"{kind}.{name}.{threads}"] = Metric(round(figures[kind][threads]["median"], 2), "GB/s")
    if line["line_bytes"]:
        out["line_bytes"] = Metric(line["line_bytes"], "bytes")
    if line["fetch_bytes"]:
        out["fetch_bytes.DRAM"] = Metric(line["fetch_bytes"], "bytes")
    pattern, pages = raw.get("pattern"), raw.get("pages") or {}
    if pattern:
        ratio = pattern["random_ns"]["median"] / pattern["sequential_ns"]["median"]
        out["seq_over_random"] = Metric(round(ratio, 2), "ratio")
    if "huge_ns" in pages:
        out["latency_ns.DRAM_4K_pages"] = Metric(round(pages["small_ns"]["median"], 1), "ns")
        out["latency_ns.DRAM_2M_pages"] = Metric(round(pages["huge_ns"]["median"], 1), "ns")
    return out


def summary(levels: Sequence[Level]) -> str:
    """One line: each level's latency and measured end."""
    parts = [f"{lv.name} {lv.latency_ns:.3g} ns" + (f" to {format_bytes(lv.end_bytes)}" if lv.end_bytes else "")
             for lv in levels]
    return "; ".join(parts) if parts else "no levels read off the curve"


def key_figure(levels: Sequence[Level]) -> str:
    """Latencies L1 / L2 / … / DRAM, for the summary table of `perfprobe all`."""
    if not levels:
        return ""
    return ("/".join(lv.name for lv in levels) + " " +
            "/".join(f"{lv.latency_ns:.3g}" for lv in levels) + " ns")
