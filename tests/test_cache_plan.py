"""What the cache probe plans to measure: sizes from the host's caches, the memory budget, knobs
and the two presets."""

from __future__ import annotations

import numpy as np
import pytest

from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.probes.cache.buffers import _huge_fraction_in, page_buffer
from perfprobe.probes.cache.curve import Level
from perfprobe.probes.cache.plan import (
    ALL_THREADS_DRAM_MAX,
    PRESETS,
    Plan,
    bandwidth_targets,
    level_working_sets,
    make_plan,
    sharers,
    too_little_memory,
)
from perfprobe.system.budget import MemoryBudget

KVM = {"caches": [{"level": 1, "type": "Data", "size_bytes": 48 << 10, "line_bytes": 64},
                  {"level": 1, "type": "Instruction", "size_bytes": 32 << 10, "line_bytes": 64},
                  {"level": 2, "type": "Unified", "size_bytes": 2 << 20, "line_bytes": 64},
                  {"level": 3, "type": "Unified", "size_bytes": 300 << 20, "line_bytes": 64}],
       "memory": {"total_bytes": 24 << 30, "available_bytes": 23 << 30}}
PLENTY = MemoryBudget(23 << 28, "a quarter of the host's available memory")
FULL, QUICK = PRESETS.full, PRESETS.quick


def plan(host: dict = KVM, knobs: Knobs = Knobs(), quick: bool = False, threads: int = 2,
         budget: MemoryBudget = PLENTY) -> Plan:
    return make_plan(host, knobs, RunConfig(quick=quick).preset(PRESETS), threads, budget)


def test_default_goes_to_four_times_the_llc_and_quick_to_twice() -> None:
    full = plan()
    assert full.max_bytes == 1200 << 20 and full.limited_by == "4x LLC"
    assert full.line_bytes == 64 and full.l1_bytes == 48 << 10 and full.per_doubling == 4
    assert plan(quick=True).max_bytes == 600 << 20 and plan(quick=True).limited_by == "2x LLC"


def test_quick_is_coarser_and_its_key_figures_repeat_five_times_in_the_same_time() -> None:
    """Issue 25: the key figures (latency curve, DRAM read) keep five repeats in --quick too
    (compare tests their samples), each that much shorter so they take what three took."""
    quick, full = plan(quick=True), plan()
    assert quick.per_doubling < full.per_doubling
    assert (quick.repeats, full.repeats, quick.run_s, full.run_s) == (5, 5, 0.002, 0.004)
    assert (quick.other_repeats, full.other_repeats) == (3, 5)
    assert quick.repeats * quick.run_s * quick.key_share == pytest.approx(3 * 0.002)
    assert full.key_share == 1.0
    assert full.compare_pages and not quick.compare_pages
    nine = plan(knobs=Knobs(repeats=9), quick=True)
    assert (nine.repeats, nine.other_repeats, nine.key_share) == (9, 9, 1.0)
    old = Plan(**{**quick.as_raw(), "bulk_repeats": None})  # recorded before bulk_repeats
    assert old.other_repeats == 5 and old.key_share == 1.0


def test_both_presets_read_dram_latency_at_twice_the_llc() -> None:
    """Issue 25 item 5: --quick (600 MiB here) and full (1.17 GiB) read DRAM latency on one set."""
    quick, full = plan(quick=True), plan()
    assert quick.dram_bytes == full.dram_bytes == 600 << 20
    assert plan(knobs=Knobs(max_size=8 << 30), quick=True).dram_bytes == 600 << 20
    assert plan(knobs=Knobs(max_size=256 << 20)).dram_bytes is None  # short of DRAM


def test_options_override_size_and_repeats() -> None:
    capped = plan(knobs=Knobs(max_size=1 << 20, repeats=9), quick=True)
    assert capped.max_bytes == 1 << 20 and capped.limited_by == "--max-size" and capped.repeats == 9


def test_never_more_than_the_budget_and_the_cap_names_its_basis() -> None:
    budget = MemoryBudget(512 << 20, "a quarter of NUMA node 1's free memory")
    capped = plan(budget=budget)
    assert capped.max_bytes == 512 << 20 and capped.limited_by == "memory"
    assert capped.cap_bytes == 512 << 20 and capped.cap_basis == budget.basis
    assert capped.as_raw()["cap_basis"] == budget.basis
    assert plan(knobs=Knobs(max_size=4 << 30), budget=budget).max_bytes == 512 << 20
    assert not too_little_memory(capped)


def test_a_budget_below_the_smallest_curve_is_too_little() -> None:
    assert too_little_memory(plan(budget=MemoryBudget(16 << 10, "a quarter of the host's available memory")))


def test_an_unreadable_budget_caps_nothing() -> None:
    free = plan(budget=MemoryBudget(0, "a quarter of the host's available memory"))
    assert free.cap_bytes is None and free.cap_basis is None and free.limited_by == "4x LLC"


def test_no_reported_caches_falls_back_to_a_default_llc() -> None:
    fallback = plan(host={"memory": {}}, quick=True, threads=1)
    assert fallback.max_bytes == 64 << 20 and not fallback.llc_reported


def test_dram_is_measured_over_the_largest_set() -> None:
    levels = [Level("L1", 2.3, 48 << 10), Level("L2", 6.5, 2 << 20), Level("DRAM", 150, None)]
    targets = bandwidth_targets(levels, KVM, plan())
    assert targets["DRAM"] == (1200 << 20, 600 << 20) and list(targets) == ["L1", "L2", "DRAM"]   # 1 GiB is less than one set


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


def test_a_guest_reporting_its_hosts_llc_reads_dram_at_twice_what_its_cpus_can_hold() -> None:
    """The 2-vCPU Xeon guest (2026-12-02): 480 MiB of L3 reported shared by its 2 CPUs, about 12 MiB
    measured; no CPU has more than 64 MiB per sharing CPU, so the plan sizes from 128 MiB: the DRAM
    set is 2 x 128 MiB in both presets, the curve goes to 2x (quick) and 4x (full) of it."""
    guest = {**KVM, "caches": [*KVM["caches"][:3], {"level": 3, "type": "Unified", "size_bytes": 480 << 20,
                                                    "line_bytes": 64, "shared_cpus": [0, 1]}]}
    quick, full = plan(guest, quick=True), plan(guest)
    assert quick.dram_bytes == full.dram_bytes == 256 << 20
    assert (quick.max_bytes, full.max_bytes, quick.llc_bytes) == (256 << 20, 512 << 20, 128 << 20)
    # a 16-core Genoa-X reports 768 MiB over its 16 cores: 48 MiB each, the LLC stands
    genoa_x = {**guest, "caches": [*KVM["caches"][:3], {"level": 3, "type": "Unified", "size_bytes": 768 << 20,
                                                        "line_bytes": 64, "shared_cpus": list(range(16))}]}
    assert plan(genoa_x, quick=True).dram_bytes == 1536 << 20


def test_l3_latency_is_read_at_one_set_between_the_l2_and_four_l2s_in_both_presets() -> None:
    """Issue 25: a fixed set, not the plateau off the curve (on shared VMs "L3" is a slope). 4 MiB
    beside a 2 MiB L2 with a far larger L3; the geometric middle of L2 and L3 where the L3 holds
    fewer than four L2s; none without an L3, or where the curve stops short of the set."""
    quick, full = plan(quick=True), plan()
    assert quick.l3_bytes == full.l3_bytes == 4 << 20
    small_l3 = {**KVM, "caches": [*KVM["caches"][:3], {"level": 3, "type": "Unified", "size_bytes": 4 << 20,
                                                       "line_bytes": 64}]}
    assert plan(small_l3).l3_bytes == int((2 << 20) * 2 ** 0.5) // 64 * 64
    assert plan({**KVM, "caches": KVM["caches"][:3]}).l3_bytes is None
    assert plan(knobs=Knobs(max_size=4 << 20)).l3_bytes is None
    old = Plan(**{k: v for k, v in quick.as_raw().items() if k != "l3_bytes"})  # recorded before l3_bytes
    assert old.l3_bytes is None


def test_l2_latency_is_read_at_twice_the_l1_in_both_presets() -> None:
    """Issue 25: a fixed set, not the plateau (it runs on past what the data TLB covers). 96 KiB
    beside a 48 KiB L1; the geometric middle of L1 and L2 where the L2 holds fewer than four L1s;
    none without an L2, or where the curve stops short of the set."""
    quick, full = plan(quick=True), plan()
    assert quick.l2_bytes == full.l2_bytes == 96 << 10
    tiny_l2 = {**KVM, "caches": [KVM["caches"][0], {"level": 2, "type": "Unified", "size_bytes": 64 << 10,
                                                     "line_bytes": 64}]}
    assert plan(tiny_l2).l2_bytes == int(((48 << 10) * (64 << 10)) ** 0.5) // 64 * 64
    assert plan({**KVM, "caches": KVM["caches"][:2]}).l2_bytes is None
    assert plan(knobs=Knobs(max_size=64 << 10)).l2_bytes is None
    old = Plan(**{k: v for k, v in quick.as_raw().items() if k != "l2_bytes"})  # recorded before l2_bytes
    assert old.l2_bytes is None


def test_all_threads_each_read_one_threads_dram_set_where_memory_allows() -> None:
    """Issue 25: two vCPUs the guest sees sharing one 32 MiB L3 sat on two CCXs at times, each
    with its own, and their 32 MiB halves of a 64 MiB set read 107-118 GB/s from them. Each thread
    now reads a set as large as one thread's; at most 1 GiB in all, and what the cap leaves."""
    from perfprobe.probes.cache.plan import threads_dram_bytes, threads_dram_bytes_beside

    quick = plan(quick=True)                                  # 600 MiB: 2x the 300 MiB LLC
    assert threads_dram_bytes(quick, 1, 64 << 20) == 64 << 20
    assert threads_dram_bytes(quick, 2, 64 << 20) == 128 << 20
    assert threads_dram_bytes(quick, 16, 64 << 20) == ALL_THREADS_DRAM_MAX
    assert threads_dram_bytes(quick, 4, 128 << 20) == 512 << 20
    assert threads_dram_bytes(quick, 2, 600 << 20) == ALL_THREADS_DRAM_MAX       # not 1200 MiB
    assert threads_dram_bytes(quick, 2, 1200 << 20) == 1200 << 20                # never below one thread's
    small = plan(quick=True, budget=MemoryBudget(1 << 30, "a quarter of the host's available memory"))
    assert threads_dram_bytes_beside(small, 2, 64 << 20, 896 << 20) == 128 << 20  # the cap leaves 128 MiB
    assert threads_dram_bytes_beside(small, 2, 64 << 20, 960 << 20) == 64 << 20   # ... 64 MiB: one share
    assert threads_dram_bytes_beside(small, 2, 64 << 20, 1000 << 20) is None      # no room: split a held one
    assert threads_dram_bytes_beside(quick, 2, 64 << 20, 0) == threads_dram_bytes(quick, 2, 64 << 20)
