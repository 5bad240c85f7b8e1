"""Side by side: `perfprobe uvm` against a native CUDA C reference (bench/uvm_ref.cu).

Builds the reference with nvcc on this host, runs it, runs `perfprobe uvm` at the same size
(recording its raw numbers), runs the reference again, and compares the median time of each path
both measure. Targets: prefetch + kernel, pinned copy + kernel and zero-copy within 5% of the
reference (the mean of its two runs); the prefetch of GPU-written data to the host within 15%;
on-demand migration within 35% (it varies from run to run on the reference too).
No GPU or no nvcc: prints "skipped: ..." and exits 0. Target missed: exits 1.

    python bench/bench_uvm.py [--size BYTES] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "bench" / "uvm_ref.cu"
BINARY = ROOT / "bench" / "build" / "uvm_ref"
# (reference key, perfprobe path, timed part, tolerance)
PAIRS = (
    ("managed_prefetch_s", "managed_prefetch", "time_s", 0.05),
    ("explicit_copy_s", "explicit_copy", "time_s", 0.05),
    ("zero_copy_s", "zero_copy", "time_s", 0.05),
    ("host_prefetch_move_s", "host_prefetch", "move_s", 0.15),
    ("managed_on_demand_s", "managed_on_demand", "time_s", 0.35),
)


def skip_reason() -> str | None:
    """Why this host cannot run the benchmark, or None."""
    if not (shutil.which("nvcc") or Path("/usr/local/cuda/bin/nvcc").exists()):
        return "no nvcc"
    sys.path.insert(0, str(ROOT))
    from perfprobe.gpu import load_cupy
    from perfprobe.probe import GpuUnavailable

    try:
        load_cupy()
    except GpuUnavailable as exc:
        return f"no GPU ({exc.reason})"
    return None


def build() -> None:
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    BINARY.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([nvcc, "-O2", "-o", str(BINARY), str(SOURCE)], check=True)


def run_reference(size: int) -> dict[str, float]:
    out = subprocess.run([str(BINARY), str(size)], check=True, capture_output=True, text=True).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith("{")))


def run_perfprobe(size: int, record: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "perfprobe", "uvm", "--size", str(size), "--record", str(record), "--json"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 1):
        raise SystemExit(f"perfprobe uvm failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    raws = json.loads(record.read_text())["raw"]
    return raws[next(k for k in raws if k.startswith("uvm"))]


def compare(refs: list[dict[str, float]], raw: dict) -> tuple[list[str], bool]:
    """Table lines and whether every path met its target."""
    lines = [f"{'path':<22} | {'ref ms':>8} | {'perfprobe ms':>12} | {'ratio':>6} | target | ok", "-" * 70]
    ok = True
    for ref_key, path, part, tolerance in PAIRS:
        entry = raw["paths"].get(path) or {}
        if part not in entry:
            lines.append(f"{path:<22} | not measured by perfprobe: {entry.get('skipped', '?')}")
            continue
        ref = sum(r[ref_key] for r in refs) / len(refs)
        ours = entry[part]["median"]
        met = abs(ours / ref - 1) <= tolerance
        ok &= met
        lines.append(f"{path:<22} | {ref * 1e3:8.2f} | {ours * 1e3:12.2f} | {ours / ref:6.3f} | "
                     f"±{tolerance:.0%}  | {'ok' if met else 'MISS'}")
    return lines, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 30)
    parser.add_argument("--out", type=Path, default=None, help="folder for the raw outputs")
    args = parser.parse_args()
    reason = skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    build()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_uvm_"))
    out.mkdir(parents=True, exist_ok=True)
    first = run_reference(args.size)
    raw = run_perfprobe(args.size, out / "uvm_record.json")
    second = run_reference(args.size)
    (out / "uvm_ref.json").write_text(json.dumps({"first": first, "second": second}, indent=1))
    lines, ok = compare([first, second], raw)
    print("\n".join([f"uvm paths at {args.size >> 20} MiB, median ms (reference: mean of 2 runs of "
                     "bench/uvm_ref.cu)", *lines, "targets " + ("met" if ok else "MISSED")]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
