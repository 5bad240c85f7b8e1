"""How much memory a probe may take — the one place host and GPU budgets are decided.

Checked before every large allocation, never guessed: host memory is a fraction of what is
available now; under `--bind NODE` it is a fraction of that node's free memory (the kernel would
OOM-kill a bound process that outgrew its node); under a cgroup memory limit (memory.max,
memory.high, v1 memory.limit_in_bytes: containers, Slurm jobs) it is also a fraction of what the
limit leaves now, since past the limit the process is OOM-killed however much the host has free;
GPU memory is a fraction of the device's free memory. Each budget says what it is a fraction of, so a capped size can name its cap.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts, memory_value, numa_node
from perfprobe.pure.units import format_bytes

HOST_FRACTION = 0.25
GPU_FRACTION = 0.5


@dataclass(frozen=True)
class MemoryBudget:
    """`bytes` a probe may allocate, and `basis`: the words a finding uses to name the cap."""

    bytes: int
    basis: str

    def cap(self, wanted: int) -> tuple[int, str | None]:
        """`wanted`, or the budget when smaller: (size, the basis when it capped, else None)."""
        return (wanted, None) if wanted <= self.bytes else (self.bytes, self.basis)


def host_memory_budget(host: Facts, bind: int | None = None,
                       fraction: float = HOST_FRACTION) -> MemoryBudget:
    """A fraction of the host's available memory now, or of the bound node's free memory."""
    share = _share_words(fraction)
    if bind is not None:
        free = _node_free_now(bind, host)
        budget = MemoryBudget(int(free * fraction), f"{share} of NUMA node {bind}'s free memory")
    else:
        budget = MemoryBudget(int(_available_now(host) * fraction), f"{share} of the host's available memory")
    return _within_cgroup(_within_address_space(budget, fraction), fraction)


def _within_cgroup(budget: MemoryBudget, fraction: float) -> MemoryBudget:
    """Under a cgroup memory limit, also a fraction of what the limit leaves now (limit less the
    group's usage, read when the budget is asked for: the interpreter and numba are inside it)."""
    from perfprobe.host.cgroup import memory_room_now

    room = memory_room_now()
    if room is None or int(room[0] * fraction) >= budget.bytes:
        return budget
    left, limit = room
    return MemoryBudget(int(left * fraction), f"{_share_words(fraction)} of what the cgroup memory limit "
                                              f"({format_bytes(limit)}) leaves ({format_bytes(left)})")


def _within_address_space(budget: MemoryBudget, fraction: float) -> MemoryBudget:
    """Under `ulimit -v` (RLIMIT_AS) the budget is also a fraction of the address space left: past
    it every mapping fails with ENOMEM however much memory is free."""
    left = address_space_left()
    if left is None or int(left * fraction) >= budget.bytes:
        return budget
    return MemoryBudget(int(left * fraction), f"{_share_words(fraction)} of the address space left "
                                              f"under {address_space_limit_words()}")


def address_space_left() -> int | None:
    """Bytes this process may still map under RLIMIT_AS; None when there is no such limit."""
    limit = _address_space_limit()
    if limit is None:
        return None
    try:
        with open("/proc/self/statm") as statm:
            used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
    return max(0, limit - used)


def address_space_limit_words() -> str | None:
    """"the address-space limit RLIMIT_AS (ulimit -v 1000000)", or None when there is none: what an
    ENOMEM message names so the user knows why memory ran out."""
    limit = _address_space_limit()
    return None if limit is None else f"the address-space limit RLIMIT_AS (ulimit -v {limit // 1024})"


def _address_space_limit() -> int | None:
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft)


def gpu_memory_budget(free_bytes: int, fraction: float = GPU_FRACTION) -> MemoryBudget:
    """A fraction of the device's free memory (read by the caller through cupy or NVML)."""
    return MemoryBudget(int(free_bytes * fraction), f"{_share_words(fraction)} of the device's free memory")


def _available_now(host: Facts) -> int:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - psutil missing or unreadable /proc: fall back to the facts
        return memory_value(host, "available_bytes") or 0


def _node_free_now(node: int, host: Facts) -> int:
    """The node's free memory read now from sysfs (live), else as the facts recorded it."""
    from perfprobe.host.numa import node_free_bytes

    live = node_free_bytes(node)
    if live is not None:
        return live
    entry = numa_node(host, node) or {}
    return int(entry.get("memory_free_bytes") or 0)


def _share_words(fraction: float) -> str:
    return {0.25: "a quarter", 0.5: "half", 1.0: "all"}.get(fraction, f"{fraction:.0%}")


def capped_note(budget: Mapping[str, Any] | None, what: str, size_key: str) -> list[Finding]:
    """The note "WHAT capped at SIZE (asked REQUESTED) by BASIS" when the recorded budget
    (raw["budget"]: `size_key`, requested_bytes, capped_by) made a size smaller than asked."""
    budget = budget or {}
    if not budget.get("capped_by"):
        return []
    return [Finding(Verdict.PASS, f"{what} capped at {format_bytes(budget[size_key])} (asked "
                                  f"{format_bytes(budget['requested_bytes'])}) by {budget['capped_by']}")]
