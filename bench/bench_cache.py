"""`make bench` for the cache probe: perfprobe's numba kernels beside bench/cache_ref.c, same sizes.

Builds cache_ref.c with the system C compiler (-O3 -march=native -fopenmp,
and -mno-avx512f on x86: 256-bit vectors, as LLVM gives numba on AVX-512 hosts) into bench/build/, reads
the levels off a quick numba latency curve, then at a working set inside each level and in DRAM
times the pointer chase (ns/load) and read and triad bandwidth (1 thread, all usable CPUs) in C and
in numba, alternating rounds so both see the same background. Prints a side-by-side table of
ratios; exits 1 when a target is missed: latency within ±10% of C, bandwidth at least 90% of C.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfprobe.host import read_host_facts  # noqa: E402
from perfprobe.probes import cache_measure as m  # noqa: E402
from perfprobe.probes.cache_curve import curve_sizes, read_levels  # noqa: E402
from perfprobe.probes.cache_memory import page_buffer, thp_mode  # noqa: E402
from perfprobe.probes.cache_plan import (data_caches, level_working_sets, make_plan,  # noqa: E402
                                         reaches_dram, usable_threads)
from perfprobe.units import format_bytes  # noqa: E402

BUILD = ROOT / "bench" / "build"
SOURCE = ROOT / "bench" / "cache_ref.c"
ROUNDS = 3
REPEATS = 5
RUN_MS = 5.0
LATENCY_TOLERANCE = 0.10
BANDWIDTH_FLOOR = 0.90


def build() -> Path | None:
    """Compile the C reference; None (and a note) when there is no compiler or no OpenMP."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("cache bench: no C compiler (cc/gcc); skipped")
        return None
    BUILD.mkdir(parents=True, exist_ok=True)
    exe = BUILD / "cache_ref"
    narrow = ["-mno-avx512f"] if platform.machine() in ("x86_64", "AMD64") else []
    cmd = [cc, "-O3", "-march=native", *narrow, "-fopenmp", "-o", str(exe), str(SOURCE)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"cache bench: {' '.join(cmd)} failed; skipped\n{done.stderr.strip()}")
        return None
    return exe


def c_run(exe: Path, *args: Any) -> dict:
    out = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def alternate(c_side: Callable[[], float], py_side: Callable[[], float]) -> tuple[float, float]:
    """Median over ROUNDS of each side's median, C then numba in every round."""
    cs, ps = [], []
    for _ in range(ROUNDS):
        cs.append(c_side())
        ps.append(py_side())
    return median(cs), median(ps)


def targets(k: Any, host: dict, threads: int, huge: bool) -> tuple[dict, Any]:
    """Working sets per level, read off a quick numba curve (as the probe does)."""
    plan = make_plan(host, {}, quick=True, threads=threads)
    timing = m.Timing(0.002, 3)
    with page_buffer(plan.max_bytes, huge, np.uint64) as buf:
        sizes = curve_sizes(plan.max_bytes, 2, plan.line_bytes)
        ns = [m.random_chase_ns(k, buf, s, plan.line_bytes, timing)["median"] for s in sizes]
        buf = None
    levels = read_levels(sizes, ns, plan.min_points, reaches_dram(plan.max_bytes, plan.llc_bytes),
                         len(data_caches(host)))
    shared = [len(c.get("shared_cpus") or []) > 1 for c in data_caches(host)] + [True] * 8
    sets = level_working_sets(levels, shared[:len(levels)], threads)
    if levels and levels[-1].name == "DRAM":
        sets["DRAM"] = (plan.max_bytes, plan.max_bytes // threads)
    return sets, plan


def main() -> int:
    exe = build()
    if exe is None:
        return 0
    from perfprobe.kernels import cache_kernels as k
    import numba

    host = read_host_facts()
    threads = min(usable_threads(host), numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(threads)
    huge = (host.get("thp") or {}).get("enabled", thp_mode()) in ("always", "madvise")
    started = time.perf_counter()
    sets, plan = targets(k, host, threads, huge)
    timing = m.Timing(RUN_MS / 1000, REPEATS)
    rows = []
    for name, (one, each) in sets.items():
        lat_size = one
        with page_buffer(lat_size, huge, np.uint64) as buf:
            c_ns, p_ns = alternate(
                lambda: c_run(exe, "chase", lat_size, plan.line_bytes, int(huge), REPEATS, RUN_MS)["median"],
                lambda: m.random_chase_ns(k, buf, lat_size, plan.line_bytes, timing)["median"])
            buf = None
        rows.append((name, "latency ns", format_bytes(lat_size), c_ns, p_ns))
        for kind, fn in (("read", m.read_rates), ("triad", m.triad_rates)):
            c_fig: list[dict] = []
            p_fig: list[dict] = []
            for _ in range(ROUNDS):
                c_fig.append(c_run(exe, kind, one, each, threads, REPEATS, RUN_MS))
                p_fig.append(fn(k, one, each, threads, timing))
            for t in ("1t", "all"):
                size = format_bytes(one) if t == "1t" else f"{threads}x {format_bytes(each)}"
                rows.append((name, f"{kind} GB/s {t}", size, median(f[t]["median"] for f in c_fig),
                             median(f[t]["median"] for f in p_fig)))
    return report(rows, host, threads, time.perf_counter() - started)


def report(rows: list, host: dict, threads: int, seconds: float) -> int:
    """Print the table (markdown, for docs/benchmarks.md) and return 1 if a target is missed."""
    cpu = (host.get("cpu") or {}).get("model")
    print(f"host: {cpu}, {threads} usable CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{seconds:.0f} s; median of {ROUNDS} alternating rounds, each a median of {REPEATS}")
    print("| level | figure | working set | C | perfprobe | perfprobe/C | target | met |")
    print("|---|---|---|---:|---:|---:|---|---|")
    missed = 0
    for name, figure, size, c_val, p_val in rows:
        ratio = p_val / c_val if c_val else float("nan")
        if figure.startswith("latency"):
            target, ok = "0.90-1.10", abs(ratio - 1) <= LATENCY_TOLERANCE
        else:
            target, ok = ">= 0.90", ratio >= BANDWIDTH_FLOOR
        missed += not ok
        print(f"| {name} | {figure} | {size} | {c_val:.2f} | {p_val:.2f} | {ratio:.2f} | {target} | "
              f"{'yes' if ok else 'NO'} |")
    print(f"{missed} target(s) missed" if missed else "all targets met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
