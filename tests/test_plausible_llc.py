"""Every probe that sizes a buffer from the last-level cache takes the same plausible size
(host.facts.last_level_cache_bytes): a guest that reports its host's whole LLC faults in no
gigabyte for it in alloc's DRAM copy or layout's DRAM set and flush, as in cache's plan."""

from __future__ import annotations

from perfprobe.host.facts import MAX_LLC_PER_CPU, last_level_cache_bytes, plausible_cache_bytes
from perfprobe.probes.alloc import plan as alloc_plan
from perfprobe.probes.cache.plan import data_caches, planned_llc
from perfprobe.probes.layout import plan as layout_plan
from perfprobe.system.budget import MemoryBudget

L1_L2 = [{"level": 1, "type": "Data", "size_bytes": 48 << 10, "shared_cpus": [0]},
         {"level": 1, "type": "Instruction", "size_bytes": 32 << 10, "shared_cpus": [0]},
         {"level": 2, "type": "Unified", "size_bytes": 2 << 20, "shared_cpus": [0]}]
GUEST = {"caches": [*L1_L2, {"level": 3, "type": "Unified", "size_bytes": 480 << 20, "shared_cpus": [0, 1]}],
         "memory": {"total_bytes": 24 << 30, "available_bytes": 23 << 30}}
"""The 2-vCPU Xeon guest: its host's 480 MiB L3 reported over its 2 CPUs (it measured about 12 MiB)."""
PLENTY = MemoryBudget(23 << 28, "a quarter of the host's available memory")


def test_a_guests_reported_llc_is_capped_per_sharing_cpu_and_a_real_one_stands():
    assert last_level_cache_bytes(GUEST) == 2 * MAX_LLC_PER_CPU == 128 << 20
    genoa_x = {"level": 3, "type": "Unified", "size_bytes": 768 << 20, "shared_cpus": list(range(16))}
    assert plausible_cache_bytes(genoa_x) == 768 << 20
    assert plausible_cache_bytes({"level": 3, "size_bytes": 480 << 20}) == 480 << 20   # no sharing reported
    assert last_level_cache_bytes({"caches": []}) is None


def test_alloc_layout_and_cache_size_from_the_same_llc():
    assert alloc_plan.last_level_bytes(GUEST) == layout_plan.last_level_bytes(GUEST) \
        == planned_llc(data_caches(GUEST)) == 128 << 20


def test_allocs_dram_copy_on_the_guest_is_twice_the_plausible_llc_not_the_reported_one():
    dram = alloc_plan.copy_levels(GUEST, alloc_plan.QUICK, PLENTY, None)[-1]
    assert dram.name == "DRAM" and dram.bytes == 256 << 20          # was 960 MiB, two buffers of it


def test_layouts_flush_on_the_guest_is_one_and_a_half_plausible_llcs():
    assert layout_plan.flush_bytes(GUEST) == 192 << 20              # was 720 MiB
