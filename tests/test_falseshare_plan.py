"""falseshare planning without kernels: thread placement, spacings, thread counts, pair sampling,
the declared two-CPU requirement, and knobs rejected before anything runs (check_knobs)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.engine.probe import ProbeContext
from perfprobe.engine.progress import null_progress
from perfprobe.errors import ProbeSkipped, UsageError
from perfprobe.probes import falseshare
from perfprobe.probes.falseshare import plan
from perfprobe.system.bind import usable_cpus
from perfprobe.system.budget import MemoryBudget

SMT_CORES = [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_placement_fills_distinct_cores_before_siblings():
    assert plan.placement_order(range(8), SMT_CORES) == [0, 1, 2, 3, 4, 5, 6, 7]


def test_placement_skips_cpus_we_may_not_use():
    assert plan.placement_order([0, 4, 5], SMT_CORES) == [0, 5, 4]


def test_placement_keeps_cpus_missing_from_the_core_list():
    assert plan.placement_order([0, 1, 9], [[0], [1]]) == [0, 1, 9]


def test_shared_cores_names_the_sibling_groups():
    assert plan.shared_cores([0, 1], SMT_CORES) == []
    assert plan.shared_cores([0, 1, 2, 3, 4], SMT_CORES) == [[0, 4]]


def test_spacings_double_from_8_to_the_widest():
    assert plan.spacings(256) == [8, 16, 32, 64, 128, 256]
    assert plan.spacings(1024)[-2:] == [512, 1024]


@pytest.mark.parametrize("widest", [16, 128])
def test_a_sweep_narrower_than_256_bytes_is_a_usage_error(widest):
    with pytest.raises(UsageError, match="--max-spacing"):
        plan.spacings(widest)


def test_thread_counts_are_two_and_all_usable():
    assert plan.thread_counts(2, None) == [2]
    assert plan.thread_counts(16, None) == [2, 16]
    assert plan.thread_counts(16, 4) == [2, 4]


@given(usable=st.integers(2, 512), data=st.data())
def test_thread_counts_accept_any_count_in_range(usable, data):
    requested = data.draw(st.integers(2, usable))
    counts = plan.thread_counts(usable, requested)
    assert counts == sorted(set(counts)) and counts[0] == 2 and counts[-1] == requested


@pytest.mark.parametrize("requested", [1, 3, 100])
def test_thread_counts_outside_the_usable_cpus_are_usage_errors(requested):
    with pytest.raises(UsageError, match="--threads"):
        plan.thread_counts(2, requested)


def test_pair_cpus_takes_all_on_a_small_host():
    assert plan.pair_cpus([0, 1, 2], 8) == ([0, 1, 2], False)


@given(n=st.integers(2, 256), limit=st.integers(2, 32))
def test_pair_cpus_samples_evenly_on_a_large_host(n, limit):
    cpus, sampled = plan.pair_cpus(list(range(n)), limit)
    assert sampled == (n > limit)
    assert len(cpus) == min(n, limit) and set(cpus) <= set(range(n)) and cpus == sorted(cpus)


def test_plan_covers_sweeps_true_sharing_and_one_thread():
    cases = plan.plan_cases([0, 1, 2, 3], [2, 4], [8, 16, 32])
    sweeps = [c for c in cases if c.spacing_bytes and len(c.cpus) > 1]
    assert len(sweeps) == 2 * 2 * 3
    assert {c.cpus for c in cases if c.spacing_bytes == 0} == {(0, 1, 2, 3)}
    assert {(c.kind, c.cpus, c.spacing_bytes) for c in cases if len(c.cpus) == 1} == \
        {("atomic", (0,), 32), ("plain", (0,), 32)}


def _ctx(usable: list[int], **options) -> ProbeContext:
    host = {"cpus": {"usable": usable, "cores": [[c] for c in usable]}, "caches": []}
    return ProbeContext(config=RunConfig(options=Knobs(**options)), host=host, progress=null_progress)


def test_one_usable_cpu_is_a_skip_with_the_reason(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    missing = falseshare.PROBE.unmet(_ctx([0]))
    assert isinstance(missing, ProbeSkipped)
    assert "needs 2 usable CPUs (two threads on different CPUs)" in missing.reason
    assert "taskset" in missing.hint
    assert falseshare.PROBE.unmet(_ctx([0, 1])) is None


def test_usable_cpus_are_narrowed_by_our_affinity(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1})
    assert usable_cpus({"cpus": {"usable": [0, 1, 2]}}) == [1]
    assert isinstance(falseshare.PROBE.unmet(_ctx([0, 1, 2])), ProbeSkipped)


def test_usable_cpus_fall_back_to_affinity_without_host_facts(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3})
    assert usable_cpus({}) == [0, 3]


def test_too_wide_a_spacing_for_memory_is_a_usage_error():
    need = plan.counter_bytes(2, 1 << 20)
    with pytest.raises(UsageError, match=r"^--max-spacing 1048576 with 2 threads needs .* \(a test budget\)$"):
        plan.check_plan(Knobs(max_spacing=1 << 20), 2, MemoryBudget(need - 1, "a test budget"))
    plan.check_plan(Knobs(max_spacing=1 << 20), 2, MemoryBudget(need, "a test budget"))


def test_knob_checks_only_check_the_spacing_when_the_probe_will_skip():
    plan.check_plan(Knobs(threads=64), 1, MemoryBudget(0, "nothing"))
    with pytest.raises(UsageError, match="--max-spacing"):
        plan.check_plan(Knobs(max_spacing=128), 1, MemoryBudget(0, "nothing"))


def test_check_knobs_uses_the_bound_node_cpus_and_budget(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(falseshare, "host_memory_budget", lambda host, bind: MemoryBudget(1 << 30, f"node {bind}"))
    host = {"cpus": {"usable": [0, 1, 2, 3]},
            "numa": {"nodes": [{"id": 0, "cpus": [0, 1]}, {"id": 1, "cpus": [2, 3]}]}}
    falseshare.PROBE.check_knobs(RunConfig(options=Knobs(threads=4)), host)
    with pytest.raises(UsageError, match="^--threads 4: this process can use 2 CPUs; give 2$"):
        falseshare.PROBE.check_knobs(RunConfig(bind=1, options=Knobs(threads=4)), host)


def test_a_bad_knob_is_refused_before_any_probe_runs(monkeypatch):
    """Under `perfprobe all` too: the runner checks every probe's knobs first (exit 2), so no
    probe is measured and none is lost to an error from inside falseshare's measure."""
    from perfprobe.engine import runner

    host = {"cpus": {"usable": [0, 1], "cores": [[0], [1]]}, "caches": [], "numa": {"nodes": []}}
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(runner, "_read_host", lambda config: host)
    ran: list[str] = []
    monkeypatch.setattr(runner, "run_one", lambda probe, *args, **kw: ran.append(probe.name))
    with pytest.raises(UsageError, match="^--threads 3: this process can use 2 CPUs; give 2$"):
        runner.run(["host", "falseshare", "numa"], RunConfig(options=Knobs(threads=3)))
    assert ran == []


@pytest.mark.parametrize("tree", ["16em64t-4s2c2t", "32intel64-2p8co2t+8ve", "20em64t-hybrid-1p6c2t+2ca4co1t"])
def test_placement_on_captured_smt_hosts_uses_every_core_before_a_sibling(fixture_tree, tree):
    from perfprobe.host import read_host_facts

    host = read_host_facts(fixture_tree(tree))
    usable, cores = host["cpus"]["usable"], host["cpus"]["cores"]
    order = plan.placement_order(usable, cores)
    physical = len([c for c in cores if set(c) & set(usable)])
    assert sorted(order) == sorted(usable)
    assert plan.shared_cores(order[:physical], cores) == []
    if len(usable) > physical:
        assert plan.shared_cores(order[:physical + 1], cores) != []
    cpus, sampled = plan.pair_cpus(order, plan.QUICK.max_pair_cpus)
    assert sampled == (len(usable) > plan.QUICK.max_pair_cpus) and set(cpus) <= set(usable)
