"""`perfprobe host`: what this host is and how it is set up, with what to fix before measuring.

Nothing is measured: the facts are the runner's host facts (perfprobe.host), read once per run.
`judge` lays them out as metrics and tables and runs the set-up checks of host_rules.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.model import Assessment, Metric
from perfprobe.probe import Probe, ProbeContext
from perfprobe.probes.host_rules import run_rules
from perfprobe.probes.host_tables import host_tables

_CACHE_SUFFIX = {"Data": "d", "Instruction": "i", "Unified": ""}


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Nothing to measure: the facts are ctx.host, which the runner records beside the raw numbers."""
    return {}


def judge(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Assessment:
    """Host facts -> metrics, tables and set-up findings (pure)."""
    return Assessment(summary=summary(host), metrics=metrics(host), findings=run_rules(host),
                      tables=host_tables(host), key_figure=key_figure(host))


def metrics(host: Mapping[str, Any]) -> dict[str, Metric]:
    """Counts and cache sizes under their JSON names (cpus.online, cache_bytes.L1d, ...)."""
    cpu, cpus = host.get("cpu") or {}, host.get("cpus") or {}
    numa, memory = host.get("numa") or {}, host.get("memory") or {}
    found = {
        "cpus.online": Metric(len(cpus.get("online") or []), "count"),
        "cpus.offline": Metric(len(cpus.get("offline") or []), "count"),
        "cpus.usable": Metric(len(cpus.get("usable") or []), "count"),
        "cpu.sockets": Metric(cpu.get("sockets"), "count"),
        "cpu.cores": Metric(len(cpus.get("cores") or []), "count"),
        "cpu.threads_per_core": Metric(cpu.get("threads_per_core"), "count"),
        "numa.nodes": Metric(len(numa.get("nodes") or []), "count"),
        "memory.total_bytes": Metric(memory.get("total_bytes"), "bytes"),
        "memory.available_bytes": Metric(memory.get("available_bytes"), "bytes"),
        "gpus": Metric(len(host.get("gpus") or []), "count"),
    }
    for cache in host.get("caches") or []:
        name = f"L{cache.get('level')}{_CACHE_SUFFIX.get(cache.get('type'), '')}"
        found.setdefault(f"cache_bytes.{name}", Metric(cache.get("size_bytes"), "bytes"))
    return found


def summary(host: Mapping[str, Any]) -> str:
    cpu, cpus = host.get("cpu") or {}, host.get("cpus") or {}
    where = f"captured tree {host.get('root')}" if host.get("source") == "fsroot" else "this host"
    shape = " × ".join(_count(cpu.get(key), unit) for key, unit in
                       (("sockets", "socket"), ("cores_per_socket", "core"), ("threads_per_core", "thread")))
    return (f"{where}: {cpu.get('model') or 'unknown CPU'}, {_count(len(cpus.get('online') or []), 'online CPU')} "
            f"({shape}), {_count(len((host.get('numa') or {}).get('nodes') or []), 'NUMA node')}, "
            f"{_count(len(host.get('gpus') or []), 'GPU')}")


def _count(number: int | None, unit: str) -> str:
    """3 -> "3 sockets", 1 -> "1 socket", None -> "? sockets"."""
    return f"{'?' if number is None else number} {unit}{'' if number == 1 else 's'}"


def key_figure(host: Mapping[str, Any]) -> str:
    cpus = host.get("cpus") or {}
    nodes = len((host.get("numa") or {}).get("nodes") or [])
    return (f"{len(cpus.get('usable') or [])}/{len(cpus.get('online') or [])} CPUs, {nodes} node(s), "
            f"{len(host.get('gpus') or [])} GPU(s)")


PROBE = Probe(name="host", title="Host facts and set-up", measure_module=measure, judge=judge)
