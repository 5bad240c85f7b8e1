"""The cache probe's timing loops: each runs a compiled kernel and returns plain numbers.

`kernels` is the perfprobe.kernels.cache_kernels module, passed in by `measure` (which imports it
lazily) so nothing here imports numba. Every figure is the median of `repeats` timed runs after one
warm-up, with its spread (perfprobe.stats.summarize); each timed run lasts about `run_s`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

import numpy as np

from perfprobe.stats import summarize

WORD = 8  # bytes per int64 / float64 element
CALIBRATION_STEPS = 4096
MIN_TIMED_BYTES = 64 << 20  # a bandwidth run moves at least this much: thread wake-up stays noise
ALL_THREADS_RUN_S = 0.02    # all-thread runs last longer: one late thread delays the whole region


@dataclass(frozen=True)
class Timing:
    """How long and how often to time: `run_s` per timed run, `repeats` runs per figure."""

    run_s: float
    repeats: int


def _check_fits(buf: np.ndarray, n_bytes: int) -> None:
    """Kernels do not check bounds: refuse to link past the end of the buffer."""
    if n_bytes > buf.nbytes or n_bytes < WORD:
        raise ValueError(f"working set of {n_bytes} bytes does not fit a {buf.nbytes}-byte buffer")


def time_chase(k: ModuleType, buf: np.ndarray, timing: Timing, warm_steps: int) -> dict[str, Any]:
    """ns per dependent load, following the cycle already linked in `buf` (uint64) from word 0.

    Walks `warm_steps` loads first (the working set into the caches it fits), calibrates the step
    count so a timed run lasts about `run_s`, and continues the walk across runs (new lines each
    time on cycles too long to walk whole).
    """
    position = [k.chase(np.uint64(buf.ctypes.data), warm_steps)]

    def walk(steps: int) -> None:
        position[0] = k.chase(position[0], steps)

    steps = calibrate(walk, timing.run_s, CALIBRATION_STEPS)
    p = position[0]
    samples = []
    for _ in range(timing.repeats):
        start = time.perf_counter_ns()
        p = k.chase(p, steps)
        samples.append((time.perf_counter_ns() - start) / steps)
    return {**summarize(samples), "steps": steps}


def random_chase_ns(k: ModuleType, buf: np.ndarray, size: int, line: int, timing: Timing,
                    seed: int = 1) -> dict[str, Any]:
    """Latency of a random cyclic chase over the first `size` bytes of `buf`, one pointer a line."""
    _check_fits(buf, size)
    n_lines = size // line
    if n_lines >= k.MAX_LINES:  # the cycle builder's random draw picks among fewer lines than this
        raise ValueError(f"working set of {size} bytes has too many lines ({n_lines}) to link at random")
    k.build_random_cycle(buf, n_lines, line // WORD, seed)
    return time_chase(k, buf, timing, warm_steps=min(n_lines, 1 << 20))


def sequential_chase_ns(k: ModuleType, buf: np.ndarray, size: int, line: int,
                        timing: Timing) -> dict[str, Any]:
    """Latency of a chase over the same lines in address order: what the prefetcher makes of it."""
    _check_fits(buf, size)
    n_lines = size // line
    k.build_sequential_cycle(buf, n_lines, line // WORD)
    return time_chase(k, buf, timing, warm_steps=min(n_lines, 1 << 20))


def pair_costs(k: ModuleType, buf: np.ndarray, n_blocks: int, block: int, offsets: list[int],
               timing: Timing, warm_steps: int) -> list[dict[str, Any]]:
    """ns per block for two dependent loads a block (word 0, then byte `offset`), per offset."""
    _check_fits(buf, n_blocks * block)
    out = []
    for offset in offsets:
        k.build_pair_blocks(buf, n_blocks, block // WORD, offset // WORD)
        cost = time_chase(k, buf, timing, warm_steps=min(2 * n_blocks, warm_steps))
        # time_chase counts loads; a block is two of them
        out.append({key: (v * 2 if key in ("median", "min", "max", "iqr") else v)
                    for key, v in cost.items()})
    return out


def calibrate(run: Callable[[int], Any], run_s: float, start: int = 1) -> int:
    """Repeat count for `run(count)` to last about `run_s`: grown from `start` until a run takes a
    quarter of it, then scaled (a first run can be slow for reasons other than the work)."""
    count = max(1, start)
    while True:
        began = time.perf_counter()
        run(count)
        took = time.perf_counter() - began
        if took >= run_s / 4 or count >= 1 << 40:
            return max(1, int(count * run_s / max(took, 1e-9)))
        count *= 8


def time_rate(run: Callable[[int], Any], bytes_per_rep: int, timing: Timing) -> dict[str, Any]:
    """GB/s of `run(reps)` (which moves `bytes_per_rep` bytes a repeat), median of timed runs
    (calibration's first run is the warm-up)."""
    reps = calibrate(run, timing.run_s, start=max(1, MIN_TIMED_BYTES // max(bytes_per_rep, 1)))
    samples = []
    for _ in range(timing.repeats):
        start = time.perf_counter()
        run(reps)
        samples.append(bytes_per_rep * reps / (time.perf_counter() - start) / 1e9)
    return {**summarize(samples), "reps": reps}


def aligned_empty(n: int, align: int = 64) -> np.ndarray:
    """`n` float64s starting on an `align`-byte boundary (numpy only promises 16): vector loads
    that straddle lines would halve in-L1 bandwidth, and the C reference is aligned."""
    raw = np.empty(n + align // WORD)
    skip = (-raw.ctypes.data % align) // WORD
    return raw[skip:skip + n]


def _elements(n_bytes: int, width: int) -> int:
    """Elements of `width` bytes in `n_bytes`, a multiple of 16 (so halves stay line-aligned)."""
    return max(n_bytes // width // 16 * 16, 64)


def _longer(timing: Timing) -> Timing:
    return Timing(max(timing.run_s, ALL_THREADS_RUN_S), timing.repeats)


def read_rates(k: ModuleType, one_bytes: int, each_bytes: int, threads: int,
               timing: Timing) -> dict[str, Any]:
    """Read bandwidth (GB/s): one thread over `one_bytes`, then `threads` threads each over its own
    `each_bytes` share. Arrays are first touched by the threads that read them."""
    one_n, each_n = _elements(one_bytes, WORD), _elements(each_bytes, WORD)
    a = aligned_empty(max(one_n, each_n * threads))
    k.fill_parallel(a, 1.0, threads)
    one = time_rate(lambda reps: k.read_sum(a[:one_n], reps), one_n * WORD, timing)
    total = each_n * threads
    many = time_rate(lambda reps: k.read_sum_parallel(a[:total], threads, reps), total * WORD,
                     _longer(timing))
    return {"bytes_1t": one_n * WORD, "bytes_each": each_n * WORD, "1t": one, "all": many}


def triad_rates(k: ModuleType, one_bytes: int, each_bytes: int, threads: int,
                timing: Timing) -> dict[str, Any]:
    """Triad bandwidth (GB/s, STREAM counting: 24 bytes an element) over three arrays totalling
    `one_bytes` on one thread, then `each_bytes` per thread on `threads` threads."""
    one_n, each_n = _elements(one_bytes, 3 * WORD), _elements(each_bytes, 3 * WORD)
    n = max(one_n, each_n * threads)
    a, b, c = (aligned_empty(n) for _ in range(3))
    for arr, value in ((a, 0.0), (b, 1.0), (c, 2.0)):
        k.fill_parallel(arr, value, threads)
    m = each_n * threads
    one = time_rate(lambda reps: k.triad(a[:one_n], b[:one_n], c[:one_n], 3.0, reps),
                    3 * WORD * one_n, timing)
    many = time_rate(lambda reps: k.triad_parallel(a[:m], b[:m], c[:m], 3.0, threads, reps),
                     3 * WORD * m, _longer(timing))
    return {"bytes_1t": 3 * WORD * one_n, "bytes_each": 3 * WORD * each_n, "1t": one, "all": many}
