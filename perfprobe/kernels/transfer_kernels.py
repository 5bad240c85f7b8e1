"""Host-GPU copies through cupy's runtime bindings: bandwidth, enqueue blocking, pinning cost.

Every copy is one cudaMemcpyAsync on a stream, bracketed by CUDA events (device time) and a host
clock around the enqueue call (how long the calling thread was held). Pinned buffers are taken with
cudaHostAlloc and device buffers with cudaMalloc directly (not cupy's pools, which would hide the
allocation cost and keep the memory after the probe); `Allocations.close`, run in `finally`, frees
them by pointer, so nothing outlives the probe even while a traceback still references arrays.
Returns plain numbers only; judgement lives in perfprobe/probes/pinned/rules.py.
"""

from __future__ import annotations

import ctypes
import time
from types import ModuleType
from typing import Any

import numpy as np

from perfprobe.pure.stats import summarize

H2D, D2H = 1, 2
GIB = 1 << 30


def pinned_array(cupy: ModuleType, nbytes: int) -> tuple[int, np.ndarray]:
    """cudaHostAlloc `nbytes` and a numpy view of them; the caller frees the pointer (freeHost)."""
    ptr = int(cupy.cuda.runtime.hostAlloc(nbytes, 0))
    return ptr, np.frombuffer(memoryview((ctypes.c_ubyte * nbytes).from_address(ptr)), dtype=np.uint8)


class Allocations:
    """Pinned host and device memory of one measurement, all freed by `close` (also on error and
    Ctrl-C): it waits for the device first, then frees every pointer, then empties cupy's pools."""

    def __init__(self, cupy: ModuleType) -> None:
        self._cupy = cupy
        self._pinned: list[int] = []
        self._device: list[int] = []

    def pinned(self, nbytes: int) -> tuple[int, np.ndarray]:
        """cudaHostAlloc'd bytes: (pointer, numpy uint8 view)."""
        ptr, view = pinned_array(self._cupy, nbytes)
        self._pinned.append(ptr)
        return ptr, view

    def device(self, nbytes: int) -> int:
        """cudaMalloc'd bytes on the current device: the pointer."""
        ptr = int(self._cupy.cuda.runtime.malloc(nbytes))
        self._device.append(ptr)
        return ptr

    def device_array(self, count: int, dtype: Any) -> Any:
        """A cupy array over fresh cudaMalloc'd memory that this object (not cupy) frees."""
        cupy = self._cupy
        nbytes = count * np.dtype(dtype).itemsize
        memory = cupy.cuda.UnownedMemory(self.device(nbytes), nbytes, owner=self)
        return cupy.ndarray((count,), dtype=dtype, memptr=cupy.cuda.MemoryPointer(memory, 0))

    def close(self) -> None:
        runtime = self._cupy.cuda.runtime
        try:
            runtime.deviceSynchronize()  # nothing in flight may touch memory about to be freed
        except Exception:  # a sticky CUDA error: free anyway; the original error is on its way up
            pass
        while self._device:
            runtime.free(self._device.pop())
        while self._pinned:
            runtime.freeHost(self._pinned.pop())
        self._cupy.get_default_memory_pool().free_all_blocks()
        self._cupy.get_default_pinned_memory_pool().free_all_blocks()


def host_pointer(array: np.ndarray) -> int:
    return int(array.ctypes.data)


def timed_copy(cupy: ModuleType, dst: int, src: int, nbytes: int, kind: int,
               stream: Any, start: Any, end: Any) -> tuple[float, float]:
    """One copy: (device milliseconds between events, host microseconds inside the enqueue call)."""
    start.record(stream)
    t0 = time.perf_counter()
    cupy.cuda.runtime.memcpyAsync(dst, src, nbytes, kind, stream.ptr)
    enqueue_us = (time.perf_counter() - t0) * 1e6
    end.record(stream)
    end.synchronize()
    return float(cupy.cuda.get_elapsed_time(start, end)), enqueue_us


def copy_series(cupy: ModuleType, dst: int, src: int, nbytes: int, kind: int,
                warmup: int, repeats: int) -> dict[str, Any]:
    """Median and spread of one copy's GB/s, device ms and host enqueue µs over `repeats`."""
    stream = cupy.cuda.Stream(non_blocking=True)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(warmup):
        timed_copy(cupy, dst, src, nbytes, kind, stream, start, end)
    samples = [timed_copy(cupy, dst, src, nbytes, kind, stream, start, end) for _ in range(repeats)]
    device_ms = [s[0] for s in samples]
    return {
        "gbs": summarize([nbytes / (ms * 1e-3) / 1e9 for ms in device_ms]),
        "device_ms": summarize(device_ms),
        "host_enqueue_us": summarize([s[1] for s in samples]),
    }


def bidirectional(cupy: ModuleType, h_src: int, d_dst: int, d_src: int, h_dst: int, nbytes: int,
                  warmup: int, repeats: int) -> dict[str, Any]:
    """H2D and D2H of `nbytes` each at once on two streams: total bytes over the span, GB/s."""
    up, down = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    start, down_done, end = cupy.cuda.Event(), cupy.cuda.Event(), cupy.cuda.Event()

    def once() -> float:
        start.record(up)
        down.wait_event(start)
        cupy.cuda.runtime.memcpyAsync(d_dst, h_src, nbytes, H2D, up.ptr)
        cupy.cuda.runtime.memcpyAsync(h_dst, d_src, nbytes, D2H, down.ptr)
        down_done.record(down)
        up.wait_event(down_done)
        end.record(up)
        end.synchronize()
        return float(cupy.cuda.get_elapsed_time(start, end))

    for _ in range(warmup):
        once()
    device_ms = [once() for _ in range(repeats)]
    return {"gbs": summarize([2 * nbytes / (ms * 1e-3) / 1e9 for ms in device_ms]),
            "device_ms": summarize(device_ms)}


def pinning_cost(cupy: ModuleType, existing: np.ndarray, repeats: int) -> dict[str, Any]:
    """Milliseconds per GiB to cudaHostAlloc (+ free) a buffer and to register (+ unregister)
    `existing`, an already touched pageable numpy buffer of the same size."""
    runtime = cupy.cuda.runtime
    nbytes = existing.nbytes
    per_gib = GIB / nbytes
    alloc, free, register, unregister = [], [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        ptr = int(runtime.hostAlloc(nbytes, 0))
        t1 = time.perf_counter()
        runtime.freeHost(ptr)
        t2 = time.perf_counter()
        runtime.hostRegister(host_pointer(existing), nbytes, 0)
        try:
            t3 = time.perf_counter()
        finally:
            runtime.hostUnregister(host_pointer(existing))
        t4 = time.perf_counter()
        alloc.append((t1 - t0) * 1e3 * per_gib)
        free.append((t2 - t1) * 1e3 * per_gib)
        register.append((t3 - t2) * 1e3 * per_gib)
        unregister.append((t4 - t3) * 1e3 * per_gib)
    return {"bytes": nbytes, "alloc_ms_per_gib": summarize(alloc), "free_ms_per_gib": summarize(free),
            "register_ms_per_gib": summarize(register),
            "unregister_ms_per_gib": summarize(unregister)}


def enqueue_load(cupy: ModuleType, dst: int, src: int, nbytes: int, seconds: float,
                 expected_gbs: float) -> tuple[Any, int]:
    """Enqueue pinned H2D copies lasting about `seconds` (so the link is busy while it is read);
    returns the stream to synchronize and how many copies went in."""
    stream = cupy.cuda.Stream(non_blocking=True)
    count = max(1, min(256, int(seconds * expected_gbs * 1e9 / nbytes) + 1))
    for _ in range(count):
        cupy.cuda.runtime.memcpyAsync(dst, src, nbytes, H2D, stream.ptr)
    return stream, count


def page_nodes(array: np.ndarray, samples: int = 64) -> dict[str, Any]:
    """Which NUMA nodes hold a sample of `array`'s pages (move_pages query), or why unknown."""
    try:
        from perfprobe.system import numa_sys
    except ImportError:
        return {"nodes": {}, "source": "unknown", "note": "perfprobe.system.numa_sys is not available"}
    page = 4096
    base = host_pointer(array) // page * page
    pages = max(1, array.nbytes // page)
    step = max(1, pages // samples)
    addresses = [base + i * page for i in range(0, pages, step)][:samples]
    try:
        status = numa_sys.page_nodes(addresses)
    except Exception as exc:  # no NUMA syscalls (ENOSYS), a seccomp filter, ...
        return {"nodes": {}, "source": "unknown", "note": f"move_pages failed: {exc}"}
    counts: dict[str, int] = {}
    for node in status:
        key = str(node) if node >= 0 else f"errno{-node}"  # 2: not present, 14: not movable
        counts[key] = counts.get(key, 0) + 1
    return {"nodes": counts, "source": "move_pages", "pages_sampled": len(addresses)}
