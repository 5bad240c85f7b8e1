"""`perfprobe uvm`: unified memory on this GPU — on-demand migration, prefetch, advice, zero-copy.

measure() times one read-reduce kernel over data that reaches the GPU in different ways (page
faults, prefetch, advice, explicit copy, mapped pinned memory, pageable memory) and the way back
(the host reading GPU-written managed memory). judge() is pure: rules in uvm_rules, tables and
metrics in uvm_report.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from perfprobe.model import Assessment
from perfprobe.probe import Probe, ProbeContext, ProbeSkipped
from perfprobe.probes import uvm_report

DEFAULT_SIZE = 4 << 30
QUICK_SIZE = 256 << 20
REPEATS = 3  # timed runs per path after one warm-up; --quick saves time through the size instead
DEFAULT_PASSES = 8
_UNIT = 1 << 20  # sizes are whole MiB: a multiple of the kernels' data pattern

PLAN: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (function in kernels/uvm_paths, device attributes it needs)
    ("managed_on_demand", ("managedMemory",)),
    ("managed_prefetch", ("managedMemory", "concurrentManagedAccess")),
    ("managed_advise_preferred_gpu", ("managedMemory", "concurrentManagedAccess")),
    ("managed_advise_accessed_by", ("managedMemory", "concurrentManagedAccess")),
    ("pinned_paths", ("canMapHostMemory", "unifiedAddressing")),
    ("pageable_direct", ("pageableMemoryAccess",)),
    ("host_on_demand", ("managedMemory",)),
    ("host_prefetch", ("managedMemory", "concurrentManagedAccess")),
    ("host_reference_reads", ("canMapHostMemory", "unifiedAddressing")),
)
_GROUPS = {"pinned_paths": ("explicit_copy", "device_memory", "zero_copy", "explicit_copy_passes",
                            "zero_copy_passes"),
           "host_reference_reads": ("host_explicit_copy", "host_local")}


def choose_size(requested: int | None, quick: bool, device_free: int,
                host_available: int) -> tuple[int, str | None]:
    """Bytes per buffer and, when it was capped, why.

    Never more than a quarter of the device's free memory (the managed buffer may land there) nor a
    quarter of the host's available memory (managed pages start on the host), rounded down to MiB.
    """
    wanted = requested if requested is not None else (QUICK_SIZE if quick else DEFAULT_SIZE)
    caps = {"a quarter of the GPU's free memory": device_free // 4,
            "a quarter of the host's available memory": host_available // 4}
    reason, cap = min(caps.items(), key=lambda item: item[1])
    size = min(wanted, cap) // _UNIT * _UNIT
    if size < _UNIT:
        raise ProbeSkipped(f"too little free memory for a 1 MiB buffer ({reason}: {cap} bytes)",
                           "free GPU or host memory and run again")
    note = f"capped at {reason}" if size < wanted // _UNIT * _UNIT else None
    return size, note


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Every access path on device ctx.device (0 by default); frees everything on the way out."""
    from perfprobe.gpu import load_cupy

    cupy = load_cupy()
    device = ctx.device or 0
    with cupy.cuda.Device(device):
        try:
            return _measure_on(cupy, device, ctx)
        finally:
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()


def _measure_on(cupy: Any, device: int, ctx: ProbeContext) -> dict[str, Any]:
    from perfprobe.budget import host_memory_budget
    from perfprobe.gpu import device_properties
    from perfprobe.kernels import uvm_memory, uvm_paths
    from perfprobe.kernels.uvm_kernels import GpuKernels, host_threads, usable_threads

    props = device_properties(cupy, device)
    attrs = uvm_memory.device_attributes(cupy, device)
    free, _total = cupy.cuda.runtime.memGetInfo()
    size, note = choose_size(ctx.config.option("size", None), ctx.quick, int(free),
                             host_memory_budget(ctx.host, ctx.config.bind, 1.0).bytes)
    repeats = int(ctx.config.option("repeats", REPEATS))
    passes = int(ctx.config.option("passes", DEFAULT_PASSES))
    stream = cupy.cuda.Stream(non_blocking=True)
    api = uvm_memory.UvmApi(cupy, device)
    bench = uvm_paths.Bench(cupy, device, GpuKernels(cupy, props["multiprocessors"]), api, stream,
                            size, repeats, passes, timeout_s=30 + passes * size / 0.5e9)
    threads = usable_threads(ctx.config.option("host_threads", None))
    with stream, host_threads(threads), ctx.progress("uvm: access paths", len(PLAN)) as task:
        paths = _run_plan(bench, attrs, task.advance)
    return {"device": {"index": device, **props}, "attributes": attrs, "size_bytes": size,
            "size_note": note, "repeats": repeats, "passes": passes, "host_threads": threads,
            "api_used": dict(api.used), "api_notes": list(api.notes), "paths": paths}


def _run_plan(bench: Any, attrs: Mapping[str, int], advance: Callable[[], None]) -> dict[str, Any]:
    """Run each path its attributes allow; a path whose API is missing is recorded as skipped."""
    from perfprobe.kernels import uvm_paths
    from perfprobe.kernels.uvm_memory import PathUnavailable

    paths: dict[str, Any] = {}
    for name, needs in PLAN:
        names = _GROUPS.get(name, (name,))
        missing = [a for a in needs if not attrs.get(a)]
        if missing:
            paths.update({n: {"skipped": f"needs {', '.join(missing)}, which is 0 on this GPU"}
                          for n in names})
        else:
            try:
                result = getattr(uvm_paths, name)(bench)
                found = result if name in _GROUPS else {name: result}
                paths.update({n: _with_bytes(n, t, bench) for n, t in found.items()})
            except PathUnavailable as exc:
                paths.update({n: {"skipped": str(exc), "unavailable": True} for n in names})
        advance()
    return paths


def _with_bytes(name: str, times: dict[str, Any], bench: Any) -> dict[str, Any]:
    """A path's summaries plus the bytes its kernel or host read (passes × size for *_passes)."""
    passes = bench.passes if name.endswith("_passes") else 1
    return {"bytes": bench.size * passes, "passes": passes, **times}


def judge(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Assessment:
    """Pure: the recorded numbers and host facts → tables, metrics and findings (see uvm_rules)."""
    return uvm_report.assess(raw, host)


PROBE = Probe(name="uvm", title="Unified memory: on-demand migration, prefetch, advice, zero-copy",
              measure_module=measure, judge=judge, legacy_needs_gpu=True)
