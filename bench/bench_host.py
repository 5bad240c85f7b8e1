"""How fast host facts are read: `read_host_facts()` live, NVML's own start-up apart (target: < 1 s).

Every probe run starts by reading them, so the reader must stay a matter of file reads: no numba, no
py-cpuinfo unless /proc/cpuinfo lacks a model. NVML's init (hundreds of ms on some drivers) is timed
on its own and subtracted, as it is not ours to speed up.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfprobe.host import read_host_facts  # noqa: E402

TARGET_S = 1.0
RUNS = 7


def nvml_init_s() -> float:
    """Seconds NVML takes to start and stop (0 without pynvml or a driver)."""
    try:
        import pynvml
    except ImportError:
        return 0.0
    started = time.perf_counter()
    try:
        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
    except Exception:
        pass
    return time.perf_counter() - started


def time_reads() -> list[float]:
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        read_host_facts()
        samples.append(time.perf_counter() - started)
    return samples


def main() -> int:
    samples = time_reads()
    nvml = statistics.median(nvml_init_s() for _ in range(3))
    median = statistics.median(samples)
    own = max(median - nvml, 0.0)
    facts = read_host_facts()
    print(f"read_host_facts(): median {median * 1000:.1f} ms over {RUNS} runs (min {min(samples) * 1000:.1f}, "
          f"max {max(samples) * 1000:.1f}); NVML init+shutdown {nvml * 1000:.1f} ms; ours {own * 1000:.1f} ms; "
          f"target < {TARGET_S * 1000:.0f} ms")
    print(f"host: {facts['cpu']['model']}, {len(facts['cpus']['online'])} CPUs, "
          f"{len(facts['numa']['nodes'])} node(s), {len(facts['gpus'])} GPU(s), kernel {facts['kernel']}")
    return 0 if own < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
