"""`perfprobe ipc` against a native C reference, side by side, in one run.

Builds bench/ipc_ref.c (cc -O2; fork-based ping-pong over the same transports and the same ring
protocol), then runs C and perfprobe's own measurement path (the worker process, the numba
kernels, the same CPUs) back to back for each transport and size, the order swapped every round,
REPEATS rounds: a sleeping transport's round trip drifts by ±30% over seconds on a KVM guest (the
vCPUs' halt and wake-up), which a whole C run followed by a whole perfprobe run put on one side.
Each side's figure is the median round trip of the same number of messages after as many untimed
ones (the first 10% left out); the table shows the median over rounds and each side's spread.
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
REPEATS, COUNT, SIZES = 7, 2000, (64, 4096, 65536)
TARGET, GATED_SIZES = 0.15, (64, 4096)

sys.path.insert(0, str(ROOT))


def build() -> bool:
    return compile_c(SOURCE, BINARY, ["-O2"])


def cpus() -> tuple[int, int]:
    usable = sorted(os.sched_getaffinity(0))
    return (usable[0], usable[1]) if len(usable) > 1 else (usable[0], usable[0])


def count_for(size: int) -> int:
    return COUNT if size < (64 << 10) else max(20, COUNT // 10)


def c_point(pair: tuple[int, int], transport: str, size: int) -> float:
    """One C process: the warm-up and timed round trips of one transport at one size (µs)."""
    env = {**os.environ, "IPC_REF_ONLY": transport}
    out = subprocess.run([str(BINARY), str(pair[0]), str(pair[1]), str(COUNT), str(size)],
                         capture_output=True, text=True, check=True, timeout=120, env=env).stdout
    (_, _, median_us, _), = (line.split() for line in out.splitlines())
    return float(median_us)


def pp_point(session, transport: str, size: int) -> float:
    """perfprobe's measure path (its worker, its kernels): the same warm-up and count (µs)."""
    from perfprobe.probes.ipc import measure

    n = count_for(size)
    measure._round_trips(session, transport, size, n)   # the same untimed warm-up as the C side
    lat, _, _, _ = measure._round_trips(session, transport, size, n)
    return float(np.median(lat[n // 10:])) / 1000.0


def main() -> int:
    if not build():
        return 0
    from perfprobe.probes.ipc import plan
    from perfprobe.probes.ipc.session import Session

    pair = cpus()
    transports = list(plan.transports_for("same_cpu" if pair[0] == pair[1] else "two_cores"))
    keys = [(t, size) for size in SIZES for t in transports]
    samples: dict[str, dict[tuple[str, int], list[float]]] = {"c": {k: [] for k in keys}, "pp": {k: [] for k in keys}}
    saved = os.sched_getaffinity(0)
    with Session() as session:
        os.sched_setaffinity(0, {pair[0]})
        session.pin_worker(pair[1])
        for r in range(REPEATS):
            for t, size in keys:
                for side in (("c", "pp") if r % 2 == 0 else ("pp", "c")):
                    got = c_point(pair, t, size) if side == "c" else pp_point(session, t, size)
                    samples[side][(t, size)].append(got)
    os.sched_setaffinity(0, saved)
    med = {side: {k: statistics.median(runs[k]) for k in keys} for side, runs in samples.items()}
    print(f"CPUs {pair}; median round trip (µs) of {REPEATS} rounds, C and perfprobe back to back per point, {COUNT} messages each "
          f"({max(20, COUNT // 10)} from 64 KiB); load average {os.getloadavg()[0]:.2f}")
    print(f"{'transport':14} {'size':>7} {'C':>10} {'perfprobe':>10} {'Δ':>7}  ok   spread (min-max) C | perfprobe")
    ok = True
    for t, size in keys:
        c, p = med["c"][(t, size)], med["pp"][(t, size)]
        gated = size in GATED_SIZES
        good = abs(p / c - 1) <= TARGET
        ok &= good or not gated
        spread = " | ".join(f"{min(samples[side][(t, size)]):.3g}-{max(samples[side][(t, size)]):.3g}" for side in ("c", "pp"))
        mark = ("yes" if good else "NO") if gated else "-"
        print(f"{t:14} {size:7d} {c:10.3f} {p:10.3f} {p / c - 1:+7.0%}  {mark:3}  {spread}")
    print(f"target: 64 B and 4 KiB round trips within ±{TARGET:.0%} of C: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
