"""NUMA nodes, their CPUs, memory and distances (/sys/devices/system/node/nodeN).

Firmware gets this wrong often enough (a CPU in two nodes, a distance row of the wrong length,
every distance 10) that nothing here trusts the tree: it reports what the files say, keeps the
distance matrix square (null where unknown), and says what does not add up in `notes`.
"""

from __future__ import annotations

from typing import Any

from perfprobe.host.parse import format_cpulist, parse_cpulist, parse_cpumask, parse_meminfo
from perfprobe.host.sysroot import SysRoot

NODE_DIR = "sys/devices/system/node"
LOCAL_DISTANCE = 10


def read_numa(sr: SysRoot, online: list[int], meminfo: dict[str, int]) -> dict[str, Any]:
    """The "numa" object."""
    notes: list[str] = []
    ids = sr.numbered(NODE_DIR, "node")
    if ids:
        nodes = [_read_node(sr, node) for node in ids]
        distances = _distances(sr, ids, notes)
    else:
        notes.append(f"no NUMA nodes in sysfs ({NODE_DIR}): one node 0 with every online CPU assumed")
        nodes = [{"id": 0, "cpus": list(online), "memory_total_bytes": meminfo.get("MemTotal"),
                  "memory_free_bytes": meminfo.get("MemFree")}]
        distances = [[LOCAL_DISTANCE]]
    _check_cpus(nodes, online, notes)
    if ids:
        _check_memory(nodes, meminfo, notes)
    balancing = sr.read_int("proc/sys/kernel/numa_balancing")
    return {"nodes": nodes, "distances": distances,
            "memory_only_nodes": [n["id"] for n in nodes if not n["cpus"]],
            "balancing": balancing, "notes": notes}


def _read_node(sr: SysRoot, node: int) -> dict[str, Any]:
    rel = f"{NODE_DIR}/node{node}"
    cpus = parse_cpulist(sr.read_text(f"{rel}/cpulist"))
    if cpus is None:
        cpus = parse_cpumask(sr.read_text(f"{rel}/cpumap")) or []
    mem = parse_meminfo(sr.read_text(f"{rel}/meminfo"))
    return {"id": node, "cpus": cpus, "memory_total_bytes": mem.get("MemTotal"),
            "memory_free_bytes": mem.get("MemFree")}


def _column_ids(sr: SysRoot, ids: list[int], width: int) -> list[int]:
    """Which node each distance column is: the kernel writes one per online node, in id order."""
    for name in ("online", "possible"):
        listed = parse_cpulist(sr.read_text(f"{NODE_DIR}/{name}"))
        if listed and len(listed) == width:
            return listed
    return ids


def _distances(sr: SysRoot, ids: list[int], notes: list[str]) -> list[list[int | None]]:
    """Square matrix in the order of `ids`; a missing or unreadable cell is None (with a note)."""
    matrix = []
    for node in ids:
        text = sr.read_text(f"{NODE_DIR}/node{node}/distance")
        row = _ints(text)
        columns = _column_ids(sr, ids, len(row)) if row else []
        if len(columns) != len(row) or not set(ids) <= set(columns):
            notes.append(f"node{node}/distance {text!r} does not have one entry per node "
                         f"({len(ids)}): its distances are unknown")
            matrix.append([None] * len(ids))
            continue
        by_id = dict(zip(columns, row))
        matrix.append([by_id[other] for other in ids])
    _check_distances(ids, matrix, notes)
    return matrix


def _ints(text: str | None) -> list[int]:
    try:
        return [int(word) for word in (text or "").split()]
    except ValueError:
        return []


def _check_distances(ids: list[int], matrix: list[list[int | None]], notes: list[str]) -> None:
    known = [(i, j, d) for i, row in enumerate(matrix) for j, d in enumerate(row) if d is not None]
    remote = [d for i, j, d in known if i != j]
    if len(ids) > 1 and remote and all(d <= LOCAL_DISTANCE for d in remote):
        notes.append(f"every node-to-node distance is {LOCAL_DISTANCE} (local): the firmware's "
                     f"distance table (ACPI SLIT) is missing or wrong")
    for i, j, d in known:
        other = matrix[j][i]
        if i < j and other is not None and other != d:
            notes.append(f"distance node{ids[i]}->node{ids[j]} is {d} but node{ids[j]}->node{ids[i]} is {other}")


def _check_cpus(nodes: list[dict[str, Any]], online: list[int], notes: list[str]) -> None:
    """A CPU in two nodes, an online CPU in none, or an offline CPU in a node: say so."""
    owners: dict[int, list[int]] = {}
    for node in nodes:
        for cpu in node["cpus"]:
            owners.setdefault(cpu, []).append(node["id"])
    shared = sorted(cpu for cpu, ids in owners.items() if len(ids) > 1)
    if shared:
        notes.append(f"CPUs {format_cpulist(shared)} are listed in several nodes "
                     f"({', '.join('node%d' % n for n in sorted({i for c in shared for i in owners[c]}))}): "
                     f"the firmware's NUMA tables are inconsistent")
    orphans = sorted(set(online) - set(owners))
    if orphans:
        notes.append(f"online CPUs {format_cpulist(orphans)} are in no NUMA node")
    offline = sorted(set(owners) - set(online))
    if offline and online:
        notes.append(f"nodes list CPUs {format_cpulist(offline)} that are not online")


def _check_memory(nodes: list[dict[str, Any]], meminfo: dict[str, int], notes: list[str]) -> None:
    """Per-node MemTotal should add up to /proc/meminfo MemTotal (within 5%)."""
    sizes = [n["memory_total_bytes"] for n in nodes]
    total = meminfo.get("MemTotal")
    if total is None or None in sizes:
        missing = [n["id"] for n in nodes if n["memory_total_bytes"] is None]
        if missing:
            notes.append(f"no MemTotal for node(s) {', '.join(map(str, missing))}")
        return
    node_sum = sum(sizes)
    if abs(node_sum - total) > 0.05 * total:
        notes.append(f"per-node MemTotal adds up to {node_sum / 2**30:.1f} GiB but /proc/meminfo "
                     f"MemTotal is {total / 2**30:.1f} GiB")
