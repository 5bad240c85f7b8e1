"""The numa probe's tables as data: topology, distances, matrices, penalties, placement. Pure.

Kept apart from numa_rules (which judges) so each file has one job; the renderer draws these.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.host.parse import format_cpulist
from perfprobe.model import Cell, Table
from perfprobe.probes import numa_rules

Pair = tuple[int, int]


def _gib(value: int | None) -> Cell:
    return None if value is None else round(value / (1 << 30), 1)


def _nodes(host: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((host.get("numa") or {}).get("nodes") or [])


def _kind(node: Mapping[str, Any]) -> str:
    has_memory = node.get("memory_total_bytes") != 0
    if node.get("cpus"):
        return "CPUs + memory" if has_memory else "CPUs only"
    return "memory only" if has_memory else "empty"


def _devices(node_id: int, host: Mapping[str, Any]) -> str:
    gpus = [f"GPU {g.get('index')}" for g in host.get("gpus") or [] if g.get("numa_node") == node_id]
    pci = [d for d in host.get("pci_devices") or [] if d.get("numa_node") == node_id]
    gpu_pci = sum(1 for d in pci if str(d.get("class", "")).startswith("0x03"))
    parts = gpus or ([f"{gpu_pci} display/3D"] if gpu_pci else [])
    if pci:
        parts.append(f"{len(pci)} PCI")
    return ", ".join(parts)


def topology(host: Mapping[str, Any]) -> tuple[Table, ...]:
    """Nodes (CPUs, memory, kind, devices) and the distance table (coloured by ratio to local)."""
    nodes = _nodes(host)
    if not nodes:
        return ()
    rows = tuple((n["id"], format_cpulist(n.get("cpus") or []) or "-", _gib(n.get("memory_total_bytes")),
                  _gib(n.get("memory_free_bytes")), _kind(n), _devices(n["id"], host)) for n in nodes)
    tables = [Table("NUMA topology", ("node", "CPUs", "memory GiB", "free GiB", "kind", "devices"), rows)]
    ids = [n["id"] for n in nodes]
    distances = (host.get("numa") or {}).get("distances") or []
    if distances and all(len(row) == len(ids) for row in distances) and len(distances) == len(ids):
        tables.append(Table("Distance table (firmware SLIT)", ("from \\ to",) + tuple(map(str, ids)),
                            tuple((str(i),) + tuple(row) for i, row in zip(ids, distances)), heat="row"))
    return tuple(tables)


def _matrix(raw: Mapping[str, Any], figures: Mapping[Pair, float], digits: int) -> tuple[tuple[Cell, ...], ...]:
    bad = set(numa_rules.misplaced_nodes(raw))
    rows = []
    for i in raw.get("cpu_nodes", []):
        cells: list[Cell] = [str(i)]  # a label, not a figure to colour
        for j in raw.get("mem_nodes", []):
            value = figures.get((i, j))
            cells.append("pages off-node" if j in bad else None if value is None else round(value, digits))
        rows.append(tuple(cells))
    return tuple(rows)


def matrices(raw: Mapping[str, Any], latency: Mapping[Pair, float],
             bandwidth: Mapping[Pair, float]) -> tuple[Table, ...]:
    """Latency (heat: ratio to the row's best, i.e. local) and read bandwidth, CPU node x memory node."""
    if not raw.get("measured"):
        return ()
    columns = ("CPU node \\ memory node",) + tuple(map(str, raw.get("mem_nodes", [])))
    return (Table("Latency ns (dependent loads)", columns, _matrix(raw, latency, 1), heat="row"),
            Table("Read bandwidth GB/s (all CPUs of the CPU node)", columns, _matrix(raw, bandwidth, 2)))


def penalties(ratios: Mapping[Pair, float], host: Mapping[str, Any]) -> tuple[Table, ...]:
    """Measured remote/local latency next to what the distance table implies."""
    if not ratios:
        return ()
    rows = []
    for (i, j), measured in sorted(ratios.items()):
        implied = numa_rules.implied_ratio(host, i, j)
        rows.append((i, j, round(measured, 2), None if implied is None else round(implied, 2)))
    return (Table("Remote / local latency", ("CPU node", "memory node", "measured", "distance table"),
                  tuple(rows)),)


def placement(raw: Mapping[str, Any]) -> tuple[Table, ...]:
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
