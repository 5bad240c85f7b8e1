"""Judgement and plan of `perfprobe layout` on numbers recorded on the 2-core KVM guest, and edits."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from perfprobe.engine.model import Verdict
from perfprobe.probes.layout import PROBE, figures, plan, rules
from perfprobe.system.budget import MemoryBudget

DATA = Path(__file__).resolve().parent / "data"
RECORDED = sorted(DATA.glob("layout_*.json"))


def recorded(name: str = "layout_kvm2c_full.json") -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads((DATA / name).read_text())
    return data["raw"]["layout"], data["host"]


def _stats(raw: dict[str, Any]) -> list[dict[str, Any]]:
    out = [p["ns_per_record"] for p in raw["records"]]
    for points in raw["split"]["by_width"].values():
        out += [p[k] for p in points for k in ("throughput_ns", "latency_ns")]
    return out


def quiet(raw: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    for stat in _stats(out):
        stat["min"] = stat["max"] = stat["median"]
    return out


def test_the_recordings_are_found():
    """The test below runs once per recording: an empty glob would make it one skip, passing."""
    assert {p.name for p in RECORDED} >= {"layout_h200xeon_quick.json", "layout_kvm2c_full.json",
                                          "layout_kvm2c_quick.json"}, f"layout_*.json under {DATA}"


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_recorded_runs_name_their_penalties(path):
    data = json.loads(path.read_text())
    assessment = PROBE.judge(data["raw"]["layout"], data["host"])
    for name in ("split_penalty.line.8B", "split_penalty.page.8B", "split_penalty.line.32B", "soa_speedup.k8.dram"):
        assert assessment.metrics[name].unit == "ratio"
        assert assessment.metrics[name].value > 0
    assert any("split across two cache lines" in f.message and "alignas(64)" in f.advice for f in assessment.findings)


def test_quiet_copy_passes_with_soa_advice():
    raw, host = recorded()
    assessment = PROBE.judge(quiet(raw), host)
    assert assessment.verdict is Verdict.PASS
    assert any("separate arrays" in f.advice for f in assessment.findings)


def test_splits_that_cost_nothing_are_said_to():
    raw = quiet(recorded()[0])
    for points in raw["split"]["by_width"].values():
        for p in points:
            p["throughput_ns"] = p["latency_ns"] = {"median": 1.0, "min": 1.0, "max": 1.0, "iqr": 0.0, "repeats": 3}
    found = rules.rule_line_split(raw, {})
    assert found[0].verdict is Verdict.PASS and "about what aligned ones do" in found[0].message


def test_busy_host_is_named_not_warned():
    """Issue 12 item 4: load is named in a note; layout has no warn that load could fake."""
    raw = copy.deepcopy(recorded()[0])
    assert rules.rule_busy(quiet(raw), {}) == []
    for stat in _stats(raw):
        stat["max"] = stat["median"] * 2
    found = rules.rule_busy(raw, {})
    assert found[0].verdict is Verdict.PASS and "the host was busy" in found[0].message


def test_split_offsets_and_penalty():
    assert plan.splits_line(57, 8) and not plan.splits_line(56, 8) and plan.splits_line(33, 32)
    raw = {"split": {"by_width": {"8": [{"offset": o, "throughput_ns": {"median": 9.0, "min": 2.0 if o > 56 else 1.0},
                                          "latency_ns": {"median": 3.0 if o > 56 else 1.0, "min": 1.0}}
                                         for o in range(64)]}}}
    assert figures.line_penalty(raw, 8) == 2.0                # throughput: each offset's best run
    assert figures.line_penalty(raw, 8, "latency") == 3.0     # latency: the median
    assert figures.misaligned_penalty(raw, 8) == 1.0


def test_soa_from_is_where_every_larger_field_count_is_fast():
    raw = {"records": [{"level": "l2", "fields": k, "layout": lay, "op": "sum",
                        "ns_per_record": {"median": (s if lay == "aos" else 1.0)}}
                       for k, s in [(2, 1.6), (4, 1.2), (8, 2.0), (16, 4.0)] for lay in ("aos", "soa")]}
    assert figures.soa_from(raw, "l2") == 8


def test_levels_come_from_the_cache_facts_and_the_budget():
    host = json.loads((DATA / "host_h200_facts.json").read_text())
    host = host.get("host", host)
    big = plan.levels(host, plan.FULL, MemoryBudget(1 << 40, "plenty"))
    assert [lv.name for lv in big] == ["l1", "l2", "dram"]
    assert big[0].bytes == plan.cache_bytes(host, 1) // 2
    assert big[2].bytes >= plan.FULL.dram_factor * plan.last_level_bytes(host) - (1 << 20)
    small = plan.levels(host, plan.FULL, MemoryBudget(plan.flush_bytes(host) + (256 << 20), "a quarter"))
    assert small[2].basis == "a quarter" and small[2].bytes <= 256 << 20


def test_records_fit_the_level():
    assert plan.records(16 << 10, 16) * 16 * 8 <= 16 << 10
    assert plan.records(16 << 10, 2) % 64 == 0
