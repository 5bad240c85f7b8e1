"""`perfprobe layout` against a native C reference, side by side, in one run.

Builds bench/layout_ref.c (cc -O3 -march=native), then alternates C runs and perfprobe's numba
kernels on the same positions and sizes: 8- and 32-byte loads aligned and line-split (offset 60),
page-split against page start (throughput and dependent latency), and one field of K = 8 and 16
records summed as AoS and SoA in L1, L2 and DRAM: the probe's own measure functions
(_throughput, _latency, page_point, _record_point) beside the C, which times each point the same way
(the same loops, buffers, passes, eviction, repeats and medians; docs/probes/layout.md).
`python bench/bench_layout.py records page.32B` runs only the points whose names start so.
Both pinned to one CPU, 9 rounds; each side's best round is judged (c_reference.best_of).
Targets: ns within ±10% of C's; penalty and speed-up ratios within ±15%.
Exit 0 when met (or when this host cannot run it: no cc), 1 when missed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from c_reference import compile_c, judged

ROOT = Path(__file__).resolve().parent.parent
SOURCE, BINARY = ROOT / "bench" / "layout_ref.c", ROOT / "bench" / "build" / "layout_ref"
REPEATS = 9   # rounds (C then numba, each point); each side's best round is judged (c_reference.best_of)
NS_TARGET, RATIO_TARGET = 0.10, 0.15

sys.path.insert(0, str(ROOT))
from perfprobe.probes.layout.plan import SPLIT_LINES as LINES  # noqa: E402  (lines of the split test, as the probe sweeps)


def soa_vector_bytes(k) -> int:
    """The vector width of numba's soa_sum loop here (the C's SoA loop is built to the same)."""
    k.soa_sum(np.ones((2, 64), dtype=np.int64), 0, 1)
    return k.vector_bytes(k.soa_sum)[0] or 32


def build(vec_bytes: int) -> bool:
    if not compile_c(SOURCE, BINARY, ["-O3", "-march=native", f"-DVEC_BYTES={vec_bytes}"]):
        return False
    print(f"built {BINARY.name}: cc -O3 -march=native -DVEC_BYTES={vec_bytes} (numba's soa_sum vector width)")
    return True


def c_pair(*args: object) -> tuple[float, float]:
    out = subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def pp_split(k, buf: np.ndarray, w: int, off: int, settings) -> tuple[float, float]:
    """The probe's own measure._throughput/_latency on the C's positions (line i -> i*97 % LINES)."""
    from perfprobe.probes.layout.measure import _chain, _latency, _throughput, throughput_reps

    positions = (np.arange(LINES) * 97 % LINES) * 64 + off
    first = _chain(buf, positions)
    reps = throughput_reps(k, settings.loads, LINES)
    tp = _throughput(k, buf.ctypes.data + off, 64, LINES, reps, w, settings)
    return tp["min"], _latency(k, buf.ctypes.data, first, w, settings)["median"]   # as figures.statistic


def pp_page(k, buf: np.ndarray, w: int, split: bool, settings) -> tuple[float, float]:
    """The probe's own page point (measure.page_point), as `perfprobe layout` runs it."""
    from perfprobe.probes.layout.measure import page_point

    point = page_point(k, buf, w, split, settings)
    return point["throughput_ns"]["min"], point["latency_ns"]["median"]   # as figures.statistic


def pp_records(k, buf: np.ndarray, nbytes: int, fields: int, dram: bool, flush: np.ndarray | None, settings) -> tuple[float, float]:
    """The probe's own measure._record_point (one field summed) on a view of its kind of buffer."""
    from perfprobe.probes.layout.measure import _record_point
    from perfprobe.probes.layout.plan import records

    n = records(nbytes, fields)
    views = {"aos": buf[:n * fields].reshape(n, fields), "soa": buf[:n * fields].reshape(fields, n)}
    level = "dram" if dram else "l1"   # _record_point tells only DRAM from the rest
    out = [_record_point(k, level, fields, n, lay, "sum", views[lay], settings, flush)["ns_per_record"]["median"]
           for lay in ("aos", "soa")]
    return out[0], out[1]


def main(only: tuple[str, ...] = ("",)) -> int:
    """Every point, or those whose name starts with one of `only` (e.g. `records.k16`, `page.32B`)."""
    from perfprobe.host import read_host_facts
    from perfprobe.kernels import layout_kernels as k
    from perfprobe.probes.layout import plan
    from perfprobe.probes.layout.measure import throughput_reps
    from perfprobe.system.budget import host_memory_budget

    if not build(soa_vector_bytes(k)):
        return 0
    # Both sides on one CPU (each C child inherits the mask), as bench_branch.py: unpinned, a fresh C
    # process could start on a vCPU that had been idle, and on the H200 Xeon its L1/L2 AoS records
    # read 10-18% slower than the probe's warm process in every run.
    cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    st = plan.FULL
    host = read_host_facts(None)
    sizes = {lv.name: lv.bytes for lv in plan.levels(host, st, host_memory_budget(host))}   # the probe's sets
    dram, flush_bytes = sizes["dram"], plan.flush_bytes(host)
    # DRAM passes follow an eviction of the set (clflushopt) on both sides, as the probe's; a
    # 1.5 x LLC read only where the CPU has no clflushopt (the probe's fallback).
    flush = None if k.CAN_EVICT else np.ones(flush_bytes // 8, dtype=np.int64)
    c_flush = 0 if k.CAN_EVICT else flush_bytes
    record_buf = k.record_buffer(dram)
    line_buf, page_buf = k.aligned_bytes((LINES + 2) * 64 + 4096), k.aligned_bytes(plan.page_buffer_bytes())
    split_args = (LINES, throughput_reps(k, st.loads, LINES), st.chain_steps, st.repeats)
    page_reps = throughput_reps(k, st.loads, plan.PAGE_SPLITS)
    points = {}
    for w in (8, 32):
        points[f"split.{w}B.aligned"] = (("split", w, 0, *split_args), lambda w=w: pp_split(k, line_buf, w, 0, st))
        points[f"split.{w}B.line"] = (("split", w, 60, *split_args), lambda w=w: pp_split(k, line_buf, w, 60, st))
        for name, split in (("aligned", False), ("split", True)):
            at = plan.page_positions(w, split)[0] - plan.PAGE_BYTES   # the C adds one page
            points[f"page.{w}B.{name}"] = (("page", w, at, page_reps, st.chain_steps, st.repeats),
                                           lambda w=w, sp=split: pp_page(k, page_buf, w, sp, st))
    for name, size in sizes.items():
        is_dram = name == "dram"
        for fields in (8, 16):
            c_args = ("records", size, fields, int(is_dram), st.run_ms, st.dram_repeats if is_dram else st.repeats, c_flush)
            points[f"records.k{fields}.{name}"] = (
                c_args, lambda s=size, f=fields, d=is_dram: pp_records(k, record_buf, s, f, d, flush, st))
    wanted = [p for p in points if any(p.startswith(f) for f in only)]
    if not wanted:
        print(f"no point matches {only}; points: {', '.join(points)}")
        return 2
    points = {p: points[p] for p in wanted}
    samples: dict = {p: {"c": [], "pp": []} for p in points}
    for _ in range(REPEATS):
        for p, (args, run) in points.items():
            samples[p]["c"].append(c_pair(*args))
            samples[p]["pp"].append(run())
    # every figure here is a time: each side's best round (c_reference.best_of says why)
    best = {p: {side: tuple(min(x[i] for x in v) for i in (0, 1)) for side, v in s.items()}
           for p, s in samples.items()}
    return 0 if report(best) else 1


def report(best: dict) -> bool:
    print(f"both on CPU {max(os.sched_getaffinity(0))}; best of {REPEATS} interleaved rounds (split/page: each the best of 5 repeats for throughput, their median for latency, after an untimed run, as the probe); "
          "columns: C, perfprobe, Δ")
    ok = True
    rows = []
    for p, m in best.items():
        labels = ("aos ns/rec", "soa ns/rec") if p.startswith("records") else ("tp ns/load", "latency ns")
        rows += [(f"{p} {labels[i]}", m["c"][i], m["pp"][i], NS_TARGET) for i in (0, 1)]
        if p.startswith("records"):
            rows.append((f"{p} soa speed-up", m["c"][0] / m["c"][1], m["pp"][0] / m["pp"][1], RATIO_TARGET))
    for w in (8, 32):
        for kind, base in (("line", "split"), ("split", "page")):
            if f"{base}.{w}B.aligned" not in best or f"{base}.{w}B.{kind}" not in best:
                continue
            a, s = best[f"{base}.{w}B.aligned"], best[f"{base}.{w}B.{kind}"]
            for i, what in ((0, "throughput"), (1, "latency")):
                rows.append((f"{base} penalty {w}B {what}", s["c"][i] / a["c"][i], s["pp"][i] / a["pp"][i], RATIO_TARGET))
    for name, c, p, target in rows:
        good, row = judged(name, c, p, target, 40)
        ok &= good
        print(row.rstrip())
    print(f"targets: ns within ±{NS_TARGET:.0%}, ratios within ±{RATIO_TARGET:.0%}: {'met' if ok else 'MISSED'}")
    return ok


if __name__ == "__main__":
    sys.exit(main(tuple(sys.argv[1:]) or ("",)))
