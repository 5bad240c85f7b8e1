"""What the CUDA C side-by-side benchmarks share: whether this host can run them, and the nvcc build."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

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
    from perfprobe.gpu import load_cupy
    from perfprobe.probe import GpuUnavailable

    try:
        load_cupy()
    except GpuUnavailable as exc:
        return f"no GPU ({exc.reason})"
    return None


def build(source: Path, binary: Path) -> None:
    """Compile one CUDA C reference with nvcc -O2 into bench/build/."""
    binary.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([nvcc_path() or "nvcc", "-O2", "-o", str(binary), str(source)], check=True)
