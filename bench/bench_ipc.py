"""`perfprobe ipc` against a native C reference, side by side, in one run.

Builds bench/ipc_ref.c (cc -O2; fork-based ping-pong over the same transports and the same ring
protocol), then alternates C runs and perfprobe's own measurement path (the worker process, the
numba kernels, the same CPUs) REPEATS times. Each side's figure is the median round trip of the
same number of messages after as many untimed ones (the first 10% left out); the table shows the median over repeats.
Target: perfprobe's 64 B and 4 KiB round trips within ±15% of C's. Exit 0 when met (or when this
host cannot run it: no cc), 1 when missed.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
from c_reference import compile_c

ROOT = Path(__file__).resolve().parent.parent
SOURCE, BUILD = ROOT / "bench" / "ipc_ref.c", ROOT / "bench" / "build"
BINARY = BUILD / "ipc_ref"
REPEATS, COUNT, SIZES = 5, 2000, (64, 4096, 65536)
TARGET, GATED_SIZES = 0.15, (64, 4096)

sys.path.insert(0, str(ROOT))


def build() -> bool:
    return compile_c(SOURCE, BINARY, ["-O2"])


def cpus() -> tuple[int, int]:
    usable = sorted(os.sched_getaffinity(0))
    return (usable[0], usable[1]) if len(usable) > 1 else (usable[0], usable[0])


def count_for(size: int) -> int:
    return COUNT if size < (64 << 10) else max(20, COUNT // 10)


def c_run(pair: tuple[int, int]) -> dict[tuple[str, int], float]:
    out = subprocess.run([str(BINARY), str(pair[0]), str(pair[1]), str(COUNT), *map(str, SIZES)],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    return {(t, int(s)): float(m) for t, s, m, _ in (line.split() for line in out.splitlines())}


def pp_run(session, pair: tuple[int, int], transports: list[str]) -> dict[tuple[str, int], float]:
    from perfprobe.probes.ipc import measure

    os.sched_setaffinity(0, {pair[0]})
    session.pin_worker(pair[1])
    out = {}
    for size in SIZES:
        for t in transports:
            n = count_for(size)
            measure._round_trips(session, t, size, n)   # the same untimed warm-up as the C side
            lat, _, _, _ = measure._round_trips(session, t, size, n)
            out[(t, size)] = float(np.median(lat[n // 10:])) / 1000.0
    return out


def main() -> int:
    if not build():
        return 0
    from perfprobe.probes.ipc import plan
    from perfprobe.probes.ipc.session import Session

    pair = cpus()
    transports = list(plan.transports_for("same_cpu" if pair[0] == pair[1] else "two_cores"))
    samples: dict[str, list[dict[tuple[str, int], float]]] = {"c": [], "pp": []}
    saved = os.sched_getaffinity(0)
    with Session() as session:
        for _ in range(REPEATS):
            samples["c"].append(c_run(pair))
            samples["pp"].append(pp_run(session, pair, transports))
    os.sched_setaffinity(0, saved)
    keys = [k for k in samples["c"][0] if k in samples["pp"][0]]
    med = {side: {k: statistics.median(r[k] for r in runs) for k in keys} for side, runs in samples.items()}
    print(f"CPUs {pair}; median round trip (µs) of {REPEATS} interleaved runs, {COUNT} messages each "
          f"({max(20, COUNT // 10)} from 64 KiB); load average {os.getloadavg()[0]:.2f}")
    print(f"{'transport':14} {'size':>7} {'C':>10} {'perfprobe':>10} {'Δ':>7}  ok")
    ok = True
    for t, size in keys:
        c, p = med["c"][(t, size)], med["pp"][(t, size)]
        gated = size in GATED_SIZES
        good = abs(p / c - 1) <= TARGET
        ok &= good or not gated
        print(f"{t:14} {size:7d} {c:10.3f} {p:10.3f} {p / c - 1:+7.0%}  {('yes' if good else 'NO') if gated else '-'}")
    print(f"target: 64 B and 4 KiB round trips within ±{TARGET:.0%} of C: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
