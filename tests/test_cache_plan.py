"""What the cache probe plans to measure: sizes from the host's caches, the memory cap, knobs."""

from __future__ import annotations

import numpy as np
import pytest

from perfprobe.config import Knobs
from perfprobe.probes.cache_curve import Level
from perfprobe.probes.cache_memory import _huge_fraction_in, page_buffer
from perfprobe.probes.cache_plan import level_working_sets, make_plan, memory_cap, sharers

KVM = {"caches": [{"level": 1, "type": "Data", "size_bytes": 48 << 10, "line_bytes": 64},
                  {"level": 1, "type": "Instruction", "size_bytes": 32 << 10, "line_bytes": 64},
                  {"level": 2, "type": "Unified", "size_bytes": 2 << 20, "line_bytes": 64},
                  {"level": 3, "type": "Unified", "size_bytes": 300 << 20, "line_bytes": 64}],
       "memory": {"total_bytes": 24 << 30, "available_bytes": 23 << 30}}


def test_default_goes_to_four_times_the_llc_and_quick_to_twice() -> None:
    plan = make_plan(KVM, Knobs(), quick=False, threads=2)
    assert plan.max_bytes == 1200 << 20 and plan.limited_by == "4x LLC"
    assert plan.line_bytes == 64 and plan.l1_bytes == 48 << 10 and plan.per_doubling == 4
    assert make_plan(KVM, Knobs(), quick=True, threads=2).max_bytes == 600 << 20


def test_quick_is_coarser_and_repeats_less() -> None:
    quick, full = make_plan(KVM, Knobs(), True, 2), make_plan(KVM, Knobs(), False, 2)
    assert quick.per_doubling < full.per_doubling and quick.repeats < full.repeats


def test_options_override_size_and_repeats() -> None:
    plan = make_plan(KVM, Knobs(max_size=1 << 20, repeats=9), quick=True, threads=2)
    assert plan.max_bytes == 1 << 20 and plan.limited_by == "--max-size" and plan.repeats == 9


def test_never_more_than_a_quarter_of_available_memory() -> None:
    small = {**KVM, "memory": {"total_bytes": 4 << 30, "available_bytes": 2 << 30}}
    plan = make_plan(small, Knobs(), quick=False, threads=2)
    assert plan.max_bytes == 512 << 20 and plan.limited_by == "memory"
    assert memory_cap(small) == 512 << 20
    assert make_plan(small, Knobs(max_size=4 << 30), False, 2).max_bytes == 512 << 20


def test_no_reported_caches_falls_back_to_a_default_llc() -> None:
    plan = make_plan({"memory": {}}, Knobs(), quick=True, threads=1)
    assert plan.max_bytes == 64 << 20 and not plan.llc_reported and plan.cap_bytes is None


def test_working_sets_sit_inside_each_level() -> None:
    levels = [Level("L1", 2.3, 48 << 10), Level("L2", 6.5, 2 << 20), Level("L3", 42, 8 << 20),
              Level("DRAM", 150, None)]
    sets = level_working_sets(levels, [1, 1, 2, 2], threads=2)
    assert set(sets) == {"L1", "L2", "L3"}
    one, each = sets["L1"]
    assert one == 24 << 10 and each == one                  # private: each thread its own
    one, each = sets["L2"]
    assert 48 << 10 < one < 2 << 20 and each == one
    one, each = sets["L3"]
    assert 2 << 20 < one < 8 << 20
    assert each * 2 <= 0.75 * (8 << 20) and each >= 2 << 20  # shared: split, past L2


@pytest.mark.parametrize("huge", [True, False])
def test_page_buffer_is_aligned_zeroed_and_sized(huge: bool) -> None:
    with page_buffer(10_000, huge, np.uint64) as buf:
        assert buf.ctypes.data % (2 << 20) == 0 and buf.nbytes == 12288 and not buf.any()
        buf[:] = 7
        buf = None


def test_huge_fraction_parses_smaps() -> None:
    smaps = ("7f0000000000-7f0000400000 rw-p 00000000 00:00 0\nSize:               4096 kB\n"
             "AnonHugePages:      2048 kB\n7f0000400000-7f0000500000 rw-p 00000000 00:00 0\n"
             "Size:               1024 kB\nAnonHugePages:         0 kB\n")
    assert _huge_fraction_in(smaps, 0x7F0000001000) == 0.5
    assert _huge_fraction_in(smaps, 0x7F0000400000) == 0.0
    assert _huge_fraction_in(smaps, 0x1000) is None


def test_smt_siblings_split_their_l1_and_a_socket_its_l3() -> None:
    host = {"caches": [{"level": 1, "type": "Data", "size_bytes": 48 << 10, "shared_cpus": [0, 32]},
                       {"level": 2, "type": "Unified", "size_bytes": 2 << 20, "shared_cpus": [0, 32]},
                       {"level": 3, "type": "Unified", "size_bytes": 60 << 20,
                        "shared_cpus": list(range(64))}]}
    assert sharers(host, 4, threads=64) == [2, 2, 64, 64]
    assert sharers(host, 3, threads=1) == [1, 1, 1]
    levels = [Level("L1", 1.2, 48 << 10), Level("L2", 4, 2 << 20), Level("L3", 20, 60 << 20)]
    sets = level_working_sets(levels, [2, 2, 64], threads=64)
    assert sets["L1"] == (24 << 10, 12 << 10)        # two siblings share one L1
    one, each = sets["L3"]
    assert each * 64 <= 0.75 * (60 << 20)             # 64 threads split the L3
