"""What the C side-by-side benchmarks share: find the system C compiler and build a reference."""

from __future__ import annotations

import shutil
import subprocess
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
