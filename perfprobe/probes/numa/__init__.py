"""`perfprobe numa`: topology, latency and bandwidth matrices (CPU node x memory node), placement.

measure.py places a buffer on each memory node, verifies its pages and times a pointer chase and a
parallel read from each CPU node; plan.py sizes it (presets, memory budgets) and picks the pairs;
rules.py and tables.py judge the numbers (pure, tested on recorded runs). The NUMA system calls
and a node with usable CPUs and memory are declared requirements, checked before measuring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Probe, ProbeContext
from perfprobe.engine.stability import NotBelow, Ordered, Relation
from perfprobe.errors import ProbeSkipped
from perfprobe.host.facts import Facts
from perfprobe.probes.numa import rules, tables
from perfprobe.probes.numa.declared import DECLARED
from perfprobe.probes.numa.figures import pair_figures, typed
from perfprobe.probes.numa.plan import cpu_and_memory_nodes


def judge(raw: Mapping[str, Any], host: Facts) -> Assessment:
    """Topology tables, the matrices, metrics, and the rules' findings. Pure."""
    numbers = typed(raw)
    latency, bandwidth = pair_figures(numbers, "latency_ns"), pair_figures(numbers, "read_gbs")
    shown = tables.topology(host) + tables.matrices(numbers, latency, bandwidth) + \
        tables.penalties(numbers, host) + tables.placement(numbers)
    return Assessment(summary=tables.summary(numbers, host, latency),
                      metrics=tables.metrics(numbers, host),
                      findings=rules.findings(raw, host), tables=shown, facts=tables.facts(numbers),
                      key_figure=tables.key_figure(numbers, latency))


@dataclass(frozen=True)
class NumaSyscalls:
    """The kernel's memory-policy calls (mbind, set_mempolicy, move_pages): CONFIG_NUMA."""

    def unmet(self, ctx: ProbeContext) -> ProbeSkipped | None:
        from perfprobe.system import numa_sys

        available, why = numa_sys.numa_syscalls_available()
        if available:
            return None
        return ProbeSkipped(f"cannot place memory on NUMA nodes: {why}",
                            "run on a kernel built with CONFIG_NUMA (every distribution kernel is)")


@dataclass(frozen=True)
class PlaceableNodes:
    """At least one node this process may run on and one it may allocate on (cpuset, --bind)."""

    def unmet(self, ctx: ProbeContext) -> ProbeSkipped | None:
        from perfprobe.system import bind, numa_sys

        cpu_nodes, mem_nodes = cpu_and_memory_nodes(ctx.host, ctx.config.bind, bind.valid_bind_nodes(ctx.host),
                                                    numa_sys.mems_allowed())
        if cpu_nodes and mem_nodes:
            return None
        return ProbeSkipped("no NUMA node with usable CPUs and memory", "check the cpuset of this process")


MAX_NODE_IDS = 32
"""Relations are declared for node ids below this (8 sockets of 4 sub-NUMA clusters)."""
LOCAL_NOISE = 1.1
"""Local latency may read up to 10% above a remote one before the two contradict each other:
sub-NUMA clusters and emulated nodes put local and remote within a few percent."""


def local_not_above_remote(nodes: int = MAX_NODE_IDS) -> tuple[Relation, ...]:
    """A CPU node's dependent loads from its own memory are not slower than from another node's.
    Both figures of a pair that breaks it are named: a disturbed local run reads high, and a remote
    working set capped to fit a nearly full node hits cache and reads low; either may be the wrong one."""
    why = "local latency above remote (dependent loads from a node's own memory slower than from another's)"
    out: list[Relation] = []
    for i in range(nodes):
        for j in range(nodes):
            if i != j:
                local, remote = f"latency_ns.{i}.{i}", f"latency_ns.{i}.{j}"
                out += [Ordered((local, remote), LOCAL_NOISE, why), NotBelow(remote, local, 1 / LOCAL_NOISE, why)]
    return tuple(out)


PROBE = Probe(name=DECLARED.name, title="NUMA locality", judge=judge, measure_module="perfprobe.probes.numa.measure",
              requires=(NumaSyscalls(), PlaceableNodes()), relations=local_not_above_remote())
