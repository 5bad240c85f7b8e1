"""`perfprobe alloc` against a native C reference, side by side, in one run.

Builds bench/alloc_ref.c with the system cc (-O2 -pthread) as a shared object that
bench/alloc_ref_main.c runs (so its calls to malloc are near calls, as the JIT's are: the note in
alloc_ref.c), then alternates C runs and perfprobe's
own measuring functions (perfprobe/probes/alloc/measure.py and pages.py, the same kernels and
iteration counts), REPEATS (15) times, on the same CPUs and sizes: malloc+free of 64 B and the mixed
pattern on one thread and on every usable CPU, the 64 B pool, first touch per 4 KiB and 2 MiB page,
memcpy GB/s at the probe's L1/L2/L3/DRAM sizes. Target: every figure within ±10% of C's, best run
against best run over 15 rounds (c_reference.best_of says why); the median over rounds of
perfprobe ÷ C in the same round is printed beside.
Exit 0 when met (or when this host cannot run it: no cc), 1 when missed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from c_reference import best_of, compile_c, paired

ROOT = Path(__file__).resolve().parent.parent
SOURCE, BUILD = ROOT / "bench" / "alloc_ref.c", ROOT / "bench" / "build"
STUB, LIBRARY, BINARY = ROOT / "bench" / "alloc_ref_main.c", BUILD / "liballoc_ref.so", BUILD / "alloc_ref"
REPEATS, ITERS, TOUCH_BYTES = 15, 200_000, 64 << 20
TARGET = 0.10

sys.path.insert(0, str(ROOT))


def build() -> bool:
    if not compile_c(SOURCE, LIBRARY, ["-O2", "-pthread", "-fPIC", "-shared"]):
        return False
    return compile_c(STUB, BINARY, ["-O2", "-pthread", "-Wl,--no-as-needed", str(LIBRARY)])


def c_run(threads: int, levels: list[Any]) -> dict[str, float]:
    args = [str(BINARY), str(threads), str(ITERS), str(TOUCH_BYTES), *(str(lv.bytes) for lv in levels)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    names = {str(lv.bytes): lv.name for lv in levels}
    got = {}
    for line in out.splitlines():
        key, value = line.split()
        if key.startswith("memcpy_gbs."):
            key = "memcpy_gbs." + names[key.split(".", 1)[1]]
        got[key] = float(value)
    return got


def pp_run(kernels: Any, cpus: list[int], levels: list[Any]) -> dict[str, float]:
    from perfprobe.probes.alloc import measure, pages
    from perfprobe.probes.alloc import system as osys
    from perfprobe.probes.alloc.plan import Settings

    one = Settings(repeats=1, run_ms=2.0, touch_bytes=TOUCH_BYTES, dram_factor=4, retries=0, other_sizes=(64,))
    system = osys.system_allocator()
    alloc = measure.allocator_figures(kernels, system, cpus, one, ITERS, (64,))
    pool = measure.pool_figures(kernels, cpus[:1], one, ITERS * 4)
    touch = pages.first_touch(kernels, TOUCH_BYTES, cpus, one, {"thp": {"enabled": "madvise"}})
    copies = measure.copy_figures(kernels, levels, one)
    osys.release_free_memory(system)
    out: dict[str, float] = {}
    for scope in ("1t", "all"):
        out[f"malloc_ns.{scope}.64B"] = alloc["pairs"]["64"][scope]["ns_per_op"]["median"]
        out[f"malloc_ns.{scope}.mixed"] = alloc["mixed"][scope]["ns_per_op"]["median"]
    out["pool_ns.1t.64B"] = pool["pairs"]["64"]["1t"]["ns_per_op"]["median"]
    out["first_touch_ns.4K"] = touch["lazy_ns_per_4k"]["median"]
    out["first_touch_ns.2M"] = touch["huge"]["ns_per_2m"]["median"]
    for lv in copies["levels"]:
        out[f"memcpy_gbs.{lv['name']}"] = lv["gbs"]["median"]
    return out


def main() -> int:
    if not build():
        return 0
    from perfprobe.host import read_host_facts
    from perfprobe.kernels import alloc_kernels as kernels
    from perfprobe.probes.alloc.plan import PRESETS, copy_levels
    from perfprobe.system.bind import usable_cpus
    from perfprobe.system.budget import host_memory_budget

    host = read_host_facts()
    cpus = usable_cpus(host)
    levels = copy_levels(host, PRESETS.full, host_memory_budget(host), None)
    load_before = os.getloadavg()
    samples: dict[str, list[dict[str, float]]] = {"c": [], "pp": []}
    for _ in range(REPEATS):
        samples["c"].append(c_run(len(cpus), levels))
        samples["pp"].append(pp_run(kernels, cpus, levels))
    pairs = paired(samples["c"], samples["pp"])
    best = {side: best_of(runs, lambda name: name.startswith("memcpy_gbs")) for side, runs in samples.items()}
    print(f"{REPEATS} rounds, C then perfprobe in each; judged: each side's best run (c_reference.best_of), the "
          f"medians' paired Δ beside; {len(cpus)} CPUs; {ITERS} ops per thread per run; load average "
          f"{load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'figure':22} {'C best':>12} {'perfprobe':>12} {'Δ':>7}  ok   paired Δ  spread (min-max) C | perfprobe")
    ok = True
    for name, (_, _, ratio) in pairs.items():
        c, p = best["c"][name], best["pp"][name]
        good = abs(p / c - 1) <= TARGET
        ok &= good
        spread = " | ".join(f"{min(r[name] for r in samples[side]):.4g}-{max(r[name] for r in samples[side]):.4g}"
                            for side in ("c", "pp"))
        print(f"{name:22} {c:12.3f} {p:12.3f} {p / c - 1:+7.0%}  {'yes' if good else 'NO ':3}"
              f"  {ratio - 1:+8.0%}  {spread}")
    print(f"target: every figure within ±{TARGET:.0%} of C's: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
