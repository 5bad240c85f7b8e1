"""NUMA nodes, their CPUs, memory and distances (/sys/devices/system/node/nodeN).

Firmware gets this wrong often enough (a CPU in two nodes, a distance row of the wrong length,
every distance 10) that nothing here trusts the tree: it reports what the files say, keeps the
distance matrix square (null where unknown), and says what does not add up in `notes`.
"""

from __future__ import annotations

from typing import Any

from perfprobe.host.parse import (
    CPU_ID_LIMIT,
    cpulist_damaged,
    format_cpulist,
    parse_cpulist,
    parse_cpumask,
    parse_meminfo,
)
from perfprobe.host.sysroot import SysRoot

NODE_DIR = "sys/devices/system/node"
LOCAL_DISTANCE = 10


def read_numa(sr: SysRoot, online: list[int], meminfo: dict[str, int]) -> dict[str, Any]:
    """The "numa" object."""
    notes: list[str] = []
    ids = sr.numbered(NODE_DIR, "node")
    if ids:
        nodes = [_read_node(sr, node) for node in ids]
        distances = _distances(sr, ids)
        notes += _damaged_cpulists(sr, ids)
    else:
        notes.append(f"no NUMA nodes in sysfs ({NODE_DIR}): one node 0 with every online CPU assumed")
        nodes = [{"id": 0, "cpus": list(online), "memory_total_bytes": meminfo.get("MemTotal"),
                  "memory_free_bytes": meminfo.get("MemFree")}]
        distances = [[LOCAL_DISTANCE]]
    notes += contradictions(nodes, distances, online)
    notes += _offline_in_nodes(nodes, online)
    if ids:
        notes += _memory_mismatch(nodes, meminfo)
    return {"nodes": nodes, "distances": distances,
            "memory_only_nodes": [n["id"] for n in nodes if not n["cpus"]],
            "balancing": sr.read_int("proc/sys/kernel/numa_balancing"), "notes": notes}


def contradictions(nodes: list[dict[str, Any]], distances: list[list[int | None]],
                   online: list[int]) -> list[str]:
    """What in the NUMA facts cannot be true of a real machine (the judge warns on these)."""
    ids = [n["id"] for n in nodes]
    return _shared_cpus(nodes) + _orphan_cpus(nodes, online) + _bad_distances(ids, distances)


def _read_node(sr: SysRoot, node: int) -> dict[str, Any]:
    rel = f"{NODE_DIR}/node{node}"
    cpus = parse_cpulist(sr.read_text(f"{rel}/cpulist"))
    if cpus is None:
        cpus = parse_cpumask(sr.read_text(f"{rel}/cpumap")) or []
    mem = parse_meminfo(sr.read_text(f"{rel}/meminfo"))
    return {"id": node, "cpus": cpus, "memory_total_bytes": mem.get("MemTotal"),
            "memory_free_bytes": mem.get("MemFree")}


def _damaged_cpulists(sr: SysRoot, ids: list[int]) -> list[str]:
    """A node cpulist naming CPUs no kernel numbers (a damaged capture) is read as unknown: say so."""
    notes = []
    for node in ids:
        text = sr.read_text(f"{NODE_DIR}/node{node}/cpulist")
        if cpulist_damaged(text):
            shown = " ".join((text or "").split())[:40]
            notes.append(f"node{node}/cpulist reads {shown!r}: damaged (no kernel has CPUs past "
                         f"{CPU_ID_LIMIT - 1}, or the list is garbled); its CPUs are taken from cpumap, else none")
    return notes


def _column_ids(sr: SysRoot, ids: list[int], width: int) -> list[int]:
    """Which node each distance column is: the kernel writes one per online node, in id order."""
    for name in ("online", "possible"):
        listed = parse_cpulist(sr.read_text(f"{NODE_DIR}/{name}"))
        if listed and len(listed) == width:
            return listed
    return ids


def _distances(sr: SysRoot, ids: list[int]) -> list[list[int | None]]:
    """Square matrix in the order of `ids`; a row missing or of the wrong length is all None."""
    matrix: list[list[int | None]] = []
    for node in ids:
        row = _ints(sr.read_text(f"{NODE_DIR}/node{node}/distance"))
        columns = _column_ids(sr, ids, len(row)) if row else []
        if len(columns) != len(row) or not set(ids) <= set(columns):
            matrix.append([None] * len(ids))
            continue
        by_id: dict[int, int | None] = dict(zip(columns, row))
        matrix.append([by_id[other] for other in ids])
    return matrix


def _ints(text: str | None) -> list[int]:
    try:
        return [int(word) for word in (text or "").split()]
    except ValueError:
        return []


def _bad_distances(ids: list[int], matrix: list[list[int | None]]) -> list[str]:
    notes = []
    unknown = [ids[i] for i, row in enumerate(matrix) if len(row) != len(ids) or None in row]
    if unknown:
        notes.append(f"distances from node(s) {', '.join(map(str, unknown))} are unknown "
                     f"(distance file missing, or not one entry per node)")
    known = [(i, j, d) for i, row in enumerate(matrix) for j, d in enumerate(row) if d is not None]
    remote = [d for i, j, d in known if i != j]
    if len(ids) > 1 and remote and all(d <= LOCAL_DISTANCE for d in remote):
        notes.append(f"every node-to-node distance is {LOCAL_DISTANCE} (local): the firmware's "
                     f"distance table (ACPI SLIT) is missing or wrong")
    for i, j, d in known:
        back = matrix[j][i] if j < len(matrix) and i < len(matrix[j]) else None
        if i < j and back is not None and back != d:
            notes.append(f"distance node{ids[i]}->node{ids[j]} is {d} but node{ids[j]}->node{ids[i]} is {back}")
    return notes


def _owners(nodes: list[dict[str, Any]]) -> dict[int, list[int]]:
    owners: dict[int, list[int]] = {}
    for node in nodes:
        for cpu in node["cpus"]:
            owners.setdefault(cpu, []).append(node["id"])
    return owners


def _shared_cpus(nodes: list[dict[str, Any]]) -> list[str]:
    owners = _owners(nodes)
    shared = sorted(cpu for cpu, ids in owners.items() if len(ids) > 1)
    if not shared:
        return []
    where = sorted({node for cpu in shared for node in owners[cpu]})
    return [f"CPUs {format_cpulist(shared)} are listed in several nodes "
            f"({', '.join('node%d' % n for n in where)}): the firmware's NUMA tables are inconsistent"]


def _orphan_cpus(nodes: list[dict[str, Any]], online: list[int]) -> list[str]:
    orphans = sorted(set(online) - set(_owners(nodes)))
    return [f"online CPUs {format_cpulist(orphans)} are in no NUMA node"] if orphans else []


def _offline_in_nodes(nodes: list[dict[str, Any]], online: list[int]) -> list[str]:
    offline = sorted(set(_owners(nodes)) - set(online))
    return [f"nodes list CPUs {format_cpulist(offline)} that are not online"] if offline and online else []


def _memory_mismatch(nodes: list[dict[str, Any]], meminfo: dict[str, int]) -> list[str]:
    """Per-node MemTotal should add up to /proc/meminfo MemTotal (within 5%)."""
    missing = [n["id"] for n in nodes if n["memory_total_bytes"] is None]
    if missing:
        return [f"no MemTotal for node(s) {', '.join(map(str, missing))}"]
    total = meminfo.get("MemTotal")
    node_sum = sum(n["memory_total_bytes"] for n in nodes)
    if total and abs(node_sum - total) > 0.05 * total:
        return [f"per-node MemTotal adds up to {node_sum / 2**30:.1f} GiB but /proc/meminfo "
                f"MemTotal is {total / 2**30:.1f} GiB"]
    return []


def node_free_bytes(node: int, sr: SysRoot | None = None) -> int | None:
    """One node's free memory read now (live by default): what a --bind budget is a fraction of."""
    mem = parse_meminfo((sr or SysRoot(None)).read_text(f"{NODE_DIR}/node{node}/meminfo"))
    return mem.get("MemFree")
