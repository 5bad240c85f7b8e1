"""The `host` probe's tables: host facts laid out for people (the renderer only draws them)."""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.host.parse import format_cpulist
from perfprobe.model import Cell, Table
from perfprobe.units import format_bytes

Host = Mapping[str, Any]


def _size(value: int | None) -> str | None:
    return None if value is None else format_bytes(value)


def _cpus(cpus: list[int] | None) -> str:
    return format_cpulist(cpus or []) or "none"


def cpu_table(host: Host) -> Table:
    cpu, cpus = host.get("cpu") or {}, host.get("cpus") or {}
    memory, thp, huge = host.get("memory") or {}, host.get("thp") or {}, host.get("hugepages") or {}
    freq, lock = host.get("cpufreq") or {}, host.get("memlock") or {}
    rows: list[tuple[Cell, ...]] = [
        ("CPU model", cpu.get("model")), ("vendor", cpu.get("vendor")),
        ("sockets × cores × threads", f"{cpu.get('sockets')} × {cpu.get('cores_per_socket')} × "
                                      f"{cpu.get('threads_per_core')}"),
        ("online CPUs", _cpus(cpus.get("online"))), ("offline CPUs", _cpus(cpus.get("offline"))),
        ("usable CPUs", f"{_cpus(cpus.get('usable'))} ({cpus.get('usable_source')})"),
        ("memory total / available", f"{_size(memory.get('total_bytes'))} / "
                                     f"{_size(memory.get('available_bytes'))}"),
        ("kernel", host.get("kernel")),
        ("cpufreq governor / driver", f"{freq.get('governor') or 'not exposed'} / {freq.get('driver') or '—'}"),
        ("transparent huge pages", f"{thp.get('enabled')} (defrag {thp.get('defrag')})"),
        ("huge pages (size, reserved, free)", f"{_size(huge.get('size_bytes'))}, {huge.get('total')}, "
                                              f"{huge.get('free')}"),
        ("memlock soft / hard", f"{_limit(lock.get('soft_bytes'))} / {_limit(lock.get('hard_bytes'))}"),
    ]
    return Table("CPU and set-up", ("fact", "value"), tuple(rows))


def _limit(value: int | None) -> str:
    return "unlimited or unknown" if value is None else format_bytes(value)


def cache_table(host: Host) -> Table:
    rows = tuple((f"L{c.get('level')}", c.get("type"), _size(c.get("size_bytes")), c.get("line_bytes"),
                  c.get("ways"), _cpus(c.get("shared_cpus")), c.get("instances"))
                 for c in host.get("caches") or [])
    return Table("Caches (as seen from the first online CPU)",
                 ("level", "type", "size", "line B", "ways", "shared by CPUs", "instances"), rows)


def node_table(host: Host) -> Table:
    rows = tuple((f"node {n.get('id')}", _cpus(n.get("cpus")), _size(n.get("memory_total_bytes")),
                  _size(n.get("memory_free_bytes")))
                 for n in (host.get("numa") or {}).get("nodes") or [])
    return Table("NUMA nodes", ("node", "CPUs", "memory", "free"), rows)


def distance_table(host: Host) -> Table:
    numa = host.get("numa") or {}
    ids = [n.get("id") for n in numa.get("nodes") or []]
    rows = tuple((f"node {node}", *row) for node, row in zip(ids, numa.get("distances") or []))
    return Table("NUMA distances (10 = local)", ("from \\ to", *(str(i) for i in ids)), rows, heat="row")


def gpu_table(host: Host) -> Table:
    rows = tuple((g.get("index"), g.get("name"), g.get("pci_bus_id"),
                  _node(g.get("numa_node"), g.get("numa_node_source")), _link(g.get("pcie"), "current"),
                  _link(g.get("pcie"), "max"), _size(g.get("memory_total_bytes")), g.get("driver_version"))
                 for g in host.get("gpus") or [])
    return Table("GPUs", ("GPU", "name", "PCI bus", "NUMA node", "link now", "link max", "memory",
                          "driver"), rows)


def _node(node: int | None, source: str | None) -> str:
    return "unknown" if node is None else f"{node} ({source})"


def _link(pcie: Mapping[str, Any] | None, which: str) -> str | None:
    pcie = pcie or {}
    gen, width = pcie.get(f"gen_{which}"), pcie.get(f"width_{which}")
    if gen is None and width is None:
        return None
    return f"Gen{gen or '?'} x{width or '?'}"


def host_tables(host: Host) -> tuple[Table, ...]:
    """Every table; the GPU table only when there are GPUs, distances only with several nodes."""
    tables = [cpu_table(host), cache_table(host), node_table(host)]
    if len((host.get("numa") or {}).get("nodes") or []) > 1:
        tables.append(distance_table(host))
    if host.get("gpus"):
        tables.append(gpu_table(host))
    return tuple(tables)
