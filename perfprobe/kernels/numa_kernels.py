"""Numba kernels for the NUMA probe: a dependent-load chase and a parallel streaming read.

They work on a caller-owned uint64 buffer (the probe places its pages on one node first), so the
placement stays in the probe and these functions only turn a buffer into seconds. Imported only
inside `measure`.
"""

from __future__ import annotations

import time

import numba
import numpy as np
from numba import njit, prange

LINE_BYTES = 64
_WORDS_PER_LINE = LINE_BYTES // 8


def build_chain(buf: np.ndarray, seed: int = 12345) -> None:
    """Link every cache line of `buf` into one random cycle: word 0 of each line holds the index of
    the next line's word 0. Random order defeats the prefetchers, so each load waits for DRAM.

    This writes one word per line, so it is also the first touch that faults every page in.
    """
    lines = buf.size // _WORDS_PER_LINE
    order = np.random.default_rng(seed).permutation(lines).astype(np.uint64) * _WORDS_PER_LINE
    buf[order] = np.roll(order, -1)


@njit(cache=True, nogil=True)
def _chase(buf: np.ndarray, start: np.uint64, steps: int) -> np.uint64:
    index = start
    for _ in range(steps):
        index = buf[index]
    return index


@njit(cache=True, parallel=True, nogil=True)
def _read_sum(buf: np.ndarray, chunks: int) -> np.uint64:
    per_chunk = buf.size // chunks
    total = np.uint64(0)
    for c in prange(chunks):
        part = np.uint64(0)
        for k in range(c * per_chunk, (c + 1) * per_chunk):
            part += buf[k]
        total += part
    return total


def chase_ns_per_load(buf: np.ndarray, steps: int, start: int = 0) -> tuple[float, int]:
    """Nanoseconds per dependent load over `steps` loads, and where the chase ended (to continue)."""
    begin = time.perf_counter_ns()
    end = _chase(buf, np.uint64(start), steps)
    elapsed = time.perf_counter_ns() - begin
    return elapsed / steps, int(end)


def read_gbs(buf: np.ndarray, threads: int) -> float:
    """GB/s (10^9 bytes/s) reading all of `buf` with `threads` numba threads, one chunk each."""
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    chunks = numba.get_num_threads()
    begin = time.perf_counter_ns()
    _read_sum(buf, chunks)
    elapsed = time.perf_counter_ns() - begin
    read_bytes = (buf.size // chunks) * chunks * 8
    return read_bytes / elapsed


def warm_up() -> None:
    """Compile (or load from cache) both kernels on a tiny buffer, outside any timing."""
    tiny = np.zeros(_WORDS_PER_LINE * 64, dtype=np.uint64)
    build_chain(tiny)
    _chase(tiny, np.uint64(0), 16)
    _read_sum(tiny, 1)
