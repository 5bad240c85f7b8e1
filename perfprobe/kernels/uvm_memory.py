"""Unified-memory plumbing for the uvm probe: allocations that always free themselves, device
attributes, and prefetch / advice calls that work on CUDA 12 and CUDA 13 alike.

Why two call paths: cupy's `runtime.memPrefetchAsync(ptr, n, dstDevice, stream)` and
`runtime.memAdvise(ptr, n, advice, device)` take a plain device number, the CUDA 12 signature. With
cupy 14.2 on CUDA 13 they worked toward a device but failed toward the host (device -1,
cudaCpuDeviceId: cudaErrorInvalidDevice), because CUDA 13 names the host with a `cudaMemLocation`
of type host. So each call tries cupy first and falls back to the CUDA runtime bindings
(`cuda.bindings.runtime`, package cuda-bindings) with a `cudaMemLocation`; `UvmApi.used` records
which path served each operation, and `UvmApi.notes` why cupy's did not.

cupy is never imported here: callers pass the module they got from `perfprobe.kernels.cuda_runtime.load_cupy()`.
"""

from __future__ import annotations

import ctypes
import time
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Callable, Iterator

import numpy as np

HOST = -1
"""A location meaning "host memory" (cudaCpuDeviceId in the CUDA 12 int form)."""

ATTRIBUTES: dict[str, int] = {
    # cudaDeviceAttr numbers from CUDA's driver_types.h (the same in CUDA 11, 12 and 13).
    "managedMemory": 83,               # can allocate managed memory at all
    "concurrentManagedAccess": 89,     # CPU and GPU may touch managed memory at the same time
    "pageableMemoryAccess": 88,        # kernels may read plain malloc'd (pageable) host memory
    "pageableMemoryAccessUsesHostPageTables": 100,  # ... through the host's page tables (ATS)
    "hostNativeAtomicSupported": 86,   # atomics between CPU and GPU are native, not emulated
    "directManagedMemAccessFromHost": 101,  # host reaches device-resident managed memory in place
    "canMapHostMemory": 19,            # mapped pinned (zero-copy) host memory is possible
    "unifiedAddressing": 41,           # one virtual address space for host and device pointers
}

ADVISE_SET_PREFERRED_LOCATION = 3   # cudaMemAdviseSetPreferredLocation
ADVISE_UNSET_PREFERRED_LOCATION = 4
ADVISE_SET_ACCESSED_BY = 5          # cudaMemAdviseSetAccessedBy
ADVISE_UNSET_ACCESSED_BY = 6
_ADVICE_NAMES = {3: "advise preferred-location", 4: "unadvise preferred-location",
                 5: "advise accessed-by", 6: "unadvise accessed-by"}
_MEM_ATTACH_GLOBAL = 1              # cudaMemAttachGlobal
_HOST_ALLOC_MAPPED = 2              # cudaHostAllocMapped


class PathUnavailable(Exception):
    """One access path cannot be measured here (an API this CUDA stack lacks); the others can."""


def device_attributes(cupy: ModuleType, device: int) -> dict[str, int]:
    """The unified-memory attributes of `device`, by their CUDA names."""
    get = cupy.cuda.runtime.deviceGetAttribute
    return {name: int(get(number, device)) for name, number in ATTRIBUTES.items()}


def wait(event: Any, timeout_s: float) -> None:
    """Wait for a recorded cupy Event, but never forever: a stuck GPU becomes an error."""
    deadline = time.monotonic() + timeout_s
    while not event.done:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the GPU did not finish within {timeout_s:.0f} s")
        time.sleep(0.0002)


def host_view(ptr: int, size: int) -> np.ndarray:
    """A numpy uint32 view of `size` bytes at host-accessible address `ptr` (no copy, no touch)."""
    buffer = (ctypes.c_char * size).from_address(ptr)
    return np.frombuffer(memoryview(buffer), dtype=np.uint32)


@contextmanager
def managed(cupy: ModuleType, size: int) -> Iterator[int]:
    """`cudaMallocManaged(size, cudaMemAttachGlobal)`, freed on exit, also on error or Ctrl-C."""
    rt = cupy.cuda.runtime
    ptr = rt.mallocManaged(size, _MEM_ATTACH_GLOBAL)
    try:
        yield ptr
    finally:
        rt.free(ptr)


@contextmanager
def mapped_pinned(cupy: ModuleType, size: int) -> Iterator[tuple[int, int]]:
    """`cudaHostAlloc(size, cudaHostAllocMapped)`: yields (host pointer, device pointer)."""
    rt = cupy.cuda.runtime
    ptr = rt.hostAlloc(size, _HOST_ALLOC_MAPPED)
    try:
        yield ptr, int(rt.pointerGetAttributes(ptr).devicePointer)
    finally:
        rt.freeHost(ptr)


@contextmanager
def device_buffer(cupy: ModuleType, size: int) -> Iterator[int]:
    """Plain `cudaMalloc` (no pool, so nothing outlives the probe), freed on exit."""
    rt = cupy.cuda.runtime
    ptr = rt.malloc(size)
    try:
        yield ptr
    finally:
        rt.free(ptr)


_VIA_BINDINGS = "cuda.bindings.runtime (cudaMemLocation)"


class UvmApi:
    """cudaMemPrefetchAsync and cudaMemAdvise through cupy, else through cuda-bindings."""

    def __init__(self, cupy: ModuleType, device: int) -> None:
        self.cupy, self.device = cupy, device
        self.used: dict[str, str] = {}
        self.notes: list[str] = []

    def prefetch(self, ptr: int, size: int, location: int, stream_ptr: int) -> None:
        """Migrate [ptr, ptr+size) to `location` (a device index or HOST), queued on the stream."""
        rt = self.cupy.cuda.runtime
        self._call("prefetch", location,
                   lambda: rt.memPrefetchAsync(ptr, size, location, stream_ptr),
                   lambda cudart: _bindings_prefetch(cudart, ptr, size, location, stream_ptr))

    def advise(self, ptr: int, size: int, advice: int, location: int) -> None:
        """cudaMemAdvise(ptr, size, advice, location) (location: a device index or HOST)."""
        rt = self.cupy.cuda.runtime
        self._call(_ADVICE_NAMES.get(advice, f"advise {advice}"), location,
                   lambda: rt.memAdvise(ptr, size, advice, location),
                   lambda cudart: _bindings_advise(cudart, ptr, size, advice, location))

    def _call(self, op: str, location: int, via_cupy: Callable[[], Any],
              via_bindings: Callable[[ModuleType], None]) -> None:
        key = f"{op} to {'host' if location == HOST else 'device'}"
        if self.used.get(key) != _VIA_BINDINGS:  # once cupy's call failed, go straight to bindings
            try:
                via_cupy()
                self.used[key] = "cupy.cuda.runtime"
                return
            except self.cupy.cuda.runtime.CUDARuntimeError as exc:
                self.notes.append(f"cupy's {key} failed ({exc}); trying cuda-bindings")
        try:
            from cuda.bindings import runtime as cudart
        except ImportError as exc:
            raise PathUnavailable(f"{key}: cupy's call failed and cuda-bindings is not installed "
                                  "(pip install cuda-bindings)") from exc
        via_bindings(cudart)
        self.used[key] = _VIA_BINDINGS


def _bindings_location(cudart: ModuleType, location: int) -> Any:
    loc = cudart.cudaMemLocation()
    if location == HOST:
        loc.type, loc.id = cudart.cudaMemLocationType.cudaMemLocationTypeHost, 0
    else:
        loc.type, loc.id = cudart.cudaMemLocationType.cudaMemLocationTypeDevice, location
    return loc


def _bindings_prefetch(cudart: ModuleType, ptr: int, size: int, location: int, stream_ptr: int) -> None:
    # CUDA 12 bindings name the cudaMemLocation form `_v2`; CUDA 13 made it the only form.
    fn = getattr(cudart, "cudaMemPrefetchAsync_v2", None) or cudart.cudaMemPrefetchAsync
    _check(cudart, "cudaMemPrefetchAsync",
           fn(ptr, size, _bindings_location(cudart, location), 0, stream_ptr))


def _bindings_advise(cudart: ModuleType, ptr: int, size: int, advice: int, location: int) -> None:
    fn = getattr(cudart, "cudaMemAdvise_v2", None) or cudart.cudaMemAdvise
    _check(cudart, "cudaMemAdvise",
           fn(ptr, size, cudart.cudaMemoryAdvise(advice), _bindings_location(cudart, location)))


def _check(cudart: ModuleType, name: str, result: tuple) -> None:
    err = result[0]
    if err != cudart.cudaError_t.cudaSuccess:
        message = cudart.cudaGetErrorString(err)[1]
        text = message.decode() if isinstance(message, bytes) else str(message)
        raise PathUnavailable(f"{name} via cuda-bindings failed: {err.name}: {text}")
