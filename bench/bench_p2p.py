"""Side by side: `perfprobe p2p` against a native CUDA C reference (bench/p2p_ref.cu).

Builds the reference with nvcc on this host, runs it, runs `perfprobe p2p` over every GPU (recording
its raw numbers), runs the reference again, and compares each ordered pair's one-way GB/s with peer
access on and staged, and both ways at once, at the largest size. Target: perfprobe within 5% of the
reference (the mean of its two runs). No GPU, one GPU or no nvcc: prints "skipped: ..." and exits 0.
Target missed: exits 1.

    python bench/bench_p2p.py [--size BYTES] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import cuda_reference

BINARY = cuda_reference.binary_path("p2p")
TOLERANCE = 0.05
CASES = (("peer_gbs", "peer", "sweep"), ("staged_gbs", "staged", "sweep"), ("bidir_gbs", "peer", "bidir"))


def run_reference(size: int) -> dict[tuple[int, int], dict]:
    out = subprocess.run([str(BINARY), str(size)], check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {(r["src"], r["dst"]): r for r in rows}


def ours(raw: dict, key: str, case: tuple[str, str, str]) -> float | None:
    part = (raw["results"].get(key) or {}).get(case[1]) or {}
    entry = part.get(case[2])
    if entry is None:
        return None
    return float((entry[-1] if isinstance(entry, list) else entry)["gbs"]["median"])


def compare(refs: list[dict[tuple[int, int], dict]], raw: dict) -> tuple[list[str], bool]:
    lines = [f"{'pair':>6} | {'case':>10} | {'reference':>9} | {'perfprobe':>9} | {'ratio':>6} | judged", "-" * 60]
    ok = True
    for key in raw["results"]:
        pair = tuple(int(x) for x in key.split("."))
        for case in CASES:
            values = [r[pair][case[0]] for r in refs if pair in r and r[pair][case[0]] > 0]
            mine = ours(raw, key, case)
            if not values or mine is None:
                continue
            ref = sum(values) / len(values)
            ratio = mine / ref
            ok &= abs(ratio - 1) <= TOLERANCE
            lines.append(f"{key:>6} | {case[0]:>10} | {ref:9.2f} | {mine:9.2f} | {ratio:6.3f} | "
                         f"{'ok' if abs(ratio - 1) <= TOLERANCE else 'MISS'}")
    return lines, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 30)
    parser.add_argument("--out", type=Path, default=None, help="folder for the raw outputs")
    args = parser.parse_args()
    reason = cuda_reference.skip_reason()
    if reason is None:
        from perfprobe.kernels.cuda_runtime import device_count

        reason = None if device_count() >= 2 else "one GPU: nothing to pair"
    if reason:
        print(f"skipped: {reason}")
        return 0
    refs, raw = cuda_reference.side_by_side("p2p", args.size, args.out, run_reference)
    if raw["budget"]["top_bytes"] != args.size:
        print(f"note: perfprobe capped its copies at {raw['budget']['top_bytes']} bytes; compare at that size")
    lines, ok = compare(refs, raw)
    target = f"target: perfprobe within {TOLERANCE:.0%} of the reference, every pair and case"
    print("\n".join(["p2p bandwidth at the largest size, GB/s (reference: mean of 2 runs of bench/p2p_ref.cu)",
                     *lines, target + (": met" if ok else ": MISSED")]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
