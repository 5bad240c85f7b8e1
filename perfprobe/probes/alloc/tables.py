"""Metrics, tables and the summary of `perfprobe alloc`. Pure."""

from __future__ import annotations

from typing import Any, Optional

from perfprobe.engine.model import Cell, Metric, Table
from perfprobe.probes.alloc import figures as f
from perfprobe.probes.alloc.figures import Raw
from perfprobe.pure import stats


def _r(value: Optional[float], digits: int = 3) -> Optional[float]:
    return None if value is None else round(value, digits)


def _label(key: str) -> str:
    return "mixed" if key == "mixed" else f"{key}B"


def _keys(raw: Raw) -> list[str]:
    return [str(s) for s in f.sizes(raw)] + ["mixed"]


def _pool(raw: Raw, key: str, scope: f.Scope) -> Metric:
    """The pool's ns per pop+push, bare: a free list's pop loads the head its last push stored, so,
    like a plain increment, it runs in a fast or a slow mode from run to run (0.4-2 ns on the H200
    guest; repeats' MAD up to 40% of the median in a quiet --quick run). With its spread it would be
    marked unstable on a quiet host; pool_speedup carries the figure."""
    return Metric(_r(f.pool_ns(raw, key, scope)), "ns")


def metrics(raw: Raw) -> dict[str, Metric]:
    out: dict[str, Metric] = {"threads": Metric(f.threads(raw), "count")}
    for key in _keys(raw):
        for scope in f.SCOPES:
            out[f"malloc_ns.{scope}.{_label(key)}"] = stats.metric(f.malloc_stat(raw, key, scope), "ns", 3)
            out[f"pool_ns.{scope}.{_label(key)}"] = _pool(raw, key, scope)
            out[f"pool_speedup.{scope}.{_label(key)}"] = Metric(_r(f.pool_speedup(raw, key, scope)), "ratio")
        out[f"malloc_contention.{_label(key)}"] = Metric(_r(f.contention(raw, key)), "ratio")
    for name in f.allocators(raw):
        if name == f.SYSTEM:
            continue
        for key in ("64", "mixed"):
            for scope in f.SCOPES:
                out[f"allocator.{name}.malloc_ns.{scope}.{_label(key)}"] = stats.metric(
                    f.malloc_stat(raw, key, scope, name), "ns", 3)
    out.update(_touch_metrics(raw))
    for lv in f.copy_levels(raw):
        out[f"memcpy_gbs.{lv['name']}"] = stats.metric(lv["gbs"], "GB/s", 3)
    out[f"copy_ms.{f.tensor_bytes(raw) >> 20}M"] = stats.metric(f.copy_stat(raw, "ms"), "ms", 3)
    out["move_ns"] = stats.metric(f.copy_stat(raw, "move_ns"), "ns", 4)
    return out


TOUCH_DIGITS = {"first_touch_ns.2M": 0, "reuse_ns.4K": 2}  # the rest: 1 digit


def _touch_metrics(raw: Raw) -> dict[str, Metric]:
    timed = {name: stats.metric(f.touch_stat(raw, name), "ns", TOUCH_DIGITS.get(name, 1)) for name in f.TOUCH_STATS}
    return {
        "first_touch_ns.4K": timed["first_touch_ns.4K"],
        "first_touch_ns.2M": timed["first_touch_ns.2M"],
        "huge_page_factor": Metric(_r(f.huge_factor(raw)), "ratio"),
        "huge_page_fraction": Metric(_r(f.huge_fraction(raw)), "ratio"),
        "reuse_ns.4K": timed["reuse_ns.4K"],
        "first_touch_over_reuse": Metric(_r(f.first_touch_over_reuse(raw)), "ratio"),
        "prefault_speedup": Metric(_r(f.prefault_speedup(raw)), "ratio"),
        "populate_ns.4K": timed["populate_ns.4K"],
        "populate_write_ns.4K": timed["populate_write_ns.4K"],
        "first_touch_ns.all.4K": timed["first_touch_ns.all.4K"],
        "fault_scaling": Metric(_r(f.fault_scaling(raw)), "ratio"),
        "mlock_ns.4K": timed["mlock_ns.4K"],
        "mlock_added_ns.4K": timed["mlock_added_ns.4K"],
    }


def tables(raw: Raw) -> tuple[Table, ...]:
    n = f.threads(raw)
    rows: list[tuple[Cell, ...]] = []
    for key in _keys(raw):
        row: list[Cell] = [_label(key)]
        for name in f.allocators(raw):
            row += [_r(f.malloc_ns(raw, key, "1t", name), 1), _r(f.malloc_ns(raw, key, "all", name), 1)]
        row += [_r(f.pool_ns(raw, key, "1t"), 2), _r(f.pool_ns(raw, key, "all"), 2),
                _r(f.pool_speedup(raw, key, "1t"), 1), _r(f.pool_speedup(raw, key, "all"), 1)]
        rows.append(tuple(row))
    columns = ["size"]
    for name in f.allocators(raw):
        columns += [f"{name} 1t", f"{name} {n}t"]
    columns += ["pool 1t", f"pool {n}t", "pool x 1t", f"pool x {n}t"]
    alloc = Table(f"malloc+free against a free-list pool, ns per pair (1 thread; {n} at once)", tuple(columns),
                  tuple(rows))
    touch = Table("first touch, ns", ("case", "ns", "per"), tuple(_touch_rows(raw)))
    copies = Table("memcpy against a move", ("case", "bytes", "GB/s", "time"), tuple(_copy_rows(raw)))
    return alloc, touch, copies


def _touch_rows(raw: Raw) -> list[tuple[Cell, ...]]:
    rows: list[tuple[Cell, ...]] = [
        ("lazy (fault + zero)", _r(f.first_touch_4k(raw), 1), "4 KiB page"),
        ("reused buffer", _r(f.reuse_4k(raw), 2), "4 KiB page"),
        ("MAP_POPULATE: the mmap call", _r(f.populate_4k(raw), 1), "4 KiB page"),
        ("MAP_POPULATE: then the first pass", _r(f.prefaulted_touch_4k(raw), 2), "4 KiB page"),
        ("MADV_POPULATE_WRITE", _r(f.populate_write_4k(raw), 1), "4 KiB page"),
        (f"lazy, {f.fault_threads(raw)} threads at once", _r(f.first_touch_all_4k(raw), 1), "4 KiB page, per thread"),
        ("huge page (MADV_HUGEPAGE)", _r(f.first_touch_2m(raw), 0), "2 MiB page"),
    ]
    if f.mlock(raw).get("available"):
        rows += [("mlock, fresh", _r(f.mlock_fresh_4k(raw), 1), "4 KiB page"),
                 ("mlock, touched", _r(f.mlock_added_4k(raw), 1), "4 KiB page")]
    return rows


def _copy_rows(raw: Raw) -> list[tuple[Cell, ...]]:
    rows: list[tuple[Cell, ...]] = [(f"memcpy {lv['name']}", int(lv["bytes"]), _r(float(lv["gbs"]["median"]), 2), "")
                                    for lv in f.copy_levels(raw)]
    rows.append(("one tensor copy", f.tensor_bytes(raw), "", f"{f.copy_ms(raw):.2f} ms"))
    rows.append(("move (pointer handed over)", "", "", f"{f.move_ns(raw):.2f} ns"))
    return rows


def summary(raw: Raw) -> str:
    return (f"malloc 64 B {f.malloc_ns(raw, '64', '1t') or 0:.0f} ns alone, {f.malloc_ns(raw, '64', 'all') or 0:.0f} "
            f"ns on {f.threads(raw)} CPUs; pool {f.pool_speedup(raw, '64', '1t') or 0:.0f}x faster; first touch "
            f"{f.first_touch_4k(raw):.0f} ns/4K page; a {f.tensor_bytes(raw) >> 20} MiB copy {f.copy_ms(raw):.1f} ms")


def key_figure(raw: Raw) -> str:
    return (f"malloc {f.malloc_ns(raw, 'mixed', 'all') or 0:.0f} ns, fault {f.first_touch_4k(raw):.0f} ns/4K, "
            f"copy {f.tensor_bytes(raw) >> 20}M {f.copy_ms(raw):.1f} ms")


def facts(raw: Raw) -> dict[str, Any]:
    return {"method": raw.get("method"), "cpus": raw.get("cpus"), "looked_for": raw.get("looked_for"),
            "allocator_paths": {n: raw["allocators"][n].get("path") for n in f.allocators(raw)},
            "mixed": raw.get("mixed"), "budget": raw.get("budget"), "first_touch_nodes": f.page_nodes(raw)}
