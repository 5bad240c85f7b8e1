"""The cache probe's metrics, tables, curve, facts and summary: data for the renderers and the JSON.

Pure, built from the figures (never from the rules). Bandwidth figures left out as implausible
(figures.implausible_all) are absent from the metrics and shown as unknown in the level table.
"""

from __future__ import annotations

from typing import Any

from perfprobe.engine.model import Cell, Curve, Metric, Table
from perfprobe.probes.cache.figures import (
    KINDS,
    THREADS,
    CacheFigures,
    SweepStat,
    cores_to_saturate,
    gbs,
    l1_held,
    llc_latency_ns,
    pattern_ratio,
    rate,
    sweep_points,
    sweep_timed,
    threads_placement,
)
from perfprobe.probes.cache.plan import cache_size
from perfprobe.pure import stats
from perfprobe.pure.units import format_bytes

METHOD = ("latency: dependent loads over a random cyclic permutation of lines (one pointer "
          "a line), median of repeats; level end: where latency has risen a fifth of the "
          "way to the next level; bandwidth: widest vector loads / STREAM triad (24 B/element), "
          "each thread on its own share; line: cost of a second load at growing offsets "
          "in random 1 KiB blocks, in a working set that misses L1 only")


def metrics(fig: CacheFigures) -> dict[str, Metric]:
    """The JSON metrics: latency and size per level, bandwidth, line, prefetch and page ratios.
    Every timed figure carries its repeats (stats.metric); sizes, the line and ratios are plain."""
    out: dict[str, Metric] = {}
    for level in fig.levels:
        out[f"latency_ns.{level.name}"] = (stats.metric(level.stat, "ns") if level.stat is not None
                                           else Metric(round(level.latency_ns, 2), "ns"))
        if level.end_bytes is not None:
            out[f"size_bytes.{level.name}"] = Metric(level.end_bytes, "bytes")
    llc_ns = llc_latency_ns(fig.levels)
    for name in fig.bandwidth:
        for kind in KINDS:
            for threads in THREADS:
                stat = rate(fig, name, kind, threads)
                if stat is not None:
                    placement = threads_placement(stat, llc_ns)
                    out[f"{kind}.{name}.{threads}"] = stats.metric({**stat, "placement": placement}, "GB/s")
    if fig.line["line_bytes"]:
        out["line_bytes"] = Metric(fig.line["line_bytes"], "bytes")
    if fig.line["fetch_bytes"]:
        out["fetch_bytes.DRAM"] = Metric(fig.line["fetch_bytes"], "bytes")
    pattern, pages = fig.raw.get("pattern"), fig.raw.get("pages") or {}
    if pattern:
        out["seq_over_random"] = Metric(round(pattern_ratio(pattern), 2), "ratio")
    if "huge_ns" in pages:
        out["latency_ns.DRAM_4K_pages"] = stats.metric(pages["small_ns"], "ns", digits=1)
        out["latency_ns.DRAM_2M_pages"] = stats.metric(pages["huge_ns"], "ns", digits=1)
    if any(name.endswith(".all") for name in out):
        out["threads"] = Metric(fig.threads, "count")
    held = l1_held(fig.raw, fig.reported)
    if held is not None:
        out["l1_held"] = Metric(round(held, 3), "ratio")
    out.update(sweep_metrics(fig))
    return out


def sweep_metrics(fig: CacheFigures) -> dict[str, Metric]:
    """`dram_read_gbs.t<N>`, `dram_triad_gbs.t<N>` and `cores_to_saturate_dram`."""
    out: dict[str, Metric] = {}
    llc_ns = llc_latency_ns(fig.levels)
    for kind in KINDS:
        for n, stat in sweep_timed(fig.raw, kind):
            placement = threads_placement(stat, llc_ns)
            out[f"dram_{kind}.t{n}"] = stats.metric({**stat, "placement": placement}, "GB/s")
    cores = cores_to_saturate(fig.raw)
    if cores is not None:
        out["cores_to_saturate_dram"] = Metric(cores, "cores")
    return out


def _gbs_cell(fig: CacheFigures, level: str, kind: str, threads: str) -> float | None:
    value = gbs(fig, level, kind, threads)
    return None if value is None else round(value, 1)


def level_table(fig: CacheFigures) -> Table:
    """One row per level: latency, measured and reported size, read and triad GB/s."""
    sizes = {f"L{c.get('level')}": format_bytes(cache_size(c)) for c in fig.reported}
    rows: list[tuple[Cell, ...]] = []
    for lv in fig.levels:
        told = sizes.get(lv.name) if lv.name != "DRAM" else None
        rows.append((lv.name, round(lv.latency_ns, 1),
                     format_bytes(lv.end_bytes) if lv.end_bytes else None, told,
                     *(_gbs_cell(fig, lv.name, kind, t) for kind in KINDS for t in THREADS)))
    columns = ("level", "latency ns", "measured size", "reported size", "read GB/s 1t",
               "read GB/s all", "triad GB/s 1t", "triad GB/s all")
    return Table("Cache levels (random-chase latency; bandwidth inside each level)", columns,
                 tuple(rows))


def pattern_table(fig: CacheFigures) -> Table:
    """Access pattern, pages and line: ns per line visit over the largest working set."""
    rows: list[tuple[Cell, ...]] = []
    pattern, pages = fig.raw.get("pattern"), fig.raw.get("pages") or {}
    if pattern:
        size = format_bytes(pattern["size_bytes"])
        rows.append(("sequential lines", size, round(pattern["sequential_ns"]["median"], 1)))
        rows.append(("random lines", size, round(pattern["random_ns"]["median"], 1)))
    if "huge_ns" in pages:
        size = format_bytes(pages["size_bytes"])
        rows.append(("random, 4 KiB pages", size, round(pages["small_ns"]["median"], 1)))
        rows.append(("random, 2 MiB pages", size, round(pages["huge_ns"]["median"], 1)))
    test = fig.raw.get("line") or {}
    for offset, cached, dram in zip(test.get("offsets_bytes") or [], test.get("cached_ns") or [],
                                    test.get("dram_ns") or []):
        rows.append((f"2 loads {offset} B apart", "L2 / largest",
                     f"{cached['min']:.1f} / {dram['min']:.1f}"))
    return Table("Access pattern, pages and line (ns per line visit; per 2-load block, fastest run)",
                 ("access", "working set", "ns"), tuple(rows))


def _cpus(stat: SweepStat) -> str:
    cpus = stat.get("cpus") or []
    text = ",".join(map(str, cpus)) if len(cpus) <= 8 else f"{cpus[0]},{cpus[1]},...,{cpus[-1]}"
    return text + ("" if stat.get("pinned", True) else " (not all on their CPU)")


def sweep_table(fig: CacheFigures) -> Table | None:
    """The DRAM thread sweep, one row per thread count: its CPUs, read and triad GB/s, and the
    share of the best."""
    read, triad = dict(sweep_points(fig.raw, "read_gbs")), dict(sweep_points(fig.raw, "triad_gbs"))
    if not read and not triad:
        return None
    sweep = fig.raw["sweep"]
    best = {"read": max(read.values(), default=0.0), "triad": max(triad.values(), default=0.0)}
    placed = sweep.get("read_gbs") or []   # side by side with threads, as measured
    rows: list[tuple[Cell, ...]] = []
    for i, n in enumerate(sweep["threads"]):   # by count: a figure left out shifts no other into its row
        r, t = read.get(n), triad.get(n)
        share = f"{r / best['read']:.0%} / {t / best['triad']:.0%}" if r and t else None
        cpus = _cpus(placed[i]) if i < len(placed) and placed[i] else ""
        rows.append((n, cpus, round(r, 1) if r else None, round(t, 1) if t else None, share))
    return Table(f"DRAM bandwidth against threads (one a physical core, {format_bytes(sweep['bytes'])} "
                 "placed by each count's own threads)",
                 ("threads", "CPUs", "read GB/s", "triad GB/s", "of best (read / triad)"), tuple(rows))


def tables(fig: CacheFigures) -> tuple[Table, ...]:
    swept = sweep_table(fig)
    return (level_table(fig), pattern_table(fig)) + ((swept,) if swept else ())


def curve_view(fig: CacheFigures) -> Curve:
    """Latency against working set, marked at the reported cache sizes."""
    curve = fig.raw["curve"]
    points = tuple((float(s), round(p["median"], 2))
                   for s, p in zip(curve["sizes_bytes"], curve["latency_ns"]))
    marks = tuple((float(cache_size(c)), f"L{c.get('level')} {format_bytes(cache_size(c))}")
                  for c in fig.reported)
    return Curve("Load latency against working set (random pointer chase)", "working set (bytes)",
                 "ns per load", points, log_x=True, log_y=True, marks=marks)


def facts_view(fig: CacheFigures) -> dict[str, Any]:
    """The full curve with spread, the levels read off it, what was left out, and how it was measured."""
    raw, curve = fig.raw, fig.raw["curve"]
    facts: dict[str, Any] = {
        "curve": [{"size_bytes": s, "ns": p} for s, p in zip(curve["sizes_bytes"], curve["latency_ns"])],
        "levels": [{"name": lv.name, "latency_ns": lv.latency_ns, "end_bytes": lv.end_bytes}
                   for lv in fig.levels],
        "line": dict(fig.line),
        "plan": dict(fig.plan),
        "pages": {"thp": raw.get("thp"), "curve_pages": raw.get("curve_pages"),
                  "curve_huge_fraction": raw.get("curve_huge_fraction")},
        "method": METHOD,
    }
    if raw.get("placement"):  # which CPUs the multi-threaded runs used, and how they were pinned
        facts["placement"] = raw["placement"]
    if raw.get("not_judged"):  # parts no figure the caller judges came from (the health check)
        facts["not_measured"] = {"parts": list(raw["not_judged"]),
                                 "why": "the caller judges none of their figures (healthcheck: its policy's metrics)"}
    if fig.left_out:
        facts["left_out"] = [{"metric": lo.metric, "gbs": lo.all_gbs, "one_thread_gbs": lo.one_gbs,
                              "remeasured": lo.remeasured} for lo in fig.left_out]
    return facts


def summary(fig: CacheFigures) -> str:
    """One line: each level's latency and measured end."""
    parts = [f"{lv.name} {lv.latency_ns:.3g} ns" + (f" to {format_bytes(lv.end_bytes)}" if lv.end_bytes else "")
             for lv in fig.levels]
    return "; ".join(parts) if parts else "no levels read off the curve"


def key_figure(fig: CacheFigures) -> str:
    """Latencies L1 / L2 / … / DRAM, for the summary table of `perfprobe all`."""
    if not fig.levels:
        return ""
    return ("/".join(lv.name for lv in fig.levels) + " " +
            "/".join(f"{lv.latency_ns:.3g}" for lv in fig.levels) + " ns")
