"""Timed calls of the cache probe's kernels on a buffer whose pages the numa probe has placed.

The numa probe reuses cache_kernels' random pointer chase and parallel read sweep (one kernel per
job in the project); this module only sets numba's thread count and times the calls, so the probe
itself never imports numba. Imported only inside `measure`.
"""

from __future__ import annotations

import os
import time

import numba
import numpy as np

from perfprobe.kernels import cache_kernels
from perfprobe.kernels.placement import Placed, pinned_pool

LINE_BYTES = 64
LINE_WORDS = LINE_BYTES // 8


def build_chain(words: np.ndarray, seed: int = 12345) -> None:
    """Link every 64-byte line of the uint64 array `words` into one uniformly random cycle (each
    line's first word holds the next line's address).

    Random order defeats the prefetchers, so each load waits for memory; writing the links is also
    the first touch that faults every page in (on the node the buffer's policy names).
    """
    cache_kernels.build_random_cycle(words, words.size // LINE_WORDS, LINE_WORDS, seed)


def chase_ns(words: np.ndarray, steps: int, start: int | None = None) -> tuple[float, int]:
    """Nanoseconds per dependent load over `steps` loads from address `start` (default: the first
    line of `words`), and the address where the chase stopped (to go on from there).

    `words` is passed only to keep the buffer alive and to find its start: the chase follows raw
    addresses."""
    address = np.uint64(words.ctypes.data if start is None else start)
    begin = time.perf_counter_ns()
    end = cache_kernels.chase(address, steps)
    return (time.perf_counter_ns() - begin) / steps, int(end)


def use_threads(count: int) -> int:
    """Run numba's parallel kernels on `count` threads (capped by the pool); returns the count used."""
    used = max(1, min(count, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    numba.set_num_threads(used)
    return used


def pool_size() -> int:
    """Threads in numba's pool (the most a placed run can use)."""
    return int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]


def read_gbs(values: np.ndarray, cpus: list[int]) -> float:
    """GB/s (10^9 bytes/s) reading all of the float64 array `values`, share t on cpus[t] (pinned
    from inside the region, perfprobe/kernels/placement.py)."""
    placed = Placed(cpus)
    begin = time.perf_counter_ns()
    cache_kernels.read_loads_placed(values, placed.masks, placed.where, 1)
    elapsed = time.perf_counter_ns() - begin
    threads = placed.threads
    return (values.size // threads) * threads * 8 / elapsed


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels used here, outside any timing."""
    tiny = np.zeros(LINE_WORDS * 64, dtype=np.uint64)
    build_chain(tiny)
    chase_ns(tiny, 16)
    with pinned_pool():  # the warm-up pins too: every thread gets its CPUs back after it
        placed = Placed(sorted(os.sched_getaffinity(0))[:1])
        cache_kernels.read_loads_placed(np.ones(1024), placed.masks, placed.where, 1)
    numba.set_num_threads(pool_size())
