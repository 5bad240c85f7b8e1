"""The shapes every GPU probe records in its raw numbers, named once: the CUDA device, NVML's state
of the GPU and its link, the GPU's activity (gpu_activity.py reads it) and the memory budget.

Pure types (kernels/cuda_runtime.py, kernels/nvml.py and budget.py fill them); the probes' figures
modules type their raw numbers with them.
"""

from __future__ import annotations

from typing import Literal, Optional, TypedDict

StateKey = Literal["state_before", "state_under_load", "state_after"]
STATES: tuple[tuple[str, StateKey], ...] = (("before", "state_before"), ("under load", "state_under_load"),
                                            ("after", "state_after"))
"""NVML's readings of the GPU's state a GPU probe records: when, and the raw key."""


class Device(TypedDict, total=False):
    """cuda_runtime's properties of the measured device, with NVML's driver version beside them."""

    index: int
    pci_bus_id: str
    name: str
    total_memory_bytes: int
    async_engine_count: int
    concurrent_kernels: int
    multiprocessors: int
    compute_capability: str
    cuda_runtime_version: int
    cuda_driver_version: int
    memory_clock_khz: int
    bus_width_bits: int
    l2_bytes: int
    max_threads_per_sm: int
    shared_per_sm_bytes: int
    max_blocks_per_sm: int
    driver_version: Optional[str]
    nvml_error: Optional[str]


class Link(TypedDict, total=False):
    """A PCIe link as NVML or sysfs reads it (None: unknown)."""

    gen_current: Optional[int]
    gen_max: Optional[int]
    gen_max_gpu: Optional[int]
    width_current: Optional[int]
    width_max: Optional[int]
    numa_node: Optional[int]


class GpuState(TypedDict, total=False):
    """NVML's performance state, clocks and clock-event reasons, with the link, read at one moment."""

    pstate: Optional[int]
    sm_clock_mhz: Optional[int]
    mem_clock_mhz: Optional[int]
    sm_clock_max_mhz: Optional[int]
    clock_event_reasons: Optional[int]
    link: Optional[Link]


class GpuProcess(TypedDict, total=False):
    pid: int
    used_bytes: Optional[int]


class ActivityReading(TypedDict, total=False):
    """NVML's utilisation and the processes on the GPU at one moment (Nvml.activity)."""

    gpu_util_percent: Optional[float]
    memory_util_percent: Optional[float]
    processes: list[GpuProcess]
    own_pid: int
    own_listed: bool
    readable: bool


class GpuActivity(TypedDict, total=False):
    """raw["gpu_activity"]: before the probe started work and after it ended."""

    before: ActivityReading
    after: ActivityReading


class Budget(TypedDict, total=False):
    """The memory budget's record: asked, allowed (top_bytes or size_bytes) and what capped it."""

    requested_bytes: int
    top_bytes: int
    size_bytes: int
    capped_by: Optional[str]
