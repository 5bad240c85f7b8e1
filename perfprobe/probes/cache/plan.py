"""What the cache probe will measure on this host: sizes, caps, repeats. Pure, from host facts.

Kept apart from the timing code so the size and memory decisions are tested without a kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from perfprobe.bind import usable_cpus
from perfprobe.config import Knobs
from perfprobe.probes.cache_curve import Level

DEFAULT_LINE = 64
DEFAULT_LLC = 32 << 20         # assumed when the host reports no cache at all (said in a note)
LLC_MULTIPLE = 4               # DRAM figures at >= 4x the last-level cache
QUICK_LLC_MULTIPLE = 2         # --quick: 2x, still past the LLC, half the linking and page faults
MEMORY_SHARE = 4               # never more than a quarter of available memory
MIN_MAX_BYTES = 64 << 10
PAIR_BLOCK = 1024              # bytes per block in the line-size test (offsets up to half of it)
PAIR_OFFSETS = (8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class Plan:
    """Everything measure() needs to decide before it starts."""

    max_bytes: int
    wanted_bytes: int
    cap_bytes: int | None
    limited_by: str            # "4x LLC", "--max-size" or "memory"
    per_doubling: int
    min_points: int
    repeats: int
    run_s: float
    threads: int
    line_bytes: int
    llc_bytes: int
    llc_reported: bool
    l1_bytes: int


def data_caches(host: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Reported data/unified caches, one per level (lowest level first)."""
    by_level: dict[int, Mapping[str, Any]] = {}
    for cache in host.get("caches") or []:
        if cache.get("type") in ("Data", "Unified") and cache.get("size_bytes"):
            by_level.setdefault(int(cache["level"]), cache)
    return [by_level[k] for k in sorted(by_level)]


def usable_threads(host: Mapping[str, Any]) -> int:
    """How many CPUs this process may use now (host facts narrowed by the current affinity)."""
    return max(1, len(usable_cpus(host)))


def memory_cap(host: Mapping[str, Any]) -> int | None:
    """A quarter of available memory (of total when available is unknown); None when neither is."""
    memory = host.get("memory") or {}
    base = memory.get("available_bytes") or memory.get("total_bytes")
    return int(base) // MEMORY_SHARE if base else None


def make_plan(host: Mapping[str, Any], options: Knobs, quick: bool,
              threads: int) -> Plan:
    """Sizes and effort for this run: 4x the LLC (2x with --quick) or --max-size, capped at the
    memory share."""
    caches = data_caches(host)
    llc = int(caches[-1]["size_bytes"]) if caches else DEFAULT_LLC
    line = int((caches[0].get("line_bytes") if caches else None) or DEFAULT_LINE)
    asked = options.max_size
    multiple = QUICK_LLC_MULTIPLE if quick else LLC_MULTIPLE
    wanted = int(asked) if asked else multiple * llc
    cap = memory_cap(host)
    max_bytes, limited_by = wanted, "--max-size" if asked else f"{multiple}x LLC"
    if cap is not None and wanted > cap:
        max_bytes, limited_by = cap, "memory"
    repeats = int(options.repeats or (3 if quick else 5))
    return Plan(max_bytes=max(max_bytes, MIN_MAX_BYTES), wanted_bytes=wanted, cap_bytes=cap,
                limited_by=limited_by, per_doubling=2 if quick else 4, min_points=2 if quick else 3,
                repeats=repeats, run_s=0.002 if quick else 0.004, threads=threads,
                line_bytes=line, llc_bytes=llc, llc_reported=bool(caches),
                l1_bytes=int(caches[0]["size_bytes"]) if caches else 48 << 10)


def reaches_dram(plan_max: int, llc_bytes: int) -> bool:
    """The largest working set is far enough past the LLC for its plateau to be DRAM."""
    return plan_max >= 2 * llc_bytes


def sharers(host: Mapping[str, Any], count: int, threads: int) -> list[int]:
    """For reported level i+1: how many of our `threads` share one instance of it (SMT siblings
    on an L1, a socket's cores on an L3). Levels not reported: all threads."""
    caches = data_caches(host)
    out = [max(1, min(threads, len(c.get("shared_cpus") or []) or 1)) for c in caches]
    return (out + [threads] * count)[:count]


def level_working_sets(levels: Sequence[Level], sharing: Sequence[int], threads: int
                       ) -> dict[str, tuple[int, int]]:
    """(bytes for one thread, bytes per thread for all threads) inside each measured cache level.

    One thread: the geometric middle between the previous level's end and this one's (half the
    end for L1). All threads: the threads sharing one instance of the level split that working
    set, each share kept past the previous level where the level is big enough.
    """
    out: dict[str, tuple[int, int]] = {}
    prev = 0
    for level, share in zip(levels, sharing):
        if level.end_bytes is None:
            break
        end = level.end_bytes
        one = int(math.sqrt(prev * end)) if prev else end // 2
        each = one
        if share > 1 and threads > 1:
            each = max(one // share, int(1.5 * prev))
            each = min(each, int(0.75 * end / share))
        out[level.name] = (one // 64 * 64, max(each // 64 * 64, 4096))
        prev = end
    return out
