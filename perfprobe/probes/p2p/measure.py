"""`perfprobe p2p` measurement: for each pair of selected GPUs, peer access, cudaMemcpyPeerAsync one
way (a size sweep) and both ways at once with peer access on, the same staged through host memory
with it off, small-copy latency, and NVML's NVLink / PCIe topology. Raw numbers only (judged in
rules.py); the peer-access state found is restored and every buffer freed on the way out."""

from __future__ import annotations

from typing import Any

from perfprobe.engine.probe import ProbeContext
from perfprobe.errors import ProbeSkipped
from perfprobe.host.pci import sysfs_address
from perfprobe.kernels import cuda_runtime, nvml
from perfprobe.kernels import p2p_kernels as pk
from perfprobe.probes.p2p import plan
from perfprobe.probes.p2p.plan import PRESETS, Pair, Preset
from perfprobe.system.budget import MemoryBudget, gpu_memory_budget

ONE_GPU = "one GPU: nothing to pair"


def measure(ctx: ProbeContext) -> dict[str, Any]:
    cupy = cuda_runtime.load_cupy()
    devices = list(ctx.devices) or list(range(cuda_runtime.device_count()))
    if len(devices) < 2:
        raise ProbeSkipped(ONE_GPU, "select two or more GPUs (--device all, --device 0,1) on a host that has them")
    preset = ctx.config.preset(PRESETS)
    requested = plan.requested_bytes(ctx.config)
    top, capped = plan.plan_top(requested, preset, [_budget(cupy, d) for d in devices])
    if top < plan.MIN_SIZE:
        raise ProbeSkipped("too little free GPU memory for two 1 MiB buffers on each GPU",
                           "free device memory and run again")
    pairs, sampled = plan.sample_pairs(devices, preset.max_pairs)
    info = [_device(cupy, d, ctx) for d in devices]
    raw: dict[str, Any] = {
        "devices": info, "selected": devices, "pairs": [list(p) for p in pairs],
        "pairs_total": len(plan.all_pairs(devices)), "sampled": sampled, "quick": ctx.quick,
        "sizes_bytes": plan.sweep_sizes(top, preset), "latency_bytes": plan.LATENCY_BYTES,
        "budget": {"requested_bytes": requested, "top_bytes": top, "capped_by": capped},
        "topology": nvml.p2p_topology({d["index"]: d["pci_bus_id"] for d in info}),
    }
    raw["results"] = _measure_pairs(cupy, devices, pairs, top, raw["sizes_bytes"], preset, ctx)
    return raw


def _budget(cupy: Any, device: int) -> MemoryBudget:
    with cupy.cuda.Device(device):
        return gpu_memory_budget(cuda_runtime.free_memory_bytes(cupy))


def _device(cupy: Any, device: int, ctx: ProbeContext) -> dict[str, Any]:
    """Name, bus id, compute capability, and the NUMA node the host facts give this GPU."""
    bus = sysfs_address(cuda_runtime.pci_bus_id(cupy, device))
    props = cuda_runtime.device_properties(cupy, device)
    facts: dict[str, Any] = next((g for g in ctx.host.get("gpus") or [] if g.get("pci_bus_id") == bus), {})
    return {"index": device, "pci_bus_id": bus, "name": props["name"],
            "compute_capability": props["compute_capability"], "async_engine_count": props["async_engine_count"],
            "total_memory_bytes": props["total_memory_bytes"], "numa_node": facts.get("numa_node"),
            "pcie": facts.get("pcie"), "cuda_driver_version": props["cuda_driver_version"]}


def _measure_pairs(cupy: Any, devices: list[int], pairs: list[Pair], top: int, sizes: list[int],
                   preset: Preset, ctx: ProbeContext) -> dict[str, Any]:
    buffers = pk.Buffers(cupy)
    try:
        mem = {d: (buffers.take(d, top, 0x3C), buffers.take(d, top, 0xC3)) for d in devices}
        results: dict[str, Any] = {}
        with ctx.progress("p2p: GPU pairs", len(pairs)) as task:
            for a, b in pairs:
                results.update(_pair(cupy, mem, a, b, top, sizes, preset))
                task.advance()
        return results
    finally:
        buffers.close()


def _pair(cupy: Any, mem: dict[int, tuple[int, int]], a: int, b: int, top: int, sizes: list[int],
          preset: Preset) -> dict[str, Any]:
    """Both directions of one pair: staged first (peer access off), then with peer access on
    where CUDA allows it; the state found is put back."""
    found = {(x, y): pk.set_peer_access(cupy, x, y, enable=False) for x, y in ((a, b), (b, a))}
    out = {f"{x}.{y}": {"can_access_peer": pk.can_access_peer(cupy, x, y),
                        "found_enabled": found[(x, y)]["was"], "staged": _direction(cupy, mem, x, y, [top], preset)}
           for x, y in ((a, b), (b, a))}
    staged_bidir = _bidir(cupy, mem, a, b, top, preset)
    enabled = {}
    for x, y in ((a, b), (b, a)):
        if out[f"{x}.{y}"]["can_access_peer"]:
            enabled[(x, y)] = pk.set_peer_access(cupy, x, y, enable=True)
    try:
        for x, y in ((a, b), (b, a)):
            entry = out[f"{x}.{y}"]
            state = enabled.get((x, y))
            entry["peer_enabled"] = bool(state and state["ok"])
            entry["enable_error"] = state["error"] if state else None
            entry["staged"]["bidir"] = staged_bidir
            if entry["peer_enabled"]:
                entry["peer"] = _direction(cupy, mem, x, y, sizes, preset)
        if all(out[k]["peer_enabled"] for k in (f"{a}.{b}", f"{b}.{a}")):
            out[f"{a}.{b}"]["peer"]["bidir"] = out[f"{b}.{a}"]["peer"]["bidir"] = _bidir(cupy, mem, a, b, top, preset)
    finally:
        for (x, y), state in enabled.items():
            if state["ok"] and not found[(x, y)]["was"]:
                pk.set_peer_access(cupy, x, y, enable=False)
    return out


def _direction(cupy: Any, mem: dict[int, tuple[int, int]], src: int, dst: int, sizes: list[int],
               preset: Preset) -> dict[str, Any]:
    """src→dst over `sizes` and the latency of a small copy, in the peer-access state now set."""
    sweep = []
    for size in sizes:
        warm, reps = plan.repeats_for(size, preset)
        sweep.append(pk.peer_copy(cupy, mem[dst][1], dst, mem[src][0], src, size, warm, reps))
    latency = pk.peer_latency(cupy, mem[dst][1], dst, mem[src][0], src, plan.LATENCY_BYTES, preset.latency_repeats)
    return {"sweep": sweep, "latency_us": latency}


def _bidir(cupy: Any, mem: dict[int, tuple[int, int]], a: int, b: int, top: int, preset: Preset) -> dict[str, Any]:
    warm, reps = plan.repeats_for(top, preset)
    return pk.peer_bidirectional(cupy, mem, a, b, top, warm, reps)
