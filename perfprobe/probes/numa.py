"""perfprobe numa: topology, latency and bandwidth matrices (CPU node x memory node), placement.

For each memory node j, one buffer is mapped, its pages are asked for on j (mbind MPOL_PREFERRED:
never an OOM kill when j is short, the check below catches it instead), faulted in, and then
checked page by page (move_pages with no target) — a page found elsewhere is a finding, not a
figure. Every CPU node i then chases pointers through it with its threads pinned to i (latency) and
reads it with all of i's usable CPUs (bandwidth). Rules live in numa_rules.py, tables in numa_tables.py.
"""

from __future__ import annotations

import ctypes
import mmap
import statistics
from dataclasses import dataclass
from typing import Any, Mapping

from perfprobe import bind, numa_sys
from perfprobe.budget import host_memory_budget
from perfprobe.config import Knobs
from perfprobe.model import Assessment, Metric
from perfprobe.probe import Probe, ProbeContext, ProbeSkipped
from perfprobe.probes import numa_rules, numa_tables
from perfprobe.stats import summarize

MIB = 1 << 20
MIN_WORKING_SET = 16 * MIB
PAGE_CHECKS = 16384  # pages checked per buffer at most (evenly spread)


@dataclass(frozen=True)
class Plan:
    """How much to measure: working set, chase length, repeats, and the cap on node pairs."""

    size_bytes: int
    steps: int
    latency_repeats: int
    bandwidth_repeats: int
    max_pairs: int


def make_plan(quick: bool, largest_cache: int, options: Knobs) -> Plan:
    """Sizes for a DRAM-sized working set: several times the largest cache, bounded for time."""
    if quick:
        size = min(max(64 * MIB, 2 * largest_cache), 512 * MIB)
        plan = Plan(size, 500_000, 3, 3, 16)
    else:
        size = min(max(256 * MIB, 4 * largest_cache), 2048 * MIB)
        plan = Plan(size, 2_000_000, 7, 5, 64)
    return Plan(int(options.size or plan.size_bytes), int(options.steps or plan.steps),
                int(options.repeats or plan.latency_repeats),
                int(options.repeats or plan.bandwidth_repeats),
                int(options.max_pairs or plan.max_pairs))


def largest_cache_bytes(host: Mapping[str, Any]) -> int:
    """Size of the largest data/unified cache instance the host reports (0 when none)."""
    sizes = [c.get("size_bytes") or 0 for c in host.get("caches") or [] if c.get("type") != "Instruction"]
    return max(sizes, default=0)


def memory_nodes(host: Mapping[str, Any], allowed: list[int]) -> list[int]:
    """Nodes that hold memory this process may allocate on (memory-only nodes included)."""
    return [n["id"] for n in (host.get("numa") or {}).get("nodes") or []
            if n["id"] in allowed and (n.get("memory_total_bytes") is None or n["memory_total_bytes"] > 0)]


def choose_pairs(cpu_nodes: list[int], mem_nodes: list[int], host: Mapping[str, Any],
                 max_pairs: int) -> tuple[list[tuple[int, int]], str | None]:
    """All (cpu, memory) node pairs, or, above `max_pairs`, a sample that keeps every local pair and
    one memory node per distinct distance from each CPU node. Returns the pairs and the sampling rule."""
    full = [(i, j) for i in cpu_nodes for j in mem_nodes]
    if len(full) <= max_pairs:
        return full, None
    sample = []
    for i in cpu_nodes:
        by_distance: dict[Any, int] = {}
        for j in mem_nodes:
            by_distance.setdefault(numa_rules.distance(host, i, j) if i != j else "local", j)
        sample += [(i, j) for j in sorted(by_distance.values())]
    if len(sample) <= max_pairs:
        return sample, "every local pair and one memory node per distinct distance from each CPU node"
    return _local_and_farthest(cpu_nodes, mem_nodes, host), \
        "every local pair and the farthest memory node from each CPU node"


def _local_and_farthest(cpu_nodes: list[int], mem_nodes: list[int],
                        host: Mapping[str, Any]) -> list[tuple[int, int]]:
    pairs = []
    for i in cpu_nodes:
        remote = [j for j in mem_nodes if j != i]
        far = max(remote, key=lambda j: numa_rules.distance(host, i, j) or 0, default=None)
        pairs += [(i, j) for j in mem_nodes if j == i or j == far]
    return pairs


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Place a buffer on each memory node, verify its pages, time chase and read from each CPU node."""
    available, why = numa_sys.numa_syscalls_available()
    if not available:
        raise ProbeSkipped(f"cannot place memory on NUMA nodes: {why}",
                           "run on a kernel built with CONFIG_NUMA (every distribution kernel is)")
    host = ctx.host
    cpu_nodes = [ctx.config.bind] if ctx.config.bind is not None else bind.valid_bind_nodes(host)
    mem_nodes = memory_nodes(host, numa_sys.mems_allowed())
    if not cpu_nodes or not mem_nodes:
        raise ProbeSkipped("no NUMA node with usable CPUs and memory", "check the cpuset of this process")
    cache = largest_cache_bytes(host)
    plan = make_plan(ctx.quick, cache, ctx.config.options)
    pairs, rule = choose_pairs(cpu_nodes, mem_nodes, host, plan.max_pairs)
    raw: dict[str, Any] = {
        "measured": True, "bind": ctx.config.bind, "placement": bind.current_placement(),
        "cpu_nodes": cpu_nodes, "mem_nodes": mem_nodes, "largest_cache_bytes": cache,
        "sampling": {"pairs_total": len(cpu_nodes) * len(mem_nodes), "pairs_measured": len(pairs),
                     "rule": rule},
        "method": _method(plan), "pairs": [], "pages": [], "skipped": [], "notes": []}
    from perfprobe.kernels import numa_kernels

    numa_kernels.warm_up()
    try:
        with ctx.progress("NUMA matrix", len(pairs)) as task:
            for j in mem_nodes:
                row = [i for i, m in pairs if m == j]
                if row:
                    _measure_memory_node(j, row, plan, host, raw, task)
    finally:
        numa_kernels.use_threads(1 << 16)  # numba's whole pool again, for the probes after this one
    return raw


def _method(plan: Plan) -> dict[str, Any]:
    return {"working_set_bytes": plan.size_bytes, "latency_steps": plan.steps,
            "latency_repeats": plan.latency_repeats, "bandwidth_repeats": plan.bandwidth_repeats,
            "latency": "dependent loads through one random cycle of 64-byte lines (cache probe's chase)",
            "bandwidth": "parallel read sum, one contiguous share per thread, all usable CPUs of the CPU node",
            "placement": "mmap + MADV_HUGEPAGE + mbind(MPOL_PREFERRED, node), pages checked with move_pages"}


def _buffer_size(node: int, plan: Plan, host: Mapping[str, Any]) -> int:
    """The working set, capped at a quarter of the node's free memory and of available memory."""
    entry = next(n for n in host["numa"]["nodes"] if n["id"] == node)
    free = entry.get("memory_free_bytes")
    caps = [plan.size_bytes, host_memory_budget(host).bytes] + ([free // 4] if free is not None else [])
    return min(caps) // (2 * MIB) * (2 * MIB)


def _measure_memory_node(node: int, cpu_nodes: list[int], plan: Plan, host: Mapping[str, Any],
                         raw: dict[str, Any], task: Any) -> None:
    size = _buffer_size(node, plan, host)
    if size < MIN_WORKING_SET:
        raw["skipped"].append({"mem_node": node, "cpu_nodes": cpu_nodes,
                               "reason": f"only {size >> 20} MiB may be used there (a quarter of its free memory)"})
        task.advance(len(cpu_nodes))
        return
    if size < plan.size_bytes:
        raw["notes"].append(f"memory node {node}: working set capped at {size >> 20} MiB (a quarter of "
                            "its free memory, or of available memory)")
    pages, pairs = _on_placed_buffer(node, size, cpu_nodes, plan, host)
    raw["pages"].append(pages)
    raw["pairs"].extend(pairs)
    task.advance(len(cpu_nodes))


def _on_placed_buffer(node: int, size: int, cpu_nodes: list[int], plan: Plan,
                      host: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Map, place and fault in a buffer on `node`; return its page check and each pair's figures."""
    import numpy as np

    from perfprobe.kernels import numa_kernels

    region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        address = _address_of(region)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            region.madvise(mmap.MADV_HUGEPAGE)
        numa_sys.mbind(address, size, numa_sys.MPOL_PREFERRED, [node])
        words = np.frombuffer(region, dtype=np.uint64)
        numa_kernels.build_chain(words)
        before = check_pages(address, size, node)
        latencies = {i: _latency(words, bind.node_cpus(i, host), plan) for i in cpu_nodes}
        values = np.frombuffer(region, dtype=np.float64)
        values.fill(1.0)
        bandwidths = {i: _bandwidth(values, bind.node_cpus(i, host), plan) for i in cpu_nodes}
        del words, values  # the views must go before the mapping can close
        pages = merge_page_checks(before, check_pages(address, size, node))
    finally:
        try:
            region.close()
        except BufferError:  # a view is still alive (we are unwinding): unmapped when it is collected
            pass
    return pages, [{"cpu_node": i, "mem_node": node, "working_set_bytes": size, "latency_ns": latencies[i],
                    "read_gbs": bandwidths[i][0], "threads": bandwidths[i][1]} for i in cpu_nodes]


def _address_of(region: mmap.mmap) -> int:
    anchor = ctypes.c_char.from_buffer(region)
    address = ctypes.addressof(anchor)
    del anchor
    return address


def _latency(words: Any, cpus: list[int], plan: Plan) -> dict[str, float]:
    from perfprobe.kernels import numa_kernels

    with bind.threads_pinned(cpus):
        _ns, position = numa_kernels.chase_ns(words, plan.steps // 4)
        samples = []
        for _ in range(plan.latency_repeats):
            ns, position = numa_kernels.chase_ns(words, plan.steps, position)
            samples.append(ns)
    return summarize(samples)


def _bandwidth(values: Any, cpus: list[int], plan: Plan) -> tuple[dict[str, float], int]:
    from perfprobe.kernels import numa_kernels

    with bind.threads_pinned(cpus):
        threads = numa_kernels.use_threads(len(cpus))
        numa_kernels.read_gbs(values, threads)
        samples = [numa_kernels.read_gbs(values, threads) for _ in range(plan.bandwidth_repeats)]
    return summarize(samples), threads


def check_pages(address: int, size: int, node: int) -> dict[str, Any]:
    """Where the buffer's pages are: up to PAGE_CHECKS pages, evenly spread, asked with move_pages
    (or, where that call is missing, get_mempolicy per page). Unanswerable: a record with "error"."""
    page = mmap.PAGESIZE
    count = size // page
    addresses = [address + k * page for k in range(0, count, max(1, -(-count // PAGE_CHECKS)))]
    try:
        status, method = numa_sys.page_nodes(addresses), "move_pages"
    except OSError:
        try:
            status = [numa_sys.node_of_address(a) for a in addresses]
            method = "get_mempolicy(MPOL_F_NODE|MPOL_F_ADDR)"
        except OSError as exc:
            return {"node": node, "checked": 0, "on_node": 0, "elsewhere": {}, "absent": 0,
                    "error": f"neither move_pages nor get_mempolicy can say where pages are: {exc.strerror or exc}"}
    elsewhere: dict[str, int] = {}
    for s in status:
        if s >= 0 and s != node:
            elsewhere[str(s)] = elsewhere.get(str(s), 0) + 1
    return {"node": node, "checked": len(status), "on_node": sum(1 for s in status if s == node),
            "elsewhere": elsewhere, "absent": sum(1 for s in status if s < 0), "method": method}


def merge_page_checks(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The worse of two checks of one buffer (after faulting in, after measuring)."""
    worse = next((c for c in (before, after) if "error" in c), None) or \
        (before if before["on_node"] <= after["on_node"] else after)
    return {**worse, "checked_when": "after first touch and after measuring"}


def judge(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Assessment:
    """Topology tables, the matrices, metrics, and numa_rules' findings. Pure."""
    latency = numa_rules.pair_figures(raw, "latency_ns")
    bandwidth = numa_rules.pair_figures(raw, "read_gbs")
    ratios = numa_rules.remote_ratios(raw)
    metrics: dict[str, Metric] = {f"latency_ns.{i}.{j}": Metric(round(v, 1), "ns") for (i, j), v in latency.items()}
    metrics.update({f"read_gbs.{i}.{j}": Metric(round(v, 2), "GB/s") for (i, j), v in bandwidth.items()})
    metrics["remote_over_local_latency.max"] = Metric(round(max(ratios.values()), 3) if ratios else None, "ratio")
    metrics["numa_nodes"] = Metric(len((host.get("numa") or {}).get("nodes") or []), "count")
    tables = numa_tables.topology(host) + numa_tables.matrices(raw, latency, bandwidth) + \
        numa_tables.penalties(ratios, host) + numa_tables.placement(raw)
    facts = {k: raw[k] for k in ("placement", "method", "sampling", "pairs", "pages", "skipped", "notes", "cpu_nodes",
                                 "mem_nodes", "bind", "reason") if k in raw}
    return Assessment(summary=_summary(raw, host, latency, ratios), metrics=metrics,
                      findings=numa_rules.findings(raw, host), tables=tables, facts=facts,
                      key_figure=_key_figure(latency, ratios))


def _summary(raw: Mapping[str, Any], host: Mapping[str, Any], latency: Mapping[tuple[int, int], float],
             ratios: Mapping[tuple[int, int], float]) -> str:
    nodes = len((host.get("numa") or {}).get("nodes") or [])
    if not raw.get("measured", False):
        return f"{nodes} NUMA node(s); not measured: {raw.get('reason', 'no measurement')}"
    local = [v for (i, j), v in latency.items() if i == j]
    span = f"{min(local):.0f}" if local and round(min(local)) == round(max(local)) else \
        f"{min(local, default=0):.0f}-{max(local, default=0):.0f}"
    local_text = f"local latency {span} ns" if local else "no local pair measured"
    remote = f", remote up to {max(ratios.values()):.2f}x local" if ratios else ""
    return f"{nodes} NUMA node(s), {len(latency)} pair(s) measured: {local_text}{remote}"


def _key_figure(latency: Mapping[tuple[int, int], float], ratios: Mapping[tuple[int, int], float]) -> str:
    if ratios:
        return f"remote {max(ratios.values()):.2f}x local"
    local = [v for (i, j), v in latency.items() if i == j]
    return f"local {statistics.median(local):.0f} ns" if local else ""


PROBE = Probe(name="numa", title="NUMA locality", measure_module=measure, judge=judge)
