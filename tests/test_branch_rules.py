"""Judgement of `perfprobe branch` on numbers recorded on the 2-core KVM guest, and edited copies."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from perfprobe import cli
from perfprobe.engine.model import Verdict
from perfprobe.probes.branch import PROBE, figures, rules

DATA = Path(__file__).resolve().parent / "data"
RECORDED = sorted(DATA.glob("branch_*.json"))


def recorded(name: str = "branch_kvm2c_full.json") -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads((DATA / name).read_text())
    return data["raw"]["branch"], data["host"]


def quiet(raw: dict[str, Any]) -> dict[str, Any]:
    """The same medians with no spread (an idle host)."""
    out = copy.deepcopy(raw)
    stats = [out["clock"]["ghz"]] + [c["ns_per_element"] for c in out["cases"].values()]
    for stat in stats:
        stat["min"] = stat["max"] = stat["median"]
    return out


def test_the_recordings_are_found():
    """The test below runs once per recording: an empty glob would make it one skip, passing."""
    assert {p.name for p in RECORDED} >= {"branch_h200xeon_quick.json", "branch_kvm2c_full.json",
                                          "branch_kvm2c_quick.json"}, f"branch_*.json under {DATA}"


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_recorded_runs_give_a_plausible_mispredict_cost(path):
    data = json.loads(path.read_text())
    assessment = PROBE.judge(data["raw"]["branch"], data["host"])
    assert 5 <= assessment.metrics["mispredict_cycles"].value <= 60
    assert assessment.metrics["core_clock_ghz"].unit == "GHz"
    assert any("mispredicted branch costs" in f.message and "sort or partition" in f.advice
               for f in assessment.findings)


def test_quiet_copy_of_a_recorded_run_passes():
    raw, host = recorded()
    assessment = PROBE.judge(quiet(raw), host)
    assert assessment.verdict is Verdict.PASS
    assert assessment.key_figure.startswith("mispredict ")


def test_a_busy_recording_is_named_and_its_timing_warns_held_back():
    """Issue 12: a busy host is named with its figures, not issued as a fault of the host."""
    raw, host = recorded()
    raw = copy.deepcopy(raw)
    raw["cases"]["shuffled"]["ns_per_element"]["max"] *= 3
    found = rules.findings(raw, host)
    assert any(f.verdict is Verdict.PASS and "the host was busy" in f.message for f in found)
    assert not [f for f in found if f.verdict is Verdict.WARN]
    raw["clock"]["ghz"]["median"] *= 0.3  # a clock far under the reported one: held back too
    found = rules.findings(raw, host)
    assert not [f for f in found if f.verdict is Verdict.WARN]
    assert any(f.message.startswith("held back (the host was busy): core clock") for f in found)


def test_no_branch_in_the_compiled_loop_is_an_error_and_nothing_else():
    raw, host = recorded()
    raw = copy.deepcopy(raw)
    raw["check"]["branch_in_code"] = False
    found = rules.findings(raw, host)
    assert [f.verdict for f in found] == [Verdict.ERROR]
    assert "without a conditional jump" in found[0].message


def test_no_branch_replayed_through_the_cli_exits_3(tmp_path, capsys):
    data = json.loads((DATA / "branch_kvm2c_full.json").read_text())
    data["raw"]["branch"]["check"]["branch_in_code"] = False
    path = tmp_path / "nobranch.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["branch", "--replay", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 3
    assert report["results"][0]["verdict"] == "error"


@pytest.mark.parametrize("factor, verdict", [(1.0, Verdict.PASS), (0.4, Verdict.WARN), (3.0, Verdict.WARN)])
def test_clock_far_from_the_reported_one_warns(factor, verdict):
    raw, host = recorded()
    raw = copy.deepcopy(raw)
    raw["reported_clock"] = {"cpuinfo_mhz": None, "max_mhz": figures.ghz(raw) * 1000 / factor}
    assert rules.rule_clock(raw, host)[0].verdict is verdict


def test_a_boost_clock_over_cpufreqs_base_maximum_passes():
    """acpi-cpufreq's cpuinfo_max_freq is the base clock: a 2.0 GHz Xeon boosting to 3.8 is healthy."""
    raw, host = recorded()
    raw = copy.deepcopy(raw)
    raw["reported_clock"] = {"cpuinfo_mhz": None, "max_mhz": figures.ghz(raw) * 1000 / 1.9}
    assert rules.rule_clock(raw, host)[0].verdict is Verdict.PASS


def test_mispredict_cost_no_core_has_warns():
    raw, host = recorded()
    raw = quiet(raw)
    raw["cases"]["shuffled"]["ns_per_element"]["median"] = figures.ns(raw, "sorted") * 1.01
    assert rules.rule_mispredict(raw, host)[0].verdict is Verdict.WARN


def test_reach_is_the_longest_period_predicted_with_every_shorter_one():
    raw = {"cases": {"sorted": {"ns_per_element": {"median": 1.0}}, "shuffled": {"ns_per_element": {"median": 5.0}}},
           "periods": [{"period": p, "ns_per_element": {"median": v}}
                       for p, v in [(2, 1.0), (4, 1.1), (8, 1.9), (16, 4.0), (32, 1.0)]]}
    assert figures.reach(raw) == (8, 16)
    raw["periods"] = raw["periods"][:3]
    assert figures.reach(raw) == (8, None)
