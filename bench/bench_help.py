"""How fast `perfprobe --help` answers: median of several cold-process runs (target: < 0.5 s).

It is what every user and every completion waits for, so start-up must import no numba, cupy or NVML.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.5
RUNS = 9


def time_help(executable: list[str]) -> list[float]:
    samples = []
    for _ in range(RUNS + 1):  # the first run warms the page cache and is dropped
        started = time.perf_counter()
        subprocess.run(executable + ["--help"], capture_output=True, check=True)
        samples.append(time.perf_counter() - started)
    return samples[1:]


def main() -> int:
    script = Path(sys.executable).with_name("perfprobe")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "perfprobe"]
    samples = time_help(command)
    median = statistics.median(samples)
    print(f"perfprobe --help: median {median * 1000:.0f} ms over {RUNS} runs "
          f"(min {min(samples) * 1000:.0f}, max {max(samples) * 1000:.0f}); target < {TARGET_S * 1000:.0f} ms")
    return 0 if median < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
