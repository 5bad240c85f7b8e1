"""Kernels: the only modules that import numba or cupy. Each returns numbers, nothing else.

Importing this package sets NUMBA_CACHE_DIR to a user cache directory when the package directory
is not writable (a system-wide or read-only install), so `cache=True` kernels still compile once.
"""

from __future__ import annotations

import os
from pathlib import Path


def _ensure_numba_cache_dir() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = Path(__file__).resolve().parent
    if os.access(here, os.W_OK):
        return
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    target = base / "perfprobe" / "numba"
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    os.environ["NUMBA_CACHE_DIR"] = str(target)


_ensure_numba_cache_dir()
