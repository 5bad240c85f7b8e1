"""branch's timed figures carry their statistics, and its relations name impossible figures
(stability.py), on numbers recorded on real hosts (tests/data/branch_*.json)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import probe_stability as shared
from perfprobe.engine.stability import unstable
from perfprobe.probes import branch
from perfprobe.pure.stats import metric, summarize

DATA = Path(__file__).parent / "data"
RECORDINGS = sorted(DATA.glob("branch_*.json"))


judged = partial(shared.judged, branch)
broken = partial(shared.broken, branch)

planted = shared.planted


def test_cases_clock_and_periods_carry_their_repeats():
    metrics = judged("branch_kvm2c_full.json")
    sorted_ns, cycles = metrics["ns_per_element.sorted"], metrics["cycles_per_element.sorted"]
    clock = metrics["core_clock_ghz"].spread
    assert sorted_ns.spread.n == 7 and clock.n == 7
    # the same repeats in cycles, at the median clock
    assert cycles.spread.max == pytest.approx(sorted_ns.spread.max * clock.median)
    assert cycles.value == round(sorted_ns.spread.median * clock.median, 3)
    assert metrics["ns_per_element.period.2"].spread.n == 3
    for bare in ("mispredict_cycles", "branch_free_speedup", "predictor_reach_period", "reported_clock_ghz"):
        assert metrics[bare].spread is None, bare


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_no_recording_breaks_a_relation(path):
    assert unstable(judged(path.name), branch.PROBE.relations, float("inf")) == {}


def test_a_mispredicted_branch_cheaper_than_a_predicted_one_is_named():
    metrics = judged("branch_h200xeon_quick.json")
    found = broken(planted(metrics, "ns_per_element.shuffled", 0.7))   # sorted: 0.778
    assert list(found) == ["ns_per_element.shuffled"] and "mispredicted branch cheaper" in found["ns_per_element.shuffled"]


@pytest.mark.parametrize("slow, fast", [("branch_free_shuffled", "branch_free_sorted"),
                                        ("branch_free_sorted", "branch_free_shuffled")])
def test_branch_free_code_that_depends_on_the_data_order_is_named(slow, fast):
    metrics = judged("branch_h200xeon_quick.json")
    assert broken(planted(metrics, f"ns_per_element.{slow}", metrics[f"ns_per_element.{fast}"].value * 1.2)) == {}
    found = broken(planted(metrics, f"ns_per_element.{slow}", metrics[f"ns_per_element.{fast}"].value * 1.5))
    assert list(found) == [f"ns_per_element.{slow}"]


def test_the_spread_bound_passes_a_quiet_full_run_and_names_a_busy_one():
    quiet = summarize([0.775, 0.777, 0.52, 0.621, 0.739, 0.589, 0.542])   # sorted, full run, H200 guest
    busy = summarize([0.417, 0.5, 0.628, 1.4, 10.389, 0.45, 0.9])         # other work on the CPUs
    assert 0.10 < quiet["mad"] / quiet["median"] < branch.PROBE.spread_bound
    assert broken({"ns_per_element.sorted": metric(quiet, "ns", 4)}) == {}
    assert "repeats disagree" in broken({"ns_per_element.sorted": metric(busy, "ns", 4)})["ns_per_element.sorted"]
