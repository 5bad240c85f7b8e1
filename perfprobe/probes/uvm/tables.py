"""The uvm probe's numbers laid out for people and machines: tables, metrics, summary, key figure.

Pure, like the rules: everything comes from the recorded raw numbers through figures.py.
"""

from __future__ import annotations

from typing import Any

from perfprobe.engine.model import Cell, Metric, Table
from perfprobe.probes.uvm.figures import (
    PASSES,
    TO_GPU,
    TO_HOST,
    Raw,
    gbs,
    gbs_stat,
    move_s,
    path_entry,
    ratio_to_reference,
)
from perfprobe.pure.stats import metric

HOW = {
    "managed_on_demand": "host-written managed; GPU faults it in",
    "managed_prefetch": "managed; prefetch to GPU + kernel",
    "managed_advise_preferred_gpu": "managed; advise preferred = GPU",
    "managed_advise_accessed_by": "managed; preferred host, accessed-by GPU",
    "pageable_direct": "malloc'd host memory read in place",
    "zero_copy": "mapped pinned memory read in place",
    "explicit_copy": "pinned → device copy + kernel (ref.)",
    "device_memory": "kernel on device memory (ceiling)",
    "host_on_demand": "GPU-written managed; CPU faults it in",
    "host_prefetch": "managed; prefetch to host + CPU read",
    "host_explicit_copy": "device → pinned copy + CPU read (ref.)",
    "host_local": "CPU reads host memory (ceiling)",
}

MEANING = {
    "managedMemory": "cudaMallocManaged works at all",
    "concurrentManagedAccess": "CPU and GPU may touch managed memory at once; prefetch and advice work",
    "pageableMemoryAccess": "kernels can read plain malloc'd host memory",
    "pageableMemoryAccessUsesHostPageTables": "... through the host's page tables (ATS, no migration)",
    "hostNativeAtomicSupported": "CPU-GPU atomics are native over the link",
    "directManagedMemAccessFromHost": "the CPU reads GPU-resident managed memory in place",
    "canMapHostMemory": "mapped pinned (zero-copy) memory is possible",
    "unifiedAddressing": "host and device share one address space",
}


def summary(raw: Raw) -> str:
    name = (raw.get("device") or {}).get("name") or "GPU"
    size = _mib(raw.get("size_bytes"))
    return (f"{name}, {size}: GPU reads host-written data on demand at "
            f"{_num(gbs(raw, 'managed_on_demand'))} GB/s, after a prefetch at "
            f"{_num(gbs(raw, 'managed_prefetch'))}, by explicit copy at "
            f"{_num(gbs(raw, 'explicit_copy'))}")


def key_figure(raw: Raw) -> str:
    ratios = [(label, ratio_to_reference(raw, path)) for label, path in
              (("on-demand", "managed_on_demand"), ("prefetch", "managed_prefetch"))]
    shown = [f"{label} {value:.2f}× copy" for label, value in ratios if value is not None]
    return ", ".join(shown) or "n/a"


def metrics(raw: Raw) -> dict[str, Metric]:
    """gbs.<path>, ratio.<path> (to the explicit-copy reference), time_ms.<path>, attr.<name>; the
    GB/s and times carry their repeats."""
    out: dict[str, Metric] = {"size_bytes": Metric(raw.get("size_bytes"), "bytes")}
    for path in (*TO_GPU, *PASSES, *TO_HOST):
        speed = gbs_stat(raw, path)
        if speed is None:
            continue
        out[f"gbs.{path}"] = metric(speed, "GB/s", 3)
        ratio = ratio_to_reference(raw, path)  # two paths' figures over each other: plain
        out[f"ratio.{path}"] = Metric(None if ratio is None else round(ratio, 3), "ratio")
        out[f"time_ms.{path}"] = metric(path_entry(raw, path)["time_s"], "ms", 3, scale=1e3)
    for name, value in (raw.get("attributes") or {}).items():
        out[f"attr.{name}"] = Metric(int(value), "flag")
    return out


def tables(raw: Raw) -> tuple[Table, ...]:
    size = _mib(raw.get("size_bytes"))
    columns = ("path", "how", "ms (median)", "ms min–max", "moving ms", "GB/s", "× copy")
    return (
        Table("Unified-memory attributes", ("attribute", "value", "meaning"),
              tuple((name, value, MEANING.get(name, "")) for name, value in
                    (raw.get("attributes") or {}).items())),
        Table(f"GPU reads host-written data ({size}, same kernel on every path)", columns,
              tuple(_row(raw, path) for path in TO_GPU)),
        Table(f"CPU reads GPU-written data ({size}{_threads(raw)})", columns,
              tuple(_row(raw, path) for path in TO_HOST)),
        Table("Zero-copy against copy-then-read", ("passes", "zero-copy GB/s", "copy-then-read GB/s",
                                                    "zero-copy ÷ copy"), _pass_rows(raw)),
    )


def facts(raw: Raw) -> dict[str, Any]:
    device = raw.get("device") or {}
    return {"gpu": device.get("name"), "device": device.get("index"),
            "compute_capability": device.get("compute_capability"),
            "cuda_runtime_version": device.get("cuda_runtime_version"),
            "cuda_driver_version": device.get("cuda_driver_version"),
            "size_bytes": raw.get("size_bytes"), "repeats": raw.get("repeats"),
            "passes": raw.get("passes"), "host_threads": raw.get("host_threads"),
            "api_used": raw.get("api_used") or {}, "api_notes": raw.get("api_notes") or []}


def _row(raw: Raw, path: str) -> tuple[Cell, ...]:
    entry = path_entry(raw, path)
    if "time_s" not in entry:
        return (path, f"skipped: {entry.get('skipped', 'not measured')}", None, None, None, None, None)
    t, moving = entry["time_s"], move_s(raw, path)
    return (path, HOW.get(path, ""), _round(t["median"] * 1e3),
            f"{t['min'] * 1e3:.3g}–{t['max'] * 1e3:.3g}", None if moving is None else _round(moving * 1e3),
            _round(gbs(raw, path)), _round(ratio_to_reference(raw, path)))


def _pass_rows(raw: Raw) -> tuple[tuple[Cell, ...], ...]:
    rows = []
    for zero, copy, passes in (("zero_copy", "explicit_copy", 1),
                               ("zero_copy_passes", "explicit_copy_passes", raw.get("passes"))):
        z, c = gbs(raw, zero), gbs(raw, copy)
        rows.append((passes, _round(z), _round(c), _round(z / c) if z and c else None))
    return tuple(rows)


def _threads(raw: Raw) -> str:
    count = raw.get("host_threads")
    return f", {count} host thread{'s' if count != 1 else ''}" if count else ""


def _round(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.3g}")


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _mib(value: int | None) -> str:
    return f"{int(value) >> 20} MiB" if value else "? MiB"
