"""Pure readers of the host facts for the host probe's rules and tables.

Recorded facts may be partial (an older version, a captured tree), so every reader tolerates a
missing section and returns an empty one; the TypedDicts of perfprobe.host.facts name the shapes.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict, cast

from perfprobe.host.facts import CpuFacts, CpusFacts, Facts, GpuFacts, NodeFacts, NumaFacts, PcieFacts, numa_nodes


class Throttling(TypedDict, total=False):
    """cpu.stat's counters of the group whose quota binds this process (host/cgroup.py)."""

    nr_periods: Optional[int]
    nr_throttled: Optional[int]
    throttled_usec: Optional[int]


class HostRaw(TypedDict, total=False):
    """What host's measure returns: nothing without a CPU quota; under one, the throttling counters
    after a short busy window (so throttling during the run shows even when host runs alone)."""

    cgroup_after: Throttling
    window_s: float
    window_cpu_s: float


def typed(raw: Mapping[str, Any]) -> HostRaw:
    """The recorded mapping as the shape rules read (the runner's raw dict is JSON: no conversion)."""
    return cast(HostRaw, raw)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def cpu(host: Facts) -> CpuFacts:
    return cast(CpuFacts, _mapping(host.get("cpu")))


def cpus(host: Facts) -> CpusFacts:
    return cast(CpusFacts, _mapping(host.get("cpus")))


def cpu_list(host: Facts, which: str) -> list[int]:
    """`cpus.online`, `cpus.offline` or `cpus.usable` (empty when not recorded)."""
    return list(_mapping(host.get("cpus")).get(which) or [])


def numa(host: Facts) -> NumaFacts:
    return cast(NumaFacts, _mapping(host.get("numa")))


def nodes(host: Facts) -> list[NodeFacts]:
    return numa_nodes(host)


def distances(host: Facts) -> list[list[int | None]]:
    return list(numa(host).get("distances") or [])


def gpus(host: Facts) -> list[GpuFacts]:
    return list(host.get("gpus") or [])


def pcie(gpu: GpuFacts) -> PcieFacts:
    return cast(PcieFacts, _mapping(gpu.get("pcie")))


def section(host: Facts, name: str) -> Mapping[str, Any]:
    """One flat section (memory, thp, hugepages, cpufreq, memlock), empty when missing."""
    return _mapping(host.get(name))


def gpu_name(gpu: GpuFacts) -> str:
    return f"GPU {gpu.get('index')} ({gpu.get('pci_bus_id')})"
