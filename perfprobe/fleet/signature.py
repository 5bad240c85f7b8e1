"""The hardware signature: which hosts are peers. Hosts are compared only within one signature.

What the hardware *is*, not how it is running: CPU model and the CPUs present (online + offline),
the last-level cache's size, memory rounded to whole GiB, GPU model and count, and each GPU's
maximum link generation and width. The last-level cache tells apart guests whose CPU model is a
generic name ("Intel(R) Xeon(R) Processor"): two H100 machines' 16-vCPU guests (2026-12-06)
reported 105 and 300 MiB, read all-thread DRAM at 190 and 122 GB/s, and a health check of the one
against a baseline of the other drained on it; the cache probe sizes its DRAM sets from that size
too, so its figures of two sizes are not the same measurement. A node with CPUs taken away, a link
trained down or a GPU missing from NVML stays in its group, where that shows as an outlier, instead
of forming a group of its own.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.host.facts import last_level_cache_bytes

GIB = 1 << 30
MIB = 1 << 20


def signature(host: Mapping[str, Any]) -> dict[str, Any]:
    """The signature of one report's `host` object (missing facts read as None)."""
    cpu = host.get("cpu") or {}
    cpus = host.get("cpus") or {}
    memory = host.get("memory") or {}
    gpus = host.get("gpus") or []
    total = memory.get("total_bytes")
    return {
        "cpu_model": cpu.get("model"),
        "cpus": len(cpus.get("online") or []) + len(cpus.get("offline") or []),
        "llc_mib": _llc_mib(host),
        "memory_gib": round(total / GIB) if isinstance(total, (int, float)) else None,
        "gpu_model": sorted({str(g.get("name")) for g in gpus}) or None,
        "gpus": len(gpus),
        "gpu_link_max": sorted({_link(g) for g in gpus}) or None,
    }


def label(sig: Mapping[str, Any]) -> str:
    """A short human name for a signature: 'Intel Xeon 32 CPUs, 251 GiB, 2x NVIDIA H200 Gen5 x16'."""
    llc = f" ({sig['llc_mib']} MiB LLC)" if sig.get("llc_mib") is not None else ""
    parts = [f"{sig.get('cpu_model') or 'unknown CPU'} {sig.get('cpus')} CPUs{llc}",
             f"{sig.get('memory_gib')} GiB" if sig.get("memory_gib") is not None else "unknown memory"]
    if sig.get("gpus"):
        parts.append(f"{sig['gpus']}x {'/'.join(sig.get('gpu_model') or [])} {'/'.join(sig.get('gpu_link_max') or [])}")
    return ", ".join(parts)


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """'cpus: 32 vs 16' for each signature field that differs."""
    return [f"{key}: {_show(a.get(key))} vs {_show(b.get(key))}" for key in a if a.get(key) != b.get(key)]


def memory_close(a: Mapping[str, Any], b: Mapping[str, Any], tolerance: float = 0.03) -> bool:
    """Memory within 3%: firmware and kernel reservations move MemTotal a little between peers."""
    x, y = a.get("memory_gib"), b.get("memory_gib")
    if x is None or y is None:
        return x == y
    return abs(x - y) <= tolerance * max(x, y, 1)


def same_hardware(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    keys = [k for k in a if k != "memory_gib"]
    return all(a.get(k) == b.get(k) for k in keys) and memory_close(a, b)


def _llc_mib(host: Mapping[str, Any]) -> int | None:
    """The last-level cache in whole MiB, as the probes size their buffers from it
    (host.facts.last_level_cache_bytes); None when the host reports none. A baseline written before
    this field was added has no `llc_mib` in its signatures, and same_hardware compares only the
    baseline's fields."""
    size = last_level_cache_bytes(host)
    return round(size / MIB) if size else None


def _link(gpu: Mapping[str, Any]) -> str:
    pcie = gpu.get("pcie") or {}
    gen, width = pcie.get("gen_max"), pcie.get("width_max")
    return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "/".join(str(v) for v in value)
    return "unknown" if value is None else str(value)
