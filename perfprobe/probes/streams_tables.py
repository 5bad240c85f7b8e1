"""The tables `perfprobe streams` shows: plain data from recorded numbers; the ideal and efficiency
functions come from streams_rules so that the tables and the findings use the same arithmetic."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from perfprobe.model import Cell, Table
from perfprobe.units import format_bytes

IdealFn = Callable[[Mapping[str, float], int], float]
EfficiencyFn = Callable[[Mapping[str, Any], Mapping[str, Any]], float]


def tables(raw: Mapping[str, Any], ideal: IdealFn, efficiency: EfficiencyFn) -> tuple[Table, ...]:
    out = [stage_table(raw), config_table(raw, ideal, efficiency), breaker_table(raw, efficiency)]
    if raw.get("host_overlap"):
        out.append(host_table(raw["host_overlap"]))
    return tuple(out)


def stage_table(raw: Mapping[str, Any]) -> Table:
    size = raw["size_bytes"]
    rows: list[tuple[Cell, ...]] = []
    for label, key, nbytes in (("H2D", "h2d", size), ("kernel", "kernel", None), ("D2H", "d2h", size),
                               ("H2D + D2H at once", "both", 2 * size)):
        ms = raw["stage_ms"][key]
        rows.append((label, round(ms, 3), round(nbytes / (ms * 1e-3) / 1e9, 2) if nbytes else None))
    title = (f"Stages alone over {format_bytes(size)} (pinned; kernel: {raw['iters']} FMA iterations "
             f"per element, calibrated to one copy)")
    return Table(title, ("stage", "ms", "GB/s"), tuple(rows))


def _ms(entry: Mapping[str, Any]) -> str:
    return f"{entry['median']:.2f} [{entry['min']:.2f}-{entry['max']:.2f}]"


def config_table(raw: Mapping[str, Any], ideal: IdealFn, efficiency: EfficiencyFn) -> Table:
    serial_ms = raw["serial"]["ms"]["median"]
    rows: list[tuple[Cell, ...]] = []
    for c in [raw["serial"]] + list(raw["configs"]):
        rows.append((c["chunks"], c["streams"], _ms(c["ms"]), round(ideal(raw["stage_ms"], c["chunks"]), 2),
                     f"{efficiency(raw, c):.0%}", round(serial_ms / c["ms"]["median"], 2),
                     round(c["enqueue_ms"]["median"], 2), "yes" if c.get("verified") else "NO"))
    return Table("Pipelines: chunks round-robin over streams (ms: median (min-max), CUDA events)",
                 ("chunks", "streams", "ms", "ideal ms", "efficiency", "x serial", "enqueue ms", "checked"),
                 tuple(rows))


def breaker_table(raw: Mapping[str, Any], efficiency: EfficiencyFn) -> Table:
    rows: list[tuple[Cell, ...]] = []
    labels = {"pageable": "pageable host buffers", "legacy_default_stream": "one kernel on the legacy default stream"}
    for name, c in (raw.get("breakers") or {}).items():
        rows.append((labels.get(name, name), c["chunks"], c["streams"], _ms(c["ms"]),
                     f"{efficiency(raw, c):.0%}", "yes" if c.get("verified") else "NO"))
    return Table("What breaks overlap (at the best configuration)",
                 ("variant", "chunks", "streams", "ms", "efficiency", "checked"), tuple(rows))


def host_table(o: Mapping[str, Any]) -> Table:
    rows = ((round(o["gpu_ms"], 2), round(o["host_ms"], 2), round(o["sync_ms"], 2), round(o["async_ms"], 2)),)
    return Table("Host work beside GPU work (wall ms, medians)",
                 ("GPU alone", "host alone", "one after the other", "overlapped"), rows)
