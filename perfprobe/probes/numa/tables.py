"""The numa probe's metrics, summary and tables as data: topology, distances, matrices, penalties,
placement. Pure; the renderer draws them."""

from __future__ import annotations

import statistics
from typing import Any, Mapping

from perfprobe.engine.model import Cell, Metric, Table
from perfprobe.host.facts import Facts, NodeFacts, numa_nodes
from perfprobe.host.parse import format_cpulist
from perfprobe.probes.numa.figures import (
    NumaRaw,
    Pair,
    comparable_ratios,
    implied_ratio,
    misplaced_nodes,
    numa_facts,
    pair_stats,
    remote_ratios,
    unlike_pairs,
)
from perfprobe.pure import stats

FACT_KEYS = ("placement", "method", "sampling", "pairs", "pages", "skipped", "notes", "cpu_nodes", "mem_nodes",
             "bind", "reason")


def metrics(raw: NumaRaw, host: Facts) -> dict[str, Metric]:
    """latency_ns.<i>.<j>, read_gbs.<i>.<j> (the median of each pair's repeats, with their
    statistics), the largest comparable remote/local ratio, node count."""
    ratios = comparable_ratios(raw)
    found = {f"latency_ns.{i}.{j}": stats.metric(stat, "ns", 1)
             for (i, j), stat in pair_stats(raw, "latency_ns").items()}
    found.update({f"read_gbs.{i}.{j}": stats.metric(stat, "GB/s", 2)
                  for (i, j), stat in pair_stats(raw, "read_gbs").items()})
    found["remote_over_local_latency.max"] = Metric(round(max(ratios.values()), 3) if ratios else None, "ratio")
    found["numa_nodes"] = Metric(len(numa_nodes(host)), "count")
    return found


def facts(raw: NumaRaw) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k in FACT_KEYS}


def summary(raw: NumaRaw, host: Facts, latency: Mapping[Pair, float]) -> str:
    nodes = len(numa_nodes(host))
    if not raw.get("measured", False):
        return f"{nodes} NUMA node(s); not measured: {raw.get('reason', 'no measurement')}"
    local = [v for (i, j), v in latency.items() if i == j]
    span = f"{min(local):.0f}" if local and round(min(local)) == round(max(local)) else \
        f"{min(local, default=0):.0f}-{max(local, default=0):.0f}"
    local_text = f"local latency {span} ns" if local else "no local pair measured"
    ratios = comparable_ratios(raw)
    remote = f", remote up to {max(ratios.values()):.2f}x local" if ratios else ""
    return f"{nodes} NUMA node(s), {len(latency)} pair(s) measured: {local_text}{remote}"


def key_figure(raw: NumaRaw, latency: Mapping[Pair, float]) -> str:
    ratios = comparable_ratios(raw)
    if ratios:
        return f"remote {max(ratios.values()):.2f}x local"
    local = [v for (i, j), v in latency.items() if i == j]
    return f"local {statistics.median(local):.0f} ns" if local else ""


def _gib(value: int | None) -> Cell:
    return None if value is None else round(value / (1 << 30), 1)


def _kind(node: NodeFacts) -> str:
    has_memory = node.get("memory_total_bytes") != 0
    if node.get("cpus"):
        return "CPUs + memory" if has_memory else "CPUs only"
    return "memory only" if has_memory else "empty"


def _devices(node_id: int, host: Facts) -> str:
    gpus = [f"GPU {g.get('index')}" for g in host.get("gpus") or [] if g.get("numa_node") == node_id]
    pci = [d for d in host.get("pci_devices") or [] if d.get("numa_node") == node_id]
    gpu_pci = sum(1 for d in pci if str(d.get("class", "")).startswith("0x03"))
    parts = gpus or ([f"{gpu_pci} display/3D"] if gpu_pci else [])
    if pci:
        parts.append(f"{len(pci)} PCI")
    return ", ".join(parts)


def topology(host: Facts) -> tuple[Table, ...]:
    """Nodes (CPUs, memory, kind, devices) and the distance table (coloured by ratio to local)."""
    nodes = numa_nodes(host)
    if not nodes:
        return ()
    rows = tuple((n["id"], format_cpulist(n.get("cpus") or []) or "-", _gib(n.get("memory_total_bytes")),
                  _gib(n.get("memory_free_bytes")), _kind(n), _devices(n["id"], host)) for n in nodes)
    tables = [Table("NUMA topology", ("node", "CPUs", "memory GiB", "free GiB", "kind", "devices"), rows)]
    ids = [n["id"] for n in nodes]
    distances = numa_facts(host).get("distances") or []
    if distances and all(len(row) == len(ids) for row in distances) and len(distances) == len(ids):
        tables.append(Table("Distance table (firmware SLIT)", ("from \\ to",) + tuple(map(str, ids)),
                            tuple((str(i),) + tuple(row) for i, row in zip(ids, distances)), heat="row"))
    return tuple(tables)


def _matrix(raw: NumaRaw, figures: Mapping[Pair, float], digits: int) -> tuple[tuple[Cell, ...], ...]:
    bad = set(misplaced_nodes(raw))
    rows = []
    for i in raw.get("cpu_nodes", []):
        cells: list[Cell] = [str(i)]  # a label, not a figure to colour
        for j in raw.get("mem_nodes", []):
            value = figures.get((i, j))
            cells.append("pages off-node" if j in bad else None if value is None else round(value, digits))
        rows.append(tuple(cells))
    return tuple(rows)


def matrices(raw: NumaRaw, latency: Mapping[Pair, float], bandwidth: Mapping[Pair, float]) -> tuple[Table, ...]:
    """Latency (heat: ratio to the row's best, i.e. local) and read bandwidth, CPU node x memory node."""
    if not raw.get("measured"):
        return ()
    columns = ("CPU node \\ memory node",) + tuple(map(str, raw.get("mem_nodes", [])))
    return (Table("Latency ns (dependent loads)", columns, _matrix(raw, latency, 1), heat="row"),
            Table("Read bandwidth GB/s (all CPUs of the CPU node)", columns, _matrix(raw, bandwidth, 2)))


def penalties(raw: NumaRaw, host: Facts) -> tuple[Table, ...]:
    """Measured remote/local latency next to what the distance table implies; where a pair was
    measured on another working set than its local pair, a column says so (not compared)."""
    ratios, unlike = remote_ratios(raw), unlike_pairs(raw)
    if not ratios:
        return ()
    rows = []
    for (i, j), measured in sorted(ratios.items()):
        implied = implied_ratio(host, i, j)
        row: tuple[Cell, ...] = (i, j, round(measured, 2), None if implied is None else round(implied, 2))
        if unlike:
            sizes = unlike.get((i, j))
            row += (f"{sizes[0] >> 20} / {sizes[1] >> 20} MiB: not compared" if sizes else "same",)
        rows.append(row)
    columns = ("CPU node", "memory node", "measured", "distance table")
    return (Table("Remote / local latency", columns + (("working sets remote / local",) if unlike else ()),
                  tuple(rows)),)


def placement(raw: NumaRaw) -> tuple[Table, ...]:
    """Where this process ran and allocated while measuring (the binding in force, if any)."""
    where = raw.get("placement")
    if not where:
        return ()
    rows = (("CPU affinity", format_cpulist(where.get("cpus") or [])),
            ("memory policy", str(where.get("mempolicy"))),
            ("policy nodes", format_cpulist(where.get("mems") or []) or "-"),
            ("allowed memory nodes", format_cpulist(where.get("mems_allowed") or []) or "-"),
            ("--bind", "-" if raw.get("bind") is None else str(raw["bind"])))
    return (Table("This process", ("what", "now"), rows),)
