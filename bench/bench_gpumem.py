"""Side by side: `perfprobe gpumem` against a native CUDA C reference (bench/gpumem_ref.cu).

Writes perfprobe's kernel source out as bench/build/gpumem_kernels.cuh, builds the reference with
nvcc -O3 -arch=sm_90 (ARCH=... to change), runs it, runs `perfprobe gpumem` (recording its raw
numbers), runs the reference again, and compares every case's median time. Target: perfprobe
within 5% of the reference (the mean of its two runs) on every case.
No GPU or no nvcc: prints "skipped: ..." and exits 0. Target missed: exits 1.

    python bench/bench_gpumem.py [--size BYTES] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import cuda_reference

ROOT = cuda_reference.ROOT
BINARY = cuda_reference.binary_path("gpumem")
TOLERANCE = 0.05


def build() -> None:
    """The kernels' text from perfprobe (the very same source), then nvcc on the reference."""
    sys.path.insert(0, str(ROOT))
    from perfprobe.kernels.gpumem_kernels import SOURCE

    BINARY.parent.mkdir(parents=True, exist_ok=True)
    (BINARY.parent / "gpumem_kernels.cuh").write_text(SOURCE)
    arch = os.environ.get("ARCH", "sm_90")
    subprocess.run([cuda_reference.nvcc_path() or "nvcc", "-O3", f"-arch={arch}", f"-I{ROOT / 'bench'}",
                    f"-I{BINARY.parent}", "-o", str(BINARY), str(ROOT / "bench" / "gpumem_ref.cu")], check=True)


def run_reference(size: int) -> dict[str, float]:
    out = subprocess.run([str(BINARY), str(size)], check=True, capture_output=True, text=True).stdout
    return {row["case"]: float(row["ms"]) for row in (json.loads(line) for line in out.splitlines() if line.startswith("{"))}


def perfprobe_cases(raw: dict[str, Any]) -> dict[str, float]:
    """perfprobe's median ms per case, named as the reference names them."""
    ms = {f"dram.{k}": raw["dram"][k]["ms"]["median"] for k in ("write", "read", "copy", "d2d_memcpy")}
    for c in raw["coalescing"]["cases"]:
        ms["coalesce.misaligned" if c["offset"] else f"coalesce.stride{c['stride']}"] = c["ms"]["median"]
    ms.update({f"smem.stride{c['stride']}": c["ms"]["median"] for c in raw["shared"]["cases"]})
    for series, points in raw["occupancy"]["series"].items():
        ms.update({f"occupancy.{series}.{p['warps_per_sm']}": p["ms"]["median"] for p in points})
    ms.update({f"transpose.{k}": raw["transpose"][k]["ms"]["median"] for k in ("naive", "tiled", "padded")})
    ms.update({f"divergence.{k}": raw["divergence"][k]["ms"]["median"] for k in ("divergent", "split")})
    return ms


def compare(refs: list[dict[str, float]], raw: dict[str, Any]) -> tuple[list[str], bool]:
    ours = perfprobe_cases(raw)
    lines = [f"{'case':<26} | {'ref ms':>9} | {'ref span':>17} | {'perfprobe':>9} | {'ratio':>6} | judged", "-" * 84]
    ok = True
    for name, value in ours.items():
        seen = [r[name] for r in refs if name in r]
        if not seen:
            lines.append(f"{name:<26} | {'-':>9} | {'-':>17} | {value:9.4f} | {'-':>6} | no reference")
            ok = False
            continue
        ref = sum(seen) / len(seen)
        ratio = value / ref
        good = abs(ratio - 1) <= TOLERANCE
        ok &= good
        lines.append(f"{name:<26} | {ref:9.4f} | {min(seen):8.4f}-{max(seen):<8.4f} | {value:9.4f} | {ratio:6.3f} | "
                     f"{'ok' if good else 'MISS'}")
    return lines, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 30, help="bandwidth buffer bytes (perfprobe --size)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the raw outputs")
    args = parser.parse_args()
    reason = cuda_reference.skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    refs, raw = cuda_reference.side_by_side("gpumem", args.size, args.out, run_reference, build)
    lines, ok = compare(refs, raw)
    target = f"target: perfprobe within {TOLERANCE:.0%} of the reference (mean of 2 runs) on every case"
    print("\n".join([f"gpumem median ms per case, {args.size >> 20} MiB buffers (reference: bench/gpumem_ref.cu, "
                     "same kernel source, nvcc)", *lines, target + (": met" if ok else ": MISSED")]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
