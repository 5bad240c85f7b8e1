"""Thread placement (perfprobe/pure/cpu_order.py, cache plan_placement): which CPUs N threads get, read
from captured hosts with SMT (../shared/fixtures/sysfs), and the pinning kernels on this host."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.host import read_host_facts
from perfprobe.probes.cache.plan import plan_placement
from perfprobe.pure.cpu_order import cpu_cores, cpus_for, describe, physical_cores, placement_order, sweep_counts

SMT_HOST = "16em64t-4s2c2t"      # 4 sockets x 2 cores x 2 threads
SMT_OFFLINE = "16em64t-4s2c2t-offlines"


def _facts(fixture_tree, name: str) -> dict:
    return read_host_facts(fixture_tree(name))


def test_one_thread_per_physical_core_before_any_sibling(fixture_tree) -> None:
    host = _facts(fixture_tree, SMT_HOST)
    cores = cpu_cores(host)
    usable = host["cpus"]["online"]
    assert len(cores) == 8 and all(len(c) == 2 for c in cores)
    order = placement_order(usable, cores)
    first = order[:8]
    assert describe(first, cores)["smt_shared"] == []           # 8 threads: 8 distinct cores
    assert describe(first, cores)["cores"] == 8
    assert [c[0] for c in cores] == first                         # cores in the order listed
    nine = cpus_for(order, 9)
    assert len(describe(nine, cores)["smt_shared"]) == 1          # the 9th thread is "needed" SMT


def test_cache_all_threads_use_each_core_once_and_the_sweep_ends_on_smt(fixture_tree) -> None:
    host = _facts(fixture_tree, SMT_HOST)
    place = plan_placement(host, host["cpus"]["online"], pool=64)
    assert len(place.cpus) == 8 and describe(place.cpus, cpu_cores(host))["smt_shared"] == []
    assert place.counts == (1, 2, 4, 8, 16)                       # 16: every hardware thread
    assert place.sweep_cpus(4) == list(place.cpus[:4])


def test_affinity_narrows_the_placement(fixture_tree) -> None:
    """Only usable CPUs (affinity, --bind) are placed; a core with one usable sibling counts once."""
    host = _facts(fixture_tree, SMT_HOST)
    cores = cpu_cores(host)
    usable = sorted(cores[0] + cores[1][:1] + cores[2])
    order = placement_order(usable, cores)
    assert sorted(order) == usable
    assert physical_cores(order, cores) == 3
    assert order[:3] == [cores[0][0], cores[1][0], cores[2][0]]
    assert plan_placement(host, usable, pool=64).cpus == tuple(order[:3])


def test_offline_cpus_are_never_placed(fixture_tree) -> None:
    host = _facts(fixture_tree, SMT_OFFLINE)
    online = host["cpus"]["online"]
    order = placement_order(online, cpu_cores(host))
    assert set(order) == set(online) and not set(order) & set(host["cpus"]["offline"])


def test_pool_caps_the_threads(fixture_tree) -> None:
    host = _facts(fixture_tree, SMT_HOST)
    assert len(plan_placement(host, host["cpus"]["online"], pool=3).cpus) == 3


@given(st.integers(1, 300), st.integers(0, 300))
def test_sweep_counts_double_up_to_the_cores_then_all(cores: int, extra: int) -> None:
    counts = sweep_counts(cores, cores + extra)
    assert counts[0] == 1 and cores in counts
    assert counts == sorted(set(counts))
    assert counts[-1] == cores + extra
    below = [n for n in counts if n < cores]
    assert below == [2 ** i for i in range(len(below))]


def test_cpus_for_refuses_more_threads_than_cpus() -> None:
    with pytest.raises(ValueError):
        cpus_for([0, 1], 3)


def test_placed_kernels_run_each_share_on_its_cpu_and_give_the_cpus_back() -> None:
    """The real pinning (numba): every share ran on its CPU; afterwards every thread has its CPUs."""
    import numpy as np

    from perfprobe.kernels import cache_kernels as k
    from perfprobe.kernels import placement as kp

    allowed = sorted(os.sched_getaffinity(0))
    cpus = list(reversed(allowed))[:2]
    a = np.ones(1 << 12)
    with kp.pinned_pool() as record:
        placed = kp.Placed(cpus)
        assert int(k.read_loads_placed(a, placed.masks, placed.where, 2)) == len(cpus) * int(a[:1].view(np.uint64)[0])
        assert placed.verified() and [int(c) for c in placed.where] == cpus
    assert record["layer"] in ("omp", "workqueue", "tbb")
    for tid in os.listdir("/proc/self/task"):
        assert sorted(os.sched_getaffinity(int(tid))) == allowed


def test_pinned_threads_are_all_pinned_before_any_work_begins() -> None:
    """A thread that cannot be pinned stops the run before any thread's work begins (the gate
    after pinning), and its error is the one raised; with every CPU valid, each works where pinned."""
    import os

    from perfprobe.kernels.placement import on_pinned_threads

    cpu = min(os.sched_getaffinity(0))
    began: list[int] = []
    with pytest.raises(OSError):
        on_pinned_threads([cpu, 1 << 20], lambda i: began.append(i))   # no CPU 1048576
    assert began == []
    assert on_pinned_threads([cpu, cpu], lambda i: (i, os.sched_getaffinity(0))) == [(0, {cpu}), (1, {cpu})]


def test_the_one_thread_cpu_moves_off_the_avoided_and_the_sweep_keeps_its_sets(fixture_tree) -> None:
    """The health check's confirmation (RunConfig.avoid_cpus): the next core's CPU times the
    one-thread figures; each sweep count past one uses the same CPUs as before."""
    host = _facts(fixture_tree, SMT_HOST)
    usable = host["cpus"]["online"]
    place = plan_placement(host, usable, pool=64)
    moved = plan_placement(host, usable, pool=64, avoid=(place.one_thread,))
    assert moved.one_thread == place.cpus[1] and moved.order[0] == moved.cpus[0] == moved.one_thread
    assert sorted(moved.cpus) == sorted(place.cpus) and sorted(moved.order) == sorted(place.order)
    assert moved.counts == place.counts
    assert all(set(moved.sweep_cpus(n)) == set(place.sweep_cpus(n)) for n in place.counts if n > 1)
    assert plan_placement(host, usable, pool=64, avoid=place.cpus) == place   # no core left: as it was
    assert plan_placement(host, usable, pool=64, avoid=(place.cpus[2],)) == place


@given(st.lists(st.integers(0, 63), min_size=1, max_size=16, unique=True), st.sets(st.integers(0, 63)))
def test_avoiding_keeps_every_cpu_and_avoids_where_it_can(usable: list[int], avoid: set[int]) -> None:
    host = {"cpus": {"online": sorted(usable), "cores": [[cpu] for cpu in sorted(usable)]}}
    place = plan_placement(host, sorted(usable), pool=64)
    moved = place.avoiding(avoid)
    assert sorted(moved.cpus) == sorted(place.cpus) and moved.counts == place.counts
    assert moved.one_thread not in avoid or set(place.cpus) <= avoid


def test_the_calling_thread_runs_the_block_on_the_cpu_asked_and_gets_its_cpus_back() -> None:
    from perfprobe.kernels import placement as kp

    allowed = os.sched_getaffinity(0)
    cpu = max(allowed)
    with kp.pinned_pool(cpu):
        assert os.sched_getaffinity(0) == {cpu}
    assert os.sched_getaffinity(0) == allowed
