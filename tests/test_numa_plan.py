"""numa planning without kernels: presets, knobs over presets, buffer sizes within their budgets,
and the declared requirements (NUMA system calls, a node to run and allocate on)."""

from __future__ import annotations

import os

import pytest

from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.engine.probe import ProbeContext
from perfprobe.engine.progress import null_progress
from perfprobe.errors import ProbeSkipped
from perfprobe.probes import numa
from perfprobe.probes.numa import plan
from perfprobe.system import numa_sys
from perfprobe.system.budget import MemoryBudget

MIB = 1 << 20


@pytest.mark.parametrize("quick, cache, size", [(True, 0, 64 * MIB), (True, 100 * MIB, 200 * MIB),
                                                (True, 1024 * MIB, 512 * MIB), (False, 0, 256 * MIB),
                                                (False, 100 * MIB, 400 * MIB), (False, 1024 * MIB, 2048 * MIB)])
def test_the_working_set_is_a_multiple_of_the_largest_cache_within_the_preset(quick, cache, size):
    made = plan.make_plan(RunConfig(quick=quick).preset(plan.PRESETS), cache, Knobs())
    assert made.size_bytes == size
    assert (made.steps, made.latency_repeats, made.max_pairs) == ((500_000, 3, 16) if quick else (2_000_000, 7, 64))


def test_the_largest_cache_is_its_plausible_size_as_cache_and_alloc_take_it():
    """A 2-vCPU Xeon guest reports its host's 480 MiB L3 shared by its 2 CPUs: numa sizes from
    64 MiB a sharing CPU (host.facts.plausible_cache_bytes), so `--quick` faults in 256 MiB, not 512."""
    guest = {"caches": [{"level": 1, "type": "Data", "size_bytes": 48 << 10, "shared_cpus": [0]},
                        {"level": 3, "type": "Unified", "size_bytes": 480 * MIB, "shared_cpus": [0, 1]},
                        {"level": 1, "type": "Instruction", "size_bytes": 1024 * MIB, "shared_cpus": [0]}]}
    assert plan.largest_cache_bytes(guest) == 128 * MIB
    assert plan.make_plan(plan.PRESETS.quick, plan.largest_cache_bytes(guest), Knobs()).size_bytes == 256 * MIB
    unshared = {"caches": [{"level": 3, "type": "Unified", "size_bytes": 480 * MIB}]}
    assert plan.largest_cache_bytes(unshared) == 480 * MIB  # no sharing listed: nothing to bound it by


def test_knobs_take_precedence_over_the_preset():
    made = plan.make_plan(plan.PRESETS.quick, 0, Knobs(size=20 * MIB, steps=1000, repeats=2, max_pairs=4))
    assert made == plan.Plan(20 * MIB, 1000, 2, 2, 4)


def test_buffer_size_names_the_budget_that_capped_it():
    budgets = [MemoryBudget(1 << 40, "a quarter of the host's available memory"),
               MemoryBudget(29 * MIB, "a quarter of NUMA node 1's free memory")]
    assert plan.buffer_size(64 * MIB, budgets) == (28 * MIB, "a quarter of NUMA node 1's free memory")
    assert plan.buffer_size(64 * MIB, budgets[:1]) == (64 * MIB, None)
    assert plan.buffer_size(17 * MIB, budgets[:1]) == (16 * MIB, None)  # whole 2 MiB pages


def _ctx(**config) -> ProbeContext:
    host = {"cpus": {"usable": [0, 1]}, "numa": {"nodes": [{"id": 0, "cpus": [0, 1], "memory_total_bytes": 1 << 30}]}}
    return ProbeContext(config=RunConfig(**config), host=host, progress=null_progress)


def test_a_kernel_without_numa_calls_is_a_skip_with_the_reason(monkeypatch):
    monkeypatch.setattr(numa_sys, "numa_syscalls_available", lambda: (False, "mbind: ENOSYS"))
    missing = numa.PROBE.unmet(_ctx())
    assert isinstance(missing, ProbeSkipped)
    assert missing.reason == "cannot place memory on NUMA nodes: mbind: ENOSYS" and "CONFIG_NUMA" in missing.hint


def test_no_memory_node_this_process_may_use_is_a_skip(monkeypatch):
    monkeypatch.setattr(numa_sys, "numa_syscalls_available", lambda: (True, ""))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(numa_sys, "mems_allowed", lambda: [0])
    assert numa.PROBE.unmet(_ctx()) is None
    monkeypatch.setattr(numa_sys, "mems_allowed", lambda: [3])
    missing = numa.PROBE.unmet(_ctx())
    assert isinstance(missing, ProbeSkipped) and missing.reason == "no NUMA node with usable CPUs and memory"
