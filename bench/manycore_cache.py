"""`bench_cache.py --manycore` (make bench-manycore): the cache probe on a many-core host, beside C.

- Latency (random chase, ns/load) inside L1, L2, L3 and in DRAM, C and numba alternating ROUNDS
  times: target within ±5% of C (best run of each side).
- The DRAM thread sweep: read and triad GB/s at 1, 2, 4, ... every physical core (the counts and
  CPUs of the probe's sweep, perfprobe/pure/cpu_order.py) over the probe's DRAM working set, each count
  on arrays allocated for it and first touched share by share (STREAM). C: cache_ref sweep, built
  with -fopenmp, run with OMP_PROC_BIND=close OMP_PLACES=cores; numba: timing.placed_rate, the
  probe's own code. Alternating ROUNDS times; targets on the best run of each side: at least 0.95
  of C on all cores, 0.90 at every count.
- `--variants`: one round each of the numba kernels as they were before placement (unpinned
  threads, unskewed triad arrays) and of C without OpenMP binding, printed beside, not judged.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
from bench_cache import ALLOWED, HUGE, REPEATS, RUN_MS, alternate, c_run, targets

from perfprobe.host import read_host_facts
from perfprobe.probes.cache import timing as m
from perfprobe.probes.cache.buffers import page_buffer
from perfprobe.probes.cache.plan import plan_placement
from perfprobe.pure.units import format_bytes
from perfprobe.system.bind import usable_cpus

ROUNDS = int(os.environ.get("MANYCORE_ROUNDS", "5"))
LATENCY_TOLERANCE = 0.05
ALL_FLOOR, EACH_FLOOR = 0.95, 0.90
KINDS = {"read": "read_gbs", "triad": "triad_gbs"}


def _old_numba(k: Any, kind: str, total: int, threads: int, timing: m.Timing) -> float:
    """The kernels before placement: numba's own thread placement, triad arrays unskewed."""
    import numba

    from perfprobe.kernels import placement as kp

    pool = numba.config.NUMBA_NUM_THREADS  # unpin every worker first: as a fresh pool would be
    numba.set_num_threads(pool)
    kp.pin_each(kp.masks_for([sorted(ALLOWED)] * pool), np.zeros(pool, dtype=np.int64))
    numba.set_num_threads(threads)
    if kind == "read":
        n = total // 8 // 16 * 16 // threads * threads
        a = m.aligned_empty(n)
        k.fill_parallel(a, 1.0, threads)
        return m.time_rate(lambda r: k.read_loads_parallel(a, threads, r), n * 8, m._longer(timing))["max"]
    n = total // 24 // 16 * 16 // threads * threads
    arrays = [m.aligned_empty(n) for _ in range(3)]
    for arr, v in zip(arrays, (0.0, 1.0, 2.0)):
        k.fill_parallel(arr, v, threads)
    a, b, c = arrays
    return m.time_rate(lambda r: k.triad_parallel(a, b, c, 3.0, threads, r), 24 * n, m._longer(timing))["max"]


def _sweep_side(k: Any, place: Any, kind: str, total: int, timing: m.Timing) -> dict[int, dict[str, Any]]:
    return {n: m.placed_rate(k, KINDS[kind], total, place.sweep_cpus(n), timing) for n in place.counts}


def manycore(exe: Path, variants: bool = False) -> int:
    import numba

    from perfprobe.kernels import cache_kernels as k
    from perfprobe.kernels import placement as kp

    host = read_host_facts()
    place = plan_placement(host, usable_cpus(host), numba.config.NUMBA_NUM_THREADS)
    threads = len(place.cpus)
    huge = (host.get("thp") or {}).get("enabled") in ("always", "madvise")
    started = time.perf_counter()
    sets, plan = targets(host, threads)
    timing = m.Timing(RUN_MS / 1000, REPEATS)
    lat = []
    # both sides' chases on the same CPU (the first of the placement): on a VM guest vCPUs differ
    # (their host placement, a busy host sibling), which moved L1/L3 by 7-12% between processes
    cpu = place.cpus[0]
    os.sched_setaffinity(0, {cpu})
    for name, (one, _each) in sets.items():
        with page_buffer(max(one, HUGE), huge, np.uint64) as buf:
            fig = alternate(lambda one=one: {"ns": c_run(exe, "chase", one, plan.line_bytes, int(huge), REPEATS,
                                                         RUN_MS, cpu=cpu)},
                            lambda one=one, buf=buf: {"ns": m.random_chase_ns(k, buf, one, plan.line_bytes, timing)},
                            "ns", min, rounds=ROUNDS)
            buf = None
        lat.append((name, format_bytes(one), *fig))
    os.sched_setaffinity(0, ALLOWED)
    total = plan.max_bytes
    counts = ",".join(map(str, place.counts))
    sweep: dict[str, dict[str, list[float]]] = {}
    where: dict[int, list[int]] = {}
    with kp.pinned_pool() as pool:
        for kind in KINDS:
            c_runs: dict[int, list[float]] = {n: [] for n in place.counts}
            p_runs: dict[int, list[float]] = {n: [] for n in place.counts}
            # per count, C and numba back to back, the order swapped every round: this guest's DRAM
            # bandwidth drifts by 20% over tens of seconds (other guests), which a whole C sweep
            # followed by a whole numba sweep put on one side only
            for r in range(ROUNDS):
                for n in place.counts:
                    sides = [("c", n), ("p", n)] if r % 2 == 0 else [("p", n), ("c", n)]
                    for side, count in sides:
                        if side == "c":
                            run = c_run(exe, "sweep", kind, total, count, REPEATS, RUN_MS)["runs"][0]
                            c_runs[count].append(run["gbs"]["max"])
                        else:
                            stat = m.placed_rate(k, KINDS[kind], total, place.sweep_cpus(count), timing)
                            p_runs[count].append(stat["max"])
                            where[count] = stat["cpus"]
            sweep[kind] = {"c": [max(c_runs[n]) for n in place.counts], "p": [max(p_runs[n]) for n in place.counts],
                           "c_med": [median(c_runs[n]) for n in place.counts],
                           "p_med": [median(p_runs[n]) for n in place.counts],
                           "c_all": [c_runs[n] for n in place.counts], "p_all": [p_runs[n] for n in place.counts]}
            if variants:
                unbound = c_run(exe, "sweep", kind, total, counts, REPEATS, RUN_MS, bound=False)["runs"]
                sweep[kind]["c_unbound"] = [r["gbs"]["max"] for r in unbound]
                sweep[kind]["p_old"] = [_old_numba(k, kind, total, n, timing) for n in place.counts]
    return report(host, place, lat, sweep, where, pool, total, time.perf_counter() - started)


def report(host: dict, place: Any, lat: list, sweep: dict, where: dict, pool: dict, total: int,
           seconds: float) -> int:
    cpu = (host.get("cpu") or {}).get("model")
    print(f"host: {cpu}, {len(usable_cpus(host))} usable CPUs, {len(place.cpus)} physical cores used; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds:.0f} s; {ROUNDS} alternating "
          f"rounds (C and perfprobe back to back per point, order swapped each round), each {REPEATS} timed runs; best run of each side judged")
    print(f"numba threading layer: {pool.get('layer')}; placement: {pool.get('how')}")
    for n in place.counts:
        print(f"  {n} threads: CPUs {place.sweep_cpus(n)} (ran on {where.get(n)})")
    print("C: OpenMP, OMP_PROC_BIND=close OMP_PLACES=cores\n")
    missed = 0
    print("| level | working set | C best ns | perfprobe best ns | ratio best | ratio of medians | target | met |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    for name, size, c_med, p_med, c_best, p_best in lat:
        ratio = p_best / c_best
        ok = abs(ratio - 1) <= LATENCY_TOLERANCE
        missed += not ok
        print(f"| {name} | {size} | {c_best:.2f} | {p_best:.2f} | {ratio:.3f} | {p_med / c_med:.3f} | ±5% | "
              f"{'yes' if ok else 'NO'} |")
    extra = "c_unbound" in next(iter(sweep.values()))
    print(f"\nDRAM sweep over {format_bytes(total)}, GB/s (best of {ROUNDS} rounds)")
    head = "| kind | threads | C best | perfprobe best | ratio best | ratio of medians | target | met |"
    print(head + (" C unbound | numba before placement |" if extra else ""))
    print("|---|---:|---:|---:|---:|---:|---|---|" + ("---:|---:|" if extra else ""))
    for kind, s in sweep.items():
        for i, n in enumerate(place.counts):
            ratio = s["p"][i] / s["c"][i]
            floor = ALL_FLOOR if n == len(place.cpus) else EACH_FLOOR
            ok = ratio >= floor
            missed += not ok
            row = (f"| {kind} | {n} | {s['c'][i]:.1f} | {s['p'][i]:.1f} | {ratio:.3f} | "
                   f"{s['p_med'][i] / s['c_med'][i]:.3f} | >= {floor:.2f} | {'yes' if ok else 'NO'} |")
            if extra:
                row += f" {s['c_unbound'][i]:.1f} | {s['p_old'][i]:.1f} |"
            print(row)
    print("\nevery round, GB/s (C | perfprobe), in the order run:")
    for kind, s in sweep.items():
        for i, n in enumerate(place.counts):
            print(f"  {kind} {n:>3}: " + " ".join(f"{v:.1f}" for v in s["c_all"][i]) + " | "
                  + " ".join(f"{v:.1f}" for v in s["p_all"][i]))
    print(f"{missed} target(s) missed" if missed else "all targets met")
    return 1 if missed else 0
