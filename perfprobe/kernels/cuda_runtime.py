"""The CUDA runtime as the GPU probes see it through cupy: load it, count devices, read properties.

The one module outside the probes' measure.py that imports cupy (ruff TID251): the runner's device
expansion and the `Gpu()` requirement call `load_cupy` / `device_count` here. No cupy, no driver, or
no device is a `GpuUnavailable` (skip, or error under --require-gpu); a cupy that is installed but
fails to import for another reason is a real error, as pytest's importorskip draws the line.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from perfprobe.errors import GpuUnavailable

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
    module: ModuleType = cupy
    return module


def device_count() -> int:
    """How many CUDA devices this process sees (raises GpuUnavailable when none)."""
    return int(load_cupy().cuda.runtime.getDeviceCount())


def free_memory_bytes(cupy: ModuleType) -> int:
    """Bytes free on the current device now (cudaMemGetInfo); budgets are fractions of it."""
    free, _total = cupy.cuda.runtime.memGetInfo()
    return int(free)


def pci_bus_id(cupy: ModuleType, device: int) -> str:
    """The device's PCI bus id as CUDA spells it (matched to NVML and sysfs by the callers)."""
    return str(cupy.cuda.runtime.deviceGetPCIBusId(device))


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
