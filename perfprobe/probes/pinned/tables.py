"""The tables `perfprobe pinned` shows: plain data built from recorded numbers, no judgement."""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.model import Cell, Table
from perfprobe.pcie import link_rate_or_none
from perfprobe.units import format_bytes


def tables(raw: Mapping[str, Any], links: Mapping[str, Any], index: int) -> tuple[Table, ...]:
    return (bandwidth_table(raw), enqueue_table(raw, index), link_table(links),
            pinning_table(raw), state_table(raw))


def _spread(entry: Mapping[str, Any]) -> str:
    g = entry["gbs"]
    return f"{g['median']:.2f} [{g['min']:.2f}-{g['max']:.2f}]"


def bandwidth_table(raw: Mapping[str, Any]) -> Table:
    rows = []
    for i, size in enumerate(raw["sizes_bytes"]):
        rows.append((format_bytes(size), _spread(raw["pageable"]["h2d"][i]), _spread(raw["pageable"]["d2h"][i]),
                     _spread(raw["pinned"]["h2d"][i]), _spread(raw["pinned"]["d2h"][i]),
                     _spread(raw["pinned"]["bidir"][i])))
    return Table("Copy bandwidth, GB/s: median (min-max) of repeats, CUDA events",
                 ("size", "pageable H2D", "pageable D2H", "pinned H2D", "pinned D2H", "pinned both ways"),
                 tuple(rows))


def enqueue_table(raw: Mapping[str, Any], index: int) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for mode in ("pageable", "pinned"):
        for direction in ("h2d", "d2h"):
            entry = raw[mode][direction][index]
            host_us = entry["host_enqueue_us"]["median"]
            device_us = entry["device_ms"]["median"] * 1e3
            rows.append((f"{mode} {direction.upper()}", round(host_us, 1), round(device_us, 1),
                         f"{host_us / device_us:.0%}"))
    title = f"cudaMemcpyAsync of {format_bytes(raw['sizes_bytes'][index])}: host time in the call vs copy time"
    return Table(title, ("copy", "host µs in call", "device µs", "host held"), tuple(rows))


def link_table(links: Mapping[str, Any]) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for label, key in (("idle (before)", "idle"), ("under load", "load"), ("maximum", "max")):
        pair = links.get(key)
        rate = link_rate_or_none(*pair) if pair else None
        rows.append((label, f"Gen{pair[0]}" if pair else "unknown", f"x{pair[1]}" if pair else "unknown",
                     rate.encoding if rate else None, round(rate.gbs_per_direction, 2) if rate else None))
    return Table("PCIe link (NVML; sysfs as fallback)",
                 ("reading", "generation", "width", "encoding", "GB/s per direction"), tuple(rows))


def pinning_table(raw: Mapping[str, Any]) -> Table:
    cost = raw["pinning_cost"]
    rows = tuple((label, f"{cost[key]['median']:.1f} [{cost[key]['min']:.1f}-{cost[key]['max']:.1f}]")
                 for label, key in (("cudaHostAlloc", "alloc_ms_per_gib"), ("cudaFreeHost", "free_ms_per_gib"),
                                    ("cudaHostRegister (existing buffer)", "register_ms_per_gib"),
                                    ("cudaHostUnregister", "unregister_ms_per_gib")))
    return Table(f"Page-locking cost, ms per GiB (measured on {format_bytes(cost['bytes'])})",
                 ("call", "ms/GiB median (min-max)"), rows)


def state_table(raw: Mapping[str, Any]) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for label, key in (("before", "state_before"), ("under load", "state_under_load"), ("after", "state_after")):
        state = raw.get(key) or {}
        pstate = state.get("pstate")
        reasons = state.get("clock_event_reasons")
        rows.append((label, f"P{pstate}" if pstate is not None else None, state.get("sm_clock_mhz"),
                     state.get("mem_clock_mhz"), f"0x{int(reasons):x}" if reasons is not None else None))
    return Table("GPU state (NVML)", ("when", "perf state", "SM MHz", "memory MHz", "clock-event reasons"),
                 tuple(rows))
