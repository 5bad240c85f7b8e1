"""`perfprobe pinned`: host-GPU copies from pageable and pinned memory, measured against the link.

measure() sweeps copy sizes (64 KiB up to --size) in both directions from a plain numpy buffer
and from a cudaHostAlloc buffer, both directions at once from pinned memory, the host time of each
enqueue call, the cost of page-locking, the PCIe link (idle and under load) and where the buffers'
pages live. judge() is perfprobe.probes.pinned_rules.judge (pure, tested on recorded numbers).
"""

from __future__ import annotations

import time
from typing import Any

from perfprobe.config import UsageError
from perfprobe.probe import Probe, ProbeContext, ProbeSkipped
from perfprobe.probes.pinned_rules import judge

MIN_SIZE = 64 << 10
DEFAULT_MAX = 1 << 30
QUICK_MAX = 256 << 20
LARGE = 64 << 20  # copies of this size and up use fewer repeats (each already takes milliseconds)


def sweep_sizes(top: int, quick: bool) -> list[int]:
    """64 KiB, then x4 (x16 with --quick) up to `top`, and `top` itself as the last size."""
    factor = 16 if quick else 4
    sizes, size = [], MIN_SIZE
    while size <= top:
        sizes.append(size)
        size *= factor
    if sizes and sizes[-1] != top:
        sizes.append(top)
    return sizes


def plan_top(requested: int, quick: bool, device_budget: int, host_budget: int) -> tuple[int, str | None]:
    """The largest copy size: the request, capped by --quick and the memory budgets.

    Device: two buffers of `top`; host: one pageable and two pinned buffers plus one transient
    pinned allocation for the pinning cost. Returns (top, what capped it or None).
    """
    top, capped = (min(requested, QUICK_MAX), None) if quick else (requested, None)
    for limit, name in ((device_budget // 2, "half the device's free memory"),
                        (host_budget // 4, "a quarter of the host's available memory")):
        if limit < top:
            top, capped = limit, name
    top = top // 4096 * 4096
    return top, capped


def repeats_for(size: int, quick: bool) -> tuple[int, int]:
    """(warm-up, timed repeats) for copies of `size` bytes."""
    if quick:
        return 1, (5 if size >= LARGE else 10)
    return 2, (7 if size >= LARGE else 20)


def _requested(ctx: ProbeContext) -> int:
    value = ctx.config.option("size", DEFAULT_MAX)
    if not isinstance(value, int) or value < MIN_SIZE:
        raise UsageError(f"--size {value!r}: must be at least 64K")
    return value


def measure(ctx: ProbeContext) -> dict[str, Any]:
    from perfprobe import gpu
    from perfprobe.budget import host_memory_budget

    cupy = gpu.load_cupy()
    device = ctx.device or 0
    with cupy.cuda.Device(device):
        requested = _requested(ctx)
        top, capped = plan_top(requested, ctx.quick, gpu.device_memory_budget(cupy),
                               host_memory_budget(ctx.host, ctx.config.bind).bytes)
        if top < MIN_SIZE:
            raise ProbeSkipped("too little free memory for a 64 KiB copy",
                               "free device or host memory and run again")
        raw = _measure_device(cupy, device, top, ctx)
    raw["budget"] = {"requested_bytes": requested, "top_bytes": top, "capped_by": capped}
    return raw


def _measure_device(cupy: Any, device: int, top: int, ctx: ProbeContext) -> dict[str, Any]:
    from perfprobe import gpu
    from perfprobe.kernels import gpu_state, transfer_kernels as tk

    bus_id = cupy.cuda.runtime.deviceGetPCIBusId(device)
    nvml = gpu_state.Nvml(bus_id)
    buffers = tk.Allocations(cupy)
    try:
        raw: dict[str, Any] = {"device": {"index": device, "pci_bus_id": bus_id,
                                          **gpu.device_properties(cupy, device),
                                          "driver_version": nvml.driver_version(),
                                          "nvml_error": nvml.error},
                               "quick": ctx.quick, "bind": ctx.config.bind}
        raw["state_before"] = nvml.state()
        raw["sysfs_link"] = gpu_state.sysfs_link(bus_id)
        raw.update(_sweep_and_load(cupy, tk, gpu_state, nvml, buffers, bus_id, top, ctx))
        raw["numa"]["gpu_node"] = raw["sysfs_link"]["numa_node"]
        raw["state_after"] = nvml.state()
        return raw
    finally:
        buffers.close()
        nvml.close()


def _sweep_and_load(cupy: Any, tk: Any, gpu_state: Any, nvml: Any, buffers: Any, bus_id: str,
                    top: int, ctx: ProbeContext) -> dict[str, Any]:
    """The copy sweep, the link read under load, the pinning cost and the pages' NUMA nodes (the
    GPU's own node comes from the sysfs link read the caller already made)."""
    bufs = _buffers(cupy, buffers, top)
    out = _sweep(cupy, tk, bufs, sweep_sizes(top, ctx.quick), ctx)
    out.update(_under_load(cupy, tk, gpu_state, nvml, bufs, bus_id, top,
                           out["pinned"]["h2d"][-1]["gbs"]["median"]))
    cost_bytes = min(top, QUICK_MAX) if ctx.quick else top
    out["pinning_cost"] = tk.pinning_cost(cupy, bufs["pageable"][:cost_bytes], 2 if ctx.quick else 3)
    out["numa"] = {"pinned_pages": tk.page_nodes(bufs["view_a"]),
                   "pageable_pages": tk.page_nodes(bufs["pageable"])}
    return out


def _buffers(cupy: Any, buffers: Any, top: int) -> dict[str, Any]:
    """Two device buffers, one pageable and two pinned host buffers, every page written once."""
    import numpy as np

    d_a, d_b = buffers.device(top), buffers.device(top)
    cupy.cuda.runtime.memset(d_a, 0x3C, top)
    cupy.cuda.runtime.memset(d_b, 0xC3, top)
    pageable = np.empty(top, dtype=np.uint8)
    pageable.fill(0x5A)
    pin_a, view_a = buffers.pinned(top)
    pin_b, view_b = buffers.pinned(top)
    view_a.fill(0xA5)
    view_b.fill(0x96)
    cupy.cuda.Device().synchronize()
    return {"d_a": d_a, "d_b": d_b, "pageable": pageable, "pin_a": pin_a, "view_a": view_a, "pin_b": pin_b}


def _sweep(cupy: Any, tk: Any, bufs: dict[str, Any], sizes: list[int], ctx: ProbeContext) -> dict[str, Any]:
    """Each size: pageable and pinned H2D and D2H, and pinned both directions at once."""
    out: dict[str, Any] = {"sizes_bytes": sizes, "pageable": {"h2d": [], "d2h": []},
                           "pinned": {"h2d": [], "d2h": [], "bidir": []}}
    hosts = {"pageable": tk.host_pointer(bufs["pageable"]), "pinned": bufs["pin_a"]}
    d_a, d_b = bufs["d_a"], bufs["d_b"]
    with ctx.progress("pinned: copy sweep", len(sizes)) as task:
        for size in sizes:
            warm, reps = repeats_for(size, ctx.quick)
            for name in ("pageable", "pinned"):
                dst_host = hosts["pageable"] if name == "pageable" else bufs["pin_b"]
                out[name]["h2d"].append(tk.copy_series(cupy, d_a, hosts[name], size, tk.H2D, warm, reps))
                out[name]["d2h"].append(tk.copy_series(cupy, dst_host, d_b, size, tk.D2H, warm, reps))
            out["pinned"]["bidir"].append(
                tk.bidirectional(cupy, bufs["pin_a"], d_a, d_b, bufs["pin_b"], size, warm, reps))
            task.advance()
    return out


def _under_load(cupy: Any, tk: Any, gpu_state: Any, nvml: Any, bufs: dict[str, Any], bus_id: str,
                top: int, expected_gbs: float) -> dict[str, Any]:
    """GPU state and link read while ~50 ms of pinned H2D copies are in flight."""
    stream, count = tk.enqueue_load(cupy, bufs["d_a"], bufs["pin_a"], top, 0.05, expected_gbs)
    time.sleep(0.01)
    out = {"state_under_load": nvml.state(), "sysfs_link_under_load": gpu_state.sysfs_link(bus_id),
           "load_copies": count}
    stream.synchronize()
    return out


PROBE = Probe(name="pinned", title="Host-GPU copies: pageable vs pinned, against the PCIe link",
              measure_module=measure, judge=judge, legacy_needs_gpu=True)
