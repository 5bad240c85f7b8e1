"""CPU and memory binding to one NUMA node: the one place `--bind NODE` and the numa probe bind.

The runner calls `validate_bind_node` before anything runs (bad node: UsageError, exit 2) and then
`bind_to_node` before any probe measures (a binding that does not verify: BindError, exit 3), so numba's worker threads — started at the first parallel
kernel — inherit both the CPU set and the memory policy. Binding touches this process only
(perfprobe advises, it doesn't tune) and is checked after it is set: a binding that did not take is
an error, never a silent unbound run.

Why every thread: Linux keeps CPU affinity and memory policy per thread. Affinity is set on every
thread that exists (so a thread pool started earlier moves too); the memory policy can only be set
on the calling thread, which is why binding must happen before kernel threads start. Threads that
existed already keep their old policy, but, now running on the node's CPUs, they allocate there
first-touch (the default policy is local).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from perfprobe.errors import BindError, UsageError
from perfprobe.host.parse import format_cpulist
from perfprobe.pure.units import format_bytes
from perfprobe.system import numa_sys

# What a run bound to a node needs of that node's free memory before any working set: the new
# allocations of the interpreter, numba and LLVM compiling kernels after the binding (~100-150 MiB
# measured on x86-64). Under strict MPOL_BIND the kernel OOM-kills a process that outgrows its
# node, without a word: a node with less free than this is refused before binding (exit 2).
MIN_BOUND_FREE_BYTES = 192 << 20


def _nodes(host: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(((host.get("numa") or {}).get("nodes")) or [])


def _usable(host: Mapping[str, Any]) -> set[int]:
    cpus = host.get("cpus") or {}
    return set(cpus.get("usable") or cpus.get("online") or [])


def node_cpus(node: int, host: Mapping[str, Any]) -> list[int]:
    """The CPUs of `node` that this process may run on."""
    for entry in _nodes(host):
        if entry.get("id") == node:
            return sorted(set(entry.get("cpus") or []) & _usable(host))
    return []


def usable_cpus(host: Mapping[str, Any]) -> list[int]:
    """CPUs this process may run on now: the host's usable list, narrowed by our current affinity
    (which --bind or taskset may have set)."""
    listed = (host.get("cpus") or {}).get("usable") or []
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return sorted(listed)
    return sorted(set(listed) & allowed) if listed else sorted(allowed)


def valid_bind_nodes(host: Mapping[str, Any]) -> list[int]:
    """Nodes with at least one CPU this process may use: the nodes `--bind` accepts."""
    return sorted(n["id"] for n in _nodes(host) if node_cpus(n["id"], host))


def validate_bind_node(node: int, host: Mapping[str, Any]) -> None:
    """Raise UsageError, in one line naming the valid nodes, unless `--bind node` can be honoured."""
    valid = valid_bind_nodes(host)
    valid_text = ", ".join(map(str, valid)) if valid else "none"
    tail = f"; valid nodes for --bind: {valid_text}"
    entry = next((n for n in _nodes(host) if n.get("id") == node), None)
    if not _nodes(host):
        raise UsageError("this host exposes no NUMA nodes (kernel without NUMA?); --bind cannot be used")
    if entry is None:
        raise UsageError(f"NUMA node {node} does not exist{tail}")
    if not entry.get("cpus"):
        raise UsageError(f"node {node} has no CPUs (memory-only){tail}")
    if not node_cpus(node, host):
        raise UsageError(f"node {node}'s CPUs ({format_cpulist(entry['cpus'])}) are outside this "
                         f"process's cpuset/affinity (usable: {format_cpulist(_usable(host))}){tail}")


def check_node_memory(node: int, host: Mapping[str, Any]) -> None:
    """Raise UsageError (one line) when `node` has too little free memory to run bound to it."""
    from perfprobe.host.numa import node_free_bytes

    free = node_free_bytes(node)
    if free is None:
        entry = next((n for n in _nodes(host) if n.get("id") == node), None) or {}
        free = entry.get("memory_free_bytes")
    if free is None or free >= MIN_BOUND_FREE_BYTES:
        return
    valid = valid_bind_nodes(host)
    roomy = [n["id"] for n in _nodes(host) if n["id"] in valid
             and (n.get("memory_free_bytes") or 0) >= MIN_BOUND_FREE_BYTES]
    others = ", ".join(map(str, roomy)) if roomy else "none"
    raise UsageError(f"--bind {node}: NUMA node {node} has {format_bytes(free)} free, less than the "
                     f"{format_bytes(MIN_BOUND_FREE_BYTES)} a bound run needs (the kernel would kill it "
                     f"when the node runs out); nodes with room: {others}")


def _thread_ids() -> list[int]:
    try:
        return sorted(int(p.name) for p in Path("/proc/self/task").iterdir())
    except OSError:
        return [0]


def _set_all_threads(cpus: set[int], saved: Mapping[int, set[int]] | None = None) -> None:
    """Give every thread of this process `cpus` (or its own entry of `saved` when it has one)."""
    for tid in _thread_ids():
        target = saved.get(tid, cpus) if saved else cpus
        try:
            os.sched_setaffinity(tid, target)
        except ProcessLookupError:  # the thread ended meanwhile
            continue


@contextmanager
def threads_pinned(cpus: Iterable[int]) -> Iterator[None]:
    """Run the block with every thread of this process on `cpus`; restore each thread's own CPUs.

    Threads started inside the block (a numba pool) get the calling thread's previous CPUs back.
    """
    target = set(cpus)
    saved = {tid: os.sched_getaffinity(tid) for tid in _thread_ids()}
    caller = os.sched_getaffinity(0)
    _set_all_threads(target)
    try:
        yield
    finally:
        _set_all_threads(caller, saved)


def current_placement() -> dict[str, Any]:
    """Where this thread runs and allocates now: CPU affinity and memory policy (for the report)."""
    placement: dict[str, Any] = {"cpus": sorted(os.sched_getaffinity(0))}
    try:
        policy = numa_sys.get_mempolicy()
        placement.update(mempolicy=policy.mode, mems=policy.nodes, mems_allowed=numa_sys.mems_allowed())
    except OSError as exc:
        placement.update(mempolicy=None, mems=[], mempolicy_error=str(exc))
    return placement


def verify_binding(node: int, cpus: Iterable[int]) -> dict[str, Any]:
    """Check that every thread runs on `cpus` and this thread's memory policy is bind to `node`.

    Returns the binding record; raises BindError naming what did not take.
    """
    want = set(cpus)
    placement = current_placement()
    problems = []
    stray = [tid for tid in _thread_ids() if _affinity_or(tid, want) != want]
    if set(placement["cpus"]) != want or stray:
        problems.append(f"CPU affinity is {format_cpulist(placement['cpus'])} (threads off it: "
                        f"{len(stray)}), expected {format_cpulist(want)}")
    if placement.get("mempolicy") != "bind" or placement.get("mems") != [node]:
        problems.append(f"memory policy is {placement.get('mempolicy')} on nodes "
                        f"{placement.get('mems')}, expected bind on [{node}]")
    if problems:
        raise BindError(f"binding to NUMA node {node} did not take: " + "; ".join(problems))
    return {"node": node, "cpus": placement["cpus"], "mempolicy": "bind", "mems": [node],
            "threads": len(_thread_ids()), "verified": True}


def _affinity_or(tid: int, default: set[int]) -> set[int]:
    try:
        return os.sched_getaffinity(tid)
    except ProcessLookupError:
        return default


def bind_to_node(node: int, host: Mapping[str, Any]) -> dict[str, Any]:
    """Bind this process's CPUs (every thread) and memory (strict MPOL_BIND) to `node`, then verify.

    Returns the binding record for the report, e.g. {"node": 0, "cpus": [0, 1], "mempolicy": "bind",
    "mems": [0], "threads": 1, "verified": True}.
    """
    validate_bind_node(node, host)
    check_node_memory(node, host)
    cpus = node_cpus(node, host)
    try:
        _set_all_threads(set(cpus))
    except OSError as exc:
        raise BindError(f"cannot bind CPUs to node {node} ({format_cpulist(cpus)}): {exc}") from exc
    try:
        numa_sys.set_mempolicy(numa_sys.MPOL_BIND, [node])
    except numa_sys.NumaUnavailable as exc:
        raise BindError(f"cannot bind memory to node {node}: {exc.strerror}") from exc
    except OSError as exc:
        allowed = _mems_allowed_text()
        raise UsageError(f"cannot bind memory to node {node}: {exc.strerror}{allowed}") from exc
    return verify_binding(node, cpus)


def _mems_allowed_text() -> str:
    try:
        return f" (this process may allocate on nodes {format_cpulist(numa_sys.mems_allowed())})"
    except OSError:
        return ""
