"""Measure `perfprobe layout`: loads at every offset of a line and across pages; AoS against SoA.

Only this module (with the kernels) imports numba. It returns plain numbers; figures.py reads them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perfprobe.engine.probe import ProbeContext
from perfprobe.probes.layout.plan import (
    FIELDS,
    LINE_BYTES,
    OFFSETS,
    OPS,
    PAGE_BYTES,
    PAGE_SPLITS,
    PRESETS,
    SPLIT_LINES,
    WIDTHS,
    Settings,
    flush_bytes,
    levels,
    page_buffer_bytes,
    page_positions,
    passes,
    records,
)
from perfprobe.pure.stats import Stat, summarize
from perfprobe.system.budget import host_memory_budget

METHOD = ("numba nopython kernels timed inside compiled code (clock_gettime CLOCK_MONOTONIC); loads "
          "are unaligned (align 1) llvmlite loads kept by an empty asm; latency from a chain in which "
          "each load holds the next offset; DRAM: single passes after the set's lines were evicted; "
          "medians of repeats")


def measure(ctx: ProbeContext) -> dict[str, Any]:
    from perfprobe.kernels import layout_kernels as kernels

    settings: Settings = ctx.config.preset(PRESETS)
    split = _line_sweep(ctx, kernels, SPLIT_LINES, settings)
    page = _page_splits(kernels, settings)
    plan = levels(ctx.host, settings, host_memory_budget(ctx.host, ctx.config.bind))
    points = _records(ctx, kernels, plan, settings)
    vector = {f"{lay}.{op}": dict(zip(("vector_bytes", "how"), kernels.vector_bytes(k)))
              for (lay, op), k in kernels.RECORD_KERNELS.items()}
    return {"method": METHOD, "line_bytes": LINE_BYTES, "split_lines": SPLIT_LINES, "split": split, "page": page,
            "levels": [{"name": lv.name, "bytes": lv.bytes, "capped_by": lv.basis} for lv in plan],
            "records": points, "vector": vector,
            "dram_flush": "clflushopt of the set" if kernels.CAN_EVICT else "read of 1.5x the LLC", "quick": ctx.quick, "repeats": settings.repeats}


def _chain(buf: np.ndarray, positions: np.ndarray) -> int:
    """Write at each position the 32-bit offset of the next one (a cycle); the first position."""
    nxt = np.roll(positions, -1)
    for b in range(4):
        buf[positions + b] = (nxt >> (8 * b)) & 0xFF
    return int(positions[0])


def _time(samples: int, run: Any) -> Stat:
    return summarize([run() for _ in range(samples)])


def _throughput(kernels: Any, addr: int, stride: int, count: int, reps: int, width: int,
                settings: Settings, page: bool = False) -> Stat:
    """ns per load of `count` loads at addr + j*stride: `repeats` timed runs after one untimed run of
    the same length, back to back in one compiled call (page: each run after plain loads from every
    page touched, see kernels.throughput_runs).

    bench/layout_ref.c does the same (an untimed run, then `repeats` timed, the median): a single
    short run straight after the pages were written read a page split 10x cheaper than the steady
    state on the KVM guest, which is how C and the probe once disagreed."""
    loads = count * reps * kernels.LOADS_PER_ADDRESS
    ns = kernels.throughput_runs(addr, stride, count, reps, width, settings.repeats + 1, page)[1:]
    return summarize([float(t) / loads for t in ns])


def throughput_reps(kernels: Any, loads: int, count: int) -> int:
    """Passes over `count` addresses that make about `loads` loads (each address is loaded
    kernels.LOADS_PER_ADDRESS times a pass); bench/bench_layout.py gives the C the same."""
    return max(1, loads // (count * kernels.LOADS_PER_ADDRESS))


def _latency(kernels: Any, base: int, first: int, width: int, settings: Settings,
             pages: tuple[int, int] | None = None) -> Stat:
    """ns per load of the dependent chain that starts at base + first (after one untimed run);
    pages = (stride, count): each run first loads from the pages of those accesses."""
    steps = settings.chain_steps
    if pages is None:
        def run() -> float:
            return float(kernels.latency(base, first, steps, width)[0])
    else:
        def run() -> float:
            return float(kernels.page_latency(base, first, steps, width, *pages)[0])
    run()
    return _time(settings.repeats, lambda: run() / steps)


def _line_sweep(ctx: ProbeContext, kernels: Any, lines: int, settings: Settings) -> dict[str, Any]:
    buf = kernels.aligned_bytes((lines + 1) * LINE_BYTES)
    base = buf.ctypes.data
    reps = throughput_reps(kernels, settings.loads, lines)
    order = np.random.default_rng(15).permutation(lines) * LINE_BYTES
    out: dict[str, list[dict[str, Any]]] = {str(w): [] for w in WIDTHS}
    with ctx.progress("layout: offsets", len(OFFSETS)) as task:
        for offset in OFFSETS:
            first = _chain(buf, order + offset)
            for w in WIDTHS:
                tp = _throughput(kernels, base + offset, LINE_BYTES, lines, reps, w, settings)
                lat = _latency(kernels, base, first, w, settings)
                out[str(w)].append({"offset": offset, "throughput_ns": tp, "latency_ns": lat})
            task.advance()
    return {"loads_per_run": lines * reps, "chain_steps": settings.chain_steps, "by_width": out}


def _page_splits(kernels: Any, settings: Settings) -> dict[str, Any]:
    """Each width at the start of PAGE_SPLITS pages (aligned) and straddling their ends."""
    buf = kernels.aligned_bytes(page_buffer_bytes())
    out: dict[str, Any] = {}
    for w in WIDTHS:
        out[str(w)] = {name: page_point(kernels, buf, w, name == "split", settings) for name in ("aligned", "split")}
    return out


def page_point(kernels: Any, buf: np.ndarray, width: int, split: bool, settings: Settings) -> dict[str, Any]:
    """One page-test point (bench/bench_layout.py runs this same function beside the C)."""
    positions = np.array(page_positions(width, split))
    first = _chain(buf, positions)
    base = buf.ctypes.data
    reps = throughput_reps(kernels, settings.loads, PAGE_SPLITS)
    tp = _throughput(kernels, base + first, PAGE_BYTES, PAGE_SPLITS, reps, width, settings, page=True)
    lat = _latency(kernels, base, first, width, settings, pages=(PAGE_BYTES, PAGE_SPLITS))
    return {"offset_in_page": first % PAGE_BYTES, "throughput_ns": tp, "latency_ns": lat}


def _records(ctx: ProbeContext, kernels: Any, plan: list[Any], settings: Settings) -> list[dict[str, Any]]:
    """ns per record of each (level, K, layout, op); one buffer, viewed as (N, K) or (K, N): on 2 MiB
    boundaries and pages (kernels.record_buffer; bench/layout_ref.c allocates the same way)."""
    buf = kernels.record_buffer(max(lv.bytes for lv in plan))
    flush = None if kernels.CAN_EVICT else np.ones(flush_bytes(ctx.host) // 8, dtype=np.int64)
    out = []
    with ctx.progress("layout: records", len(plan) * len(FIELDS)) as task:
        for lv in plan:
            for k in FIELDS:
                n = records(lv.bytes, k)
                views = {"aos": buf[:n * k].reshape(n, k), "soa": buf[:n * k].reshape(k, n)}
                for op in OPS:
                    for lay in ("aos", "soa"):
                        out.append(_record_point(kernels, lv.name, k, n, lay, op, views[lay], settings, flush))
                task.advance()
    return out


def _drop(kernels: Any, view: np.ndarray, flush: np.ndarray | None) -> int:
    """Out of every cache before a DRAM pass: the view's own lines, or (no clflushopt) 1.5 x LLC read."""
    if flush is None:
        return int(kernels.evict(view))   # contiguous: (N, K) or (K, N) of one span
    return int(kernels.flush(flush))


def _record_point(kernels: Any, level: str, k: int, n: int, lay: str, op: str, view: np.ndarray,
                  settings: Settings, flush: np.ndarray | None) -> dict[str, Any]:
    """L1, L2: warm, then passes for ~run_ms. DRAM: one pass after the view's lines were evicted
    (clflushopt), or where there is none after reading the flush buffer (one field's array of K=16
    records is 1/16 of the working set and would otherwise stay cached)."""
    kernel = kernels.RECORD_KERNELS[(lay, op)]
    field = () if op == "all" else (0 if op == "sum" else 1,)

    def run(v: np.ndarray, reps: int) -> float:
        return float(kernel(v, *field, reps)[0])

    if level == "dram":
        run(view[:64] if lay == "aos" else view[:, :64], 1)  # compiled or loaded from the cache
        stat = _time(settings.dram_repeats, lambda: (_drop(kernels, view, flush), run(view, 1) / n)[1])
        reps = 1
    else:
        reps = passes(run(view, 1), settings.run_ms)
        stat = _time(settings.repeats, lambda: run(view, reps) / (reps * n))
    return {"level": level, "fields": k, "records": n, "layout": lay, "op": op, "passes": reps,
            "ns_per_record": stat}
