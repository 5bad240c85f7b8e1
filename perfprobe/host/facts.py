"""Typed views of the host facts (the JSON `host` object) and the readers every layer shares.

The facts travel as plain JSON-able dicts (they are recorded and replayed), so these are TypedDicts:
they name the shape for mypy and readers, and cost nothing at run time. The small accessors below
replace the `(host.get("numa") or {}).get(...)` chains that each probe used to write out.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict


class CpuFacts(TypedDict, total=False):
    model: Optional[str]
    vendor: Optional[str]
    sockets: Optional[int]
    cores_per_socket: Optional[int]
    threads_per_core: Optional[int]
    hypervisor: Optional[bool]


class CpusFacts(TypedDict, total=False):
    online: list[int]
    offline: list[int]
    usable: list[int]
    usable_source: str
    cores: list[list[int]]
    packages: list[list[int]]


class CacheFacts(TypedDict, total=False):
    level: int
    type: str
    size_bytes: Optional[int]
    line_bytes: Optional[int]
    ways: Optional[int]
    shared_cpus: list[int]
    instances: Optional[int]


class NodeFacts(TypedDict, total=False):
    id: int
    cpus: list[int]
    memory_total_bytes: Optional[int]
    memory_free_bytes: Optional[int]


class NumaFacts(TypedDict, total=False):
    nodes: list[NodeFacts]
    distances: list[list[Optional[int]]]
    memory_only_nodes: list[int]
    balancing: Optional[int]
    notes: list[str]


class PcieFacts(TypedDict, total=False):
    gen_current: Optional[int]
    gen_max: Optional[int]
    width_current: Optional[int]
    width_max: Optional[int]


class GpuFacts(TypedDict, total=False):
    index: int
    name: str
    uuid: Optional[str]
    memory_total_bytes: Optional[int]
    pci_bus_id: str
    numa_node: Optional[int]
    numa_node_source: str
    pcie: PcieFacts
    driver_version: Optional[str]


class HostFacts(TypedDict, total=False):
    """The `host` object; docs/DEVELOPING.md ("Host facts") documents each field."""

    source: str
    root: Optional[str]
    kernel: Optional[str]
    cpu: CpuFacts
    cpus: CpusFacts
    caches: list[CacheFacts]
    memory: dict[str, Optional[int]]
    numa: NumaFacts
    pci_devices: list[dict[str, Any]]
    thp: dict[str, Optional[str]]
    hugepages: dict[str, Optional[int]]
    cpufreq: dict[str, Any]
    memlock: dict[str, Optional[int]]
    gpus: list[GpuFacts]
    gpu_note: Optional[str]
    notes: list[str]


Facts = Mapping[str, Any]
"""What judges and plans accept: a HostFacts, or a recorded `host` object read back from JSON."""


def numa_nodes(host: Facts) -> list[NodeFacts]:
    """The NUMA nodes in the order the facts list them (empty when none could be read)."""
    return list((host.get("numa") or {}).get("nodes") or [])


def numa_node(host: Facts, node_id: int) -> NodeFacts | None:
    """One node's facts by id, or None when the host has no such node."""
    return next((n for n in numa_nodes(host) if n.get("id") == node_id), None)


def usable_cpu_list(host: Facts) -> list[int]:
    """CPUs this process may use, as the facts recorded them (usable, else online)."""
    cpus = host.get("cpus") or {}
    return list(cpus.get("usable") or cpus.get("online") or [])


def caches_of(host: Facts, *types: str) -> list[CacheFacts]:
    """The host's caches, optionally only those of the given types (Data, Unified, Instruction)."""
    caches = list(host.get("caches") or [])
    return [c for c in caches if not types or c.get("type") in types]


def memory_value(host: Facts, key: str) -> int | None:
    """`host.memory[key]` (total_bytes, available_bytes) or None."""
    value = (host.get("memory") or {}).get(key)
    return int(value) if isinstance(value, (int, float)) else None
