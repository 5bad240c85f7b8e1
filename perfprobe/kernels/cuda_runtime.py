"""Shared GPU plumbing for the GPU probes: load cupy lazily, choose the device, size allocations.

No cupy, no driver, or no device is a `GpuUnavailable` (skip, or error under --require-gpu); a cupy
that is installed but fails to import for another reason is a real error, as pytest's importorskip
draws the line.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from perfprobe.probe import GpuUnavailable

CUPY_HINT = "pip install 'perfprobe[gpu]' (CUDA 12) or 'perfprobe[gpu-cuda13]' (CUDA 13 drivers)"


def load_cupy() -> ModuleType:
    """Import cupy and check that a driver and at least one device answer."""
    try:
        import cupy
    except ModuleNotFoundError as exc:
        raise GpuUnavailable("cupy is not installed", CUPY_HINT) from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError or a missing libcuda: no usable driver
        raise GpuUnavailable(f"no usable CUDA driver: {_cuda_message(exc)}",
                             "install the NVIDIA driver, or run on a GPU host") from exc
    if count < 1:
        raise GpuUnavailable("no CUDA device is visible", "check CUDA_VISIBLE_DEVICES")
    return cupy


def device_count() -> int:
    """How many CUDA devices this process sees (raises GpuUnavailable when none)."""
    return int(load_cupy().cuda.runtime.getDeviceCount())


def device_memory_budget(cupy: ModuleType, fraction: float = 0.5) -> int:
    """Bytes a probe may take on the current device: a fraction of what is free now."""
    free, _total = cupy.cuda.runtime.memGetInfo()
    return int(free * fraction)


def device_properties(cupy: ModuleType, device: int) -> dict[str, Any]:
    """The device's name and the attributes the probes reason about, as plain values."""
    props = cupy.cuda.runtime.getDeviceProperties(device)
    name = props.get("name", b"")
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "total_memory_bytes": int(props.get("totalGlobalMem", 0)),
        "async_engine_count": int(props.get("asyncEngineCount", 0)),
        "concurrent_kernels": int(props.get("concurrentKernels", 0)),
        "multiprocessors": int(props.get("multiProcessorCount", 0)),
        "compute_capability": f"{props.get('major', 0)}.{props.get('minor', 0)}",
        "cuda_runtime_version": int(cupy.cuda.runtime.runtimeGetVersion()),
        "cuda_driver_version": int(cupy.cuda.runtime.driverGetVersion()),
    }


def _cuda_message(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
