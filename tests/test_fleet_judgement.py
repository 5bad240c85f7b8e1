"""fleet and compare judged on recorded reports: planted outliers named exactly, noise left alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fleet_reports as fr
from perfprobe.fleet import baseline, compare, outliers, peers
from perfprobe.fleet.facts import flat_facts
from perfprobe.fleet.reports import Loaded


def loaded(reports):
    return [Loaded(f"{r['host']['hostname']}.json", r) for r in reports]


def test_fleet_names_exactly_the_planted_outliers():
    hosts, planted = fr.planted_fleet()
    fleet = peers.judge(loaded(hosts))
    assert len(fleet.groups) == 1
    found = {(o.host, o.metric) for o in fleet.groups[0].outliers}
    assert found == planted
    assert all(o.worse for o in fleet.groups[0].outliers)


def test_fleet_without_planted_faults_finds_nothing():
    base = fr.h200()
    hosts = [fr.as_host(base, f"gpu{n:02d}", seed=100 + n) for n in range(1, 9)]
    fleet = peers.judge(loaded(hosts))
    assert fleet.problems == 0


def test_errored_skipped_and_missing_hosts_are_named():
    hosts, _ = fr.planted_fleet()
    fr.set_verdict(hosts[0], "falseshare", "error", "measuring failed: RuntimeError")
    fr.set_verdict(hosts[1], "pinned", "skip", "no usable GPU")
    expected = [h["host"]["hostname"] for h in hosts] + ["gpu09"]
    fleet = peers.judge(loaded(hosts), expected=expected)
    not_measured = {(n.host, n.probe, n.verdict) for n in fleet.groups[0].not_measured}
    assert ("gpu01", "falseshare", "error") in not_measured
    assert {("gpu02", "pinned[0]", "skip"), ("gpu02", "pinned[1]", "skip")} <= not_measured
    assert fleet.missing == ["gpu09"]


def test_hosts_of_other_hardware_form_their_own_group_with_a_note():
    hosts, _ = fr.planted_fleet()
    small = fr.replayed("cache_kvm2c_quick.json", ("cache",))
    small["host"]["hostname"] = "kvm01"
    fleet = peers.judge(loaded(hosts + [small]))
    assert [len(g.hosts) for g in fleet.groups] == [8, 1]
    assert any("too few to name outliers" in n for n in fleet.notes)


def test_two_reports_of_one_host_are_both_kept():
    base = fr.as_host(fr.h200(), "gpu01", seed=1)
    fleet = peers.judge([Loaded("a.json", base), Loaded("b.json", base)])
    assert fleet.groups[0].hosts == ["gpu01", "gpu01 (b.json)"]


def test_baseline_leaves_the_outliers_out_and_compare_accepts_it():
    hosts, planted = fr.planted_fleet()
    fleet = peers.judge(loaded(hosts))
    data = baseline.build(fleet)
    group = baseline.group_for(data, hosts[0]["host"], "b")
    assert group["metrics"]["pinned[1]:pinned.h2d_gbs"]["n"] == 7
    ref = baseline.reference(group)
    slow = hosts[2]  # gpu03, whose link is trained down
    result = compare.compare(ref, compare.report_reference(slow), group["facts"], flat_facts(slow["host"]))
    assert {c.metric for c in result.regressions} == {"pinned[1]:pinned.h2d_gbs", "pinned[1]:pinned.d2h_gbs"}


def test_compare_of_two_real_runs_of_one_host_finds_no_regression():
    run2 = fr.replayed("uvm_h200_1g_run2.json", ("uvm",))
    run3 = fr.replayed("uvm_h200_1g_run3.json", ("uvm",))
    result = compare.compare(compare.report_reference(run2), compare.report_reference(run3),
                             flat_facts(run2["host"]), flat_facts(run3["host"]), judge_all=True)
    assert result.regressions == [] and len(result.changes) > 40


def test_compare_reports_a_planted_slowdown_with_the_probes_advice():
    run = fr.h200()
    slow = fr.h200()
    fr.set_metric(slow, "pinned", 0, "pinned.h2d_gbs", 0.7)
    fr.set_metric(slow, "pinned", 1, "pinned.d2h_gbs", 0.8)
    result = compare.compare(compare.report_reference(run), compare.report_reference(slow),
                             flat_facts(run["host"]), flat_facts(slow["host"]), compare.probe_advice(slow))
    assert {c.metric for c in result.regressions} == {"pinned[0]:pinned.h2d_gbs", "pinned[1]:pinned.d2h_gbs"}
    assert all(c.advice for c in result.regressions)


def test_compare_lists_host_facts_that_differ():
    a = fr.h200()
    b = fr.h200()
    b["host"]["kernel"] = "6.19.0"
    b["host"]["thp"]["enabled"] = "never"
    result = compare.compare(compare.report_reference(a), compare.report_reference(b),
                             flat_facts(a["host"]), flat_facts(b["host"]))
    assert {f[0] for f in result.facts} == {"kernel", "THP"}


@pytest.mark.parametrize("values, expected", [
    ({"a": 10.0, "b": 10.1, "c": 9.9, "d": 10.0, "e": 6.0}, ["e"]),
    ({"a": 2.0, "b": 2.0, "c": 1.0}, ["c"]),       # identical peers: MAD 0, any real change is odd
    ({"a": 10.0, "b": 10.4, "c": 9.7}, []),        # within min_change
    ({"a": 10.0, "b": 3.0}, []),                   # two hosts cannot say which one is odd
])
def test_mad_outliers(values, expected):
    assert [o.host for o in outliers.find(values, "m", "GB/s", "higher")] == expected


@given(st.integers(min_value=2, max_value=40), st.floats(1.5, 100), st.booleans())
def test_one_far_host_is_always_found(peers_count, factor, slower):
    hosts = {f"h{i}": 100.0 * (1 + (i % 3) * 0.001) for i in range(peers_count)}
    hosts["odd"] = 100.0 / factor if slower else 100.0 * factor
    assert [o.host for o in outliers.find(hosts, "m", "GB/s", "higher")] == ["odd"]
