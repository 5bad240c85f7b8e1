"""What `perfprobe layout` runs: offsets, widths, record counts per cache level, presets. Pure.

Sizes come from the host's cache facts (L1d, L2, last level) and the host memory budget, so the
plan is tested on recorded facts without a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfprobe.engine.config import Presets
from perfprobe.host.facts import Facts, caches_of, last_level_cache_bytes
from perfprobe.system.budget import MemoryBudget

WIDTHS = (4, 8, 16, 32)
LINE_BYTES = 64
OFFSETS = tuple(range(LINE_BYTES))
PAGE_BYTES = 4096
PAGE_SPLITS = 4            # page boundaries crossed in turn (4 L1 lines in each of two sets)
# Lines swept by the split test: the first 60 lines of one 4 KiB page (a multiple of 4, and the
# widest access at the last offset still ends inside the page), so no access of the line sweep
# crosses a page: that is the page test's figure. Swept over half of L1d, every 64th access split
# a page too, and on the Zen 4 guest those few page splits moved the 8 B line-split throughput by
# 30% between runs (C read 0.20 ns a load, the probe 0.20 or 0.27). One page stays in L1 anywhere.
SPLIT_LINES = PAGE_BYTES // LINE_BYTES - 4
FIELDS = (2, 4, 8, 16)
OPS = ("sum", "update", "all")
MIN_DRAM_BYTES = 64 << 20
DEFAULT_CACHES = {1: 32 << 10, 2: 1 << 20, 3: 32 << 20}   # when the facts name no cache


@dataclass(frozen=True)
class Settings:
    repeats: int           # timed repeats per point (median reported)
    loads: int             # loads per timed split run
    chain_steps: int       # dependent loads per timed latency run
    run_ms: float          # target length of one timed record run (L1, L2)
    dram_factor: int       # the DRAM working set is this many times the last-level cache (0: MIN_DRAM_BYTES)
    dram_repeats: int      # flushed single-pass DRAM runs per point


# quick: a fixed 64 MiB DRAM set. Every DRAM pass follows an eviction of
# its lines (clflushopt, or a read of 1.5x the LLC where there is none), so it reads DRAM whatever the
# set's size; sizing the set from the LLC made --quick scale with it (300 MiB L3 on the H200 Xeon:
# 600 MiB sets, 8.8 s).
FULL = Settings(repeats=5, loads=1 << 17, chain_steps=1 << 16, run_ms=3.0, dram_factor=4, dram_repeats=5)
QUICK = Settings(repeats=3, loads=1 << 15, chain_steps=1 << 14, run_ms=1.0, dram_factor=0, dram_repeats=3)
PRESETS = Presets(full=FULL, quick=QUICK)


@dataclass(frozen=True)
class Level:
    name: str
    bytes: int
    basis: str | None = None   # set when the memory budget capped the size


def cache_bytes(host: Facts, level: int) -> int:
    """Size of the data (or unified) cache at `level`, or a typical one when the facts lack it."""
    for cache in caches_of(host, "Data", "Unified"):
        if cache.get("level") == level and cache.get("size_bytes"):
            return int(cache["size_bytes"] or 0)
    return DEFAULT_CACHES[level]


def last_level_bytes(host: Facts) -> int:
    """The LLC the DRAM and flush sizes are multiples of (host.facts.last_level_cache_bytes: capped per CPU)."""
    return last_level_cache_bytes(host) or DEFAULT_CACHES[3]


def flush_bytes(host: Facts) -> int:
    """A buffer read between DRAM runs so that none starts with its data cached: 1.5 x the LLC."""
    return last_level_bytes(host) * 3 // 2


def levels(host: Facts, settings: Settings, budget: MemoryBudget) -> list[Level]:
    """Working sets (all K fields of all records): half of L1d, half of L2, and DRAM
    (`dram_factor` x the last-level cache, at least 64 MiB; 64 MiB when the factor is 0), capped
    by the memory budget (less the flush buffer)."""
    left = MemoryBudget(max(budget.bytes - flush_bytes(host), 1 << 20), budget.basis)
    dram, basis = left.cap(max(settings.dram_factor * last_level_bytes(host), MIN_DRAM_BYTES))
    return [Level("l1", cache_bytes(host, 1) // 2), Level("l2", cache_bytes(host, 2) // 2),
            Level("dram", dram - dram % (8 * 16 * 64), basis)]


def records(level_bytes: int, fields: int) -> int:
    """Records of `fields` int64 fields in the working set (a multiple of 64)."""
    return max(64, level_bytes // (8 * fields) // 64 * 64)


def splits_line(offset: int, width: int) -> bool:
    """Whether a `width`-byte access at `offset` within a line crosses into the next line."""
    return offset % LINE_BYTES + width > LINE_BYTES


def page_positions(width: int, split: bool) -> list[int]:
    """Byte positions, in a buffer of `page_buffer_bytes()`, of the PAGE_SPLITS loads of the page
    test: the starts of pages 1..4 (aligned), or straddling the ends of pages 1..4, width/2 bytes
    on each side of the boundary (split). Page 0 is never loaded."""
    at = 2 * PAGE_BYTES - width // 2 if split else PAGE_BYTES
    return [at + PAGE_BYTES * i for i in range(PAGE_SPLITS)]


def page_buffer_bytes() -> int:
    return (PAGE_SPLITS + 2) * PAGE_BYTES


def aligned(offset: int, width: int) -> bool:
    return offset % width == 0


def passes(ns_per_pass: float, run_ms: float) -> int:
    return max(1, int(run_ms * 1e6 / max(ns_per_pass, 1.0)))
