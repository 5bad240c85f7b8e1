"""Is a slow core-private figure one core's or the whole package's? Times L1 and L2 latency (random
chase, 16 KiB and half the reported L2) and a clock witness (a dependent chain x = 3x ^ i: LLVM makes
the multiply a lea, so 2 cycles a step on x86-64) on each usable CPU in turn, round after round, and
prints per round which CPUs read slower than their own best.

Why: on the GPU machine's 16-vCPU guest (12-07 16:14 UTC) 5 of 11 health checks drained on L1 or L2
latency +10..25% against a baseline minutes old, each confirmed by a re-measurement on the same CPU.
If the slowdowns are one core's at a time (another tenant on its other hardware thread), a
confirmation on another core tells the node from its neighbour; if every core slows together (the
package clock), it does not.

    PYTHONPATH=. python3 tools/core_scan.py --seconds 120 --json /tmp/scan.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import numpy as np
from numba import njit


@njit(cache=True)
def _clock_chain(steps: int, seed: int) -> int:
    x = seed
    for i in range(steps):
        x = (x * 3) ^ i  # lea then xor: a dependent chain of 2 cycles a step
    return x


def clock_ghz(steps: int = 2_000_000, repeats: int = 5) -> float:
    """The core's clock while it ran the chain (GHz at 2 cycles a step), best of `repeats`."""
    best = float("inf")
    for r in range(repeats):
        start = time.perf_counter_ns()
        _clock_chain(steps, r + 1)
        best = min(best, (time.perf_counter_ns() - start) / steps)
    return 2.0 / best


def _half_l2() -> int:
    """Half the L2 this host reports (its host facts, as the cache probe reads them), else 512 KiB:
    a set inside the L2."""
    from perfprobe.host import read_host_facts
    from perfprobe.probes.cache.plan import data_caches

    l2 = data_caches(read_host_facts())[1:2]
    size = int(l2[0].get("size_bytes") or 0) if l2 else 0
    return size // 2 if size else 512 << 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--l2-bytes", type=int, default=None, help="the L2 set (default: half the reported L2)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    l2_bytes = args.l2_bytes or _half_l2()

    from perfprobe.kernels import cache_kernels as k
    from perfprobe.probes.cache import timing as m
    from perfprobe.probes.cache.buffers import page_buffer

    allowed = sorted(os.sched_getaffinity(0))
    timing = m.Timing(0.01, 3)
    rounds: list[dict[str, Any]] = []
    clock_ghz(1000, 1)
    end = time.monotonic() + args.seconds
    with page_buffer(l2_bytes, True, np.uint64) as buf:
        try:
            while time.monotonic() < end:
                row: dict[str, Any] = {"t": round(time.time(), 1), "cpus": {}}
                for cpu in allowed:
                    os.sched_setaffinity(0, {cpu})
                    ghz = clock_ghz()
                    l1 = m.random_chase_ns(k, buf, 16 << 10, 64, timing)["median"]
                    l2 = m.random_chase_ns(k, buf, l2_bytes, 64, timing)["median"]
                    row["cpus"][cpu] = {"ghz": round(ghz, 3), "l1": round(l1, 3), "l2": round(l2, 3)}
                rounds.append(row)
        finally:
            os.sched_setaffinity(0, allowed)
            del buf
    for figure in ("l1", "l2", "ghz"):
        best = {cpu: (min if figure != "ghz" else max)(r["cpus"][cpu][figure] for r in rounds) for cpu in allowed}
        print(f"{figure}: best per CPU {min(best.values()):.3f}-{max(best.values()):.3f}")
        for r in rounds:
            worse = {cpu: r["cpus"][cpu][figure] / best[cpu] if figure != "ghz" else best[cpu] / r["cpus"][cpu][figure]
                     for cpu in allowed}
            slow = sorted(cpu for cpu, w in worse.items() if w > 1.08)
            print(f"  {time.strftime('%H:%M:%S', time.gmtime(r['t']))} median x{statistics.median(worse.values()):.3f}"
                  f" slow(>8%): {len(slow)} {slow[:16]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rounds, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
