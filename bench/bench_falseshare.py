"""`perfprobe falseshare` against a native C reference, side by side, in one run.

Builds bench/falseshare_ref.c with the system cc (into bench/build/), then, on the same two CPUs
(distinct physical cores, placed as the probe places them) and with the same iteration counts,
alternates C runs and perfprobe's numba kernels for every spacing and update kind, so drift on a
shared host hits both alike. Runs where a thread was preempted are retried, as the probe does.
Targets: ns/update within ±15% of C's, slowdown (vs the widest spacing) within ±20% of C's.
Exit 0 when met (or when this host cannot run it: no cc, < 2 CPUs), 1 when missed.

`--manycore` (make bench-manycore): the core-to-core matrix instead, on the pairs a full
`perfprobe falseshare` samples (all CPUs up to 16, else 16 spread over the placement order), C
ping-pong and perfprobe's alternating per pair, PAIR_REPEATS times, medians. Target: the median
over pairs of perfprobe/C within ±10%. `--json PATH` writes every pair's figures.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Callable

from c_reference import compile_c

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "bench" / "falseshare_ref.c"
BINARY = ROOT / "bench" / "build" / "falseshare_ref"
SPACINGS = [8, 16, 32, 64, 128, 256]
KINDS = ("atomic", "plain")
REPEATS = 15
RUN_MS = 15.0
NS_TARGET, SLOWDOWN_TARGET = 0.15, 0.20
RETRIES, PREEMPTED_BELOW = 2, 0.9

sys.path.insert(0, str(ROOT))


def build() -> bool:
    """Compile the reference; False (with a note) when there is no C compiler."""
    return compile_c(SOURCE, BINARY, ["-O2", "-std=c11", "-pthread"])


def c_run(kind: str, cpus: list[int], iters: int, spacing: int) -> tuple[float, bool]:
    """One C run: (ns per update, whether a thread was preempted)."""
    args = [str(BINARY), kind, ",".join(map(str, cpus)), str(iters)] + ([] if kind == "pingpong" else [str(spacing)])
    fields = subprocess.run(args, capture_output=True, text=True, check=True).stdout.split()
    return float(fields[2]), float(fields[3]) < PREEMPTED_BELOW


def numba_run(kernels, kind: str, cpus: list[int], iters: int, spacing: int) -> tuple[float, bool]:
    """One run of perfprobe's kernel, as the probe times it."""
    if kind == "pingpong":
        run = kernels.run_pingpong(cpus[0], cpus[1], iters)
        return run.span_ns / iters / 2, run.preempted
    run = kernels.run_counters(cpus, spacing, iters, kind)
    return run.span_ns / iters, run.preempted


def undisturbed(run: Callable[[], tuple[float, bool]]) -> float:
    """A run's figure, retried up to RETRIES times while a thread was preempted."""
    value, preempted = run()
    for _ in range(RETRIES):
        if not preempted:
            break
        value, preempted = run()
    return value


def iterations(kernels, kind: str, cpus: list[int], spacing: int) -> int:
    """Iterations for a run of about RUN_MS, sized on perfprobe's kernel (both sides use them)."""
    probe = 20_000
    ns = min(numba_run(kernels, kind, cpus, probe, spacing)[0] for _ in range(3))
    return max(10_000, int(RUN_MS * 1e6 / max(ns, 0.05)))


def measure(kernels, cpus: list[int]) -> dict[tuple[str, int], dict[str, list[float]]]:
    """Median-ready samples per (kind, spacing) for C and perfprobe, interleaved repeat by repeat."""
    points = [(k, s) for k in KINDS for s in SPACINGS] + [("pingpong", 0)]
    iters = {p: iterations(kernels, p[0], cpus, p[1]) if p[0] != "pingpong" else 50_000 for p in points}
    samples: dict = {p: {"c": [], "perfprobe": []} for p in points}
    for _ in range(REPEATS):
        for p in points:
            kind, spacing = p
            samples[p]["c"].append(undisturbed(partial(c_run, kind, cpus, iters[p], spacing)))
            samples[p]["perfprobe"].append(undisturbed(partial(numba_run, kernels, kind, cpus, iters[p], spacing)))
    return samples


def report(samples: dict, cpus: list[int], host_name: str) -> bool:
    """Print the side-by-side table; True when every figure is within its target."""
    med = {p: {side: statistics.median(v) for side, v in sides.items()} for p, sides in samples.items()}
    print(f"host: {host_name}; CPUs {cpus}; median of {REPEATS} interleaved runs of ~{RUN_MS:.0f} ms each")
    print(f"{'kind':8} {'spacing':>7} {'C ns':>8} {'pp ns':>8} {'Δns':>7} {'C slow':>7} {'pp slow':>7} {'Δslow':>7}  ok")
    ok = True
    for kind in KINDS:
        c_wide, p_wide = med[(kind, SPACINGS[-1])]["c"], med[(kind, SPACINGS[-1])]["perfprobe"]
        for s in SPACINGS:
            c, p = med[(kind, s)]["c"], med[(kind, s)]["perfprobe"]
            d_ns, c_slow, p_slow = p / c - 1, c / c_wide, p / p_wide
            d_slow = p_slow / c_slow - 1
            good = abs(d_ns) <= NS_TARGET and abs(d_slow) <= SLOWDOWN_TARGET
            ok &= good
            print(f"{kind:8} {s:>5} B {c:8.2f} {p:8.2f} {d_ns:+7.0%} {c_slow:7.2f} {p_slow:7.2f} {d_slow:+7.0%}  "
                  f"{'yes' if good else 'NO'}")
    c, p = med[("pingpong", 0)]["c"], med[("pingpong", 0)]["perfprobe"]
    print(f"{'pingpong':8} {'one-way':>7} {c:8.1f} {p:8.1f} {p / c - 1:+7.0%}  (core to core, not a target)")
    print(f"targets: ns/update within ±{NS_TARGET:.0%}, slowdown within ±{SLOWDOWN_TARGET:.0%}: "
          f"{'met' if ok else 'MISSED'}")
    return ok


PAIR_REPEATS, PAIR_ROUNDS, PAIR_TARGET = 5, 50_000, 0.10


def manycore(kernels, order: list[int], host_name: str) -> int:
    """One-way handoff ns per sampled pair, C beside perfprobe, and the summary."""
    import json

    from perfprobe.probes.falseshare.plan import FULL, pair_cpus

    cpus, sampled = pair_cpus(order, FULL.max_pair_cpus)
    pairs = [(a, b) for i, a in enumerate(cpus) for b in cpus[i + 1:]]
    rows = []
    for a, b in pairs:
        numba_run(kernels, "pingpong", [a, b], 2_000, 0)  # warm
        c = [undisturbed(partial(c_run, "pingpong", [a, b], PAIR_ROUNDS, 0)) for _ in range(PAIR_REPEATS)]
        p = [undisturbed(partial(numba_run, kernels, "pingpong", [a, b], PAIR_ROUNDS, 0)) for _ in range(PAIR_REPEATS)]
        rows.append({"a": a, "b": b, "c_ns": statistics.median(c), "perfprobe_ns": statistics.median(p)})
    ratios = sorted(r["perfprobe_ns"] / r["c_ns"] for r in rows)
    mid = statistics.median(ratios)
    print(f"host: {host_name}; core-to-core one-way ns, {len(pairs)} pairs of CPUs {cpus} "
          f"({'sampled: ' + str(len(cpus)) + ' of ' + str(len(order)) + ' CPUs, spread over the placement order' if sampled else 'every usable CPU'}); "
          f"{PAIR_REPEATS} alternating runs of {PAIR_ROUNDS} round trips per pair, medians")
    cs, ps = [r["c_ns"] for r in rows], [r["perfprobe_ns"] for r in rows]
    print(f"C one-way ns: median {statistics.median(cs):.1f}, range {min(cs):.1f}-{max(cs):.1f}; "
          f"perfprobe: median {statistics.median(ps):.1f}, range {min(ps):.1f}-{max(ps):.1f}")
    print(f"perfprobe/C per pair: median {mid:.3f}, 10th-90th percentile "
          f"{ratios[len(ratios) // 10]:.3f}-{ratios[(9 * len(ratios)) // 10]:.3f}, "
          f"min {ratios[0]:.3f}, max {ratios[-1]:.3f}")
    for r in sorted(rows, key=lambda r: -abs(r["perfprobe_ns"] / r["c_ns"] - 1))[:5]:
        print(f"  furthest: CPUs {r['a']}-{r['b']}: C {r['c_ns']:.1f} ns, perfprobe {r['perfprobe_ns']:.1f} ns")
    if "--json" in sys.argv:
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(json.dumps({"cpus": cpus, "pairs": rows}))
    ok = abs(mid - 1) <= PAIR_TARGET
    print(f"target: median perfprobe/C within ±{PAIR_TARGET:.0%}: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


def main() -> int:
    from perfprobe.host import read_host_facts
    from perfprobe.probes.falseshare.plan import placement_order
    from perfprobe.system.bind import usable_cpus

    host = read_host_facts(None)
    usable = usable_cpus(host)
    if len(usable) < 2:
        print(f"skip: needs 2 usable CPUs, this process may use {usable}")
        return 0
    if not build():
        return 0
    from perfprobe.kernels import falseshare_kernels as kernels

    order = placement_order(usable, host["cpus"].get("cores") or [])
    cpus = order[:2]
    name = f"{host['cpu'].get('model')}, {len(usable)} usable CPUs, kernel {host.get('kernel')}"
    if "--manycore" in sys.argv:
        return manycore(kernels, order, name)
    return 0 if report(measure(kernels, cpus), cpus, name) else 1


if __name__ == "__main__":
    sys.exit(main())
