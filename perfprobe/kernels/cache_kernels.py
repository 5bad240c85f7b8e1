"""Numba kernels of the cache probe: pointer chases, read and triad sweeps. They only return numbers.

Every kernel is compiled once (`cache=True`) and loops internally, so Python call overhead never
enters a timed region. Chase buffers are int64 arrays holding, at the first word of each line, the
word index of the next line to load: `p = buf[p]` is one dependent load, as `p = *p` is in C.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

# Reassociation lets LLVM vectorise the reduction with several accumulators (as -ffast-math would);
# no-NaN/no-Inf assumptions are left out so nothing else about the arithmetic changes.
_FAST = {"reassoc", "nsz", "contract", "arcp"}


MAX_LINES = 1 << 32  # `_below` draws indices from the top 32 bits of a 64-bit random number


@njit(cache=True, inline="always")
def _splitmix64(state: np.uint64) -> tuple[np.uint64, np.uint64]:
    """One step of splitmix64: (new state, random 64-bit value). Twice as fast as np.random here,
    which halves the time to link a gigabyte-sized chase."""
    state = state + uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    return state, z ^ (z >> uint64(31))


@njit(cache=True, inline="always")
def _below(z: np.uint64, m: int) -> int:
    """A number in [0, m) from random `z` (multiply-shift; m < 2**32)."""
    return np.int64(((z >> uint64(32)) * uint64(m)) >> uint64(32))


@njit(cache=True)
def build_random_cycle(buf: np.ndarray, n_lines: int, line_words: int, seed: int = 1) -> None:
    """Link `n_lines` lines of `buf` into one uniformly random cycle (random insertion).

    Line i is inserted after a random line j < i of the cycle built so far: (n-1)! equally likely
    outcomes, i.e. every cyclic order of the lines is equally likely, and it is always one cycle.
    """
    state = uint64(seed)
    buf[0] = 0
    for i in range(1, n_lines):
        state, z = _splitmix64(state)
        j = _below(z, i) * line_words
        me = i * line_words
        buf[me] = buf[j]
        buf[j] = me


@njit(cache=True)
def build_sequential_cycle(buf: np.ndarray, n_lines: int, line_words: int) -> None:
    """Link lines in address order (the prefetcher's best case), last back to first."""
    for i in range(n_lines - 1):
        buf[i * line_words] = (i + 1) * line_words
    buf[(n_lines - 1) * line_words] = 0


@njit(cache=True)
def build_pair_blocks(buf: np.ndarray, n_blocks: int, block_words: int, second_word: int,
                      seed: int = 1) -> None:
    """Random cycle over blocks, two dependent loads per block: word 0, then word `second_word`.

    The second load hits the line of the first while `second_word * 8` is below the line size:
    the cost of the second load against its offset reveals the line (and any prefetched pair).
    """
    build_random_cycle(buf, n_blocks, block_words, seed)
    for b in range(n_blocks):
        base = b * block_words
        if second_word > 0:
            nxt = buf[base]
            buf[base] = base + second_word
            buf[base + second_word] = nxt


@njit(cache=True)
def chase(buf: np.ndarray, start: int, steps: int) -> int:
    """Follow `steps` pointers from word `start`; returns where it stopped (so nothing is elided)."""
    p = start
    for _ in range(steps):
        p = buf[p]
    return p


@njit(cache=True, fastmath=_FAST)
def read_sum(a: np.ndarray, reps: int) -> float:
    """Sum `a` `reps` times on one thread: 8 bytes read per element per repeat."""
    total = 0.0
    for _ in range(reps):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i]
        total += s
    return total


@njit(cache=True, parallel=True)
def read_sum_parallel(a: np.ndarray, nthreads: int, reps: int) -> float:
    """Each of `nthreads` threads sums its own contiguous share of `a`, `reps` times, in one
    parallel region (a region per repeat would cost more than an L1-sized sweep). The share is
    summed by the serial kernel: loops written inside a prange body are not vectorised."""
    chunk = a.shape[0] // nthreads
    total = 0.0
    for t in prange(nthreads):
        total += read_sum(a[t * chunk:(t + 1) * chunk], reps)
    return total


@njit(cache=True, fastmath=_FAST)
def triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: float, reps: int) -> float:
    """STREAM triad a = b + scalar*c, `reps` times on one thread (24 bytes counted per element)."""
    for _ in range(reps):
        for i in range(a.shape[0]):
            a[i] = b[i] + scalar * c[i]
    return a[0]


@njit(cache=True, parallel=True)
def triad_parallel(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: float, nthreads: int,
                   reps: int) -> float:
    """Triad with each thread on its own contiguous share, `reps` times, in one parallel region."""
    chunk = a.shape[0] // nthreads
    for t in prange(nthreads):
        lo = t * chunk
        hi = lo + chunk
        triad(a[lo:hi], b[lo:hi], c[lo:hi], scalar, reps)
    return a[0]


@njit(cache=True, parallel=True)
def fill_parallel(a: np.ndarray, value: float, nthreads: int) -> None:
    """First touch by the thread that will use each share (pages land on that thread's node)."""
    chunk = a.shape[0] // nthreads
    for t in prange(nthreads):
        lo = t * chunk
        hi = a.shape[0] if t == nthreads - 1 else lo + chunk
        for i in range(lo, hi):
            a[i] = value
