"""Does who first touches a DRAM trial buffer change what it measures? An A/B inside one process.

Why: on the H100 machine's 16-vCPU guest (2026-12-06), `read_gbs.DRAM.all` over cache's trial
buffers read 141-146 GB/s in three of five `all --quick` runs and 195-211 in two, while the same
runs' thread sweep at 16 threads (arrays first touched by their 16 readers) read 212-228 in all
five. The trial buffers were first touched by the calling thread alone; cache now touches them
with one thread per placement CPU (measure.first_toucher). This holds `--buffers` huge-page buffers
touched each way at once (2 MiB pages by the calling thread, 2 MiB pages by one thread per CPU,
4 KiB pages by one thread per CPU, as the thread sweep's arrays are), in rotating rounds, and
prints each buffer's all-thread read GB/s, one-thread read GB/s and random-chase latency.

    python3 tools/device/first_touch_ab.py [--mib 420] [--rounds 3] [--buffers 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from statistics import median

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from perfprobe.kernels import cache_kernels as k  # noqa: E402
from perfprobe.kernels import placement as kp  # noqa: E402
from perfprobe.probes.cache import timing as m  # noqa: E402
from perfprobe.probes.cache.buffers import page_buffer  # noqa: E402
from perfprobe.probes.cache.measure import PAGE_WORDS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=420)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--buffers", type=int, default=3)
    args = ap.parse_args()
    size = args.mib << 20
    cpus = sorted(os.sched_getaffinity(0))
    allowed = set(cpus)

    def serial(buf: np.ndarray) -> None:
        buf[::PAGE_WORDS] = 0

    def parallel(buf: np.ndarray) -> None:
        placed = k.Placed(cpus)
        k.touch_pages_placed(buf, PAGE_WORDS, placed.masks, placed.where)
        os.sched_setaffinity(0, allowed)

    timing = m.Timing(0.02, 3)
    ways = [("2M serial", True, serial), ("2M parallel", True, parallel), ("4K parallel", False, parallel)]
    seen: dict[str, dict[str, list[float]]] = {n: {"all": [], "1t": [], "ns": [], "touch_s": []}
                                               for n, _, _ in ways}
    with kp.pinned_pool():
        for r in range(args.rounds):
            for name, huge, touch in ways[r % len(ways):] + ways[:r % len(ways)]:
                with ExitStack() as held:
                    started = time.perf_counter()
                    bufs = [held.enter_context(page_buffer(size, huge, np.uint64, touch))
                            for _ in range(args.buffers)]
                    seen[name]["touch_s"].append(time.perf_counter() - started)
                    for buf in bufs:
                        rates = m.read_rates_in(k, buf.view(np.float64), size, size // len(cpus), cpus, timing)
                        lat = m.random_chase_ns(k, buf, size, 64, timing)
                        seen[name]["all"].append(rates["all"]["median"])
                        seen[name]["1t"].append(rates["1t"]["median"])
                        seen[name]["ns"].append(lat["median"])
                        print(f"round {r} {name:11s} all {rates['all']['median']:7.1f} GB/s  "
                              f"1t {rates['1t']['median']:6.1f} GB/s  latency {lat['median']:6.1f} ns", flush=True)
                    del bufs
    for name, s in seen.items():
        print(f"{name:11s}: all {min(s['all']):.1f}-{max(s['all']):.1f} (median {median(s['all']):.1f}) GB/s; "
              f"1t {min(s['1t']):.1f}-{max(s['1t']):.1f}; latency {min(s['ns']):.1f}-{max(s['ns']):.1f} ns; "
              f"touch of {args.buffers} buffers {min(s['touch_s']):.2f}-{max(s['touch_s']):.2f} s")


if __name__ == "__main__":
    main()
