"""`perfprobe streams` measurement: the stages alone, the serial pipeline, the chunks x streams grid,
what breaks overlap and host work beside GPU work. Raw numbers only; every output is checked."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any, Callable, Iterator

import numpy as np

from perfprobe.engine.probe import ProbeContext
from perfprobe.errors import ProbeSkipped
from perfprobe.kernels import cuda_runtime, nvml
from perfprobe.kernels import streams_kernels as sk
from perfprobe.kernels import transfer_kernels as tk
from perfprobe.kernels.host_shares import host_pool, over_shares, share_bounds
from perfprobe.probes.streams import plan
from perfprobe.probes.streams.figures import best_config, typed
from perfprobe.probes.streams.plan import PRESETS, Preset
from perfprobe.pure.stats import summarize
from perfprobe.system.bind import usable_cpus
from perfprobe.system.budget import gpu_memory_budget, host_memory_budget

BLOCK = 1 << 24
"""Elements per numpy call on the host buffers (64 MiB of float32), split among the host threads:
bounds the temporaries of the checks (the plan sizes the buffers for 5 host copies, not more)."""
SHARE_UNIT = 1 << 10
"""Host threads' shares of the buffers are whole multiples of this many elements (4 KiB)."""
MIN_GATE_S = 0.0005
"""The gate of a run nobody times (the checked run, pageable buffers): the kernel's shortest wait."""


def measure(ctx: ProbeContext) -> dict[str, Any]:
    cupy = cuda_runtime.load_cupy()
    device = ctx.device or 0
    preset = ctx.config.preset(PRESETS)
    with cupy.cuda.Device(device):
        requested = plan.requested_bytes(ctx.config, preset)
        size, capped = plan.plan_size(requested, gpu_memory_budget(cuda_runtime.free_memory_bytes(cupy)),
                                      host_memory_budget(ctx.host, ctx.config.bind))
        if size < plan.MIN_SIZE:
            raise ProbeSkipped("too little free memory for a 4 MiB pipeline", "free device or host memory")
        raw = _measure_device(cupy, device, size, preset, ctx)
    raw["budget"] = {"requested_bytes": requested, "size_bytes": size, "capped_by": capped}
    return raw


def _measure_device(cupy: Any, device: int, size: int, preset: Preset, ctx: ProbeContext) -> dict[str, Any]:
    threads = max(1, len(usable_cpus(ctx.host)))
    with host_pool(threads, "perfprobe-streams") as workers:
        return _measure_with(cupy, device, size, preset, ctx, workers, threads)


def _measure_with(cupy: Any, device: int, size: int, preset: Preset, ctx: ProbeContext,
                  workers: Executor, threads: int) -> dict[str, Any]:
    props = cuda_runtime.device_properties(cupy, device)
    elements = size // 4
    buffers = tk.Allocations(cupy)
    bus_id = cuda_runtime.pci_bus_id(cupy, device)
    session = nvml.Nvml(bus_id)
    activity = {"before": session.activity()}  # other work on the GPU (perfprobe/pure/gpu_activity.py)
    dev = None
    try:
        dev = sk.Device.create(cupy, buffers, elements, plan.MAX_STREAMS, props["multiprocessors"])
        raw: dict[str, Any] = {"device": {"index": device, **props, "pci_bus_id": bus_id},
                               "size_bytes": size, "elements": elements, "quick": ctx.quick,
                               "gpu_activity": activity}
        host = _host_buffers(buffers, elements, workers, threads)
        raw.update(_stages(dev, host, elements))
        raw.update(_pipelines(dev, host, elements, raw["iters"], preset, ctx))
        raw["host_overlap"] = _host_overlap(dev, elements, raw["iters"])
        activity["after"] = session.activity()
        return raw
    finally:
        if dev is not None:
            dev.close()
        buffers.close()
        session.close()


def _host_buffers(buffers: tk.Allocations, elements: int, workers: Executor, threads: int) -> dict[str, Any]:
    """Pinned input/output, pageable input/output and the serial result, input drawn at random;
    `workers`, the `threads` host threads that write and check them (kernels/host_shares.py), kept
    beside."""
    pin_in_ptr, pin_in = buffers.pinned(elements * 4)
    pin_out_ptr, pin_out = buffers.pinned(elements * 4)
    x = pin_in.view(np.float32)
    page_in = np.empty(elements, dtype=np.float32)
    bounds = share_bounds(elements, threads, SHARE_UNIT)
    generators = dict(zip((lo for lo, _ in bounds), np.random.default_rng().spawn(len(bounds))))

    def draw(lo: int, hi: int) -> None:  # in place: no temporaries beside the buffers
        generators[lo].random(dtype=np.float32, out=x[lo:hi])
        x[lo:hi] *= np.float32(2)
        page_in[lo:hi] = x[lo:hi]

    over_shares(workers, len(bounds), elements, draw, SHARE_UNIT)
    return {"pin_in": pin_in_ptr, "pin_out": pin_out_ptr, "x": x, "out": pin_out.view(np.float32),
            "page_in": page_in, "page_out": np.empty(elements, dtype=np.float32),
            "serial": np.empty(elements, dtype=np.float32), "workers": workers, "threads": threads}


def _stages(dev: sk.Device, host: dict[str, Any], elements: int) -> dict[str, Any]:
    """Each stage alone over the whole buffer; the kernel calibrated to one H2D copy's time. The
    medians go into `stage_ms` (the ideal's inputs), the repeats into `stage_stats`."""
    nbytes = elements * 4
    h2d = sk.copy_samples(dev, dev.d_in.data.ptr, host["pin_in"], nbytes, sk.H2D)
    d2h = sk.copy_samples(dev, host["pin_out"], dev.d_out.data.ptr, nbytes, sk.D2H)
    both_whole = sk.both_directions_samples(dev, host["pin_in"], host["pin_out"], nbytes)
    both_chunked = sk.both_directions_samples(dev, host["pin_in"], host["pin_out"], nbytes, chunks=16)
    iters = sk.calibrate_iters(dev, elements, _median(h2d))
    kernel = sk.kernel_samples(dev, elements, iters)
    both = min(both_whole, both_chunked, key=_median)  # the faster way is what a pipeline can reach
    a, b = sk.coefficients(iters)
    samples = {"h2d": h2d, "kernel": kernel, "d2h": d2h, "both": both}
    return {"iters": iters, "coefficients": {"a": a, "b": b},
            "stage_ms": {k: _median(v) for k, v in samples.items()},
            "stage_stats": {k: summarize(v) for k, v in samples.items()},
            "both_gbs": 2 * nbytes / (_median(both) * 1e-3) / 1e9,
            "both_ms": {"whole": _median(both_whole), "chunked_16": _median(both_chunked)}}


def _median(samples: list[float]) -> float:
    """The median as the stage timings always took it (numpy's)."""
    return float(np.median(samples))


def _pipelines(dev: sk.Device, host: dict[str, Any], elements: int, iters: int, preset: Preset,
               ctx: ProbeContext) -> dict[str, Any]:
    pinned = (host["pin_in"], host["pin_out"])
    serial = _config(dev, host, pinned, elements, 1, 1, iters, check=_check_reference(host, iters))
    _keep_serial(host)
    configs = []
    grid = plan.configurations(preset)
    with ctx.progress("streams: chunks x streams", len(grid)) as task:
        for chunks, streams in grid:
            configs.append(_config(dev, host, pinned, elements, chunks, streams, iters,
                                   check=_check_same(host, "out")))
            task.advance()
    best = best_config(typed({"configs": configs}))  # the one rule_overlap judges
    n, k = best["chunks"], best["streams"]
    pageable = (int(host["page_in"].ctypes.data), int(host["page_out"].ctypes.data))
    breakers = {
        "pageable": _config(dev, host, pageable, elements, n, k, iters, check=_check_same(host, "page_out"),
                            out_key="page_out", repeats=2, gate=False),
        "legacy_default_stream": _config(dev, host, pinned, elements, n, k, iters,
                                         check=_check_same(host, "out"), legacy=n // 2),
    }
    return {"serial": serial, "configs": configs, "breakers": breakers}


def _config(dev: sk.Device, host: dict[str, Any], ptrs: tuple[int, int], elements: int, chunks: int,
            streams: int, iters: int, check: Callable[[], dict[str, Any]], out_key: str = "out",
            repeats: int = 3, legacy: int | None = None, gate: bool = True) -> dict[str, Any]:
    """Poison the outputs, run once and check the result, then time `repeats` passes.

    The checked run is not timed, so it waits behind no gate (MIN_GATE_S); its enqueue time sizes
    the timed runs' gate. `gate=False` for pageable buffers: their copies block the host anyway, so
    a gate would only be waited out inside the first enqueue call."""
    out = host[out_key]
    _on_shares(host, lambda lo, hi: out[lo:hi].fill(np.nan))
    dev.d_out.fill(np.nan)
    dev.cupy.cuda.Device().synchronize()
    _ms, enqueue_ms = sk.run_pipeline(dev, ptrs[0], ptrs[1], elements, chunks, streams, iters, MIN_GATE_S, legacy)
    verdict = check()
    gate_s = min(0.25, enqueue_ms * 1.5e-3 + 0.002) if gate else MIN_GATE_S
    runs = [sk.run_pipeline(dev, ptrs[0], ptrs[1], elements, chunks, streams, iters, gate_s, legacy)
            for _ in range(repeats)]
    return {"chunks": chunks, "streams": streams, "ms": summarize([r[0] for r in runs]),
            "enqueue_ms": summarize([r[1] for r in runs]), "gate_ms": gate_s * 1e3, **verdict}


def _check_reference(host: dict[str, Any], iters: int) -> Callable[[], dict[str, Any]]:
    """Check the output against the closed-form reference, block by block; NaN (unwritten) fails."""
    tol, x, out = sk.tolerance(iters), host["x"], host["out"]

    def share(lo: int, hi: int) -> tuple[int, float]:
        bad, worst = 0, 0.0
        for start, end in _blocks(host, lo, hi):
            err = np.abs(out[start:end] - sk.reference(x[start:end], iters))
            bad += int(np.count_nonzero(~(err <= tol)))
            worst = max(worst, float(np.nanmax(err)) if np.isfinite(err).any() else float("inf"))
        return bad, worst

    def check() -> dict[str, Any]:
        shares = _on_shares(host, share)
        bad, worst = sum(b for b, _ in shares), max(w for _, w in shares)
        return {"verified": bad == 0, "mismatches": bad, "max_abs_error": worst, "tolerance": tol}
    return check


def _check_same(host: dict[str, Any], key: str) -> Callable[[], dict[str, Any]]:
    """Bit-for-bit against the serial run's (reference-checked) output."""
    got, want = host[key].view(np.uint32), host["serial"].view(np.uint32)

    def share(lo: int, hi: int) -> int:
        bad = 0
        for start, end in _blocks(host, lo, hi):
            if not np.array_equal(got[start:end], want[start:end]):
                bad += int(np.count_nonzero(got[start:end] != want[start:end]))
        return bad

    def check() -> dict[str, Any]:
        bad = sum(_on_shares(host, share))
        return {"verified": bad == 0, "mismatches": bad}
    return check


def _on_shares(host: dict[str, Any], work: Callable[[int, int], Any]) -> list[Any]:
    """work(lo, hi) over contiguous shares of the host buffers, on their host threads."""
    return over_shares(host["workers"], host["threads"], host["x"].size, work, SHARE_UNIT)


def _blocks(host: dict[str, Any], lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """[start, end) blocks of one thread's share [lo, hi): BLOCK split among the threads, so their
    temporaries together stay about one BLOCK's."""
    step = max(SHARE_UNIT, BLOCK // host["threads"])
    for start in range(lo, hi, step):
        yield start, min(hi, start + step)


def _keep_serial(host: dict[str, Any]) -> None:
    """The serial run's (reference-checked) output, kept for the bit-for-bit checks after it."""
    serial, out = host["serial"], host["out"]
    _on_shares(host, lambda lo, hi: np.copyto(serial[lo:hi], out[lo:hi]))


def _host_overlap(dev: sk.Device, elements: int, iters: int) -> dict[str, Any]:
    """Host work sized to about the kernel's time, done after the GPU work (sync) or during it."""
    import time

    scratch = np.random.default_rng().random(1 << 21)
    target = np.empty_like(scratch)
    np.sqrt(scratch, out=target)  # touch `target` before timing
    samples = []
    for _ in range(3):
        t0 = time.perf_counter()
        np.sqrt(scratch, out=target)
        samples.append((time.perf_counter() - t0) * 1e3)
    one_ms = max(min(samples), 1e-3)
    gpu_ms = sk.time_kernel(dev, elements, iters, repeats=1)
    reps = max(1, min(10_000, round(gpu_ms / one_ms)))

    def host_work() -> None:
        for _ in range(reps):
            np.sqrt(scratch, out=target)

    return {**sk.host_overlap(dev, elements, iters, host_work), "host_work_repeats": reps}



def remeasure(ctx: ProbeContext, raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Confirmation (perfprobe/engine/confirm.py): "overlap": the stages alone and the best configuration
    (the ideal and the time it is judged against) timed again; "host_overlap": host work beside
    GPU work again. Same buffer size and kernel length as the first run; `raw` with those replaced."""
    cupy = cuda_runtime.load_cupy()
    device, elements, iters = ctx.device or 0, int(raw["elements"]), int(raw["iters"])
    props = cuda_runtime.device_properties(cupy, device)
    out = dict(raw)
    buffers = tk.Allocations(cupy)
    dev = None
    try:
        threads = max(1, len(usable_cpus(ctx.host)))
        with cupy.cuda.Device(device), host_pool(threads, "perfprobe-streams") as workers:
            dev = sk.Device.create(cupy, buffers, elements, plan.MAX_STREAMS, props["multiprocessors"])
            if "overlap" in keys:
                host = _host_buffers(buffers, elements, workers, threads)
                nbytes = elements * 4
                stages, stats = dict(raw["stage_ms"]), dict(raw.get("stage_stats") or {})
                timed = {"h2d": sk.copy_samples(dev, dev.d_in.data.ptr, host["pin_in"], nbytes, sk.H2D),
                         "d2h": sk.copy_samples(dev, host["pin_out"], dev.d_out.data.ptr, nbytes, sk.D2H),
                         "kernel": sk.kernel_samples(dev, elements, iters)}
                for key, samples in timed.items():
                    stages[key], stats[key] = _median(samples), summarize(samples)
                out["stage_ms"], out["stage_stats"] = stages, stats
                pinned = (host["pin_in"], host["pin_out"])
                serial = _config(dev, host, pinned, elements, 1, 1, iters, check=_check_reference(host, iters))
                _keep_serial(host)
                best = best_config(typed(raw))
                again = _config(dev, host, pinned, elements, best["chunks"], best["streams"], iters,
                                check=_check_same(host, "out"))
                out["configs"] = [again if c is best else c for c in raw["configs"]]
                out["serial"] = serial
            if "host_overlap" in keys:
                out["host_overlap"] = _host_overlap(dev, elements, iters)
    finally:
        if dev is not None:
            dev.close()
        buffers.close()
    return out
