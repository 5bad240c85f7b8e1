"""One stand-in for cupy and its CUDA runtime, for every GPU test on a host without a GPU (as
hyperfine's MockExecutor stands in for the processes it would time).

Device memory is host memory (numpy buffers the runtime keeps alive by pointer), copies are
memmoves, events read the host clock, streams and devices are context managers, and kernels are
whatever the test hands over (`functions`). It checks plumbing, never a figure: figures come from
the GPU hosts' recordings under tests/data. `install` puts it where kernels/cuda_runtime.py looks.
"""

from __future__ import annotations

import ctypes
import time
import types
from typing import Any, Callable, Optional

import numpy as np
import pytest

from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.engine.probe import ProbeContext
from perfprobe.engine.progress import null_progress
from perfprobe.errors import GpuUnavailable
from perfprobe.kernels import cuda_runtime

PROPERTIES = {"name": b"Fake GPU", "totalGlobalMem": 16 << 30, "asyncEngineCount": 2, "concurrentKernels": 1,
              "multiProcessorCount": 4, "major": 9, "minor": 0}


class CudaError(Exception):
    """cupy's CUDARuntimeError: a message and the cudaError_t status."""

    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(message or f"status {status}")
        self.status = status


class FakeRuntime:
    """The part of cupy.cuda.runtime the GPU probes call, on host memory.

    `live` maps each pointer not yet freed to its buffer; `calls` records ("sync" | "free" |
    "freeHost" | "pool", pointer or 0) in order; `locations` the prefetch and advice calls
    ("prefetch:DEVICE", "adviseN:DEVICE"); `enabled` the peer access (device, peer) pairs on."""

    CUDARuntimeError = CudaError

    def __init__(self, count: int = 1, *, peer: bool = True, free_bytes: int = 8 << 30,
                 attributes: Optional[dict[int, int]] = None, host_location_fails: bool = True,
                 sync_error: bool = False, properties: Optional[dict[str, Any]] = None,
                 bus_id: Optional[Callable[[int], str]] = None, mapped_host_alloc: bool = False) -> None:
        self.count, self.peer, self.free_bytes = count, peer, free_bytes
        self.attributes = attributes or {}
        self.host_location_fails, self.sync_error = host_location_fails, sync_error
        self.properties = {**PROPERTIES, **(properties or {})}
        self.bus_id = bus_id or (lambda device: "0000:ff:1f.7")
        self.mapped_host_alloc = mapped_host_alloc
        self.live: dict[int, np.ndarray] = {}
        self.freed: list[int] = []
        self.registered: set[int] = set()
        self.calls: list[tuple[str, int]] = []
        self.locations: list[str] = []
        self.current = 0
        self.enabled: set[tuple[int, int]] = {(1, 0)} if count > 1 else set()  # found on, to be kept
        self.peer_copies = 0

    def _alloc(self, nbytes: int) -> int:
        buffer = np.zeros(max(nbytes, 1), dtype=np.uint8)
        self.live[buffer.ctypes.data] = buffer
        return int(buffer.ctypes.data)

    def malloc(self, nbytes: int) -> int:
        return self._alloc(nbytes)

    def mallocManaged(self, nbytes: int, flags: int) -> int:
        self.locations.append("mallocManaged")
        return self._alloc(nbytes)

    def hostAlloc(self, nbytes: int, flags: int) -> int:
        if self.mapped_host_alloc:
            assert flags == 2, "zero-copy needs cudaHostAllocMapped"
        return self._alloc(nbytes)

    def _release(self, what: str, ptr: int) -> None:
        self.calls.append((what, ptr))
        del self.live[ptr]
        self.freed.append(ptr)

    def free(self, ptr: int) -> None:
        self._release("free", ptr)

    def freeHost(self, ptr: int) -> None:
        self._release("freeHost", ptr)

    def hostRegister(self, ptr: int, nbytes: int, flags: int) -> None:
        self.registered.add(ptr)

    def hostUnregister(self, ptr: int) -> None:
        self.registered.remove(ptr)

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        ctypes.memset(ptr, value, nbytes)

    def memcpyAsync(self, dst: int, src: int, nbytes: int, kind: int, stream: int) -> None:
        ctypes.memmove(dst, src, nbytes)

    def memcpyPeerAsync(self, dst: int, dst_device: int, src: int, src_device: int, nbytes: int, stream: int) -> None:
        self.peer_copies += 1
        ctypes.memmove(dst, src, nbytes)

    def deviceSynchronize(self) -> None:
        self.calls.append(("sync", 0))
        if self.sync_error:
            raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")

    def getDeviceCount(self) -> int:
        return self.count

    def deviceGetPCIBusId(self, device: int) -> str:
        return self.bus_id(device)

    def deviceGetAttribute(self, attribute: int, device: int) -> int:
        return self.attributes.get(attribute, 1)

    def getDeviceProperties(self, device: int) -> dict[str, Any]:
        return dict(self.properties)

    def runtimeGetVersion(self) -> int:
        return 13000

    driverGetVersion = runtimeGetVersion

    def memGetInfo(self) -> tuple[int, int]:
        return self.free_bytes, int(self.properties["totalGlobalMem"])

    def pointerGetAttributes(self, ptr: int) -> Any:
        return types.SimpleNamespace(devicePointer=ptr)

    def deviceCanAccessPeer(self, device: int, peer: int) -> int:
        return int(self.peer)

    def deviceEnablePeerAccess(self, peer: int) -> None:
        if (self.current, peer) in self.enabled:
            raise CudaError(704)
        self.enabled.add((self.current, peer))

    def deviceDisablePeerAccess(self, peer: int) -> None:
        if (self.current, peer) not in self.enabled:
            raise CudaError(705)
        self.enabled.remove((self.current, peer))

    def memPrefetchAsync(self, ptr: int, nbytes: int, device: int, stream: int) -> None:
        self._location("prefetch", device)

    def memAdvise(self, ptr: int, nbytes: int, advice: int, device: int) -> None:
        self._location(f"advise{advice}", device)

    def _location(self, what: str, device: int) -> None:
        if device == -1 and self.host_location_fails:
            raise CudaError(101, "cudaErrorInvalidDevice: invalid device ordinal")
        self.locations.append(f"{what}:{device}")


class FakeEvent:
    """A CUDA event on the host clock (a nonzero span between two records)."""

    done = True

    def __init__(self) -> None:
        self.at = 0.0

    def record(self, stream: Any = None) -> None:
        time.sleep(1e-5)
        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass


STREAM_PTR = 1234
"""The handle every fake stream answers (a test can look for it in the calls made with it)."""


class FakeStream:
    null: FakeStream

    def __init__(self, non_blocking: bool = False) -> None:
        self.ptr = STREAM_PTR

    def __enter__(self) -> FakeStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def synchronize(self) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass


FakeStream.null = FakeStream()


class DevArray(np.ndarray):
    """A numpy array that answers `.data.ptr` as a cupy array does."""

    @property
    def data(self) -> Any:  # type: ignore[override]
        return types.SimpleNamespace(ptr=self.ctypes.data)


class FakeArray:
    """cupy.zeros(1, uint64): a one-word device result read back with .get()."""

    def __init__(self) -> None:
        self.value = np.zeros(1, dtype=np.uint64)

    def fill(self, value: int) -> None:
        self.value[:] = value

    def get(self) -> np.ndarray:
        return self.value.copy()


def fake_cupy(runtime: FakeRuntime, functions: Optional[Callable[[str], Any]] = None) -> types.ModuleType:
    """A cupy module over `runtime`; `functions(name)` gives a RawModule's kernels (none by default)."""

    class Device:
        def __init__(self, index: int = 0) -> None:
            self.index, self.id = index, index

        def __enter__(self) -> Device:
            self.before, runtime.current = runtime.current, self.index
            return self

        def __exit__(self, *exc: Any) -> None:
            runtime.current = self.before

        def synchronize(self) -> None:
            pass

    def ndarray(shape: tuple[int, ...], dtype: Any, memptr: Any) -> np.ndarray:
        nbytes = shape[0] * np.dtype(dtype).itemsize
        return np.frombuffer((ctypes.c_char * nbytes).from_address(memptr.ptr), dtype=dtype).view(DevArray)

    def no_kernels(name: str) -> Any:
        raise AssertionError(f"this test hands over no kernel {name}")

    pool = types.SimpleNamespace(free_all_blocks=lambda: runtime.calls.append(("pool", 0)))
    module = types.ModuleType("cupy")
    module.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        runtime=runtime, Stream=FakeStream, Event=FakeEvent, Device=Device,
        get_elapsed_time=lambda a, b: max((b.at - a.at) * 1e3, 1e-3),
        UnownedMemory=lambda ptr, nbytes, owner: types.SimpleNamespace(ptr=ptr),
        MemoryPointer=lambda memory, offset: types.SimpleNamespace(ptr=memory.ptr + offset))
    module.RawModule = lambda code, options=(): types.SimpleNamespace(  # type: ignore[attr-defined]
        get_function=functions or no_kernels)
    module.ndarray = ndarray  # type: ignore[attr-defined]
    module.uint64 = np.uint64  # type: ignore[attr-defined]
    module.zeros = lambda n, dtype=None: FakeArray()  # type: ignore[attr-defined]
    module.get_default_memory_pool = lambda: pool  # type: ignore[attr-defined]
    module.get_default_pinned_memory_pool = lambda: pool  # type: ignore[attr-defined]
    return module


def install(monkeypatch: pytest.MonkeyPatch, runtime: FakeRuntime,
            functions: Optional[Callable[[str], Any]] = None) -> types.ModuleType:
    """kernels/cuda_runtime.load_cupy answers the fake cupy over `runtime` for this test."""
    cupy = fake_cupy(runtime, functions)
    monkeypatch.setattr(cuda_runtime, "load_cupy", lambda: cupy)
    return cupy


def no_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    """kernels/cuda_runtime.load_cupy says cupy is not installed, as on the CI host."""
    def unavailable() -> Any:
        raise GpuUnavailable("cupy is not installed", cuda_runtime.CUPY_HINT)
    monkeypatch.setattr(cuda_runtime, "load_cupy", unavailable)


def context(size: int, quick: bool = True) -> ProbeContext:
    """What a GPU probe's measure gets on the CI host: 8 GiB available, no GPU in the host facts."""
    host = {"memory": {"available_bytes": 8 << 30}, "gpus": []}
    return ProbeContext(RunConfig(quick=quick, options=Knobs(size=size)), host, null_progress, 0)


def streams_kernels(skip_chunk_at: Optional[int] = None) -> Callable[[str], Any]:
    """The streams probe's two kernels in numpy: affine_iter computes its closed form (launch number
    `skip_chunk_at` is lost: its chunk keeps the NaN poison), the gate kernel does nothing."""
    from perfprobe.kernels import streams_kernels as sk
    launches = {"n": 0}

    def affine_iter(grid: Any, block: Any, args: Any, stream: Any = None) -> None:
        x, y, n, iters, a, b = args
        launches["n"] += 1
        if launches["n"] != skip_chunk_at:
            y[:] = sk.reference(np.asarray(x), int(iters))

    def gate(grid: Any, block: Any, args: Any, stream: Any = None) -> None:
        pass

    return {"affine_iter": affine_iter, "gate": gate}.__getitem__
