"""What numa measures: the working set, chase length and repeats (presets), memory and CPU nodes,
which node pairs (sampled above a cap) and each buffer's size within its budgets. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from perfprobe.engine.config import Knobs, Presets
from perfprobe.host.facts import Facts, caches_of, numa_nodes, plausible_cache_bytes
from perfprobe.probes.numa.figures import distance
from perfprobe.system.budget import MemoryBudget

MIB = 1 << 20
MIN_WORKING_SET = 16 * MIB
HUGE_PAGE = 2 * MIB  # buffer sizes are whole huge pages (MADV_HUGEPAGE)


@dataclass(frozen=True)
class Preset:
    """A DRAM-sized working set: `cache_multiple` times the largest cache, within floor..ceiling."""

    floor_bytes: int
    cache_multiple: int
    ceiling_bytes: int
    steps: int
    latency_repeats: int
    bandwidth_repeats: int
    max_pairs: int


PRESETS = Presets(full=Preset(256 * MIB, 4, 2048 * MIB, 2_000_000, 7, 5, 64),
                  quick=Preset(64 * MIB, 2, 512 * MIB, 500_000, 3, 3, 16))


@dataclass(frozen=True)
class Plan:
    """How much to measure: working set, chase length, repeats, and the cap on node pairs."""

    size_bytes: int
    steps: int
    latency_repeats: int
    bandwidth_repeats: int
    max_pairs: int


def make_plan(preset: Preset, largest_cache: int, knobs: Knobs) -> Plan:
    """The preset's sizes for this host's largest cache, with any knob given taking precedence."""
    size = min(max(preset.floor_bytes, preset.cache_multiple * largest_cache), preset.ceiling_bytes)
    return Plan(int(knobs.size or size), int(knobs.steps or preset.steps),
                int(knobs.repeats or preset.latency_repeats), int(knobs.repeats or preset.bandwidth_repeats),
                int(knobs.max_pairs or preset.max_pairs))


def largest_cache_bytes(host: Facts) -> int:
    """Plausible size of the largest data/unified cache instance the host reports (0 when none):
    host.facts.plausible_cache_bytes, as every probe sizing a buffer from the LLC takes it. The
    reported size alone made a 2-vCPU Xeon guest, shown its host's 480 MiB L3, fault in 512 MiB of
    huge pages for `numa --quick` (2.2-2.7 s of an `all --quick`) where cache and alloc used 128 MiB."""
    return max((plausible_cache_bytes(c) for c in caches_of(host) if c.get("type") != "Instruction"), default=0)


def memory_nodes(host: Facts, allowed: Sequence[int]) -> list[int]:
    """Nodes that hold memory this process may allocate on (memory-only nodes included)."""
    return [n["id"] for n in numa_nodes(host)
            if n["id"] in allowed and ((total := n.get("memory_total_bytes")) is None or total > 0)]


def cpu_and_memory_nodes(host: Facts, bind_node: int | None, cpu_nodes: Sequence[int],
                         allowed_mems: Sequence[int]) -> tuple[list[int], list[int]]:
    """CPU nodes to run on (the --bind node, else every node with usable CPUs: `cpu_nodes`) and the
    memory nodes this process may allocate on (`allowed_mems`: the cpuset's mems)."""
    return ([bind_node] if bind_node is not None else list(cpu_nodes)), memory_nodes(host, allowed_mems)


def choose_pairs(cpu_nodes: list[int], mem_nodes: list[int], host: Facts,
                 max_pairs: int) -> tuple[list[tuple[int, int]], str | None]:
    """All (cpu, memory) node pairs, or, above `max_pairs`, a sample that keeps every local pair and
    one memory node per distinct distance from each CPU node. Returns the pairs and the sampling rule."""
    full = [(i, j) for i in cpu_nodes for j in mem_nodes]
    if len(full) <= max_pairs:
        return full, None
    sample = []
    for i in cpu_nodes:
        by_distance: dict[object, int] = {}
        for j in mem_nodes:
            by_distance.setdefault(distance(host, i, j) if i != j else "local", j)
        sample += [(i, j) for j in sorted(by_distance.values())]
    if len(sample) <= max_pairs:
        return sample, "every local pair and one memory node per distinct distance from each CPU node"
    return _local_and_farthest(cpu_nodes, mem_nodes, host), \
        "every local pair and the farthest memory node from each CPU node"


def _local_and_farthest(cpu_nodes: list[int], mem_nodes: list[int], host: Facts) -> list[tuple[int, int]]:
    pairs = []
    for i in cpu_nodes:
        remote = [j for j in mem_nodes if j != i]
        far = max(remote, key=lambda j: distance(host, i, j) or 0, default=None)
        pairs += [(i, j) for j in mem_nodes if j == i or j == far]
    return pairs


def buffer_size(wanted: int, budgets: Sequence[MemoryBudget]) -> tuple[int, str | None]:
    """The working set within every budget, in whole huge pages: (bytes, the basis of the cap that
    bound it, or None when none did)."""
    size, basis = wanted, None
    for budget in budgets:
        size, capped = budget.cap(size)
        basis = capped or basis
    return size // HUGE_PAGE * HUGE_PAGE, basis
