"""`make bench`: run every bench/bench_*.py in turn (each prints its own side-by-side table).

A benchmark that cannot run here (no GPU, no nvcc) says so and exits 0; one that misses its
target exits 1, and so does this script, after running all of them.

`--manycore` (make bench-manycore): only the many-core modes — bench_cache.py --manycore (latency
per level, DRAM read/triad thread sweep beside C's OpenMP one) and bench_falseshare.py --manycore
(the sampled core-to-core matrix beside C's ping-pong). Other arguments go to both.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


MANYCORE = ("bench_cache.py", "bench_falseshare.py")


def main() -> int:
    failed = []
    args = sys.argv[1:]
    scripts = [HERE / s for s in MANYCORE] if "--manycore" in args else sorted(HERE.glob("bench_*.py"))
    for script in scripts:
        print(f"\n=== {script.stem} ===", flush=True)
        if subprocess.run([sys.executable, str(script), *args], cwd=HERE.parent).returncode != 0:
            failed.append(script.stem)
    print(f"\nbenchmarks missing their targets: {', '.join(failed)}" if failed else "\nall benchmarks met their targets")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
