"""`perfprobe pinned` measurement: the copy sweep, the link under load, the pinning cost, the pages'
NUMA nodes. Raw numbers only (judged in rules.py); every allocation is freed on the way out."""

from __future__ import annotations

import time
from typing import Any

from perfprobe.engine.probe import ProbeContext
from perfprobe.errors import ProbeSkipped
from perfprobe.host.pci import gpu_link
from perfprobe.host.sysroot import SysRoot
from perfprobe.kernels import cuda_runtime, nvml
from perfprobe.kernels import transfer_kernels as tk
from perfprobe.probes.pinned import plan
from perfprobe.probes.pinned.plan import PRESETS, Preset
from perfprobe.system.budget import gpu_memory_budget, host_memory_budget


def measure(ctx: ProbeContext) -> dict[str, Any]:
    cupy = cuda_runtime.load_cupy()
    device = ctx.device or 0
    preset = ctx.config.preset(PRESETS)
    with cupy.cuda.Device(device):
        requested = plan.requested_bytes(ctx.config)
        top, capped = plan.plan_top(requested, preset, gpu_memory_budget(cuda_runtime.free_memory_bytes(cupy)),
                                    host_memory_budget(ctx.host, ctx.config.bind))
        if top < plan.MIN_SIZE:
            raise ProbeSkipped("too little free memory for a 64 KiB copy",
                               "free device or host memory and run again")
        raw = _measure_device(cupy, device, top, preset, ctx)
    raw["budget"] = {"requested_bytes": requested, "top_bytes": top, "capped_by": capped}
    return raw


def _measure_device(cupy: Any, device: int, top: int, preset: Preset, ctx: ProbeContext) -> dict[str, Any]:
    bus_id = cuda_runtime.pci_bus_id(cupy, device)
    sysfs = SysRoot(ctx.config.fsroot)
    session = nvml.Nvml(bus_id)
    buffers = tk.Allocations(cupy)
    try:
        raw: dict[str, Any] = {"device": {"index": device, "pci_bus_id": bus_id,
                                          **cuda_runtime.device_properties(cupy, device),
                                          "driver_version": session.driver_version(),
                                          "nvml_error": session.error},
                               "quick": ctx.quick, "bind": ctx.config.bind}
        raw["state_before"] = session.state()
        raw["gpu_activity"] = {"before": session.activity()}  # other work on the GPU (gpu_activity.py)
        raw["sysfs_link"] = gpu_link(sysfs, bus_id)
        raw.update(_sweep_and_load(cupy, session, sysfs, buffers, bus_id, top, preset, ctx))
        raw["numa"]["gpu_node"] = raw["sysfs_link"]["numa_node"]
        raw["gpu_activity"]["after"] = session.activity()
        raw["state_after"] = session.state()
        return raw
    finally:
        buffers.close()
        session.close()


def _sweep_and_load(cupy: Any, session: nvml.Nvml, sysfs: SysRoot, buffers: tk.Allocations, bus_id: str,
                    top: int, preset: Preset, ctx: ProbeContext) -> dict[str, Any]:
    """The copy sweep, the link read under load, the pinning cost and the pages' NUMA nodes (the
    GPU's own node comes from the sysfs link read the caller already made)."""
    bufs = _buffers(cupy, buffers, top)
    out = _sweep(cupy, bufs, plan.sweep_sizes(top, preset), preset, ctx)
    out.update(_under_load(cupy, session, sysfs, bufs, bus_id, top, out["pinned"]["h2d"][-1]["gbs"]["median"]))
    cost_bytes = plan.pinning_bytes(top, preset)
    out["pinning_cost"] = tk.pinning_cost(cupy, bufs["pageable"][:cost_bytes], preset.pinning_repeats)
    out["numa"] = {"pinned_pages": tk.page_nodes(bufs["view_a"]),
                   "pageable_pages": tk.page_nodes(bufs["pageable"])}
    return out


def _buffers(cupy: Any, buffers: tk.Allocations, top: int) -> dict[str, Any]:
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


def _sweep(cupy: Any, bufs: dict[str, Any], sizes: list[int], preset: Preset, ctx: ProbeContext) -> dict[str, Any]:
    """Each size: pageable and pinned H2D and D2H, and pinned both directions at once."""
    out: dict[str, Any] = {"sizes_bytes": sizes, "pageable": {"h2d": [], "d2h": []},
                           "pinned": {"h2d": [], "d2h": [], "bidir": []}}
    hosts = {"pageable": tk.host_pointer(bufs["pageable"]), "pinned": bufs["pin_a"]}
    d_a, d_b = bufs["d_a"], bufs["d_b"]
    with ctx.progress("pinned: copy sweep", len(sizes)) as task:
        for size in sizes:
            warm, reps = plan.repeats_for(size, preset)
            for name in ("pageable", "pinned"):
                dst_host = hosts["pageable"] if name == "pageable" else bufs["pin_b"]
                out[name]["h2d"].append(tk.copy_series(cupy, d_a, hosts[name], size, tk.H2D, warm, reps))
                out[name]["d2h"].append(tk.copy_series(cupy, dst_host, d_b, size, tk.D2H, warm, reps))
            out["pinned"]["bidir"].append(
                tk.bidirectional(cupy, bufs["pin_a"], d_a, d_b, bufs["pin_b"], size, warm, reps))
            task.advance()
    return out


def _under_load(cupy: Any, session: nvml.Nvml, sysfs: SysRoot, bufs: dict[str, Any], bus_id: str,
                top: int, expected_gbs: float) -> dict[str, Any]:
    """GPU state and link read while ~50 ms of pinned H2D copies are in flight."""
    stream, count = tk.enqueue_load(cupy, bufs["d_a"], bufs["pin_a"], top, 0.05, expected_gbs)
    time.sleep(0.01)
    out = {"state_under_load": session.state(), "sysfs_link_under_load": gpu_link(sysfs, bus_id),
           "load_copies": count}
    stream.synchronize()
    return out


def remeasure(ctx: ProbeContext, raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Confirmation (perfprobe/engine/confirm.py): the largest pinned copies, H2D and D2H, timed again
    (the point the bandwidth warn rests on); `raw` with those two entries replaced."""
    cupy = cuda_runtime.load_cupy()
    preset = ctx.config.preset(PRESETS)
    top = int(raw["budget"]["top_bytes"])
    out = {**raw, "pinned": {k: list(v) for k, v in raw["pinned"].items()}}
    buffers = tk.Allocations(cupy)
    try:
        with cupy.cuda.Device(ctx.device or 0):
            bufs = _buffers(cupy, buffers, top)
            warm, reps = plan.repeats_for(top, preset)
            out["pinned"]["h2d"][-1] = tk.copy_series(cupy, bufs["d_a"], bufs["pin_a"], top, tk.H2D, warm, reps)
            out["pinned"]["d2h"][-1] = tk.copy_series(cupy, bufs["pin_b"], bufs["d_b"], top, tk.D2H, warm, reps)
    finally:
        buffers.close()
    return out
