"""falseshare's metrics, tables, facts and summary as data (the renderer draws them). Pure."""

from __future__ import annotations

from typing import Any, Sequence

from perfprobe.engine.model import Cell, Metric, Table
from perfprobe.host.facts import Facts
from perfprobe.probes.falseshare.figures import (
    KINDS,
    CaseRecord,
    FalseshareRaw,
    PingPong,
    atomic_costs,
    case,
    cost_by_spacing,
    destructive_distance,
    distance_and_padding,
    disturbed_fraction,
    efficiency,
    kept_speed,
    median,
    slowdowns,
)
from perfprobe.pure import stats


def summary(raw: FalseshareRaw, host: Facts) -> str:
    atomic = atomic_costs(raw)
    distance, line, pad = distance_and_padding(raw, host)
    worst = slowdowns(atomic)[min(atomic)]
    return (f"{raw['threads']} threads: counters {min(atomic)} B apart cost {worst:.1f}x the {max(atomic)} B "
            f"spacing (atomic); interference ends at {distance} B; pad to {pad} B"
            + (f" (line {line} B)" if line else ""))


def key_figure(raw: FalseshareRaw, host: Facts) -> str:
    atomic = atomic_costs(raw)
    pad = distance_and_padding(raw, host)[2]
    return f"pad {pad} B ({slowdowns(atomic)[min(atomic)]:.1f}x at {min(atomic)} B)"


def _timed(c: CaseRecord, kind: str) -> Metric:
    """One case's median ns per update: an atomic case with its repeats' statistics; a plain one
    bare, since a plain increment's speed flips between a fast and a slow mode from run to run
    (0.38 or 2.2 ns on the H200 guest; repeats' MAD up to 83% of the median in a quiet --quick run),
    which would mark it unstable on a quiet host and hold back the atomic sweep's warns with it."""
    return stats.metric(c["ns_per_update"], "ns", 3) if kind == "atomic" \
        else Metric(round(median(c), 3), "ns")


def metrics(raw: FalseshareRaw, host: Facts) -> dict[str, Metric]:
    threads = raw["threads"]
    distance, line, pad = distance_and_padding(raw, host)
    found: dict[str, Metric] = {}
    for kind in KINDS:
        costs = cost_by_spacing(raw, kind, threads)
        swept = {c["spacing_bytes"]: c for c in raw["cases"] if c["kind"] == kind and c["threads"] == threads}
        for s, slow in slowdowns(costs).items():
            found[f"ns_per_update.{kind}.{s}B"] = _timed(swept[s], kind)
            found[f"slowdown.{kind}.{s}B"] = Metric(round(slow, 3), "ratio")
    for kind in KINDS:
        shared = case(raw, kind, threads, 0)
        if shared:
            found[f"true_sharing_ns_per_update.{kind}"] = _timed(shared, kind)
        eff = efficiency(raw, kind)
        if eff is not None:
            found[f"scaling_efficiency.{kind}"] = Metric(round(eff, 3), "ratio")
    kept = kept_speed(raw, "atomic")  # the plain medians flip between two modes: no witness in them
    if kept is not None:
        found["kept_speed.atomic"] = Metric(round(kept, 3), "ratio")
    found["plain_distance_bytes"] = Metric(destructive_distance(cost_by_spacing(raw, "plain", threads)), "bytes")
    found.update({"destructive_distance_bytes": Metric(distance, "bytes"),
                  "recommended_padding_bytes": Metric(pad, "bytes"),
                  "coherency_line_bytes": Metric(line, "bytes"), "threads": Metric(threads, "count"),
                  "smt_shared_cores": Metric(len(raw["placement"][str(threads)]["smt_shared"]), "count"),
                  "disturbed_runs_fraction": Metric(round(disturbed_fraction(raw), 3), "ratio")})
    for p in raw["pingpong"]["pairs"]:
        found[f"core_to_core_ns.{p['a']}.{p['b']}"] = stats.metric(p["one_way_ns"], "ns", 1)
    return found


def tables(raw: FalseshareRaw) -> tuple[Table, ...]:
    return (*(kind_table(raw, kind) for kind in KINDS), core_table(raw["pingpong"]))


def kind_table(raw: FalseshareRaw, kind: str) -> Table:
    counts: Sequence[int] = raw["thread_counts"]
    columns = ["spacing"] + [f"{h} ({t} thr)" for t in counts for h in ("ns/update", "min-max", "slowdown")]
    rows = []
    for s in raw["spacings_bytes"]:
        cells: list[Cell] = [f"{s} B"]
        for t in counts:
            c, slow = case(raw, kind, t, s), slowdowns(cost_by_spacing(raw, kind, t))
            cells += [*_stat_cells(c), round(slow[s], 2)]
        rows.append(tuple(cells))
    rows.append(_extra_row(raw, kind, "one shared counter", counts, 0, raw["threads"]))
    rows.append(_extra_row(raw, kind, f"1 thread, {max(raw['spacings_bytes'])} B", counts,
                           max(raw["spacings_bytes"]), 1))
    return Table(f"{kind} updates: ns per update and slowdown against the widest spacing",
                 tuple(columns), tuple(rows))


def _extra_row(raw: FalseshareRaw, kind: str, label: str, counts: Sequence[int], spacing: int,
               threads: int) -> tuple[Cell, ...]:
    c, widest = case(raw, kind, threads, spacing), case(raw, kind, raw["threads"], max(raw["spacings_bytes"]))
    slow = round(median(c) / median(widest), 2) if c and widest else None
    cells: list[Cell] = [label]
    for t in counts:
        cells += [*_stat_cells(c), slow] if t == raw["threads"] else [None, None, None]
    return tuple(cells)


def _stat_cells(c: CaseRecord | None) -> list[Cell]:
    if not c:
        return [None, None]
    s = c["ns_per_update"]
    return [round(s["median"], 2), f"{s['min']:.2f}-{s['max']:.2f}"]


def core_table(pingpong: PingPong) -> Table:
    cpus = pingpong["cpus"]
    ns = {(p["a"], p["b"]): round(p["one_way_ns"]["median"], 1) for p in pingpong["pairs"]}
    rows = tuple((f"CPU {a}", *(ns.get((a, b)) or ns.get((b, a)) for b in cpus)) for a in cpus)
    note = f", {len(cpus)} of {pingpong['usable']} CPUs sampled" if pingpong["sampled"] else ""
    return Table(f"core to core: one-way ns to hand over one cache line{note}",
                 ("from \\ to", *(str(c) for c in cpus)), rows, heat="row")


def facts(raw: FalseshareRaw) -> dict[str, Any]:
    return {"method": raw["method"], "placement": raw["placement"], "plain_check": raw["plain_check"],
            "pingpong_sampled": raw["pingpong"]["sampled"], "repeats": raw["repeats"]}
