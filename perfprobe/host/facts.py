"""Typed views of the host facts (the JSON `host` object) and the readers every layer shares.

The facts travel as plain JSON-able dicts (they are recorded and replayed), so these are TypedDicts:
they name the shape for mypy and readers, and cost nothing at run time. The small accessors below
replace the `(host.get("numa") or {}).get(...)` chains that each probe used to write out.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict, cast


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


class CgroupFacts(TypedDict, total=False):
    """The cgroup limits of this process (perfprobe.host.cgroup); None where not limited or unread."""

    version: Optional[int]
    cpu_group: Optional[str]
    cpu_quota_cpus: Optional[float]
    cpu_quota_us: Optional[int]
    cpu_period_us: Optional[int]
    cpu_quota_file: Optional[str]
    cpu_quota_group: Optional[str]
    nr_periods: Optional[int]
    nr_throttled: Optional[int]
    throttled_usec: Optional[int]
    memory_group: Optional[str]
    memory_max_bytes: Optional[int]
    memory_high_bytes: Optional[int]
    memory_limit_group: Optional[str]
    memory_current_bytes: Optional[int]
    pids_max: Optional[int]
    pids_current: Optional[int]


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
    cgroup: CgroupFacts
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


MAX_LLC_PER_CPU = 64 << 20
"""No CPU made has more last-level cache per CPU sharing it (the largest, a 16-core Genoa-X with
768 MiB, has 48 MiB): a reported LLC beyond this per sharing CPU is a VM seeing its host's whole
cache (a 2-vCPU Xeon guest: 480 MiB shared by its 2 CPUs, of which it measured about 12 MiB)."""


def plausible_cache_bytes(cache: CacheFacts) -> int:
    """A reported cache's size, at most MAX_LLC_PER_CPU for each CPU reported sharing it (no bound
    where none is reported). Every probe that sizes a buffer from the LLC takes it from here, so a
    guest that reports its host's whole cache faults in no gigabyte for it (first touch ran at
    0.35 GB/s on the 2-vCPU Xeon guest: alloc's DRAM copy at 2 x 480 MiB took 17-26 s of a run)."""
    size, sharing = int(cache.get("size_bytes") or 0), len(cache.get("shared_cpus") or [])
    return min(size, sharing * MAX_LLC_PER_CPU) if sharing else size


def last_level_cache_bytes(host: Facts) -> int | None:
    """The last data or unified cache's plausible size (plausible_cache_bytes); None when the host
    reports none."""
    levels = [c for c in caches_of(host, "Data", "Unified") if c.get("size_bytes")]
    if not levels:
        return None
    return plausible_cache_bytes(max(levels, key=lambda c: int(c.get("level") or 0)))


def memory_value(host: Facts, key: str) -> int | None:
    """`host.memory[key]` (total_bytes, available_bytes) or None."""
    value = (host.get("memory") or {}).get(key)
    return int(value) if isinstance(value, (int, float)) else None


def cgroup_facts(host: Facts) -> CgroupFacts:
    """`host.cgroup`, empty when not recorded (a report of an older perfprobe)."""
    value = host.get("cgroup")
    return cast(CgroupFacts, value if isinstance(value, Mapping) else {})


def cpu_quota(host: Facts) -> float | None:
    """The CPUs the cgroup CPU quota grants (quota ÷ period), or None when there is no quota."""
    value = cgroup_facts(host).get("cpu_quota_cpus")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def memory_limit(host: Facts) -> int | None:
    """The tightest cgroup memory limit (memory.max, memory.high, v1 limit_in_bytes), or None."""
    facts = cgroup_facts(host)
    limits = [v for v in (facts.get("memory_max_bytes"), facts.get("memory_high_bytes"))
              if isinstance(v, int) and v > 0]
    return min(limits) if limits else None


def cpu_bound(host: Facts, threads: int) -> float | None:
    """The CPUs `threads` threads can really have when a quota grants fewer than `threads`, else None:
    what a many-thread probe says it was bounded by."""
    quota = cpu_quota(host)
    return quota if quota is not None and quota < threads else None


def quota_bound_note(host: Facts, threads: int, runs: str) -> tuple[str, str] | None:
    """(message, advice) for a many-thread probe whose `threads` threads ran under a CPU quota that
    grants fewer CPUs: its all-thread figures are the quota's, not the CPUs'. None without such a
    quota. The wording is shared so that every probe says it the same way."""
    bound = cpu_bound(host, threads)
    if bound is None:
        return None
    return (f"{runs} ran {threads} threads under a CPU quota of {bound:g} CPUs (cgroup): the quota, "
            f"not the {threads} CPUs, bounds these figures",
            "measure outside the quota, or read the all-thread figures as what this cgroup gets")
