"""`perfprobe alloc` measured for real on tiny sizes: kernels, everything freed (RSS), jemalloc found.

No timed asserts: figures only have to exist and be positive.
"""

from __future__ import annotations

import contextlib
import gc
import subprocess
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import psutil
import pytest

from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.engine.probe import ProbeContext
from perfprobe.host import read_host_facts
from perfprobe.probes.alloc import figures
from perfprobe.probes.alloc import system as osys
from typed_shape import undeclared

ROOT = Path(__file__).resolve().parents[1]
TINY = Knobs(size=4 << 20, iterations=2000)


class _Task:
    def advance(self, steps: float = 1) -> None:
        pass


@contextlib.contextmanager
def _progress(name: str, total: float) -> Iterator[_Task]:
    yield _Task()


def _measure(knobs: Knobs = TINY) -> dict[str, Any]:
    from perfprobe.probes.alloc import measure

    return measure.measure(ProbeContext(RunConfig(quick=True, options=knobs), read_host_facts(), _progress))


def test_kernels_allocate_pool_and_copy():
    from perfprobe.kernels import alloc_kernels as k

    system = osys.system_allocator()
    assert k._pairs(system.malloc, system.free, 64, 1000, 0, 0, 0) > 0
    pool = np.zeros(64 * 64, dtype=np.uint8)
    assert k._pairs(0, 0, 64, 1000, 1, pool.ctypes.data, 64) > 0
    slots, ready = np.zeros(64, dtype=np.int64), np.zeros(1, dtype=np.int64)
    start, end, _ = k.mixed_worker(ready.ctypes.data, 1, system.malloc, system.free, slots, 1000, 7, 0, 0)
    assert end - start > 0
    src, dst = np.arange(4096, dtype=np.uint8), np.zeros(4096, dtype=np.uint8)
    k.copy(osys.address(osys.libc().memcpy), dst.ctypes.data, src.ctypes.data, 4096, 1)
    assert (dst == src).all()


def test_mixed_sizes_stay_between_16_bytes_and_4_kib():
    from perfprobe.kernels import alloc_kernels as k

    x, seen = 12345, []
    for _ in range(2000):
        x = k._xorshift(x)
        seen.append(k.mixed_size(x))
    assert min(seen) >= 16 and max(seen) <= 4096 and len(set(seen)) > 500


def test_a_run_frees_everything_it_took():
    knobs = Knobs(size=32 << 20, iterations=2000)  # a buffer left behind would exceed the margin
    _measure(knobs)  # compiles or loads the kernels, maps libraries: not the run's own memory
    gc.collect()
    before = psutil.Process().memory_info().rss
    raw = _measure(knobs)
    gc.collect()
    after = psutil.Process().memory_info().rss
    assert raw["copy"]["levels"][-1]["bytes"] == 32 << 20  # source and destination: 64 MiB
    assert undeclared(raw, figures.AllocRaw) == []
    assert after - before < 16 << 20, f"RSS grew by {(after - before) >> 20} MiB"


def test_jemalloc_is_found_and_measured():
    if not any(e["found"] for e in osys.find_allocators() if e["name"] == "jemalloc"):
        done = subprocess.run(["bash", str(ROOT / "tools" / "install_jemalloc.sh")], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"jemalloc is not installed and could not be: {done.stdout.strip() or done.stderr.strip()}")
    raw = _measure()
    assert "jemalloc" in figures.allocators(raw), raw["looked_for"]
    assert (figures.malloc_ns(raw, "64", "1t", "jemalloc") or 0) > 0
    assert (figures.malloc_ns(raw, "mixed", "all", "jemalloc") or 0) > 0
    assert "jemalloc" in raw["allocators"]["jemalloc"]["path"]
    assert undeclared(raw, figures.AllocRaw) == []  # what a preloaded child reports too


@pytest.mark.parametrize("fillers", [(), "two"])
def test_the_copy_pair_is_two_separate_arrays_of_ones_filled_on_one_thread_or_two(fillers: object) -> None:
    """touched_pair fills both arrays (fresh mappings read zero until filled), on two pinned
    threads where two CPUs of one node are given."""
    import os

    from perfprobe.probes.alloc.measure import touched_pair

    cpu = min(os.sched_getaffinity(0))
    src, dst = touched_pair(1 << 20, [cpu, cpu] if fillers == "two" else [])
    assert src.size == dst.size == 1 << 20 and not np.shares_memory(src, dst)
    assert int(src.min()) == int(dst.min()) == 1 == int(src.max()) == int(dst.max())
