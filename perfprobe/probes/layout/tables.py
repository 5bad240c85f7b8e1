"""Metrics, tables, offset curves and the summary of `perfprobe layout`. Pure."""

from __future__ import annotations

from typing import Any, Optional

from perfprobe.engine.model import Cell, Curve, Metric, Table
from perfprobe.host.facts import Facts
from perfprobe.probes.layout import figures as f
from perfprobe.probes.layout.figures import Raw
from perfprobe.probes.layout.plan import OPS
from perfprobe.pure import stats


def _r(value: Optional[float], digits: int = 3) -> Optional[float]:
    return None if value is None else round(value, digits)


def metrics(raw: Raw, host: Facts) -> dict[str, Metric]:
    out: dict[str, Metric] = {}
    for w in f.widths(raw):
        out[f"load_ns.aligned.{w}B"] = stats.metric(f.aligned_stat(raw, w), "ns", 4)
        out[f"load_latency_ns.aligned.{w}B"] = stats.metric(f.aligned_stat(raw, w, "latency"), "ns", 3)
        out[f"split_penalty.line.{w}B"] = Metric(_r(f.line_penalty(raw, w)), "ratio")
        out[f"split_latency_penalty.line.{w}B"] = Metric(_r(f.line_penalty(raw, w, "latency")), "ratio")
        out[f"split_penalty.page.{w}B"] = Metric(_r(f.page_penalty(raw, w)), "ratio")
        out[f"split_latency_penalty.page.{w}B"] = Metric(_r(f.page_penalty(raw, w, "latency")), "ratio")
        out[f"misaligned_penalty.{w}B"] = Metric(_r(f.misaligned_penalty(raw, w)), "ratio")
    for level in f.levels(raw):
        for k in f.fields(raw):
            out[f"soa_speedup.k{k}.{level}"] = Metric(_r(f.soa_speedup(raw, level, k)), "ratio")
            out[f"soa_update_speedup.k{k}.{level}"] = Metric(_r(f.soa_speedup(raw, level, k, "update")), "ratio")
            out[f"soa_all_fields_speedup.k{k}.{level}"] = Metric(_r(f.soa_speedup(raw, level, k, "all")), "ratio")
            for lay in ("aos", "soa"):
                for op in OPS:
                    out[f"ns_per_record.{lay}.{op}.k{k}.{level}"] = stats.metric(f.record_stat(raw, level, k, lay, op), "ns", 4)
        out[f"soa_from_fields.{level}"] = Metric(f.soa_from(raw, level), "fields")
        out[f"working_set_bytes.{level}"] = Metric(f.level_bytes(raw, level), "bytes")
    for key in sorted(raw.get("vector") or {}):
        layout, op = key.split(".")
        out[f"vector_bytes.{key}"] = Metric(f.vector_bytes(raw, layout, op), "bytes")
    return out


def tables(raw: Raw) -> tuple[Table, ...]:
    split_rows: list[tuple[Cell, ...]] = []
    for w in f.widths(raw):
        split_rows.append((f"{w} B", _r(f.aligned_ns(raw, w)), _r(f.line_split_ns(raw, w)),
                           _r(f.line_penalty(raw, w), 2), _r(f.aligned_ns(raw, w, "latency"), 2),
                           _r(f.line_split_ns(raw, w, "latency"), 2), _r(f.line_penalty(raw, w, "latency"), 2),
                           _r(f.page_penalty(raw, w), 2), _r(f.page_penalty(raw, w, "latency"), 2)))
    split = Table("loads: aligned against split (ns per load; penalty = split / aligned)",
                  ("width", "aligned", "line split", "penalty", "latency aligned", "latency split",
                   "penalty", "page split penalty", "page latency penalty"), tuple(split_rows))
    rec_rows: list[tuple[Cell, ...]] = []
    for level in f.levels(raw):
        for k in f.fields(raw):
            row: list[Cell] = [level, k]
            for op in OPS:
                row += [_r(f.record_ns(raw, level, k, "aos", op), 3), _r(f.record_ns(raw, level, k, "soa", op), 3),
                        _r(f.soa_speedup(raw, level, k, op), 2)]
            rec_rows.append(tuple(row))
    records = Table("ns per record: one field summed, one updated, every field summed (AoS / SoA, speed-up)",
                    ("level", "K", "sum AoS", "sum SoA", "x", "update AoS", "update SoA", "x",
                     "all AoS", "all SoA", "x"), tuple(rec_rows))
    return split, records


def curves(raw: Raw) -> tuple[Curve, ...]:
    return tuple(Curve(f"{w}-byte load throughput against its offset in a 64-byte line", "offset (bytes)",
                       "ns/load", tuple((float(o), v) for o, v in f.sweep(raw, w)), log_x=False)
                 for w in (8, 32) if w in f.widths(raw))


def _biggest_dram_speedup(raw: Raw) -> tuple[int, Optional[float]]:
    level = "dram" if "dram" in f.levels(raw) else f.levels(raw)[-1]
    k = max(f.fields(raw))
    return k, f.soa_speedup(raw, level, k)


def summary(raw: Raw, host: Facts) -> str:
    k, speed = _biggest_dram_speedup(raw)
    return (f"line split {f.line_penalty(raw, 8) or 0:.2f}x (8 B), {f.line_penalty(raw, 32) or 0:.2f}x (32 B); "
            f"page split {f.page_penalty(raw, 8):.1f}x (8 B); SoA {speed or 0:.1f}x faster for one of "
            f"{k} fields in DRAM")


def key_figure(raw: Raw, host: Facts) -> str:
    k, speed = _biggest_dram_speedup(raw)
    return f"split {f.line_penalty(raw, 8) or 0:.1f}x, SoA k{k} {speed or 0:.1f}x"


def facts(raw: Raw) -> dict[str, Any]:
    return {"method": raw.get("method"), "levels": raw.get("levels"), "split_lines": raw.get("split_lines"),
            "vector": raw.get("vector")}
