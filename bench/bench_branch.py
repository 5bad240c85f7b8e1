"""`perfprobe branch` against a native C reference, side by side, in one run.

Builds bench/branch_ref.c with the system cc (-O1 -fno-if-conversion -fno-if-conversion2
-fno-tree-vectorize, so the branch stays a conditional jump — checked on gcc's own assembly with
the probe's checker; the branch-free loop's cmov is inline asm; loops and jump-only targets
aligned to 16 bytes as LLVM aligns loop headers; -march=native, as numba compiles for the host CPU,
so gcc counts with `inc` as LLVM does), prints both sides' inner loops, instruction by
instruction, writes the probe's data (128 Ki int32 values, sorted and shuffled), then
alternates C runs and perfprobe's numba kernels, REPEATS times, both pinned to the same CPU (a
fresh C process could land on the other vCPU from the warm Python one). Targets, each side's best run over
REPEATS rounds (c_reference.best_of): ns per element within ±10% of C's; mispredict cycles and the
branch-free speed-up within ±15%; the median over rounds of perfprobe ÷ C is printed beside.
Exit 0 when met (or when this host cannot run it: no cc), 1 when missed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from c_reference import best_of, compile_c, judged, paired

ROOT = Path(__file__).resolve().parent.parent
SOURCE, BUILD = ROOT / "bench" / "branch_ref.c", ROOT / "bench" / "build"
BINARY, DATA = BUILD / "branch_ref", BUILD / "branch_data.bin"
FLAGS = ["-O1", "-fno-if-conversion", "-fno-if-conversion2", "-fno-tree-vectorize",
         "-falign-loops=16", "-falign-jumps=16", "-march=native"]
REPEATS, PASSES, CLOCK_ITERS = 15, 20, 200_000
NS_TARGET, RATIO_TARGET = 0.10, 0.15

sys.path.insert(0, str(ROOT))
from perfprobe.probes.branch.figures import MISS_RATE  # noqa: E402  (the repository root on sys.path first)
from perfprobe.probes.branch.plan import CASES, FULL  # noqa: E402


def build() -> bool:
    return compile_c(SOURCE, BINARY, FLAGS) and compile_c(SOURCE, BUILD / "branch_ref.s", [*FLAGS, "-S"])


def c_function(name: str) -> str:
    """One function's text in gcc's assembly of the C build (gcc -S)."""
    return (BUILD / "branch_ref.s").read_text().split(f"{name}:", 1)[1].split(".size", 1)[0]


def c_shapes_ok() -> bool:
    """The C branchy loop keeps a conditional jump and the branch-free one is a cmov without one,
    checked as the probe checks its kernels."""
    from perfprobe.kernels.branch_kernels import loop_shape
    from perfprobe.kernels.compiled import loop_branches

    free = c_function("branch_free")
    return bool(loop_branches(c_function("branchy"))) and not loop_branches(free) \
        and any(m.startswith("cmov") for m in loop_shape(free))


def print_shapes(check: dict) -> None:
    """Both sides' inner loops, mnemonic by mnemonic: the loops are meant to be the same."""
    from perfprobe.kernels.branch_kernels import loop_shape

    for name in ("branchy", "branch_free"):
        print(f"{name + ' loop':18} C: {' '.join(loop_shape(c_function(name)))}")
        print(f"{'':18} perfprobe: {' '.join(check[name + '_loop'])}")


def c_run() -> dict[str, float]:
    out = subprocess.run([str(BINARY), str(DATA), str(FULL.elements), str(PASSES), str(CLOCK_ITERS)],
                         capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def numba_run(kernels, data: dict[str, np.ndarray]) -> dict[str, float]:
    """The probe's own timed call (measure._timed) on each case, and its clock chain."""
    from perfprobe.probes.branch.measure import _timed

    out = {}
    for case in CASES:
        kernel = kernels.branchy if not case.startswith("branch_free") else kernels.branch_free
        out[case] = _timed(kernel, data[case.replace("branch_free_", "")], PASSES)
    ns, _ = kernels.add_chain(CLOCK_ITERS, 1)
    out["clock_ghz"] = CLOCK_ITERS * kernels.CHAIN / ns
    return out


def derived(m: dict[str, float]) -> dict[str, float]:
    return {"mispredict_cycles": (m["shuffled"] - m["sorted"]) / MISS_RATE * m["clock_ghz"],
            "branch_free_speedup": m["shuffled"] / m["branch_free_shuffled"]}


def main() -> int:
    if not build():
        return 0
    cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})  # both sides on one CPU: the C child inherits the mask
    from perfprobe.kernels import branch_kernels as kernels
    from perfprobe.probes.branch.measure import case_data

    data = case_data(np.random.default_rng(15), FULL.elements)   # the probe's values, as measure draws them
    np.concatenate([data["sorted"], data["shuffled"]]).tofile(DATA)
    samples: dict[str, list[dict[str, float]]] = {"c": [], "pp": []}
    for _ in range(REPEATS):
        samples["c"].append(c_run())
        samples["pp"].append(numba_run(kernels, data))
    best = {side: best_of(runs, lambda name: name == "clock_ghz") for side, runs in samples.items()}
    rounds = {side: [{**r, **derived(r)} for r in runs] for side, runs in samples.items()}
    pairs = paired(rounds["c"], rounds["pp"])
    check = kernels.branch_check()
    shapes = c_shapes_ok()
    print(f"C: branch kept, branch-free a cmov (gcc -S, checked like the probe's kernels): {shapes}; "
          f"perfprobe's: {check['branch_in_code'] and check['branch_free_cmov'] and not check['branch_free_has_branch']}")
    print_shapes(check)
    print(f"{REPEATS} rounds, C then perfprobe in each; judged: each side's best run (c_reference.best_of), the "
          f"medians' paired Δ beside; {PASSES} passes over 128 Ki values each, both on CPU {cpu}")
    print(f"{'figure':24} {'C best':>9} {'perfprobe':>9} {'Δ':>7}  ok   paired Δ")
    ok = shapes
    c, p = {**best["c"], **derived(best["c"])}, {**best["pp"], **derived(best["pp"])}
    for name in (*CASES, "clock_ghz", *derived(samples["c"][0])):
        good, row = judged(name, c[name], p[name], NS_TARGET if name in (*CASES, "clock_ghz") else RATIO_TARGET, 24)
        ok &= good
        print(f"{row}  {pairs[name][2] - 1:+8.0%}")
    print(f"targets: ns within ±{NS_TARGET:.0%}, ratios within ±{RATIO_TARGET:.0%}: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
