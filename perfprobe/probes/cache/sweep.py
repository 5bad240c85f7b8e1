"""The DRAM thread sweep read off the raw numbers: GB/s at 1, 2, 4, ... threads and where it
saturates (the cores a memory-bound job needs here). Pure; tables and rules both read it.

`raw.sweep` (measure._sweep): {"bytes", "threads": [n, ...], "read_gbs": [stat, ...],
"triad_gbs": [stat, ...]}, each stat a median with spread and the CPUs its shares ran on; or
{"skipped": why}. Older recordings have no sweep: every reader here returns nothing then.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe import stats
from perfprobe.host.facts import Facts
from perfprobe.model import Cell, Finding, Metric, Table, Verdict
from perfprobe.units import format_bytes

SATURATED = 0.90   # a thread count reaching 90% of the sweep's best bandwidth has saturated DRAM
KINDS = ("read_gbs", "triad_gbs")


def timed(raw: Mapping[str, Any], kind: str) -> list[tuple[int, Mapping[str, Any]]]:
    """(threads, the figure's repeats: a stats.summarize result) of one kind, in sweep order
    (empty when not measured)."""
    sweep = raw.get("sweep") or {}
    return [(int(n), s) for n, s in zip(sweep.get("threads") or [], sweep.get(kind) or [])
            if s and s.get("median")]


def points(raw: Mapping[str, Any], kind: str) -> list[tuple[int, float]]:
    """(threads, median GB/s) of one kind, in sweep order (empty when not measured)."""
    return [(n, float(s["median"])) for n, s in timed(raw, kind)]


def saturating_threads(pts: list[tuple[int, float]]) -> int | None:
    """The fewest threads reaching SATURATED of the best figure of the sweep."""
    if not pts:
        return None
    best = max(gbs for _, gbs in pts)
    return min(n for n, gbs in pts if gbs >= SATURATED * best)


def cores_to_saturate(raw: Mapping[str, Any]) -> int | None:
    """Cores a memory-bound job needs here: the larger of read's and triad's saturating counts."""
    counts = [c for c in (saturating_threads(points(raw, k)) for k in KINDS) if c is not None]
    return max(counts) if counts else None


def metrics(raw: Mapping[str, Any]) -> dict[str, Metric]:
    """`dram_read_gbs.t<N>`, `dram_triad_gbs.t<N>` and `cores_to_saturate_dram`."""
    out: dict[str, Metric] = {}
    for kind in KINDS:
        for n, stat in timed(raw, kind):
            out[f"dram_{kind}.t{n}"] = stats.metric(stat, "GB/s")
    cores = cores_to_saturate(raw)
    if cores is not None:
        out["cores_to_saturate_dram"] = Metric(cores, "cores")
    return out


def _cpus(stat: Mapping[str, Any]) -> str:
    cpus = stat.get("cpus") or []
    text = ",".join(map(str, cpus)) if len(cpus) <= 8 else f"{cpus[0]},{cpus[1]},...,{cpus[-1]}"
    return text + ("" if stat.get("pinned", True) else " (not all on their CPU)")


def table(raw: Mapping[str, Any]) -> Table | None:
    """One row per thread count: its CPUs, read and triad GB/s, and the share of the best."""
    read, triad = points(raw, "read_gbs"), points(raw, "triad_gbs")
    if not read and not triad:
        return None
    sweep = raw["sweep"]
    best = {k: max((g for _, g in p), default=0.0) for k, p in (("read", read), ("triad", triad))}
    rows: list[tuple[Cell, ...]] = []
    for i, n in enumerate(sweep["threads"]):
        r = read[i][1] if i < len(read) else None
        t = triad[i][1] if i < len(triad) else None
        share = f"{r / best['read']:.0%} / {t / best['triad']:.0%}" if r and t else None
        rows.append((n, _cpus(sweep["read_gbs"][i]), round(r, 1) if r else None,
                     round(t, 1) if t else None, share))
    return Table(f"DRAM bandwidth against threads (one a physical core, {format_bytes(sweep['bytes'])} "
                 "placed by each count's own threads)",
                 ("threads", "CPUs", "read GB/s", "triad GB/s", "of best (read / triad)"), tuple(rows))


def rule_dram_saturation(fig: Any, host: Facts) -> list[Finding]:
    """Where DRAM bandwidth saturates: a pass with numbers and advice (true of the host's kind)."""
    raw = fig.raw
    read, triad = points(raw, "read_gbs"), points(raw, "triad_gbs")
    cores = cores_to_saturate(raw)
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
