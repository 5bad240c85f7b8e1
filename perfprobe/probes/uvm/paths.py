"""The uvm probe's access paths, each timed end to end: from data written on one side to the sum
computed on the other. Only numbers come out of here; only measure.py imports this module (it
drives the kernels of perfprobe/kernels/uvm_kernels.py and uvm_memory.py and imports no cupy).

GPU-side paths are timed with CUDA events on one stream (prefetches and copies included, host
initialisation excluded); host-side paths (the way back) with the host clock around the prefetch or
copy and the host read. Every repeat rewrites the data with a new salt on the writing side first,
so on-demand runs really fault, and every sum is checked against the exact expected value.
Each path allocates what it needs and frees it before the next one starts (try/finally, also on
Ctrl-C), so at most one buffer of `size` bytes of managed, pinned or pageable memory exists at once,
plus one device buffer.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

import numpy as np

from perfprobe.kernels.uvm_kernels import GpuKernels, expected_sum, host_fill, host_sum_parallel, pattern
from perfprobe.kernels.uvm_memory import (
    ADVISE_SET_ACCESSED_BY,
    ADVISE_SET_PREFERRED_LOCATION,
    HOST,
    UvmApi,
    device_buffer,
    host_view,
    managed,
    mapped_pinned,
    wait,
)
from perfprobe.pure.stats import Stat, summarize

Step = Callable[[int], dict[str, float]]
Times = dict[str, Stat]
_H2D, _D2H = 1, 2  # cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost


@dataclass
class Bench:
    """What every path needs: the device, its kernels and stream, the size and the repeats."""

    cupy: ModuleType
    device: int
    kernels: GpuKernels
    api: UvmApi
    stream: Any
    size: int
    repeats: int
    passes: int
    timeout_s: float
    period: np.ndarray = field(default_factory=pattern)
    fill_threads: int = 1  # host threads that write the data before each step, on `workers`
    workers: Executor | None = None  # their pool, while the paths run (measure._measure_on)

    def fill(self, view: np.ndarray, salt: int) -> None:
        """The host writes pattern + salt over `view` (untimed), on `fill_threads` threads."""
        host_fill(view, salt, self.period, self.workers, self.fill_threads)

    def event(self) -> Any:
        event = self.cupy.cuda.Event()
        event.record(self.stream)
        return event

    def seconds(self, start: Any, end: Any) -> float:
        return float(self.cupy.cuda.get_elapsed_time(start, end)) / 1e3

    def finish(self) -> Any:
        """Record an event and wait for it (bounded): everything queued so far is done."""
        event = self.event()
        wait(event, self.timeout_s)
        return event

    def check(self, got: int, salt: int, what: str, passes: int = 1) -> None:
        want = passes * expected_sum(self.size, salt)
        if got != want:
            raise RuntimeError(f"{what}: wrong sum {got}, expected {want} (data not read correctly)")

    def copy(self, dst: int, src: int, kind: int) -> None:
        self.cupy.cuda.runtime.memcpyAsync(dst, src, self.size, kind, self.stream.ptr)


def run_steps(step: Step, repeats: int) -> Times:
    """One warm-up, then `repeats` timed runs, each with its own salt; a summary per timed part."""
    step(1)
    samples = [step(salt) for salt in range(2, repeats + 2)]
    return {part: summarize([s[part] for s in samples]) for part in samples[0]}


def _read_step(b: Bench, view: np.ndarray, read_ptr: int, what: str,
               before: Callable[[], None] | None = None, before_part: str = "prefetch_s",
               passes: int = 1) -> Step:
    """Host writes `view`; then, optionally, `before` (a prefetch or a copy to the device, timed as
    `before_part`); then `passes` kernel reads of `read_ptr`, whose sum is checked."""
    def step(salt: int) -> dict[str, float]:
        b.fill(view, salt)
        b.kernels.reset()
        start = b.event()
        if before is not None:
            before()
        middle = b.event()
        for _ in range(passes):
            b.kernels.read_sum(read_ptr, b.size)
        end = b.finish()
        b.check(b.kernels.result(), salt, what, passes)
        times = {"time_s": b.seconds(start, end)}
        if before is not None:
            times.update({before_part: b.seconds(start, middle), "kernel_s": b.seconds(middle, end)})
        return times
    return step


def _gpu_read(b: Bench, ptr: int, view: np.ndarray, what: str,
              before: Callable[[], None] | None = None) -> Step:
    """Host writes `view`, then (optionally `before`, e.g. a prefetch) the kernel reads `ptr`."""
    return _read_step(b, view, ptr, what, before)


def managed_on_demand(b: Bench) -> Times:
    """GPU reads host-written managed memory; pages migrate on the GPU's page faults."""
    with managed(b.cupy, b.size) as ptr:
        return run_steps(_gpu_read(b, ptr, host_view(ptr, b.size), "managed on demand"), b.repeats)


def managed_prefetch(b: Bench) -> Times:
    """Same, after cudaMemPrefetchAsync to the GPU (the prefetch is inside the timed region)."""
    with managed(b.cupy, b.size) as ptr:
        prefetch = lambda: b.api.prefetch(ptr, b.size, b.device, b.stream.ptr)  # noqa: E731
        return run_steps(_gpu_read(b, ptr, host_view(ptr, b.size), "managed prefetch", prefetch),
                         b.repeats)


def managed_advise_preferred_gpu(b: Bench) -> Times:
    """On demand, with cudaMemAdviseSetPreferredLocation = this GPU set once beforehand."""
    with managed(b.cupy, b.size) as ptr:
        b.api.advise(ptr, b.size, ADVISE_SET_PREFERRED_LOCATION, b.device)
        return run_steps(_gpu_read(b, ptr, host_view(ptr, b.size), "advise preferred GPU"), b.repeats)


def managed_advise_accessed_by(b: Bench) -> Times:
    """Preferred location host + accessed-by this GPU: the GPU reads host pages in place."""
    with managed(b.cupy, b.size) as ptr:
        b.api.advise(ptr, b.size, ADVISE_SET_PREFERRED_LOCATION, HOST)
        b.api.advise(ptr, b.size, ADVISE_SET_ACCESSED_BY, b.device)
        return run_steps(_gpu_read(b, ptr, host_view(ptr, b.size), "advise accessed-by"), b.repeats)


def pageable_direct(b: Bench) -> Times:
    """The kernel reads plain numpy (malloc'd, pageable) memory through its host pointer."""
    array = np.empty(b.size // 4, dtype=np.uint32)  # freed when this returns or raises
    return run_steps(_gpu_read(b, array.ctypes.data, array, "pageable direct"), b.repeats)


def pinned_paths(b: Bench) -> dict[str, Times]:
    """Explicit copy (the reference), device memory, zero-copy; 1 pass and `passes` passes."""
    with mapped_pinned(b.cupy, b.size) as (host_ptr, mapped_ptr), device_buffer(b.cupy, b.size) as dev:
        view = host_view(host_ptr, b.size)
        copy = lambda: b.copy(dev, host_ptr, _H2D)  # noqa: E731
        return {
            "explicit_copy": run_steps(_copy_read(b, view, dev, copy, 1), b.repeats),
            "device_memory": run_steps(_device_read(b, dev), b.repeats),
            "zero_copy": run_steps(_copy_read(b, view, mapped_ptr, None, 1), b.repeats),
            "explicit_copy_passes": run_steps(_copy_read(b, view, dev, copy, b.passes), b.repeats),
            "zero_copy_passes": run_steps(_copy_read(b, view, mapped_ptr, None, b.passes), b.repeats),
        }


def _copy_read(b: Bench, view: np.ndarray, read_ptr: int, copy: Callable[[], None] | None,
               passes: int) -> Step:
    """Host writes pinned memory; optionally one copy to the device; then `passes` kernel reads."""
    return _read_step(b, view, read_ptr, "copy then read" if copy else "zero-copy", copy, "copy_s", passes)


def _device_read(b: Bench, dev: int) -> Step:
    """The ceiling: the kernel alone, on data the GPU wrote into its own memory."""
    def step(salt: int) -> dict[str, float]:
        b.kernels.fill(dev, b.size, salt)
        b.kernels.reset()
        start = b.event()
        b.kernels.read_sum(dev, b.size)
        end = b.finish()
        b.check(b.kernels.result(), salt, "device memory")
        return {"time_s": b.seconds(start, end)}
    return step


def host_on_demand(b: Bench) -> Times:
    """The way back: host threads read GPU-written managed memory; pages fault back."""
    with managed(b.cupy, b.size) as ptr:
        return run_steps(_host_read(b, ptr, host_view(ptr, b.size), None), b.repeats)


def host_prefetch(b: Bench) -> Times:
    """Same, after cudaMemPrefetchAsync to the host (the prefetch is inside the timed region)."""
    with managed(b.cupy, b.size) as ptr:
        to_host = lambda: b.api.prefetch(ptr, b.size, HOST, b.stream.ptr)  # noqa: E731
        return run_steps(_host_read(b, ptr, host_view(ptr, b.size), to_host), b.repeats)


def host_reference_reads(b: Bench) -> dict[str, Times]:
    """References for the way back: device memory copied to pinned then read; pinned read alone."""
    with mapped_pinned(b.cupy, b.size) as (host_ptr, _), device_buffer(b.cupy, b.size) as dev:
        view = host_view(host_ptr, b.size)
        copy = lambda: b.copy(host_ptr, dev, _D2H)  # noqa: E731
        return {"host_explicit_copy": run_steps(_host_read(b, dev, view, copy), b.repeats),
                "host_local": run_steps(_host_local(b, view), b.repeats)}


def _host_read(b: Bench, gpu_ptr: int, view: np.ndarray, move: Callable[[], None] | None) -> Step:
    """GPU writes `gpu_ptr`; then (optionally `move`: prefetch or copy) host threads read `view`."""
    def step(salt: int) -> dict[str, float]:
        b.kernels.fill(gpu_ptr, b.size, salt)
        b.finish()
        start = time.perf_counter()
        if move is not None:
            move()
            b.finish()
        middle = time.perf_counter()
        got = int(host_sum_parallel(view))
        end = time.perf_counter()
        b.check(got, salt, "host read")
        times = {"time_s": end - start}
        if move is not None:
            times.update(move_s=middle - start, read_s=end - middle)
        return times
    return step


def _host_local(b: Bench, view: np.ndarray) -> Step:
    """The ceiling: host threads read host memory the host just wrote."""
    def step(salt: int) -> dict[str, float]:
        b.fill(view, salt)
        start = time.perf_counter()
        got = int(host_sum_parallel(view))
        elapsed = time.perf_counter() - start
        b.check(got, salt, "host local read")
        return {"time_s": elapsed}
    return step
