"""Where perfprobe's threads run: one thread per physical core first, SMT siblings last. Pure.

Every multi-threaded kernel (cache bandwidth, falseshare, numa) takes its CPUs from here, so a run
of N threads is the same N CPUs whichever probe asks, and the report can say which they were.

- `placement_order(usable, cores)`: the usable CPUs (the process's affinity, which `--bind` and
  taskset narrow) in the order threads get them: the first CPU of each physical core, in the order
  the host lists its cores (so threads fill one package/node before the next, as OpenMP's
  `OMP_PROC_BIND=close OMP_PLACES=cores` does), then the second hardware thread of each core, ...
- `cpus_for(order, cores, n)`: the first n of that order (SMT siblings only when n exceeds the
  physical cores: "needed"), and `physical_cores(order, cores)`: how many threads fit one a core.
- `sweep_counts(cores, usable)`: 1, 2, 4, ... up to the physical cores (always ending on it), then
  every usable CPU when SMT gives more ("asked": the last point of a sweep says what siblings add).

The pinning itself is in perfprobe/kernels/placement.py (numba), which imports this.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def cpu_cores(host: Mapping[str, Any]) -> list[list[int]]:
    """The host's CPUs grouped by physical core (SMT siblings together), as the facts list them."""
    cpus = host.get("cpus") or {}
    return [list(core) for core in cpus.get("cores") or []]


def _groups(usable: Sequence[int], cores: Sequence[Sequence[int]]) -> list[list[int]]:
    """The usable CPUs of each core (cores with none left out); CPUs of no listed core alone."""
    allowed = set(usable)
    groups = [[c for c in core if c in allowed] for core in cores]
    groups = [g for g in groups if g]
    known = {c for g in groups for c in g}
    return groups + [[c] for c in usable if c not in known]


def placement_order(usable: Sequence[int], cores: Sequence[Sequence[int]]) -> list[int]:
    """Usable CPUs in the order threads get them: one per physical core first, SMT siblings last."""
    groups = _groups(usable, cores)
    depth = max((len(g) for g in groups), default=0)
    return [g[i] for i in range(depth) for g in groups if i < len(g)]


def physical_cores(order: Sequence[int], cores: Sequence[Sequence[int]]) -> int:
    """How many of `order`'s CPUs are on distinct physical cores (the threads that run one a core)."""
    return len(_groups(order, cores))


def cpus_for(order: Sequence[int], n: int) -> list[int]:
    """The CPUs `n` threads run on: the first `n` of the placement order (ValueError past its end)."""
    if n < 1 or n > len(order):
        raise ValueError(f"{n} threads: this process may use {len(order)} CPUs")
    return list(order[:n])


def shared_cores(cpus: Sequence[int], cores: Sequence[Sequence[int]]) -> list[list[int]]:
    """The groups of `cpus` that are SMT siblings of one physical core (empty: all distinct)."""
    chosen = set(cpus)
    return [sorted(chosen & set(core)) for core in cores if len(chosen & set(core)) > 1]


def sweep_counts(cores: int, usable: int) -> list[int]:
    """Thread counts of a scaling sweep: powers of two below the physical cores, the cores
    themselves, then every usable CPU when SMT siblings add some."""
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    counts.append(max(1, cores))
    if usable > cores:
        counts.append(usable)
    return counts


def describe(cpus: Sequence[int], cores: Sequence[Sequence[int]]) -> dict[str, Any]:
    """The placement record a report carries: which CPUs, how many cores, which share a core."""
    return {"cpus": list(cpus), "cores": physical_cores(cpus, cores), "smt_shared": shared_cores(cpus, cores)}
