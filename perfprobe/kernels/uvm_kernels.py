"""The uvm probe's kernels: one GPU read-reduce kernel that every access path runs, one GPU fill
kernel, and their host counterparts (fill, checked sum). Only numbers come out of here.

Why one kernel for every path: then the paths differ only in where the bytes live and how they get
to the GPU (page faults, prefetch, advice, an explicit copy, mapped host memory), never in the code
that reads them. The kernel is grid-stride with 16-byte loads (uint4), four loads in flight per
thread, a warp shuffle reduction and one atomicAdd per warp, so its own speed (device memory:
terabytes per second) is far above every host-to-GPU path it measures.

Data are a periodic pattern of uint32 values below 2**16 plus a per-repeat `salt`, so the exact sum
of any buffer is known without reading it (`expected_sum`), every repeat writes every page (so each
on-demand run really faults), and a wrong index or a page not migrated shows up as a wrong sum.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Iterator

import numba
import numpy as np
from numba import njit, prange

from perfprobe.kernels.host_shares import over_shares

PATTERN_ELEMENTS = 1 << 18
"""Period of the data pattern, in uint32 elements (1 MiB); buffer sizes are multiples of it."""
PATTERN_BYTES = PATTERN_ELEMENTS * 4
_GOLDEN = 2654435761  # Knuth's multiplicative hash constant: a cheap, well-spread pattern

CUDA_SOURCE = r"""
#define PATTERN_MASK %(mask)dULL

extern "C" __global__ void read_sum(const uint4* __restrict__ p, unsigned long long n_vec,
                                    unsigned long long* __restrict__ out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long acc = 0;
    for (; i + 3 * stride < n_vec; i += 4 * stride) {
        const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
        acc += (unsigned long long)a.x + a.y + a.z + a.w;
        acc += (unsigned long long)b.x + b.y + b.z + b.w;
        acc += (unsigned long long)c.x + c.y + c.z + c.w;
        acc += (unsigned long long)d.x + d.y + d.z + d.w;
    }
    for (; i < n_vec; i += stride) {
        const uint4 a = p[i];
        acc += (unsigned long long)a.x + a.y + a.z + a.w;
    }
    for (int offset = 16; offset > 0; offset >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, acc);
}

extern "C" __global__ void fill_pattern(unsigned int* __restrict__ p, unsigned long long n,
                                        unsigned int salt) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride) {
        const unsigned int j = (unsigned int)(i & PATTERN_MASK);
        p[i] = ((j * 2654435761u) >> 16) + salt;
    }
}
""" % {"mask": PATTERN_ELEMENTS - 1}


def pattern() -> np.ndarray:
    """One period of the data pattern: ((j * 2654435761) mod 2**32) >> 16, as uint32."""
    j = np.arange(PATTERN_ELEMENTS, dtype=np.uint64)
    return (((j * _GOLDEN) & 0xFFFFFFFF) >> 16).astype(np.uint32)


_PATTERN_SUM: int | None = None


def expected_sum(n_bytes: int, salt: int) -> int:
    """The exact sum of `n_bytes` of pattern data written with `salt` (a multiple of the period)."""
    global _PATTERN_SUM
    if n_bytes % PATTERN_BYTES:
        raise ValueError(f"{n_bytes} bytes is not a multiple of the {PATTERN_BYTES}-byte pattern")
    if _PATTERN_SUM is None:
        _PATTERN_SUM = int(pattern().sum(dtype=np.uint64))
    periods = n_bytes // PATTERN_BYTES
    return periods * _PATTERN_SUM + (n_bytes // 4) * salt


def host_fill(view: np.ndarray, salt: int, period: np.ndarray | None = None,
              workers: Executor | None = None, threads: int = 1) -> None:
    """Write pattern + salt over a host-accessible uint32 view, page by page from the CPU; with
    `workers`, in `threads` contiguous shares of whole periods at once (kernels/host_shares.py)."""
    period = pattern() if period is None else period
    salted = np.uint32(salt)

    def fill(lo: int, hi: int) -> None:
        for start in range(lo, hi, PATTERN_ELEMENTS):
            np.add(period, salted, out=view[start:start + PATTERN_ELEMENTS])

    over_shares(workers, threads, view.size, fill, unit=PATTERN_ELEMENTS)


@njit(cache=True, nogil=True, parallel=True)
def host_sum_parallel(view: np.ndarray) -> int:  # pragma: no cover - compiled
    """Sum of a uint32 array as uint64, read by numba's worker threads, each a contiguous share.

    Why threads: one host thread read ~9 GB/s on the H200 host, slower than migration over PCIe,
    which hid the cost of page faults on the way back; several threads expose it.
    """
    acc = np.uint64(0)
    for i in prange(view.size):
        acc += np.uint64(view[i])
    return acc


def usable_threads(requested: int | None = None) -> int:
    """Host reader threads: the CPUs this process may run on (or fewer, when asked)."""
    usable = min(len(os.sched_getaffinity(0)), int(numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    return max(1, min(requested or usable, usable))


@contextmanager
def host_threads(count: int) -> Iterator[int]:
    """Run numba's parallel kernels on `count` threads, restoring the previous count after."""
    previous = numba.get_num_threads()
    numba.set_num_threads(count)
    try:
        yield count
    finally:
        numba.set_num_threads(previous)


class GpuKernels:
    """The compiled read_sum / fill_pattern kernels of one device, with their launch shape."""

    THREADS = 256

    def __init__(self, cupy: ModuleType, multiprocessors: int) -> None:
        module = cupy.RawModule(code=CUDA_SOURCE, options=("--std=c++14",))
        self.cupy = cupy
        self._read = module.get_function("read_sum")
        self._fill = module.get_function("fill_pattern")
        self.blocks = max(1, multiprocessors) * 8
        self.out = cupy.zeros(1, dtype=cupy.uint64)

    def reset(self) -> None:
        """Zero the device-side sum (queued on the current stream)."""
        self.out.fill(0)

    def read_sum(self, ptr: int, n_bytes: int) -> None:
        """Queue one read-reduce pass over n_bytes at device-visible address ptr (adds to out)."""
        args: tuple[Any, ...] = (np.uint64(ptr), np.uint64(n_bytes // 16), self.out)
        self._read((self.blocks,), (self.THREADS,), args)

    def fill(self, ptr: int, n_bytes: int, salt: int) -> None:
        """Queue a GPU write of pattern + salt over n_bytes at ptr."""
        args = (np.uint64(ptr), np.uint64(n_bytes // 4), np.uint32(salt))
        self._fill((self.blocks,), (self.THREADS,), args)

    def result(self) -> int:
        """The device-side sum (synchronises with the current stream)."""
        return int(self.out.get()[0])
