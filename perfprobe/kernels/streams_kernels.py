"""H2D -> kernel -> D2H pipelines over CUDA streams (cupy): timings and checked results only.

The kernel iterates v <- v*a + b per element, with a = 1 - 2^-p and b = 2^-p exact in float32, so
its result has a closed form, 1 + (x - 1) * a^iters, that the host checks it against; `iters` is
chosen at run time so the kernel over the whole buffer takes about as long as one copy of it.

Each timed pipeline starts behind a short spin kernel ("gate") on the first stream, long enough for
Python to enqueue every chunk's work, so the events measure the device's overlap, not Python's
launch rate (that is reported separately as enqueue time).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

H2D, D2H = 1, 2
BLOCK = 256

_SOURCE = r"""
extern "C" __global__ void affine_iter(const float* __restrict__ x, float* __restrict__ y,
                                       long long n, int iters, float a, float b) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        for (int k = 0; k < iters; ++k) v = fmaf(v, a, b);
        y[i] = v;
    }
}

extern "C" __global__ void gate(long long nanoseconds) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < (unsigned long long)nanoseconds);
}
"""


def coefficients(iters: int) -> tuple[float, float]:
    """(a, b) with a = 1 - 2^-p, b = 2^-p, so a^iters is about 0.5-0.7 (results stay distinct from x)."""
    p = max(1, round(math.log2(max(1, iters) * 2)))
    return 1.0 - 2.0 ** -p, 2.0 ** -p


def reference(x: np.ndarray, iters: int) -> np.ndarray:
    """The kernel's result in closed form (float32 arithmetic; its own error is ~1e-7)."""
    a, _b = coefficients(iters)
    return ((x - np.float32(1)) * np.float32(a ** iters) + np.float32(1)).astype(np.float32)


def tolerance(iters: int) -> float:
    """Worst accumulated float32 rounding over the iterations (errors shrink by a per step)."""
    a, _b = coefficients(iters)
    return 4 * 2 ** -24 * 2 / (1 - a) + 1e-6


@dataclass
class Device:
    """The device-side pieces of one measurement: buffers, streams, compiled kernels."""

    cupy: ModuleType
    d_in: Any
    d_out: Any
    streams: list[Any]
    kernel: Any
    gate: Any
    blocks: int

    @classmethod
    def create(cls, cupy: ModuleType, allocations: Any, elements: int, max_streams: int,
               multiprocessors: int) -> "Device":
        """Compile the kernels and take the buffers from `allocations` (which frees them)."""
        module = cupy.RawModule(code=_SOURCE)
        d_in = allocations.device_array(elements, np.float32)
        d_out = allocations.device_array(elements, np.float32)
        streams = [cupy.cuda.Stream(non_blocking=False) for _ in range(max_streams)]
        return cls(cupy, d_in, d_out, streams, module.get_function("affine_iter"),
                   module.get_function("gate"), max(1, multiprocessors) * 16)

    def launch(self, lo: int, hi: int, iters: int, stream: Any) -> None:
        a, b = coefficients(iters)
        n = hi - lo
        grid = max(1, min(self.blocks, (n + BLOCK - 1) // BLOCK))
        self.kernel((grid,), (BLOCK,), (self.d_in[lo:hi], self.d_out[lo:hi], np.int64(n), np.int32(iters),
                                        np.float32(a), np.float32(b)), stream=stream)

    def spin(self, seconds: float, stream: Any) -> None:
        self.gate((1,), (1,), (np.int64(int(seconds * 1e9)),), stream=stream)

    def close(self) -> None:
        """Drop the references; the memory itself goes back in Allocations.close."""
        self.d_in = self.d_out = None
        self.streams = []


def time_kernel(dev: Device, elements: int, iters: int, repeats: int = 3) -> float:
    """Median milliseconds of the kernel over `elements` elements (after one warm-up)."""
    return float(np.median(kernel_samples(dev, elements, iters, repeats)))


def kernel_samples(dev: Device, elements: int, iters: int, repeats: int = 3) -> list[float]:
    """Milliseconds of each of `repeats` kernels over `elements` elements, after one warm-up."""
    stream = dev.streams[0]
    start, end = dev.cupy.cuda.Event(), dev.cupy.cuda.Event()
    samples = []
    for i in range(repeats + 1):
        start.record(stream)
        dev.launch(0, elements, iters, stream)
        end.record(stream)
        end.synchronize()
        if i:
            samples.append(float(dev.cupy.cuda.get_elapsed_time(start, end)))
    return samples


def calibrate_iters(dev: Device, elements: int, target_ms: float) -> int:
    """Iterations that make the kernel over `elements` take about `target_ms` (a linear fit)."""
    low, high = 64, 512
    t_low, t_high = time_kernel(dev, elements, low), time_kernel(dev, elements, high)
    per_iter = max((t_high - t_low) / (high - low), 1e-9)
    iters = int(round(high + (target_ms - t_high) / per_iter))
    return max(1, min(iters, 1_000_000))


def time_copy(dev: Device, dst: int, src: int, nbytes: int, kind: int, repeats: int = 3) -> float:
    """Median milliseconds of one whole-buffer copy."""
    return float(np.median(copy_samples(dev, dst, src, nbytes, kind, repeats)))


def copy_samples(dev: Device, dst: int, src: int, nbytes: int, kind: int, repeats: int = 3) -> list[float]:
    """Milliseconds of each of `repeats` whole-buffer copies, after one warm-up."""
    stream = dev.streams[0]
    start, end = dev.cupy.cuda.Event(), dev.cupy.cuda.Event()
    samples = []
    for i in range(repeats + 1):
        start.record(stream)
        dev.cupy.cuda.runtime.memcpyAsync(dst, src, nbytes, kind, stream.ptr)
        end.record(stream)
        end.synchronize()
        if i:
            samples.append(float(dev.cupy.cuda.get_elapsed_time(start, end)))
    return samples


def time_both_directions(dev: Device, h_in: int, h_out: int, nbytes: int, chunks: int = 1,
                         repeats: int = 3) -> float:
    """Median milliseconds of a whole-buffer H2D and D2H at once (both_directions_samples)."""
    return float(np.median(both_directions_samples(dev, h_in, h_out, nbytes, chunks, repeats)))


def both_directions_samples(dev: Device, h_in: int, h_out: int, nbytes: int, chunks: int = 1,
                            repeats: int = 3) -> list[float]:
    """Milliseconds of each of `repeats` whole-buffer H2D and D2H at once on two streams (after one
    warm-up), each direction issued as `chunks` copies (the driver interleaves the two engines
    better with several)."""
    cupy, up, down = dev.cupy, dev.streams[0], dev.streams[1 % len(dev.streams)]
    start, done, end = cupy.cuda.Event(), cupy.cuda.Event(), cupy.cuda.Event()
    bounds = np.linspace(0, nbytes // 4, chunks + 1).astype(np.int64) * 4
    samples = []
    for i in range(repeats + 1):
        start.record(up)
        down.wait_event(start)
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            lo, hi = int(lo), int(hi)
            cupy.cuda.runtime.memcpyAsync(dev.d_in.data.ptr + lo, h_in + lo, hi - lo, H2D, up.ptr)
            cupy.cuda.runtime.memcpyAsync(h_out + lo, dev.d_out.data.ptr + lo, hi - lo, D2H, down.ptr)
        done.record(down)
        up.wait_event(done)
        end.record(up)
        end.synchronize()
        if i:
            samples.append(float(cupy.cuda.get_elapsed_time(start, end)))
    return samples


def run_pipeline(dev: Device, h_in: int, h_out: int, elements: int, chunks: int, streams: int,
                 iters: int, gate_s: float, legacy_chunk: int | None = None) -> tuple[float, float]:
    """One pipelined pass: chunk i goes H2D, kernel, D2H on stream i % streams. Returns (device ms
    from the gate's end to the last stream's end, host ms spent enqueueing). With `legacy_chunk`,
    that chunk's kernel goes to the legacy default stream instead (which serialises the others)."""
    cupy, used = dev.cupy, dev.streams[:streams]
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    done = [cupy.cuda.Event() for _ in used]
    dev.spin(gate_s, used[0])
    start.record(used[0])
    for s in used[1:]:
        s.wait_event(start)
    t0 = time.perf_counter()
    bounds = np.linspace(0, elements, chunks + 1).astype(np.int64)
    for i in range(chunks):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        stream = used[i % streams]
        off, nbytes = lo * 4, (hi - lo) * 4
        cupy.cuda.runtime.memcpyAsync(dev.d_in.data.ptr + off, h_in + off, nbytes, H2D, stream.ptr)
        dev.launch(lo, hi, iters, cupy.cuda.Stream.null if i == legacy_chunk else stream)
        cupy.cuda.runtime.memcpyAsync(h_out + off, dev.d_out.data.ptr + off, nbytes, D2H, stream.ptr)
    enqueue_ms = (time.perf_counter() - t0) * 1e3
    for s, event in zip(used[1:], done[1:]):
        event.record(s)
        used[0].wait_event(event)
    end.record(used[0])
    end.synchronize()
    return float(cupy.cuda.get_elapsed_time(start, end)), enqueue_ms


def host_overlap(dev: Device, elements: int, iters: int, host_work: Any, repeats: int = 5) -> dict[str, float]:
    """Wall ms of GPU work + host work done one after the other (sync) and side by side (async)."""
    stream = dev.streams[0]

    def gpu_only() -> float:
        t0 = time.perf_counter()
        dev.launch(0, elements, iters, stream)
        stream.synchronize()
        return (time.perf_counter() - t0) * 1e3

    def host_only() -> float:
        t0 = time.perf_counter()
        host_work()
        return (time.perf_counter() - t0) * 1e3

    def sync() -> float:
        t0 = time.perf_counter()
        dev.launch(0, elements, iters, stream)
        stream.synchronize()
        host_work()
        return (time.perf_counter() - t0) * 1e3

    def overlapped() -> float:
        t0 = time.perf_counter()
        dev.launch(0, elements, iters, stream)
        host_work()
        stream.synchronize()
        return (time.perf_counter() - t0) * 1e3

    out = {}
    for name, func in (("gpu_ms", gpu_only), ("host_ms", host_only), ("sync_ms", sync), ("async_ms", overlapped)):
        func()
        out[name] = float(np.median([func() for _ in range(repeats)]))
    return out
