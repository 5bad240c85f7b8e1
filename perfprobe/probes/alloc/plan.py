"""What `perfprobe alloc` runs: sizes, allocators to look for, buffer sizes per level, presets. Pure.

Sizes come from the host's cache facts and the host memory budget, so the plan is tested on
recorded facts without a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfprobe.engine.config import Presets
from perfprobe.host.facts import Facts, caches_of, last_level_cache_bytes
from perfprobe.system.budget import MemoryBudget

SIZES = (16, 64, 256, 1024, 4096)
KEY_SIZE = 64
MIXED_SLOTS = 1024                 # live blocks per thread in the mixed pattern
MIXED_MAX = 4096
POOL_BLOCKS = 64                   # blocks threaded on each pool's free list (pairs pattern)
PAGE_BYTES = 4096
HUGE_BYTES = 2 << 20
COPY_MOVE_BYTES = 64 << 20         # "copying a 64 MiB tensor here costs N ms"
MIN_DRAM_BYTES = 64 << 20
DEFAULT_CACHES = {1: 32 << 10, 2: 1 << 20, 3: 32 << 20}
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                "/usr/local/lib", "/usr/local/lib64", "/opt/homebrew/lib")
ALLOCATORS: dict[str, tuple[str, tuple[str, ...]]] = {
    # name: (ctypes.util.find_library name, sonames tried in LIBRARY_DIRS and by the loader)
    "jemalloc": ("jemalloc", ("libjemalloc.so.2", "libjemalloc.so")),
    "tcmalloc": ("tcmalloc_minimal", ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4",
                                      "libtcmalloc_minimal.so", "libtcmalloc.so")),
    "mimalloc": ("mimalloc", ("libmimalloc.so.2", "libmimalloc.so")),
}


@dataclass(frozen=True)
class Settings:
    repeats: int            # timed repeats per point (median reported)
    run_ms: float           # target length of one timed allocator run
    touch_bytes: int        # first-touch buffer (4 KiB and 2 MiB pages)
    dram_factor: int        # the DRAM copy is this many times the last-level cache
    retries: int            # re-runs of an all-thread point that was preempted
    other_sizes: tuple[int, ...]   # pair sizes measured for allocators other than the process's own


FULL = Settings(repeats=5, run_ms=4.0, touch_bytes=128 << 20, dram_factor=4, retries=2, other_sizes=SIZES)
QUICK = Settings(repeats=3, run_ms=1.0, touch_bytes=8 << 20, dram_factor=2, retries=1, other_sizes=(KEY_SIZE,))
PRESETS = Presets(full=FULL, quick=QUICK)


@dataclass(frozen=True)
class Level:
    name: str
    bytes: int
    basis: str | None = None   # set when the memory budget (or --size) capped it


def cache_bytes(host: Facts, level: int) -> int | None:
    """Size of the data (or unified) cache at `level`; None when the facts lack it."""
    for cache in caches_of(host, "Data", "Unified"):
        if cache.get("level") == level and cache.get("size_bytes"):
            return int(cache["size_bytes"] or 0)
    return None


def last_level_bytes(host: Facts) -> int:
    """The LLC the DRAM size is a multiple of (host.facts.last_level_cache_bytes: capped per CPU)."""
    return last_level_cache_bytes(host) or DEFAULT_CACHES[3]


def copy_levels(host: Facts, settings: Settings, budget: MemoryBudget, size_cap: int | None) -> list[Level]:
    """memcpy sizes (one buffer; source and destination are two): a quarter of L1d and of L2, so
    both buffers fill half the level (at half a buffer each they filled all of it, and the figure
    read the next level's speed in part: memcpy "L2" 37 GB/s on the H200 Xeon, L3's 13), the middle
    of L2 and min(L3, 4 x L2) when there is an L3, and DRAM (`dram_factor` x the LLC, at least
    64 MiB), the two buffers within the budget and `--size`."""
    l1 = cache_bytes(host, 1) or DEFAULT_CACHES[1]
    l2 = cache_bytes(host, 2) or DEFAULT_CACHES[2]
    out = [Level("L1", l1 // 4), Level("L2", l2 // 4)]
    l3 = cache_bytes(host, 3)
    if l3:
        out.append(Level("L3", _round(int((l2 * min(l3, 4 * l2)) ** 0.5))))
    wanted = max(settings.dram_factor * last_level_bytes(host), MIN_DRAM_BYTES)
    dram, basis = MemoryBudget(budget.bytes // 2, budget.basis).cap(wanted)
    if size_cap is not None and size_cap < dram:
        dram, basis = size_cap, "--size"
    out.append(Level("DRAM", _round(dram), basis))
    return out


def tensor_bytes(levels: list[Level]) -> int:
    """The "64 MiB tensor" copy: 64 MiB, or the DRAM size when the budget left less."""
    return min(COPY_MOVE_BYTES, levels[-1].bytes)


def touch_bytes(settings: Settings, budget: MemoryBudget, size_cap: int | None) -> tuple[int, str | None]:
    """The first-touch buffer: whole 2 MiB pages, within the budget and `--size`."""
    size, basis = budget.cap(settings.touch_bytes)
    if size_cap is not None and size_cap < size:
        size, basis = size_cap, "--size"
    return max(HUGE_BYTES, size - size % HUGE_BYTES), basis


def mixed_bytes(threads: int) -> int:
    """Upper bound of what the mixed pattern holds at once: every slot at 4 KiB, plus its pool."""
    return 2 * threads * (MIXED_SLOTS + 1) * MIXED_MAX


def iterations(ns_per_op: float, run_ms: float, floor: int = 2000) -> int:
    """Operations for a timed run of about `run_ms`."""
    return max(floor, int(run_ms * 1e6 / max(ns_per_op, 0.5)))


def copy_reps(nbytes: int, gbs_guess: float, run_ms: float) -> int:
    return max(1, int(run_ms * 1e6 * gbs_guess / max(nbytes, 1)))


def _round(nbytes: int) -> int:
    return max(PAGE_BYTES, nbytes - nbytes % PAGE_BYTES)
