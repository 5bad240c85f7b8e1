"""Side by side: `perfprobe pinned` against a native CUDA C reference (bench/pinned_ref.cu).

Builds the reference with nvcc on this host, runs it, runs `perfprobe pinned` (recording its raw
numbers), runs the reference again, and compares pinned H2D and D2H bandwidth per size. Target:
perfprobe within 5% of the reference (the mean of its two runs) at 256 MiB and up.
No GPU or no nvcc: prints "skipped: ..." and exits 0. Target missed: exits 1.

    python bench/bench_pinned.py [--max-size BYTES] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import cuda_reference

BINARY = cuda_reference.binary_path("pinned")
JUDGED_FROM = 256 << 20
TOLERANCE = 0.05


def run_reference(max_size: int) -> dict[int, dict[str, float]]:
    out = subprocess.run([str(BINARY), str(max_size)], check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {r["size_bytes"]: r for r in rows}


def compare(ref_runs: list[dict[int, dict[str, float]]], raw: dict) -> tuple[list[str], bool]:
    """Table lines and whether every judged size met the target."""
    lines = [f"{'size':>9} | {'ref H2D':>8} | {'perfprobe':>9} | {'ratio':>6} | {'ref D2H':>8} | "
             f"{'perfprobe':>9} | {'ratio':>6} | judged", "-" * 86]
    ok = True
    for i, size in enumerate(raw["sizes_bytes"]):
        refs = [r[size] for r in ref_runs if size in r]
        if not refs:
            continue
        cells, judged = [], size >= JUDGED_FROM
        for direction in ("h2d", "d2h"):
            ref = sum(r[f"{direction}_gbs"] for r in refs) / len(refs)
            ours = raw["pinned"][direction][i]["gbs"]["median"]
            ratio = ours / ref
            ok &= not judged or abs(ratio - 1) <= TOLERANCE
            cells += [f"{ref:8.2f}", f"{ours:9.2f}", f"{ratio:6.3f}"]
        verdict = ("ok" if all(abs(float(c) - 1) <= TOLERANCE for c in cells[2::3]) else "MISS") if judged else "-"
        lines.append(f"{size >> 10:>7}Ki | " + " | ".join(cells) + f" | {verdict}")
    return lines, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-size", type=int, default=1 << 30)
    parser.add_argument("--out", type=Path, default=None, help="folder for the raw outputs")
    args = parser.parse_args()
    reason = cuda_reference.skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    refs, raw = cuda_reference.side_by_side("pinned", args.max_size, args.out, run_reference)
    lines, ok = compare(refs, raw)
    target = f"target: perfprobe within {TOLERANCE:.0%} of the reference at >= {JUDGED_FROM >> 20} MiB"
    print("\n".join(["pinned bandwidth, GB/s (reference: mean of 2 runs of bench/pinned_ref.cu)", *lines,
                     target + (": met" if ok else ": MISSED")]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
