"""Unstable figures and disturbed runs (stability.py), and the host's load readings (host/load.py)."""

from __future__ import annotations

import pytest

from perfprobe.engine import stability
from perfprobe.engine.model import Assessment, Finding, Metric, Spread, Verdict
from perfprobe.host.load import CpuTimes, cpu_times, others_fraction, steal_fraction
from perfprobe.host.sysroot import SysRoot


def timed(value: float, mad: float, n: int = 5) -> Metric:
    return Metric(value, "GB/s", Spread(n=n, median=value, min=value - 2 * mad, max=value + 2 * mad, mad=mad))


def test_repeats_that_disagree_beyond_the_bound_are_unstable():
    found = stability.unstable({"a": timed(100.0, 11.0), "b": timed(100.0, 9.0)})
    assert list(found) == ["a"] and "MAD 11%" in found["a"]


def test_too_few_repeats_have_no_spread_to_judge():
    assert stability.unstable({"a": timed(100.0, 50.0, n=2)}) == {}


def test_a_stated_bound_replaces_the_default():
    assert stability.unstable({"a": timed(100.0, 20.0)}, bound=0.25) == {}


@pytest.mark.parametrize("all_threads, broken", [(80.0, True), (95.0, False), (180.0, False)])
def test_all_threads_slower_than_one_breaks_not_below(all_threads, broken):
    relation = stability.NotBelow("read.{}.all", "read.{}.1t", 0.9, "all threads slower than one", each=("L1",))
    metrics = {"read.L1.all": Metric(all_threads, "GB/s"), "read.L1.1t": Metric(100.0, "GB/s")}
    assert bool(stability.unstable(metrics, (relation,))) is broken


def test_ordered_names_the_level_that_should_be_smaller():
    relation = stability.Ordered(("lat.L1", "lat.L2", "lat.L3"), 1.1, "a level faster than the one above")
    metrics = {"lat.L1": Metric(1.0, "ns"), "lat.L2": Metric(20.0, "ns"), "lat.L3": Metric(5.0, "ns")}
    assert list(stability.unstable(metrics, (relation,))) == ["lat.L2"]


@pytest.mark.parametrize("all_threads, broken", [(70.0, False), (90.0, False), (115.0, True)])
def test_memory_read_faster_than_that_many_single_threads_is_named(all_threads, broken):
    """Two threads at 1.5x two single threads (33 GB/s) is the ceiling: 115 is the EPYC guest's
    two shares in two L3s."""
    relation = stability.NoFasterThanThreads("read.all", "read.1t", 1.5, "faster than N threads", threads="threads")
    metrics = {"read.all": Metric(all_threads, "GB/s"), "read.1t": Metric(33.0, "GB/s"),
               "threads": Metric(2, "count")}
    assert list(stability.unstable(metrics, (relation,))) == (["read.all"] if broken else [])


def test_the_thread_count_comes_from_the_name_where_the_subject_holds_it():
    relation = stability.NoFasterThanThreads("sweep.t{n}", "sweep.t1", 1.5, "faster than N threads")
    metrics = {"sweep.t1": Metric(30.0, "GB/s"), "sweep.t2": Metric(118.0, "GB/s"),
               "sweep.t4": Metric(150.0, "GB/s"), "sweep.total": Metric(999.0, "GB/s")}
    assert list(stability.unstable(metrics, (relation,))) == ["sweep.t2"]


PLAUSIBLE = stability.NoFasterThanThreads("sweep.t{n}", "sweep.t1", 1.5, "faster than N threads")


def _agrees() -> stability.AgreesWithTopCount:
    return stability.AgreesWithTopCount("read.all", "sweep.t", 0.8, "far {} than the sweep", plausible=PLAUSIBLE,
                                        cached_why="the sweep read from caches")


@pytest.mark.parametrize("trials, named", [(36.0, "far slower than the sweep: 36 against sweep.t2 46"),
                                           (37.0, None), (57.0, None),
                                           (58.0, "far faster than the sweep: 58 against sweep.t2 46")])
def test_the_same_work_timed_twice_agrees_both_ways(trials, named):
    """Within 0.8 of the sweep's top count, both ways (1.25x above): 36.8 and 57.5 are the edges."""
    metrics = {"read.all": Metric(trials, "GB/s"), "sweep.t1": Metric(30.0, "GB/s"), "sweep.t2": Metric(46.0, "GB/s")}
    assert stability.unstable(metrics, (_agrees(),)) == ({"read.all": named} if named else {})


def test_where_the_top_count_read_from_caches_the_subject_is_named_too():
    """The EPYC guest's run07 (12-06 20:49): trials 28.9 GB/s, the sweep's two threads 86.6 (one 27.6)."""
    metrics = {"read.all": Metric(28.9, "GB/s"), "sweep.t1": Metric(27.6, "GB/s"), "sweep.t2": Metric(86.6, "GB/s")}
    found = stability.unstable(metrics, (_agrees(), PLAUSIBLE))
    assert set(found) == {"read.all", "sweep.t2"}
    assert found["read.all"].startswith("the sweep read from caches: faster than N threads: 86.6 against 2 x")


def test_a_lower_count_past_its_ceiling_leaves_the_top_count_the_reference():
    metrics = {"read.all": Metric(44.0, "GB/s"), "sweep.t1": Metric(20.0, "GB/s"), "sweep.t2": Metric(70.0, "GB/s"),
               "sweep.t4": Metric(46.0, "GB/s")}
    assert list(stability.unstable(metrics, (_agrees(), PLAUSIBLE))) == ["sweep.t2"]


def test_at_most_a_ceiling():
    relation = stability.AtMost("*efficiency", 1.0, "an efficiency above its ceiling")
    metrics = {"best.efficiency": Metric(1.3, "ratio"), "other.efficiency": Metric(0.9, "ratio")}
    assert list(stability.unstable(metrics, (relation,))) == ["best.efficiency"]


def test_an_unstable_figure_breaks_no_relation_of_another():
    relation = stability.AtMost("*", 1.0, "ceiling")
    assert stability.unstable({"x": Metric(2.0, "ratio", unstable="earlier")}, (relation,)) == {}


def test_marked_holds_back_timing_warns_and_lists_what_was_left_out():
    timing = Finding(Verdict.WARN, "L1 read is slow", "look", confirm=("bandwidth",))
    fact = Finding(Verdict.WARN, "THP is off", "turn it on")
    assessment = Assessment(summary="", metrics={"a": timed(100.0, 30.0), "b": timed(5.0, 0.1)},
                            findings=(timing, fact))
    out = stability.marked(assessment, {"a": "repeats disagree"}, remeasured=True)
    assert out.metrics["a"].unstable == "repeats disagree" and out.metrics["b"].unstable is None
    verdicts = [f.verdict for f in out.findings]
    assert verdicts == [Verdict.PASS, Verdict.WARN, Verdict.PASS]
    assert out.findings[0].message.startswith("held back (unstable figures: a)")
    assert "after a re-measurement" in out.findings[2].message and "a (repeats disagree)" in out.findings[2].message


def test_disturbance_names_steal_other_processes_and_hold_backs():
    held = Finding(Verdict.PASS, "held back (busy host: 40% steal): slow L1")
    mine = Finding(Verdict.PASS, "held back (unstable figures: a): slow")
    quiet = stability.disturbance([("cache", (mine,), {})], {"steal_fraction": 0.01, "others_fraction": 0.05})
    assert quiet["disturbed"] is False and quiet["held_back"] == 0
    busy = stability.disturbance([("cache", (held,), {"a": Metric(1.0, "ns", unstable="x")})],
                                 {"steal_fraction": 0.09, "others_fraction": 0.4})
    assert busy["disturbed"] is True and busy["held_back"] == 1 and busy["unstable"] == 1
    assert len(busy["why"]) == 3 and "9%" in busy["why"][0] and "40%" in busy["why"][1]


def test_a_load_witness_disturbs_the_run_and_another_unstable_figure_does_not():
    """A StandsWhile that `shows_load` marks its figures LOAD_SEEN, and the run is disturbed with its
    reason; the same relation without it, or a figure whose repeats disagree, leaves the run quiet."""
    metrics = {"kept": Metric(0.36, "ratio"), "ns.64B": timed(18.5, 0.1)}
    witness = stability.StandsWhile(("ns.*",), "kept", 0.85, "a core was shared", shows_load=True)
    found = stability.unstable(metrics, (witness,))
    assert found == {"ns.64B": "load seen: a core was shared: kept 0.36 below 0.85"}
    marked = {**metrics, "ns.64B": Metric(18.5, "ns", unstable=found["ns.64B"])}
    run = stability.disturbance([("falseshare", (), marked)], {"steal_fraction": 0.0, "others_fraction": 0.002})
    assert run["disturbed"] is True and run["why"] == ["falseshare: a core was shared: kept 0.36 below 0.85"]
    plain = stability.StandsWhile(("ns.*",), "kept", 0.85, "a core was shared")
    assert not stability.unstable(metrics, (plain,))["ns.64B"].startswith(stability.LOAD_SEEN)
    other = {"ns.64B": Metric(18.5, "ns", unstable="repeats disagree: MAD 33%")}
    assert stability.disturbance([("falseshare", (), other)], {})["disturbed"] is False


def test_load_readers_on_a_tree(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "stat").write_text("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n")
    sr = SysRoot(tmp_path)
    assert cpu_times(sr) == CpuTimes(total=1000, busy=150, steal=40)


def test_load_readers_say_none_where_unreadable(tmp_path):
    sr = SysRoot(tmp_path)
    assert cpu_times(sr) is None


def test_steal_and_others_fractions():
    before, after = CpuTimes(total=1000, busy=100, steal=0), CpuTimes(total=2000, busy=700, steal=100)
    assert steal_fraction(before, after) == pytest.approx(0.1)
    # 600 busy ticks = 6 s at 100 ticks/s; this process used 4 s of them; 10 s of CPU time passed
    assert others_fraction(before, after, own_cpu_s=4.0, ticks_per_s=100) == pytest.approx(0.2)
    assert steal_fraction(after, before) is None and others_fraction(None, after, 1.0, 100) is None


def test_an_unstable_figure_holds_back_only_the_warns_that_rest_on_it():
    dram = Finding(Verdict.WARN, "DRAM latency 260 ns", "check", confirm=("dram_latency",))
    line = Finding(Verdict.WARN, "line 128 B", "pad", confirm=("line",))
    assessment = Assessment(summary="", metrics={"read_gbs.L1.all": timed(20.0, 8.0), "latency_ns.DRAM": timed(260.0, 1.0)},
                            findings=(dram, line))
    rests_on = {"dram_latency": ("latency_ns.DRAM",), "line": ("line_bytes",)}
    out = stability.marked(assessment, {"read_gbs.L1.all": "spread"}, remeasured=True, rests_on=rests_on)
    assert [f.verdict for f in out.findings[:2]] == [Verdict.WARN, Verdict.WARN]
    out = stability.marked(assessment, {"latency_ns.DRAM": "spread"}, remeasured=True, rests_on=rests_on)
    assert [f.verdict for f in out.findings[:2]] == [Verdict.PASS, Verdict.WARN]
    assert out.findings[0].message.startswith("held back (unstable figures: latency_ns.DRAM)")


def test_every_declared_rests_on_key_is_one_a_rule_uses():
    import re
    from pathlib import Path

    from perfprobe.engine.registry import all_probe_names, load_probe

    root = Path(__file__).resolve().parents[1] / "perfprobe" / "probes"
    for name in all_probe_names():
        probe = load_probe(name)
        text = (root / name / "rules.py").read_text()
        for key in probe.rests_on or {}:
            assert re.search(rf'["\']{key}["\']', text), f"{name}: rests_on key {key} is no confirm key of its rules"
