"""Compile perfprobe's numba kernels once on the host and hand the cache to every guest.

Why: under TCG numba compiles a kernel in 3-8 s, and each guest would compile the same kernels
again in each of its perfprobe processes. Numba's on-disk cache is valid wherever three things
match, which this module arranges:
- the CPU the code is built for: host and guests both run with NUMBA_CPU_NAME=generic (baseline
  x86-64; speed is meaningless under emulation anyway);
- the cache directory's place, derived from each source file's absolute path: the checkout keeps
  its host path in the guest, and the cache goes to the same absolute path too;
- each source file's mtime to the nanosecond: cpio keeps whole seconds only, so the guest puts the
  exact mtimes back (guest/checks.py, first thing) from the manifest made here.
A guest that finds the cache unusable simply compiles, as it would have anyway.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

GENERIC_CPU = {"NUMBA_CPU_NAME": "generic"}
# What the guests run: these compile every kernel the checks use (same argument types).
WARM_COMMANDS = (("numa", "--quick", "--size", "16M", "--json"),
                 ("cache", "--quick", "--max-size", "8M", "--repeats", "1", "--json"))


def warm(cache_dir: Path, project: Path) -> bool:
    """Fill `cache_dir` from scratch by running the guests' perfprobe commands on the host."""
    shutil.rmtree(cache_dir, ignore_errors=True)
    cache_dir.mkdir(parents=True)
    env = {**os.environ, **GENERIC_CPU, "NUMBA_CACHE_DIR": str(cache_dir)}
    ok = True
    for args in WARM_COMMANDS:
        proc = subprocess.run([sys.executable, "-m", "perfprobe", *args], cwd=project, env=env,
                              capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            ok = False
            tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
            print(f"numa-vm: warming numba's cache with perfprobe {args[0]} failed ({tail}); "
                  "the guests will compile for themselves", file=sys.stderr)
    return ok


def mtime_manifest(project: Path, names: tuple[str, ...] = ("perfprobe",)) -> str:
    """{absolute path: st_mtime_ns} of the checkout's Python sources, as JSON."""
    stamps = {str(p): p.stat().st_mtime_ns for name in names for p in (project / name).rglob("*.py")}
    return json.dumps(stamps)

