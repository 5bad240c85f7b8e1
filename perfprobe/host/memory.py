"""Memory facts from /proc/meminfo and the limits that decide large (pinned, huge-page) allocations."""

from __future__ import annotations

from typing import Any

from perfprobe.host.parse import parse_meminfo
from perfprobe.host.sysroot import SysRoot


def read_meminfo(sr: SysRoot) -> dict[str, int]:
    """/proc/meminfo as {key: bytes or count}."""
    return parse_meminfo(sr.read_text("proc/meminfo"))


def memory_facts(meminfo: dict[str, int], notes: list[str]) -> dict[str, Any]:
    """The "memory" object. Kernels before 3.14 have no MemAvailable: MemFree stands in, noted."""
    available = meminfo.get("MemAvailable")
    if available is None and "MemFree" in meminfo:
        available = meminfo["MemFree"]
        notes.append("/proc/meminfo has no MemAvailable (kernel before 3.14): MemFree used instead")
    return {"total_bytes": meminfo.get("MemTotal"), "available_bytes": available}


def hugepage_facts(meminfo: dict[str, int]) -> dict[str, Any]:
    """The "hugepages" object: default huge page size and the reserved pool."""
    return {"size_bytes": meminfo.get("Hugepagesize"), "total": meminfo.get("HugePages_Total"),
            "free": meminfo.get("HugePages_Free")}


def memlock_facts(sr: SysRoot) -> dict[str, int | None]:
    """RLIMIT_MEMLOCK of this process (live only; None = unlimited or unknown)."""
    if not sr.live:
        return {"soft_bytes": None, "hard_bytes": None}
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (ImportError, OSError, ValueError):
        return {"soft_bytes": None, "hard_bytes": None}
    return {"soft_bytes": _limit(soft, resource.RLIM_INFINITY),
            "hard_bytes": _limit(hard, resource.RLIM_INFINITY)}


def _limit(value: int, infinity: int) -> int | None:
    return None if value == infinity or value < 0 else int(value)
