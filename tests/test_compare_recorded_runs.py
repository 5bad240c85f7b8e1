"""compare judged on real runs: five quick runs of the H200 machine a minute apart and ten of the
2-vCPU guest (tests/data/compare_runs_*.json, each report cut down to its key figures, stats kept).

What they show (docs/results/compare-stability.md): the GPU figures keep still between runs and a
15% change of them is found in every pair; the CPU memory figures of both shared guests move between
runs far beyond their repeats, so two single runs cannot tell a 15% change of them from drift, and
a CI gate compares against a baseline of several runs, whose spread across runs sets the band.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from perfprobe.fleet import baseline, compare, peers
from perfprobe.fleet.facts import flat_facts
from perfprobe.fleet.reports import Loaded

DATA = Path(__file__).resolve().parent / "data"


def runs(name: str) -> list[dict[str, Any]]:
    return list(json.loads((DATA / name).read_text())["runs"].values())


def judged(base: dict[str, Any], new: dict[str, Any]) -> compare.Comparison:
    return compare.compare(compare.report_reference(base), compare.report_reference(new),
                           flat_facts(base["host"]), flat_facts(new["host"]))


def slowed(report: dict[str, Any], metric: str, factor: float) -> dict[str, Any]:
    """`report` with one figure and its samples slowed by `factor` (a rate divided, a time multiplied)."""
    out = copy.deepcopy(report)
    probe, name = metric.split(":")
    for result in out["results"]:
        key = result["probe"] if result["device"] is None else f"{result['probe']}[{result['device']}]"
        if key == probe and name in result["metrics"]:
            m = result["metrics"][name]
            scale = 1 / factor if m["unit"] == "GB/s" else factor
            m["value"] *= scale
            m["stats"] = {**m["stats"], "samples": [v * scale for v in m["stats"]["samples"]],
                          "median": m["stats"]["median"] * scale}
            return out
    raise KeyError(metric)


def against_the_others(reports: list[dict[str, Any]], index: int) -> compare.Comparison:
    others = [Loaded(f"run{j}.json", r) for j, r in enumerate(reports) if j != index]
    group = baseline.group_for(baseline.build(peers.judge(others)), reports[index]["host"], "b")
    return compare.compare(baseline.reference(group), compare.report_reference(reports[index]),
                           dict(group["facts"]), flat_facts(reports[index]["host"]))


def test_the_recordings_are_real_quiet_runs_with_samples():
    for name, count in (("compare_runs_h200_quick.json", 5), ("compare_runs_kvm2c_quick.json", 10)):
        reports = runs(name)
        assert len(reports) == count
        assert not any(r["disturbance"]["disturbed"] for r in reports)
        l1 = [r for r in reports[0]["results"] if r["probe"] == "cache"][0]["metrics"]["latency_ns.L1"]
        assert l1["stats"]["n"] >= 5 and len(l1["stats"]["samples"]) == l1["stats"]["n"]


@pytest.mark.parametrize("metric", ["pinned[0]:pinned.h2d_gbs", "gpumem[0]:dram_gbs.read"])
def test_the_gpu_figures_keep_still_between_runs_and_a_15_percent_loss_is_found_in_every_pair(metric):
    reports = runs("compare_runs_h200_quick.json")
    for i, j in itertools.permutations(range(len(reports)), 2):
        assert metric not in {c.metric for c in judged(reports[i], reports[j]).regressions}
        assert metric in {c.metric for c in judged(reports[i], slowed(reports[j], metric, 1.15)).regressions}


def test_cpu_memory_figures_drift_between_two_single_runs_beyond_their_repeats():
    """The limit of a two-run compare on these guests, as measured: some pairs call a CPU memory
    figure a regression though nothing changed (the H200 guest's DRAM latency read 119-164 ns over
    five runs, each run's five repeats within 2.3%)."""
    reports = runs("compare_runs_h200_quick.json")
    called = [c.metric for i, j in itertools.permutations(range(5), 2) for c in judged(reports[i], reports[j]).regressions]
    assert called and all(m.startswith("cache:") for m in called)


@pytest.mark.parametrize("name, clean", [("compare_runs_kvm2c_quick.json", 10), ("compare_runs_h200_quick.json", 4)])
def test_against_a_baseline_of_the_other_runs_few_or_no_false_regressions(name, clean):
    reports = runs(name)
    assert sum(not against_the_others(reports, i).regressions for i in range(len(reports))) >= clean


def test_against_a_baseline_of_the_other_runs_a_30_percent_l1_latency_loss_is_found():
    reports = runs("compare_runs_kvm2c_quick.json")
    for i in range(len(reports)):
        planted = [*reports[:i], slowed(reports[i], "cache:latency_ns.L1", 1.3), *reports[i + 1:]]
        assert "cache:latency_ns.L1" in {c.metric for c in against_the_others(planted, i).regressions}


TRIAL_FIGURES = ("cache:latency_ns.DRAM", "cache:read_gbs.DRAM.1t", "cache:read_gbs.DRAM.all")


def test_dram_figures_over_trial_buffers_keep_still_between_runs():
    """The same guest with DRAM latency and DRAM read as five held buffers each (2026-12-02): the
    DRAM latency's median moved 116.7-120.6 ns over the runs, and no pair calls a DRAM figure."""
    reports = runs("compare_runs_h200_trials.json")
    for report in reports:
        metrics = [r for r in report["results"] if r["probe"] == "cache"][0]["metrics"]
        assert all(metrics[name.split(":")[1]]["stats"]["trials"] for name in TRIAL_FIGURES)
    called = {c.metric for i, j in itertools.permutations(range(len(reports)), 2)
              for c in judged(reports[i], reports[j]).regressions}
    assert not called & set(TRIAL_FIGURES)


def test_a_20_percent_dram_latency_loss_over_trial_buffers_is_found_in_every_pair():
    reports = runs("compare_runs_h200_trials.json")
    for i, j in itertools.permutations(range(len(reports)), 2):
        slow = slowed(reports[j], "cache:latency_ns.DRAM", 1.2)
        assert "cache:latency_ns.DRAM" in {c.metric for c in judged(reports[i], slow).regressions}
