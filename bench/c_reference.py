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
    """Each figure's best run (the fastest time, the highest rate). Noise on a shared VM only ever
    slows a run, in C and in the probe alike, so on a busy host the best runs compare the two
    implementations where medians compare how much of the noise each side drew (the 2-vCPU guest's
    64 B malloc spread 7-14 ns on both sides in one bench run)."""
    return {k: (max if higher_is_better(k) else min)(r[k] for r in runs) for k in runs[0]}
