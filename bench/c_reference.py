"""What the C side-by-side benchmarks share: find the system C compiler and build a reference."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path


def compile_c(source: Path, binary: Path, flags: list[str]) -> bool:
    """cc FLAGS -o BINARY SOURCE; False (with the note "skip: ...") when this host has no C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        print("skip: no C compiler (cc) on this host")
        return False
    binary.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([cc, *flags, "-o", str(binary), str(source)], check=True)
    return True


def best_of(runs: list[dict[str, float]], higher_is_better: Callable[[str], bool]) -> dict[str, float]:
    """Each figure's best run (the fastest time, the highest rate): what the benches judge. Noise on a
    shared VM only ever slows a run, in C and in the probe alike, and several figures have two
    levels there (the 2-vCPU guest's 64 B malloc on every CPU 7 or 14 ns, the H200 Xeon's branch-free
    loop 0.43 or 0.81 ns, on both sides) that last from a run to minutes: medians and even per-round
    ratios then compare which level each side drew more often, while over enough rounds both sides
    reach the fast level, and their best runs compare the code."""
    return {k: (max if higher_is_better(k) else min)(r[k] for r in runs) for k in runs[0]}


def paired(c_rounds: list[dict[str, float]], p_rounds: list[dict[str, float]]) -> dict[str, tuple[float, float, float]]:
    """Per figure: (C's median, the probe's median, the median over rounds of probe ÷ C within the
    round), printed beside the judged best runs: how far the typical runs agree."""
    import statistics

    return {k: (statistics.median(r[k] for r in c_rounds), statistics.median(r[k] for r in p_rounds),
                statistics.median(p[k] / c[k] for c, p in zip(c_rounds, p_rounds)))
            for k in c_rounds[0] if k in p_rounds[0]}


def judged(name: str, c: float, p: float, target: float, name_width: int, value_width: int = 9) -> tuple[bool, str]:
    """Whether the probe's figure p is within `target` (a fraction) of C's c, and the row each bench
    prints for it: name, C, perfprobe, their difference, yes/NO (callers append their own columns)."""
    good = abs(p / c - 1) <= target
    return good, f"{name:{name_width}} {c:{value_width}.3f} {p:{value_width}.3f} {p / c - 1:+7.0%}  {'yes' if good else 'NO '}"
