"""The cache probe's timing loops: each runs a compiled kernel and returns plain numbers.

`kernels` is the perfprobe.kernels.cache_kernels module, passed in by `measure` (which imports it
lazily) so nothing here imports numba. Every figure is the median of `repeats` timed runs after a
discarded warm-up, with its spread and the repeats themselves (perfprobe.pure.stats.summarize); each
timed run lasts about `run_s` (`all_threads_s` for a parallel region).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from perfprobe.probes.cache.buffers import HUGE_ALIGN, page_buffer
from perfprobe.pure.stats import summarize

WORD = 8  # bytes per int64 / float64 element
CALIBRATION_STEPS = 4096
MIN_TIMED_BYTES = 64 << 20  # a bandwidth run moves at least this much: thread wake-up stays noise
ALL_THREADS_RUN_S = 0.02    # all-thread runs last longer: one late thread delays the whole region


@dataclass(frozen=True)
class Timing:
    """How long and how often to time: `run_s` per timed run, `repeats` runs per figure, and at
    least `all_threads_s` per run of a parallel region."""

    run_s: float
    repeats: int
    all_threads_s: float = ALL_THREADS_RUN_S


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


WARM_PASSES = 8
"""Walks of a freshly linked cycle before timing it: linking writes every line, and the first
walks evict those dirty lines while they load. On a 2-vCPU Xeon guest a 4 MiB set (2x its L2) read
55-200 ns after one walk, 34-60 ns after four and 33-37 ns after sixteen, in every process; eight
leave the set in the state it keeps (issue 25: that unsteady first walk was most of the L3 figure's
drift between runs)."""
WARM_LOADS = (1 << 19, 1 << 20)
"""Loads of that warm-up: at least the first (several walks of a set past L2 cost little), at
most WARM_PASSES walks, and past the second never more than one walk (a DRAM-sized set misses on
every load whatever its history; a walk of it is what warms its page tables)."""


DRAM_WARM_LOADS = 1 << 18
"""Loads that warm a set DRAM latency is read at (2x the LLC and past): at most a quarter of the
one walk WARM_LOADS allows. A set that misses on every load keeps no cache state to settle; what
the walk warms is its page tables, and 2^18 random loads reach over 99% of the 4 KiB pages of a
210 MiB set (all of a 64 MiB one's). Measured on the 2-vCPU EPYC guest (12-06 23:20 UTC), fresh
cycles linked in turn in one process: at 64 MiB (2x its LLC) 150.05 ns after 2^20 loads and 150.70
after 2^18 (median of 24 each, each cycle's repeats within 1.3-1.4% MAD either way), at 128 MiB
157.3 and 155.7 (16 each), on 4 KiB pages 183.5 and 177.5 (12 each): no shift beyond the runs'
own spread, and 0.12 s less a buffer (five a quick run: the curve's point and four more trials)."""


def warm_loads(n_lines: int, dram: bool = False) -> int:
    """How many loads warm a random cycle of `n_lines` lines before it is timed (WARM_PASSES);
    `dram`: a set DRAM latency is read at (DRAM_WARM_LOADS)."""
    floor, ceiling = WARM_LOADS
    loads = min(WARM_PASSES * n_lines, max(floor, min(n_lines, ceiling)))
    return min(loads, DRAM_WARM_LOADS) if dram else loads


def random_chase_ns(k: ModuleType, buf: np.ndarray, size: int, line: int, timing: Timing,
                    seed: int = 1, dram: bool = False) -> dict[str, Any]:
    """Latency of a random cyclic chase over the first `size` bytes of `buf`, one pointer a line;
    `dram`: the set is one DRAM latency is read at (its warm-up is shorter: warm_loads)."""
    _check_fits(buf, size)
    n_lines = size // line
    if n_lines >= k.MAX_LINES:  # the cycle builder's random draw picks among fewer lines than this
        raise ValueError(f"working set of {size} bytes has too many lines ({n_lines}) to link at random")
    k.build_random_cycle(buf, n_lines, line // WORD, seed)
    return time_chase(k, buf, timing, warm_steps=warm_loads(n_lines, dram))


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
        out.append({key: ([2 * x for x in v] if key == "samples" else
                          v * 2 if key in ("median", "min", "max", "iqr", "mad") else v)
                    for key, v in cost.items()})
    return out


def calibrate(run: Callable[[int], Any], run_s: float, start: int = 1) -> int:
    """Repeat count for `run(count)` to last about `run_s`: grown from `start` (toward half of
    `run_s`, by 2x to 64x a step) until a run takes a quarter of it, then scaled. When the very
    first run is already that long it is timed again and the faster kept: a first run slowed by
    something other than the work (a first call loading its code, a preemption) otherwise shrank
    every timed run of the figure (measured on the 2-vCPU guest: L1 all-thread runs of 0.4 ms where
    20 were asked; chase runs of 2 µs where 1.2 ms were). A single repeat (a pass over a DRAM-sized
    set) cannot shrink, and is not run twice."""
    count = first = max(1, start)
    while True:
        took = _timed(run, count)
        if took >= run_s / 4 or count >= 1 << 40:
            if count == first > 1:
                took = min(took, _timed(run, count))
            return max(1, int(count * run_s / max(took, 1e-9)))
        count = int(count * min(64.0, max(2.0, run_s / 2 / max(took, 1e-9))))


def _timed(run: Callable[[int], Any], count: int) -> float:
    began = time.perf_counter()
    run(count)
    return time.perf_counter() - began


def time_rate(run: Callable[[int], Any], bytes_per_rep: int, timing: Timing) -> dict[str, Any]:
    """GB/s of `run(reps)` (which moves `bytes_per_rep` bytes a repeat), median of timed runs.

    Calibration's runs are the discarded warm-up (`calibrate` times a first run that already
    reaches the length twice, the faster kept): a kernel's first call loads its code, and a
    calibration timed on that call alone made every timed run of the figure far shorter than
    `run_s` (a full run on the 2-vCPU guest: L1 all-thread runs of 0.4 ms where 20 were asked, the
    first repeat 160 GB/s beside 230-248). No timed run moves less than MIN_TIMED_BYTES."""
    start = max(1, MIN_TIMED_BYTES // max(bytes_per_rep, 1))
    reps = max(start, calibrate(run, timing.run_s, start=start))
    samples = []
    for _ in range(timing.repeats):
        samples.append(bytes_per_rep * reps / _timed(run, reps) / 1e9)
    return {**summarize(samples), "reps": reps}


def aligned_empty(n: int, align: int = 64, skew: int = 0) -> np.ndarray:
    """`n` float64s starting `skew` bytes past an `align`-byte boundary (numpy only promises 16):
    vector loads that straddle lines would halve in-L1 bandwidth, and the C reference is aligned.
    A skew of k*1088 bytes for the k-th triad array keeps a[i], b[i], c[i] off the same offset
    modulo 4 KiB (4K aliasing of the stores with the loads), as the C reference does."""
    raw = np.empty(n + (align + skew) // WORD)
    skip = (-raw.ctypes.data % align + skew) // WORD
    return raw[skip:skip + n]


TRIAD_SKEW = 1088  # bytes between the triad arrays' offsets modulo 4 KiB (C: 136 doubles)


def _elements(n_bytes: int, width: int) -> int:
    """Elements of `width` bytes in `n_bytes`, a multiple of 16 (so halves stay line-aligned)."""
    return max(n_bytes // width // 16 * 16, 64)


def _longer(timing: Timing) -> Timing:
    return Timing(max(timing.run_s, timing.all_threads_s), timing.repeats, timing.all_threads_s)


def _placed_record(placed: Any, stat: dict[str, Any]) -> dict[str, Any]:
    """A placed figure with the CPUs its shares ran on (sched_getcpu after pinning)."""
    return {**stat, "cpus": [int(c) for c in placed.where], "pinned": placed.verified()}


def read_rates(k: ModuleType, one_bytes: int, each_bytes: int, cpus: Sequence[int],
               timing: Timing) -> dict[str, Any]:
    """Read bandwidth (GB/s): one thread over `one_bytes`, then one thread on each of `cpus`, each
    over its own `each_bytes` share, in an array allocated for it (read_rates_in)."""
    one_n, each_n = _elements(one_bytes, WORD), _elements(each_bytes, WORD)
    a = aligned_empty(max(one_n, each_n * len(cpus)), 4096)
    return read_rates_in(k, a, one_bytes, each_bytes, cpus, timing)


def read_one_in(k: ModuleType, a: np.ndarray, one_bytes: int, cpus: Sequence[int], timing: Timing) -> dict[str, Any]:
    """One thread's read GB/s over the first `one_bytes` of the float64 array `a`, after the
    threads on `cpus` filled it (as read_rates_in does before its one-thread run)."""
    placed = k.Placed(cpus)
    one_n = _elements(one_bytes, WORD)
    if one_n > a.shape[0]:
        raise ValueError(f"{a.nbytes}-byte array is too small for {one_n * WORD} bytes")
    k.fill_placed(a[:one_n], 1.0, placed.masks, placed.where)
    return _one_read(k, a[:one_n], timing)


def read_all(k: ModuleType, each_bytes: int, cpus: Sequence[int], timing: Timing,
             a: np.ndarray | None = None, huge: bool = False) -> dict[str, Any]:
    """Read GB/s of one thread on each of `cpus`, each over its own `each_bytes` share of the
    float64 array `a` (refilled by those threads), or of a mapping made for the run (2 MiB pages
    where `huge`, as the trial buffers have) and first touched by them, its pages on their nodes.
    Why a mapping of its own pages: a fresh 128 MiB numpy array of 4 KiB pages took 0.45 s to fault
    in on one thread of the EPYC guest (12-07 00:35 UTC) where 64 MiB of 2 MiB pages took 0.01 s."""
    placed = k.Placed(cpus)
    total = _elements(each_bytes, WORD) * placed.threads
    if a is not None:
        if total > a.shape[0]:
            raise ValueError(f"{a.nbytes}-byte array is too small for {total * WORD} bytes")
        return _read_all_over(k, a[:total], placed, timing)
    with page_buffer(total * WORD, huge, np.float64) as fresh:
        out = _read_all_over(k, fresh[:total], placed, timing)
        del fresh  # the mapping closes only once no view of it is left
    return out


def _read_all_over(k: ModuleType, a: np.ndarray, placed: Any, timing: Timing) -> dict[str, Any]:
    """Fill `a` from the placed threads (their pages, their caches), then time them reading it."""
    k.fill_placed(a, 1.0, placed.masks, placed.where)
    return _placed_record(placed, _placed_read(k, a, placed, timing))


def _one_read(k: ModuleType, a: np.ndarray, timing: Timing) -> dict[str, Any]:
    """One thread reading all of `a`, timed (GB/s)."""
    return time_rate(lambda reps: k.read_loads(a, reps), a.shape[0] * WORD, timing)


def _placed_read(k: ModuleType, a: np.ndarray, placed: Any, timing: Timing) -> dict[str, Any]:
    """The placed threads each reading their share of `a`, timed in runs of the all-thread length."""
    return time_rate(lambda reps: k.read_loads_placed(a, placed.masks, placed.where, reps), a.shape[0] * WORD,
                     _longer(timing))


def read_rates_in(k: ModuleType, a: np.ndarray, one_bytes: int, each_bytes: int, cpus: Sequence[int],
                  timing: Timing) -> dict[str, Any]:
    """read_rates over the untouched float64 array `a` (large enough for both): it is first touched
    by the threads that read it, so each share's pages land on its CPU's node."""
    placed = k.Placed(cpus)
    one_n, each_n = _elements(one_bytes, WORD), _elements(each_bytes, WORD)
    total = each_n * placed.threads
    if max(one_n, total) > a.shape[0]:
        raise ValueError(f"{a.nbytes}-byte array is too small for {max(one_n, total) * WORD} bytes")
    k.fill_placed(a, 1.0, placed.masks, placed.where)
    one = _one_read(k, a[:one_n], timing)
    return {"bytes_1t": one_n * WORD, "bytes_each": each_n * WORD, "1t": one,
            "all": _placed_record(placed, _placed_read(k, a[:total], placed, timing))}


def triad_rates(k: ModuleType, one_bytes: int, each_bytes: int, cpus: Sequence[int],
                timing: Timing, huge: bool | None = None) -> dict[str, Any]:
    """Triad bandwidth (GB/s, STREAM counting: 24 bytes an element) over three arrays totalling
    `one_bytes` on one thread, then `each_bytes` per thread, one thread on each of `cpus`; the
    arrays in one fresh mapping (2 MiB pages asked where `huge`, as the sweep's triad, `placed_rate`;
    None: no advice, the pages THP's setting gives), first touched by the threads on `cpus`."""
    placed = k.Placed(cpus)
    one_n, each_n = _elements(one_bytes, 3 * WORD), _elements(each_bytes, 3 * WORD)
    m = each_n * placed.threads
    with _triad_mapping(max(one_n, m), huge) as arrays:
        _fill_triad(k, arrays, placed)
        one = _triad_rate(k, tuple(x[:one_n] for x in arrays), timing)
        many = _triad_rate(k, tuple(x[:m] for x in arrays), _longer(timing), placed)
        del arrays  # the mapping closes only once no view of it is left
    return {"bytes_1t": 3 * WORD * one_n, "bytes_each": 3 * WORD * each_n, "1t": one,
            "all": _placed_record(placed, many)}


def placed_rate(k: ModuleType, kind: str, total_bytes: int, cpus: Sequence[int],
                timing: Timing, huge: bool = False) -> dict[str, Any]:
    """GB/s of `kind` ("read_gbs" or "triad_gbs") over `total_bytes` split among one thread on
    each of `cpus`, in a mapping made for this run (2 MiB pages where `huge`, as the all-thread
    read's and the trial buffers have) and first touched by those threads (STREAM: each run of a
    sweep places its own pages).

    Why a mapping of its own pages rather than numpy's (4 KiB pages where THP waits for
    MADV_HUGEPAGE): a sweep faults in a set of up to plan.ALL_THREADS_DRAM_MAX for each count and
    kind. On the H100 machine's 16-vCPU guest (12-07 15:13 UTC, 600 MiB to 1 GiB each) the fills
    of a quick run's ten took 1.0 s of its 2.3 s sweep."""
    if kind == "read_gbs":
        return read_all(k, total_bytes // max(1, len(cpus)), cpus, timing, huge=huge)
    placed = k.Placed(cpus)
    n = _elements(total_bytes, 3 * WORD) // placed.threads * placed.threads
    with _triad_mapping(n, huge) as arrays:
        _fill_triad(k, arrays, placed)  # the placed threads' pages
        stat = _triad_rate(k, arrays, _longer(timing), placed)
        del arrays  # the mapping closes only once no view of it is left
    return _placed_record(placed, stat)


def _fill_triad(k: ModuleType, arrays: Sequence[np.ndarray], placed: Any) -> None:
    """Fill the three arrays from the placed threads: each share's pages land where its thread runs."""
    for arr, value in zip(arrays, (0.0, 1.0, 2.0)):
        k.fill_placed(arr, value, placed.masks, placed.where)


def _triad_rate(k: ModuleType, arrays: Sequence[np.ndarray], timing: Timing, placed: Any = None) -> dict[str, Any]:
    """GB/s of a = b + 3c over `arrays`: the calling thread alone, or split among `placed`'s threads."""
    a, b, c = arrays
    if placed is None:
        return time_rate(lambda reps: k.triad(a, b, c, 3.0, reps), 3 * WORD * a.shape[0], timing)
    return time_rate(lambda reps: k.triad_placed(a, b, c, 3.0, placed.masks, placed.where, reps),
                     3 * WORD * a.shape[0], timing)


@contextmanager
def _triad_mapping(n: int, huge: bool | None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Three float64 arrays of `n` elements in one fresh mapping (buffers.page_buffer), the k-th
    starting k * TRIAD_SKEW bytes past a 2 MiB boundary (TRIAD_SKEW: the three streams' lines
    apart in the cache sets)."""
    stride = -(-(n * WORD + 2 * TRIAD_SKEW) // HUGE_ALIGN) * HUGE_ALIGN
    words, skew = stride // WORD, TRIAD_SKEW // WORD
    with page_buffer(3 * stride, huge, np.float64) as span:
        yield span[0:n], span[words + skew:words + skew + n], span[2 * (words + skew):2 * (words + skew) + n]
        del span


HANDOFF_ROUNDS = 20_000
"""Ping-pong rounds of one handoff witness: 2-7 ms at the 46-170 ns one-way handoffs measured."""
HANDOFF_SETTLE_S = 0.01
"""Paused before each handoff: numba's OpenMP workers spin a while after a parallel region before
they sleep, and a handoff timed at once shares their CPUs. On the EPYC guest (12-07 02:50 UTC) one
of twelve handoffs right after the all-thread read took 95 ns where 2, 10 and 50 ms later read 46."""


def handoff_ns(cpus: Sequence[int], rounds: int = HANDOFF_ROUNDS) -> float | None:
    """One-way handoff of one line between the first two of `cpus` (half a ping-pong round trip,
    falseshare's kernel), ns; None with fewer than two CPUs. Why: on the 2-vCPU EPYC guest the
    hypervisor moves the vCPUs between sharing a CCX's L3 and not, every few seconds, and the
    all-thread DRAM read follows: in 110 reads with a handoff timed just before and just after
    each (12-07 02:20 UTC), both handoffs 39-54 ns (one L3) read 29.5-36.3 GB/s in 91, both
    145-257 ns (two) read 52.4-55.0 in 10, and the 9 whose two handoffs disagreed read either
    (the handoffs after were timed at once there, not after HANDOFF_SETTLE_S: up to 1.7x slower)."""
    if len(cpus) < 2:
        return None
    from perfprobe.kernels import falseshare_kernels as fk

    time.sleep(HANDOFF_SETTLE_S)
    return round(fk.run_pingpong(cpus[0], cpus[1], rounds).span_ns / rounds / 2, 1)


def with_handoffs(cpus: Sequence[int], run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`run()`'s record with `handoff_ns`: the handoff between the first two of `cpus` just before
    and just after it (where its threads sat while it was timed; figures.threads_placement), or
    `run()`'s record alone with fewer than two CPUs."""
    before = handoff_ns(cpus)
    out = run()
    if before is not None:
        out["handoff_ns"] = [before, handoff_ns(cpus)]
    return out
