"""Side by side: `perfprobe uvm` against a native CUDA C reference (bench/uvm_ref.cu).

Builds the reference with nvcc on this host, runs it, runs `perfprobe uvm` at the same size
(recording its raw numbers), runs the reference again, and compares the median time of each path
both measure. Target: perfprobe's median lies within the span of the reference's two runs, widened
by the path's tolerance: 5% for prefetch + kernel, pinned copy + kernel and zero-copy (stable to
0.5% on an H200); 15% for the prefetch of GPU-written data to the host and 25% for on-demand
migration, which vary from run to run on the reference itself (its two runs of the host prefetch
differed by 1.54× on an H200, which is why the span and not the mean is the target).
No GPU or no nvcc: prints "skipped: ..." and exits 0. Target missed: exits 1.
`--compare DIR` judges the outputs saved in DIR by an earlier run (no GPU needed).

    python bench/bench_uvm.py [--size BYTES] [--out DIR] [--compare DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import cuda_reference

BINARY = cuda_reference.binary_path("uvm")
# (reference key, perfprobe path, timed part, tolerance)
PAIRS = (
    ("managed_prefetch_s", "managed_prefetch", "time_s", 0.05),
    ("explicit_copy_s", "explicit_copy", "time_s", 0.05),
    ("zero_copy_s", "zero_copy", "time_s", 0.05),
    ("host_prefetch_move_s", "host_prefetch", "move_s", 0.15),
    ("managed_on_demand_s", "managed_on_demand", "time_s", 0.25),
)


def run_reference(size: int) -> dict[str, float]:
    out = subprocess.run([str(BINARY), str(size)], check=True, capture_output=True, text=True).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith("{")))


def compare(refs: list[dict[str, float]], raw: dict) -> tuple[list[str], bool]:
    """Table lines and whether every path met its target (within the widened reference span)."""
    lines = [f"{'path':<18} | {'reference ms':>15} | {'perfprobe ms':>12} | target | ok", "-" * 66]
    ok = True
    for ref_key, path, part, tolerance in PAIRS:
        entry = raw["paths"].get(path) or {}
        if part not in entry:
            lines.append(f"{path:<18} | not measured by perfprobe: {entry.get('skipped', '?')}")
            continue
        low, high = min(r[ref_key] for r in refs), max(r[ref_key] for r in refs)
        ours = entry[part]["median"]
        met = low * (1 - tolerance) <= ours <= high * (1 + tolerance)
        ok &= met
        span = f"{low * 1e3:.2f}–{high * 1e3:.2f}"
        lines.append(f"{path:<18} | {span:>15} | {ours * 1e3:12.2f} | ±{tolerance:<4.0%} | "
                     f"{'ok' if met else 'MISS'}")
    return lines, ok


def report(refs: list[dict[str, float]], raw: dict, size: int) -> int:
    lines, ok = compare(refs, raw)
    print("\n".join([f"uvm paths at {size >> 20} MiB, median ms (reference: the span of 2 runs of "
                     "bench/uvm_ref.cu)", *lines, "targets " + ("met" if ok else "MISSED")]))
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 30)
    parser.add_argument("--out", type=Path, default=None, help="folder for the raw outputs")
    parser.add_argument("--compare", type=Path, default=None, help="judge a saved run's folder")
    args = parser.parse_args()
    if args.compare:
        refs = json.loads((args.compare / "uvm_ref.json").read_text())
        raw = json.loads((args.compare / "uvm_record.json").read_text())["raw"]
        return report(list(refs.values()), raw[next(iter(raw))], refs["first"]["size_bytes"])
    reason = cuda_reference.skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    refs, raw = cuda_reference.side_by_side("uvm", args.size, args.out, run_reference)
    return report(refs, raw, args.size)


if __name__ == "__main__":
    sys.exit(main())
