"""What the CUDA C side-by-side benchmarks share: whether this host can run them, and the nvcc build."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
FALLBACK_NVCC = Path("/usr/local/cuda/bin/nvcc")


def nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    return found or (str(FALLBACK_NVCC) if FALLBACK_NVCC.exists() else None)


def skip_reason() -> str | None:
    """Why this host cannot run a CUDA benchmark (no nvcc, no usable GPU), or None."""
    if nvcc_path() is None:
        return "no nvcc"
    sys.path.insert(0, str(ROOT))
    from perfprobe.errors import GpuUnavailable
    from perfprobe.kernels.cuda_runtime import load_cupy

    try:
        load_cupy()
    except GpuUnavailable as exc:
        return f"no GPU ({exc.reason})"
    return None


def build(source: Path, binary: Path) -> None:
    """Compile one CUDA C reference with nvcc -O2 into bench/build/."""
    binary.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([nvcc_path() or "nvcc", "-O2", "-o", str(binary), str(source)], check=True)


def run_perfprobe(probe: str, size: int, record: Path) -> dict:
    """Run `perfprobe PROBE --size SIZE --record RECORD` from this checkout; its raw numbers."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "perfprobe", probe, "--size", str(size), "--record", str(record), "--json"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 1):
        raise SystemExit(f"perfprobe {probe} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    raws = json.loads(record.read_text())["raw"]
    return raws[next(k for k in raws if k.startswith(probe))]


def side_by_side(probe: str, size: int, out: Path | None, run_reference: Callable[[int], Any],
                 build_reference: Callable[[], None] | None = None) -> tuple[list[Any], dict]:
    """Build bench/PROBE_ref.cu (with `build_reference` when given, else nvcc -O2), then run
    reference, perfprobe, reference (both see the same GPU state); saves both reference runs and
    perfprobe's recording in `out` (a temp folder if None)."""
    if build_reference is None:
        build(ROOT / "bench" / f"{probe}_ref.cu", binary_path(probe))
    else:
        build_reference()
    out = out or Path(tempfile.mkdtemp(prefix=f"bench_{probe}_"))
    out.mkdir(parents=True, exist_ok=True)
    first = run_reference(size)
    raw = run_perfprobe(probe, size, out / f"{probe}_record.json")
    second = run_reference(size)
    (out / f"{probe}_ref.json").write_text(json.dumps({"first": first, "second": second}, indent=1))
    return [first, second], raw


def binary_path(probe: str) -> Path:
    return ROOT / "bench" / "build" / f"{probe}_ref"
