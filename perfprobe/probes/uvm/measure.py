"""uvm measurement: every access path on device ctx.device (0 by default), each allowed by the
device's attributes; raw times only. Everything is freed on the way out, also on Ctrl-C."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from perfprobe.engine.probe import ProbeContext
from perfprobe.kernels import cuda_runtime, uvm_memory
from perfprobe.kernels.host_shares import host_pool
from perfprobe.kernels.uvm_kernels import GpuKernels, host_threads, usable_threads
from perfprobe.kernels.uvm_memory import PathUnavailable
from perfprobe.probes.uvm import paths as uvm_paths
from perfprobe.probes.uvm import plan
from perfprobe.probes.uvm.plan import PRESETS
from perfprobe.system.budget import gpu_memory_budget, host_memory_budget


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Every access path on device ctx.device (0 by default); frees everything on the way out."""
    cupy = cuda_runtime.load_cupy()
    device = ctx.device or 0
    with cupy.cuda.Device(device):
        try:
            return _measure_on(cupy, device, ctx)
        finally:
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()


def remeasure(ctx: ProbeContext, raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Confirmation (perfprobe/engine/confirm.py): only the path functions that time the paths named in
    `keys`, at the first run's size; `raw` with those paths replaced."""
    cupy = cuda_runtime.load_cupy()
    device = ctx.device or 0
    with cupy.cuda.Device(device):
        try:
            return _measure_on(cupy, device, ctx, only=set(keys), size=int(raw["size_bytes"]), first=raw)
        finally:
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()


def _measure_on(cupy: Any, device: int, ctx: ProbeContext, only: set[str] | None = None,
                size: int | None = None, first: dict[str, Any] | None = None) -> dict[str, Any]:
    preset = ctx.config.preset(PRESETS)
    props = cuda_runtime.device_properties(cupy, device)
    attrs = uvm_memory.device_attributes(cupy, device)
    if size is None:
        size, note = plan.choose_size(
            ctx.config.options.size, preset,
            gpu_memory_budget(cuda_runtime.free_memory_bytes(cupy), plan.DEVICE_FRACTION),
            host_memory_budget(ctx.host, ctx.config.bind, plan.HOST_FRACTION))
    else:
        note = (first or {}).get("size_note")
    counts = plan.counts(ctx.config.options, preset)
    stream = cupy.cuda.Stream(non_blocking=True)
    api = uvm_memory.UvmApi(cupy, device)
    threads = usable_threads(ctx.config.options.host_threads)
    bench = uvm_paths.Bench(cupy, device, GpuKernels(cupy, props["multiprocessors"]), api, stream,
                            size, counts.repeats, counts.passes,
                            timeout_s=30 + counts.passes * size / 0.5e9, fill_threads=threads)
    steps = [(name, needs) for name, needs in plan.PLAN if only is None or only & set(plan.path_names(name))]
    with stream, host_threads(threads), host_pool(threads, "perfprobe-uvm-fill") as workers, \
            ctx.progress("uvm: access paths", len(steps)) as task:
        bench.workers = workers
        paths = _run_plan(bench, attrs, task.advance, steps)
    if first is not None:
        return {**first, "paths": {**first["paths"], **paths}}
    return {"device": {"index": device, **props}, "attributes": attrs, "size_bytes": size,
            "size_note": note, "repeats": counts.repeats, "passes": counts.passes, "host_threads": threads,
            "api_used": dict(api.used), "api_notes": list(api.notes), "paths": paths}


def _run_plan(bench: uvm_paths.Bench, attrs: Mapping[str, int], advance: Callable[[], None],
              steps: Any = plan.PLAN) -> dict[str, Any]:
    """Run each path its attributes allow; a path whose API is missing is recorded as skipped."""
    paths: dict[str, Any] = {}
    for name, needs in steps:
        names = plan.path_names(name)
        missing = [a for a in needs if not attrs.get(a)]
        if missing:
            paths.update({n: {"skipped": f"needs {', '.join(missing)}, which is 0 on this GPU"}
                          for n in names})
        else:
            try:
                result = getattr(uvm_paths, name)(bench)
                found = result if name in plan.GROUPS else {name: result}
                paths.update({n: _with_bytes(n, t, bench) for n, t in found.items()})
            except PathUnavailable as exc:
                paths.update({n: {"skipped": str(exc), "unavailable": True} for n in names})
        advance()
    return paths


def _with_bytes(name: str, times: dict[str, Any], bench: uvm_paths.Bench) -> dict[str, Any]:
    """A path's summaries plus the bytes its kernel or host read (passes × size for *_passes)."""
    passes = bench.passes if name.endswith("_passes") else 1
    return {"bytes": bench.size * passes, "passes": passes, **times}
