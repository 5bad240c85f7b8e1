"""compare's judgement of one figure: Mann-Whitney U on both sides' samples beside a minimum effect."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfprobe.fleet import compare
from perfprobe.fleet.compare import Figure


def side(center: float, n: int = 5, jitter: float = 0.02, seed: int = 0, unit: str = "ns") -> Figure:
    rng = random.Random(seed)
    samples = tuple(center * (1 + rng.uniform(-jitter, jitter)) for _ in range(n))
    return Figure(sorted(samples)[n // 2], unit, samples)


def test_a_planted_15_percent_slowdown_is_a_regression():
    change = compare.judge("cache:latency_ns.L3", side(40.0), side(46.0, seed=1))
    assert change.kind == "regression" and change.p_value is not None and change.p_value < compare.ALPHA


def test_the_same_distribution_is_no_significant_change():
    change = compare.judge("cache:latency_ns.L3", side(40.0), side(40.0, seed=7))
    assert change.kind == "no significant change"


def test_significant_but_below_the_threshold_is_no_significant_change():
    change = compare.judge("cache:latency_ns.L3", side(40.0, jitter=0.001), side(41.6, jitter=0.001, seed=1))
    assert change.p_value is not None and change.p_value < compare.ALPHA
    assert change.kind == "no significant change"


def test_a_large_change_with_overlapping_samples_is_not_called():
    base = Figure(40.0, "ns", (20.0, 40.0, 60.0, 80.0, 30.0))
    new = Figure(48.0, "ns", (21.0, 48.0, 61.0, 79.0, 31.0))
    assert compare.judge("cache:latency_ns.L3", base, new).kind == "no significant change"


def test_too_few_samples_are_untested():
    change = compare.judge("cache:latency_ns.L3", side(40.0, n=3), side(80.0, n=3, seed=1))
    assert change.kind == "untested" and change.samples == (3, 3)


def test_an_unstable_side_is_judged_by_nobody():
    new = Figure(80.0, "ns", side(80.0).samples, unstable="repeats disagree")
    assert compare.judge("cache:latency_ns.L3", side(40.0), new).kind == "unstable"


def test_a_faster_run_is_an_improvement_and_bandwidth_reads_the_other_way():
    assert compare.judge("cache:latency_ns.L3", side(46.0), side(40.0, seed=1)).kind == "improvement"
    assert compare.judge("cache:read_gbs.DRAM.1t", side(10.0, unit="GB/s"),
                         side(8.5, seed=1, unit="GB/s")).kind == "regression"


def test_a_baseline_spread_across_hosts_widens_the_band():
    base = Figure(40.0, "ns", side(40.0, n=12).samples, spread=2.0)  # 3 x 1.4826 x 2 / 40 = 22%
    assert compare.judge("cache:latency_ns.L3", base, side(46.0, seed=1)).kind == "no significant change"
    assert compare.judge("cache:latency_ns.L3", base, side(52.0, seed=1)).kind == "regression"


def test_key_figures_only_unless_judge_all():
    base = {"cache:latency_ns.L3": side(40.0), "layout:ns.aos": side(2.0)}
    new = {"cache:latency_ns.L3": side(40.0, seed=1), "layout:ns.aos": side(3.0, seed=1)}
    assert [c.metric for c in compare.compare(base, new, {}, {}).changes] == ["cache:latency_ns.L3"]
    judged = compare.compare(base, new, {}, {}, judge_all=True)
    assert [c.metric for c in judged.regressions] == ["layout:ns.aos"]


def test_a_disturbed_run_calls_no_regression():
    base, new = {"cache:latency_ns.L3": side(40.0)}, {"cache:latency_ns.L3": side(60.0, seed=1)}
    result = compare.compare(base, new, {}, {}, disturbed_because=["NEW: steal 9%"])
    assert result.regressions == [] and result.changes[0].kind == "not called (disturbed run)"
    assert result.disturbed == ["NEW: steal 9%"]


def test_disturbed_reads_the_report_record():
    assert compare.disturbed({"disturbance": {"disturbed": True, "why": ["steal 9%"]}}, "NEW") == ["NEW: steal 9%"]
    assert compare.disturbed({"disturbance": {"disturbed": False}}, "NEW") == []
    assert compare.disturbed({}, "NEW") == []


def test_report_reference_reads_samples_and_the_unstable_mark():
    report = {"results": [{"probe": "cache", "device": None, "metrics": {
        "latency_ns.L1": {"value": 1.2, "unit": "ns", "stats": {"n": 5, "median": 1.2, "min": 1.1, "max": 1.3,
                                                                 "samples": [1.1, 1.2, 1.2, 1.25, 1.3]}},
        "read_gbs.L1.all": {"value": 20.0, "unit": "GB/s", "unstable": "all threads slower than one"},
        "bad": {"value": "fast", "unit": "ns"}}}]}
    ref = compare.report_reference(report)
    assert ref["cache:latency_ns.L1"].samples == (1.1, 1.2, 1.2, 1.25, 1.3)
    assert ref["cache:read_gbs.L1.all"].unstable == "all threads slower than one"
    assert "cache:bad" not in ref


@settings(max_examples=40, deadline=None)
@given(st.floats(0.2, 5.0), st.integers(4, 20), st.integers(0, 10_000))
def test_a_side_against_itself_is_never_a_change(scale, n, seed):
    figure = side(10.0 * scale, n=n, seed=seed)
    assert compare.judge("cache:latency_ns.L1", figure, figure).kind == "same"


@pytest.mark.parametrize("values", [(1.0, 1.0, 1.0, 1.0), (2.0, 2.0, 2.0, 2.0, 2.0)])
def test_significance_of_identical_values_is_one(values):
    assert compare.significance(values, values) == 1.0


def test_repeats_that_spread_wide_widen_the_band():
    # two runs of one shared H200 guest (2026-12-01): L3 latency's five repeats each, 37.3 against 42.1 ns
    run3 = Figure(37.29, "ns", (39.3609, 37.2918, 37.8518, 35.7753, 35.9639))
    run1 = Figure(42.09, "ns", (44.19, 42.0917, 42.8661, 40.5317, 41.2459))
    change = compare.judge("cache:latency_ns.L3", run3, run1)
    assert change.p_value is not None and change.p_value < compare.ALPHA  # the U test alone would call it
    assert change.band > 0.13 and change.kind == "no significant change"


# DRAM latency over five trial buffers each, two quick runs of the 2-vCPU Xeon guest (2026-12-02, 03:57 UTC)
TRIALS_D1 = (261.819, 233.47, 274.656, 265.918, 278.322)
TRIALS_D3 = (252.388, 265.736, 260.6, 283.415, 292.492)


def test_trials_of_two_runs_of_one_host_are_no_significant_change():
    base = Figure(265.92, "ns", TRIALS_D1, trials=True)
    new = Figure(265.74, "ns", TRIALS_D3, trials=True)
    assert compare.judge("cache:latency_ns.DRAM", base, new).kind == "no significant change"


def test_trials_judge_the_median_by_its_standard_error():
    base = Figure(265.92, "ns", TRIALS_D1, trials=True)
    slowed = Figure(265.74 * 1.2, "ns", tuple(v * 1.2 for v in TRIALS_D3), trials=True)
    as_trials = compare.judge("cache:latency_ns.DRAM", base, slowed)
    # MADs of 3.3% and 5.0%: three standard errors of the difference of the medians, 15.0%
    assert as_trials.kind == "regression" and as_trials.band == pytest.approx(0.1496, abs=0.001)
    # the same samples taken as repeats over one buffer: their whole spread is the band
    as_repeats = compare.judge("cache:latency_ns.DRAM", Figure(265.92, "ns", TRIALS_D1),
                               Figure(265.74 * 1.2, "ns", slowed.samples))
    assert as_repeats.band > 0.25 and as_repeats.kind == "no significant change"


def test_report_reference_and_baselines_keep_the_trials_mark():
    stats = {"n": 5, "median": 265.92, "min": 233.47, "max": 278.322, "samples": list(TRIALS_D1), "trials": True}
    report = {"results": [{"probe": "cache", "device": None, "metrics": {
        "latency_ns.DRAM": {"value": 265.92, "unit": "ns", "stats": stats}}}]}
    assert compare.report_reference(report)["cache:latency_ns.DRAM"].trials
    from perfprobe.fleet.baseline import reference
    group = {"metrics": {"cache:latency_ns.DRAM": {"median": 265.9, "mad": 1.0, "unit": "ns",
                                                   "samples": list(TRIALS_D1), "trials": True}}}
    assert reference(group)["cache:latency_ns.DRAM"].trials
