"""numa measurement: a buffer placed on each memory node, its pages verified, then timed from each
CPU node.

For each memory node j, one buffer is mapped, its pages are asked for on j (mbind MPOL_PREFERRED:
never an OOM kill when j is short; the page check catches it instead), faulted in, and then
checked page by page (move_pages with no target) — a page found elsewhere is a finding, not a
figure. Every CPU node i then chases pointers through it with its threads pinned to i (latency) and
reads it with all of i's usable CPUs (bandwidth). The NUMA system calls and a node with CPUs and
memory are declared requirements (checked before this runs).
"""

from __future__ import annotations

import ctypes
import mmap
from typing import Any

from perfprobe.engine.probe import ProbeContext
from perfprobe.host.facts import Facts, numa_node
from perfprobe.probes.numa.plan import (
    MIN_WORKING_SET,
    PRESETS,
    Plan,
    buffer_size,
    choose_pairs,
    cpu_and_memory_nodes,
    largest_cache_bytes,
    make_plan,
)
from perfprobe.pure.stats import Stat, summarize
from perfprobe.system import bind, numa_sys
from perfprobe.system.budget import MemoryBudget, host_memory_budget

PAGE_CHECKS = 16384  # pages checked per buffer at most (evenly spread)


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Place a buffer on each memory node, verify its pages, time chase and read from each CPU node."""
    from perfprobe.kernels import numa_kernels

    host = ctx.host
    cpu_nodes, mem_nodes = cpu_and_memory_nodes(host, ctx.config.bind, bind.valid_bind_nodes(host),
                                                numa_sys.mems_allowed())
    cache = largest_cache_bytes(host)
    plan = make_plan(ctx.config.preset(PRESETS), cache, ctx.config.options)
    pairs, rule = choose_pairs(cpu_nodes, mem_nodes, host, plan.max_pairs)
    raw: dict[str, Any] = {
        "measured": True, "bind": ctx.config.bind, "placement": bind.current_placement(),
        "cpu_nodes": cpu_nodes, "mem_nodes": mem_nodes, "largest_cache_bytes": cache,
        "sampling": {"pairs_total": len(cpu_nodes) * len(mem_nodes), "pairs_measured": len(pairs),
                     "rule": rule},
        "method": _method(plan), "pairs": [], "pages": [], "skipped": [], "notes": []}
    numa_kernels.warm_up()
    try:
        with ctx.progress("NUMA matrix", len(pairs)) as task:
            for j in mem_nodes:
                row = [i for i, m in pairs if m == j]
                if row:
                    _measure_memory_node(j, row, plan, host, raw)
                    task.advance(len(row))
    finally:  # numba's whole pool again: preserved() cannot restore a pool this probe started
        numa_kernels.use_threads(1 << 16)
    return raw



def remeasure(ctx: ProbeContext, raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Confirmation (perfprobe/engine/confirm.py) of a slow node or a remote penalty: the whole matrix
    again, as the first run placed it. Both warns judge a node or pair against the others measured
    beside it, so all of them are re-timed together (a few pairs; only when a warn is to be issued)."""
    return measure(ctx)


def _method(plan: Plan) -> dict[str, Any]:
    return {"working_set_bytes": plan.size_bytes, "latency_steps": plan.steps,
            "latency_repeats": plan.latency_repeats, "bandwidth_repeats": plan.bandwidth_repeats,
            "latency": "dependent loads through one random cycle of 64-byte lines (cache probe's chase)",
            "bandwidth": "parallel read sum, one contiguous share per thread, one thread per physical core "
                         "of the CPU node's usable CPUs, each pinned to its CPU",
            "placement": "mmap + MADV_HUGEPAGE + mbind(MPOL_PREFERRED, node), pages checked with move_pages"}


def _budgets(node: int, host: Facts) -> list[MemoryBudget]:
    """A quarter of the host's available memory, and of the node's free memory where it is known."""
    budgets = [host_memory_budget(host)]
    if (numa_node(host, node) or {}).get("memory_free_bytes") is not None:
        budgets.append(host_memory_budget(host, node))
    return budgets


def _measure_memory_node(node: int, cpu_nodes: list[int], plan: Plan, host: Facts, raw: dict[str, Any]) -> None:
    size, basis = buffer_size(plan.size_bytes, _budgets(node, host))
    if size < MIN_WORKING_SET:
        raw["skipped"].append({"mem_node": node, "cpu_nodes": cpu_nodes,
                               "reason": f"only {size >> 20} MiB may be used there ({basis or 'the working set'})"})
        return
    if size < plan.size_bytes:
        raw["notes"].append(f"memory node {node}: working set capped at {size >> 20} MiB "
                            f"({basis or 'whole 2 MiB pages'})")
    pages, pairs = _on_placed_buffer(node, size, cpu_nodes, plan, host)
    raw["pages"].append(pages)
    raw["pairs"].extend(pairs)


def _on_placed_buffer(node: int, size: int, cpu_nodes: list[int], plan: Plan,
                      host: Facts) -> tuple[dict[str, Any], list[dict[str, Any]]]:
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
        bandwidths = {i: _bandwidth(values, bind.node_cpus(i, host), plan, host) for i in cpu_nodes}
        del words, values  # the views must go before the mapping can close
        pages = merge_page_checks(before, check_pages(address, size, node))
    finally:
        try:
            region.close()
        except BufferError:  # a view is still alive (we are unwinding): unmapped when it is collected
            pass
    return pages, [{"cpu_node": i, "mem_node": node, "working_set_bytes": size, "latency_ns": latencies[i],
                    "read_gbs": bandwidths[i][0], "threads": len(bandwidths[i][1]),
                    "cpus": bandwidths[i][1]} for i in cpu_nodes]


def _address_of(region: mmap.mmap) -> int:
    anchor = ctypes.c_char.from_buffer(region)
    address = ctypes.addressof(anchor)
    del anchor
    return address


def _latency(words: Any, cpus: list[int], plan: Plan) -> Stat:
    from perfprobe.kernels import numa_kernels

    with bind.threads_pinned(cpus):
        _ns, position = numa_kernels.chase_ns(words, plan.steps // 4)
        samples = []
        for _ in range(plan.latency_repeats):
            ns, position = numa_kernels.chase_ns(words, plan.steps, position)
            samples.append(ns)
    return summarize(samples)


def _bandwidth(values: Any, cpus: list[int], plan: Plan, host: Facts) -> tuple[Stat, list[int]]:
    """Read GB/s from node's CPUs, one thread per physical core (perfprobe/pure/cpu_order.py), each
    pinned to its CPU from inside the parallel region; returns the figure and the CPUs used."""
    from perfprobe.kernels import numa_kernels
    from perfprobe.kernels import placement as kp

    order, cores = kp.order_of(host, cpus)
    chosen = order[:min(cores, numa_kernels.pool_size())]
    with bind.threads_pinned(cpus), kp.pinned_pool():
        numa_kernels.read_gbs(values, chosen)
        samples = [numa_kernels.read_gbs(values, chosen) for _ in range(plan.bandwidth_repeats)]
    return summarize(samples), chosen


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
