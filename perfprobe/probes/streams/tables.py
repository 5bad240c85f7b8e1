"""What `perfprobe streams` shows: metrics, tables, summary and facts from recorded numbers; the ideal
and efficiency arithmetic comes from figures.py, as the rules' does."""

from __future__ import annotations

from typing import Any

from perfprobe.engine.model import Cell, Metric, Table
from perfprobe.probes.streams.figures import (
    HostOverlap,
    Raw,
    best_config,
    best_ideal_ms,
    both_gbs_stat,
    copy_engines,
    efficiency,
    hidden_fraction,
    ideal_ms,
    median_ms,
    speedup,
    stage_stat,
)
from perfprobe.pure.stats import Stat, metric
from perfprobe.pure.units import format_bytes


def summary(raw: Raw) -> str:
    best = best_config(raw)
    return (f"{format_bytes(raw['size_bytes'])} H2D->kernel->D2H: best {best['chunks']} chunks x {best['streams']} "
            f"streams, {speedup(raw):.2f}x over serial, efficiency {efficiency(raw, best):.0%}")


def key_figure(raw: Raw) -> str:
    return f"{speedup(raw):.2f}x, {efficiency(raw, best_config(raw)):.0%} of ideal"


def metrics(raw: Raw) -> dict[str, Metric]:
    """Timed figures carry their repeats (stats.metric); counts, the efficiency, speed-up and
    slowdowns (ratios of separately timed figures) and the ideal (arithmetic on the stages) stay plain."""
    best = best_config(raw)
    both = both_gbs_stat(raw)
    out = {
        "best.chunks": Metric(best["chunks"], "count"), "best.streams": Metric(best["streams"], "count"),
        "best.ms": metric(best["ms"], "ms", 3),
        "best.ideal_ms": Metric(round(best_ideal_ms(raw), 3), "ms"),
        "best.efficiency": Metric(round(efficiency(raw, best), 3), "ratio"),
        "best.speedup": Metric(round(speedup(raw), 3), "ratio"),
        "serial.ms": metric(raw["serial"]["ms"], "ms", 3),
        "both_directions_gbs": metric(both, "GB/s") if both else Metric(round(raw["both_gbs"], 2), "GB/s"),
        "copy_engines": Metric(copy_engines(raw), "count"),
        "kernel_iters": Metric(raw["iters"], "count"),
    }
    for k, v in raw["stage_ms"].items():
        stat = stage_stat(raw, k)
        out[f"stage_ms.{k}"] = metric(stat, "ms", 3) if stat else Metric(round(v, 3), "ms")
    for name, variant in (raw.get("breakers") or {}).items():
        out[f"{name}.slowdown"] = Metric(round(median_ms(variant) / median_ms(best), 3), "ratio")
    overlap = raw.get("host_overlap")
    if overlap:
        out["host_overlap.hidden_fraction"] = Metric(round(hidden_fraction(overlap), 3), "ratio")
    return out


def facts(raw: Raw) -> dict[str, Any]:
    device = raw["device"]
    return {"gpu": device.get("name"), "pci_bus_id": device.get("pci_bus_id"),
            "async_engine_count": device.get("async_engine_count"),
            "concurrent_kernels": device.get("concurrent_kernels"),
            "kernel_iters": raw["iters"], "size_bytes": raw["size_bytes"]}


def tables(raw: Raw) -> tuple[Table, ...]:
    out = [stage_table(raw), config_table(raw), breaker_table(raw)]
    overlap = raw.get("host_overlap")
    if overlap:
        out.append(host_table(overlap))
    return tuple(out)


def stage_table(raw: Raw) -> Table:
    size = raw["size_bytes"]
    rows: list[tuple[Cell, ...]] = []
    for label, key, nbytes in (("H2D", "h2d", size), ("kernel", "kernel", None), ("D2H", "d2h", size),
                               ("H2D + D2H at once", "both", 2 * size)):
        ms = raw["stage_ms"][key]
        rows.append((label, round(ms, 3), round(nbytes / (ms * 1e-3) / 1e9, 2) if nbytes else None))
    title = (f"Stages alone over {format_bytes(size)} (pinned; kernel: {raw['iters']} FMA iterations "
             f"per element, calibrated to one copy)")
    return Table(title, ("stage", "ms", "GB/s"), tuple(rows))


def _ms(entry: Stat) -> str:
    return f"{entry['median']:.2f} [{entry['min']:.2f}-{entry['max']:.2f}]"


def config_table(raw: Raw) -> Table:
    serial_ms = median_ms(raw["serial"])
    rows: list[tuple[Cell, ...]] = []
    for c in [raw["serial"]] + list(raw["configs"]):
        rows.append((c["chunks"], c["streams"], _ms(c["ms"]), round(ideal_ms(raw["stage_ms"], c["chunks"]), 2),
                     f"{efficiency(raw, c):.0%}", round(serial_ms / median_ms(c), 2),
                     round(c["enqueue_ms"]["median"], 2), "yes" if c.get("verified") else "NO"))
    return Table("Pipelines: chunks round-robin over streams (ms: median (min-max), CUDA events)",
                 ("chunks", "streams", "ms", "ideal ms", "efficiency", "x serial", "enqueue ms", "checked"),
                 tuple(rows))


def breaker_table(raw: Raw) -> Table:
    rows: list[tuple[Cell, ...]] = []
    labels = {"pageable": "pageable host buffers", "legacy_default_stream": "one kernel on the legacy default stream"}
    for name, c in (raw.get("breakers") or {}).items():
        rows.append((labels.get(name, name), c["chunks"], c["streams"], _ms(c["ms"]),
                     f"{efficiency(raw, c):.0%}", "yes" if c.get("verified") else "NO"))
    return Table("What breaks overlap (at the best configuration)",
                 ("variant", "chunks", "streams", "ms", "efficiency", "checked"), tuple(rows))


def host_table(o: HostOverlap) -> Table:
    rows = ((round(o["gpu_ms"], 2), round(o["host_ms"], 2), round(o["sync_ms"], 2), round(o["async_ms"], 2)),)
    return Table("Host work beside GPU work (wall ms, medians)",
                 ("GPU alone", "host alone", "one after the other", "overlapped"), rows)
