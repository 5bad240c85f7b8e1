"""What `perfprobe pinned` shows: metrics, tables, curves, summary and facts, no judgement."""

from __future__ import annotations

from typing import Any

from perfprobe.engine.model import Cell, Curve, Metric, Table
from perfprobe.host.facts import Facts
from perfprobe.probes.gpu_raw import STATES
from perfprobe.probes.pinned.figures import (
    Copy,
    Links,
    Mode,
    Pair,
    Raw,
    enqueue_ratio,
    gbs,
    gbs_stat,
    judged_rate,
    largest_bytes,
    largest_index,
    link_readings,
    rate_of,
    state,
)
from perfprobe.pure.stats import metric
from perfprobe.pure.units import format_bytes


def summary(raw: Raw, host: Facts) -> str:
    index = largest_index(raw)
    h2d, d2h = gbs(raw, "pinned", "h2d", index), gbs(raw, "pinned", "d2h", index)
    return (f"pinned {format_bytes(largest_bytes(raw))}: H2D {h2d:.1f}, D2H {d2h:.1f}, both "
            f"{gbs(raw, 'pinned', 'bidir', index):.1f} GB/s{_share(raw, host)}; pageable "
            f"{gbs(raw, 'pageable', 'h2d', index):.1f} / {gbs(raw, 'pageable', 'd2h', index):.1f} GB/s")


def key_figure(raw: Raw, host: Facts) -> str:
    index = largest_index(raw)
    h2d, d2h = gbs(raw, "pinned", "h2d", index), gbs(raw, "pinned", "d2h", index)
    return f"{h2d:.1f}/{d2h:.1f} GB/s{_share(raw, host)}"


def _share(raw: Raw, host: Facts) -> str:
    rate = judged_rate(link_readings(raw, host))
    index = largest_index(raw)
    worst = min(gbs(raw, "pinned", "h2d", index), gbs(raw, "pinned", "d2h", index))
    return f" ({worst / rate.gbs_per_direction:.0%} of {rate.label})" if rate else ""


def metrics(raw: Raw, host: Facts) -> dict[str, Metric]:
    """The largest copy's figures; timed ones carry their repeats (stats.metric), the link's rate,
    the copy size and the enqueue ratios (two figures of one copy over each other) stay plain."""
    index = largest_index(raw)
    rate = judged_rate(link_readings(raw, host))
    out = {f"{mode}.{d}_gbs": metric(gbs_stat(raw, mode, d, index), "GB/s")
           for mode in ("pinned", "pageable") for d in ("h2d", "d2h")}
    out["pinned.bidir_gbs"] = metric(gbs_stat(raw, "pinned", "bidir", index), "GB/s")
    out["copy_bytes"] = Metric(largest_bytes(raw), "bytes")
    if rate:
        out["link.rate_gbs"] = Metric(round(rate.gbs_per_direction, 2), "GB/s")
        for d in ("h2d", "d2h"):
            out[f"link.fraction_{d}"] = metric(gbs_stat(raw, "pinned", d, index), "ratio", 3,
                                               scale=1 / rate.gbs_per_direction)
        out["link.fraction_bidir"] = metric(gbs_stat(raw, "pinned", "bidir", index), "ratio", 3,
                                            scale=1 / (2 * rate.gbs_per_direction))
    for key in ("alloc_ms_per_gib", "register_ms_per_gib"):
        out[f"pinning.{key}"] = metric(raw["pinning_cost"][key], "ms/GiB", 1)
    for mode in ("pageable", "pinned"):
        out[f"enqueue.{mode}_h2d_host_over_device"] = Metric(round(enqueue_ratio(raw, mode, "h2d", index), 3), "ratio")
    return out


def curves(raw: Raw) -> tuple[Curve, ...]:
    modes: tuple[Mode, ...] = ("pinned", "pageable")
    return tuple(_curve(raw, mode) for mode in modes)


def _curve(raw: Raw, mode: Mode) -> Curve:
    points = tuple((float(s), float(e["gbs"]["median"])) for s, e in zip(raw["sizes_bytes"], raw[mode]["h2d"]))
    return Curve(title=f"{mode} H2D bandwidth by copy size", x_label="bytes", y_label="GB/s", points=points)


def facts(raw: Raw, host: Facts) -> dict[str, Any]:
    device = raw.get("device") or {}
    links = link_readings(raw, host)
    rate = judged_rate(links)
    return {"gpu": device.get("name"), "pci_bus_id": device.get("pci_bus_id"),
            "driver_version": device.get("driver_version"),
            "link": {key: _label(pair) for key, pair in (("idle", links["idle"]), ("load", links["load"]),
                                                           ("max", links["max"]))},
            "link_rate_gbs": rate.gbs_per_direction if rate else None,
            "numa": raw.get("numa"), "bind": raw.get("bind")}


def _label(pair: Pair) -> str | None:
    return f"Gen{pair[0]} x{pair[1]}" if pair else None


def tables(raw: Raw, host: Facts) -> tuple[Table, ...]:
    index = largest_index(raw)
    return (bandwidth_table(raw), enqueue_table(raw, index), link_table(link_readings(raw, host)),
            pinning_table(raw), state_table(raw))


def _spread(entry: Copy) -> str:
    g = entry["gbs"]
    return f"{g['median']:.2f} [{g['min']:.2f}-{g['max']:.2f}]"


def bandwidth_table(raw: Raw) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for i, size in enumerate(raw["sizes_bytes"]):
        rows.append((format_bytes(size), _spread(raw["pageable"]["h2d"][i]), _spread(raw["pageable"]["d2h"][i]),
                     _spread(raw["pinned"]["h2d"][i]), _spread(raw["pinned"]["d2h"][i]),
                     _spread(raw["pinned"]["bidir"][i])))
    return Table("Copy bandwidth, GB/s: median (min-max) of repeats, CUDA events",
                 ("size", "pageable H2D", "pageable D2H", "pinned H2D", "pinned D2H", "pinned both ways"),
                 tuple(rows))


def enqueue_table(raw: Raw, index: int) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for mode in ("pageable", "pinned"):
        for direction in ("h2d", "d2h"):
            entry = raw[mode][direction][index]
            host_us = float(entry["host_enqueue_us"]["median"])
            device_us = float(entry["device_ms"]["median"]) * 1e3
            rows.append((f"{mode} {direction.upper()}", round(host_us, 1), round(device_us, 1),
                         f"{host_us / device_us:.0%}"))
    title = f"cudaMemcpyAsync of {format_bytes(raw['sizes_bytes'][index])}: host time in the call vs copy time"
    return Table(title, ("copy", "host µs in call", "device µs", "host held"), tuple(rows))


def link_table(links: Links) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for label, pair in (("idle (before)", links["idle"]), ("under load", links["load"]), ("maximum", links["max"])):
        rate = rate_of(pair)
        rows.append((label, f"Gen{pair[0]}" if pair else "unknown", f"x{pair[1]}" if pair else "unknown",
                     rate.encoding if rate else None, round(rate.gbs_per_direction, 2) if rate else None))
    return Table("PCIe link (NVML; sysfs as fallback)",
                 ("reading", "generation", "width", "encoding", "GB/s per direction"), tuple(rows))


def pinning_table(raw: Raw) -> Table:
    cost = raw["pinning_cost"]
    rows = tuple((label, f"{cost[key]['median']:.1f} [{cost[key]['min']:.1f}-{cost[key]['max']:.1f}]")
                 for label, key in (("cudaHostAlloc", "alloc_ms_per_gib"), ("cudaFreeHost", "free_ms_per_gib"),
                                    ("cudaHostRegister (existing buffer)", "register_ms_per_gib"),
                                    ("cudaHostUnregister", "unregister_ms_per_gib")))
    return Table(f"Page-locking cost, ms per GiB (measured on {format_bytes(cost['bytes'])})",
                 ("call", "ms/GiB median (min-max)"), rows)


def state_table(raw: Raw) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for label, key in STATES:
        reading = state(raw, key)
        pstate = reading.get("pstate")
        reasons = reading.get("clock_event_reasons")
        rows.append((label, f"P{pstate}" if pstate is not None else None, reading.get("sm_clock_mhz"),
                     reading.get("mem_clock_mhz"), f"0x{int(reasons):x}" if reasons is not None else None))
    return Table("GPU state (NVML)", ("when", "perf state", "SM MHz", "memory MHz", "clock-event reasons"),
                 tuple(rows))
