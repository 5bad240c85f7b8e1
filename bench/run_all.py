"""`make bench`: run every bench/bench_*.py in turn (each prints its own side-by-side table).

A benchmark that cannot run here (no GPU, no nvcc) says so and exits 0; one that misses its
target exits 1, and so does this script, after running all of them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"\n=== {script.stem} ===", flush=True)
        if subprocess.run([sys.executable, str(script)], cwd=HERE.parent).returncode != 0:
            failed.append(script.stem)
    print(f"\nbenchmarks missing their targets: {', '.join(failed)}" if failed else "\nall benchmarks met their targets")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
