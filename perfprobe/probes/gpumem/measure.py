"""`perfprobe gpumem` measurement: DRAM bandwidth (read, write, copy, cudaMemcpy), coalescing,
shared-memory banks, occupancy, transpose and divergence, with NVML's view of the memory and its
clocks before, under load and after. Raw numbers only; every allocation is freed on the way out."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from perfprobe.engine.probe import ProbeContext
from perfprobe.errors import ProbeSkipped
from perfprobe.kernels import cuda_runtime
from perfprobe.kernels import gpumem_kernels as gk
from perfprobe.kernels import transfer_kernels as tk
from perfprobe.probes.gpumem import plan
from perfprobe.probes.gpumem.plan import PRESETS, Preset
from perfprobe.system.budget import gpu_memory_budget


def measure(ctx: ProbeContext) -> dict[str, Any]:
    cupy = cuda_runtime.load_cupy()
    device = ctx.device or 0
    preset = ctx.config.preset(PRESETS)
    with cupy.cuda.Device(device):
        requested = plan.requested_bytes(ctx.config, preset)
        size, capped = plan.plan_size(requested, gpu_memory_budget(cuda_runtime.free_memory_bytes(cupy)))
        if size < plan.MIN_SIZE:
            raise ProbeSkipped("too little free GPU memory for two 16 MiB buffers", "free device memory")
        raw = _measure_device(cupy, device, size, preset, ctx)
    raw["budget"] = {"requested_bytes": requested, "size_bytes": size, "capped_by": capped}
    return raw


def _measure_device(cupy: Any, device: int, size: int, preset: Preset, ctx: ProbeContext) -> dict[str, Any]:
    bus_id = cuda_runtime.pci_bus_id(cupy, device)
    session = gk.MemoryNvml(bus_id)
    buffers = tk.Allocations(cupy)
    try:
        attrs = gk.device_attributes(cupy, device)
        props = cuda_runtime.device_properties(cupy, device)
        raw: dict[str, Any] = {
            "device": {"index": device, "pci_bus_id": bus_id, **props, **attrs,
                       "driver_version": session.driver_version(), "nvml_error": session.error},
            "memory_interface": {"nvml": session.memory_interface(),
                                 "cuda": {"bus_width_bits": attrs["bus_width_bits"],
                                          "memory_clock_khz": attrs["memory_clock_khz"]}},
            "quick": ctx.quick, "gpu_activity": {"before": session.activity()}, "state_before": session.state()}
        clock = time.perf_counter()
        kernels = gk.compile_kernels(cupy)
        phases = {"compile": time.perf_counter() - clock}
        bufs = {"a": buffers.device_array(size // 4, np.float32), "b": buffers.device_array(size // 4, np.float32),
                "sink": buffers.device_array(1, np.float32)}
        shape = {"sms": int(props["multiprocessors"]), "blocks": plan.grid_blocks(props["multiprocessors"],
                                                                                   attrs["max_threads_per_sm"])}
        with ctx.progress("gpumem: bandwidth, strides, banks, warps, tiles", 6) as task:
            clock = time.perf_counter()
            raw["dram"] = _dram(cupy, kernels, bufs, shape, preset)
            raw["state_under_load"] = _state_under_load(cupy, session, kernels, bufs, shape, raw["dram"])
            phases["dram"] = time.perf_counter() - clock
            task.advance()
            for key, step in (("coalescing", _coalescing), ("shared", _shared), ("occupancy", _occupancy),
                              ("transpose", _transpose), ("divergence", _divergence)):
                clock = time.perf_counter()
                raw[key] = step(cupy, kernels, bufs, shape, preset, attrs)
                phases[key] = time.perf_counter() - clock
                task.advance()
        raw["state_after"] = session.state()
        raw["phase_s"] = phases
        return raw
    finally:
        buffers.close()
        session.close()


def _dram(cupy: Any, k: dict[str, Any], bufs: dict[str, Any], shape: dict[str, int], preset: Preset) -> dict[str, Any]:
    """Write (a := 1), read (a), copy (a -> b) kernels and a cudaMemcpy D2D (a -> b), each checked."""
    a, b, sink = bufs["a"], bufs["b"], bufs["sink"]
    nbytes, n4 = a.nbytes, a.size // 4
    grid, block = (shape["blocks"],), (plan.BLOCK,)
    out: dict[str, Any] = {"buffer_bytes": nbytes, "grid": shape["blocks"], "block": plan.BLOCK}
    runs = (("write", gk.launcher(k["write_f4"], grid, block, (a, np.int64(n4), np.float32(1.0))), nbytes),
            ("read", gk.launcher(k["read_f4"], grid, block, (a, np.int64(n4), sink)), nbytes),
            ("copy", gk.launcher(k["copy_f4"], grid, block, (a, b, np.int64(n4))), 2 * nbytes))
    checks = {}
    for name, launch, moved in runs:
        out[name] = gk.case(gk.time_ms(cupy, launch, preset.warmup, preset.repeats, k["gate"]), moved)
        if name == "write":
            checks["write"] = gk.chunks_equal(a, gk.constant(1.0))
    checks["copy"] = gk.chunks_equal(b, gk.constant(1.0))
    gk.zero(cupy, b)
    memcpy = gk.memcpy_launcher(cupy, b.data.ptr, a.data.ptr, nbytes)
    out["d2d_memcpy"] = gk.case(gk.time_ms(cupy, memcpy, preset.warmup, preset.repeats, k["gate"]), 2 * nbytes)
    checks["d2d_memcpy"] = gk.chunks_equal(b, gk.constant(1.0))
    checks["read_sink_untouched"] = float(sink.get()[0]) != -1.0
    out["verified"] = checks
    return out


def _state_under_load(cupy: Any, session: gk.MemoryNvml, k: dict[str, Any], bufs: dict[str, Any],
                      shape: dict[str, int], dram: dict[str, Any]) -> dict[str, Any]:
    """NVML's clocks and clock-event reasons while ~60 ms of read kernels run."""
    a = bufs["a"]
    per_launch_s = a.nbytes / max(1.0, dram["read"]["gbs"]["median"] * 1e9)
    launches = max(1, min(2000, int(0.06 / per_launch_s) + 1))
    stream = gk.busy_reads(cupy, k["read_f4"], shape["blocks"], plan.BLOCK, a, a.size // 4, bufs["sink"], launches)
    time.sleep(0.02)
    state = {**session.state(), "memory_interface": session.memory_interface(), "load_launches": launches}
    stream.synchronize()
    return state


def _coalescing(cupy: Any, k: dict[str, Any], bufs: dict[str, Any], shape: dict[str, int], preset: Preset,
                attrs: dict[str, Any]) -> dict[str, Any]:
    """Read bandwidth (useful bytes: the elements asked for) at each stride, and misaligned by one."""
    a, sink = bufs["a"], bufs["sink"]
    cases = []
    for stride, offset in [(s, 0) for s in plan.STRIDES] + [(1, plan.MISALIGNED_OFFSET)]:
        count = plan.stride_count(a.size, stride, offset)
        launch = gk.launcher(k["strided_read"], (shape["blocks"],), (plan.BLOCK,),
                             (a, np.int64(count), np.int64(stride), np.int64(offset), sink))
        cases.append({"stride": stride, "offset": offset, "elements": count,
                      **gk.case(gk.time_ms(cupy, launch, preset.warmup, preset.repeats, k["gate"]), count * 4)})
    return {"element_bytes": 4, "grid": shape["blocks"], "block": plan.BLOCK, "cases": cases}


def _shared(cupy: Any, k: dict[str, Any], bufs: dict[str, Any], shape: dict[str, int], preset: Preset,
            attrs: dict[str, Any]) -> dict[str, Any]:
    """Shared-memory load throughput of warps reading at each word stride (33: padded tile column)."""
    threads = shape["blocks"] * plan.BLOCK
    nbytes = threads * plan.SMEM_REPS * 32 * 4
    cases = []
    for stride in plan.SMEM_STRIDES:
        launch = gk.launcher(k["smem_stride"], (shape["blocks"],), (plan.BLOCK,),
                             (np.int32(stride), np.int32(plan.SMEM_REPS), bufs["sink"]))
        cases.append({"stride": stride, **gk.case(gk.time_ms(cupy, launch, preset.warmup, preset.repeats, k["gate"]), nbytes)})
    return {"grid": shape["blocks"], "block": plan.BLOCK, "reps": plan.SMEM_REPS, "cases": cases}


def _occupancy(cupy: Any, k: dict[str, Any], bufs: dict[str, Any], shape: dict[str, int], preset: Preset,
               attrs: dict[str, Any]) -> dict[str, Any]:
    """DRAM read bandwidth against resident warps per SM, with one and with four loads in flight."""
    nbytes = min(plan.OCCUPANCY_BYTES, bufs["a"].nbytes) // 16 * 16
    series: dict[str, list[dict[str, Any]]] = {"serial": [], "unrolled4": []}
    for name, kernel in (("serial", "read_f4_serial"), ("unrolled4", "read_f4")):
        for warps in plan.occupancy_warps(attrs["max_threads_per_sm"]):
            threads, per_sm = plan.occupancy_shape(warps)
            launch = gk.launcher(k[kernel], (shape["sms"] * per_sm,), (threads,),
                                 (bufs["a"], np.int64(nbytes // 16), bufs["sink"]))
            samples = gk.time_ms(cupy, launch, 1, preset.occupancy_repeats, k["gate"])
            series[name].append({"warps_per_sm": warps, "block": threads, "blocks_per_sm": per_sm,
                                 **gk.case(samples, nbytes)})
    return {"bytes": nbytes, "series": series}


def _transpose(cupy: Any, k: dict[str, Any], bufs: dict[str, Any], shape: dict[str, int], preset: Preset,
               attrs: dict[str, Any]) -> dict[str, Any]:
    """Naive, tiled [32][32] and padded [32][33] transposes of an n x n float matrix, each checked."""
    n = plan.transpose_n(bufs["a"].nbytes)
    src, dst = bufs["a"][: n * n], bufs["b"][: n * n]
    gk.iota(k, src, shape["blocks"])
    grid, block = (n // gk.TILE, n // gk.TILE), (gk.TILE, gk.TILE_ROWS)
    out: dict[str, Any] = {"n": n, "bytes": 2 * n * n * 4}
    for name in ("naive", "tiled", "padded"):
        gk.zero(cupy, dst)
        launch = gk.launcher(k[f"transpose_{name}"], grid, block, (src, dst, np.int32(n)))
        out[name] = gk.case(gk.time_ms(cupy, launch, preset.warmup, preset.repeats, k["gate"]), 2 * n * n * 4)
        out[name]["verified"] = gk.chunks_equal(dst, _transposed(n))
    return out


def _transposed(n: int) -> Any:
    """What dst[lo:hi] holds once src[i] = i is transposed: dst[c * n + r] = r * n + c."""
    def expected(lo: int, hi: int) -> np.ndarray:
        flat = np.arange(lo, hi, dtype=np.int64)
        return ((flat % n) * n + flat // n).astype(np.float32)
    return expected


def _divergence(cupy: Any, k: dict[str, Any], bufs: dict[str, Any], shape: dict[str, int], preset: Preset,
                attrs: dict[str, Any]) -> dict[str, Any]:
    """Two equal paths chosen by lane parity (divergent) against by warp parity (split by warp)."""
    threads = shape["blocks"] * plan.BLOCK
    out_buf = bufs["b"][:threads]
    results: dict[str, Any] = {"iters": plan.DIVERGE_ITERS, "threads": threads}
    counts = []
    for name, mode in (("divergent", 0), ("split", 1)):
        launch = gk.launcher(k["diverge"], (shape["blocks"],), (plan.BLOCK,),
                             (out_buf, np.int32(plan.DIVERGE_ITERS), np.int32(mode)))
        results[name] = gk.case(gk.time_ms(cupy, launch, preset.warmup, preset.repeats, k["gate"]), 0)
        values, count = np.unique(out_buf.get(), return_counts=True)
        counts.append((values.tolist(), count.tolist()))
    results["values"] = counts
    results["verified"] = counts[0] == counts[1] and len(counts[0][0]) == 2
    return results
