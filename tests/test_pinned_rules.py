"""`perfprobe pinned` judgement on numbers recorded on an H200 host (tests/data/pinned_h200*.json),
and on copies of them changed in one place to reach each rule. No GPU involved."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from perfprobe.engine.model import Verdict
from perfprobe.probes.pinned import figures, judge, rules
from perfprobe.probes.pinned.plan import PRESETS, plan_top, repeats_for, sweep_sizes
from perfprobe.system.budget import MemoryBudget

DATA = Path(__file__).parent / "data"


def recording(name: str = "pinned_h200.json") -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads((DATA / name).read_text())
    return data["raw"]["pinned[0]"], data["host"]


def verdicts(assessment) -> list[tuple[Verdict, str]]:
    return [(f.verdict, f.message) for f in assessment.findings]


@pytest.mark.parametrize("name", ["pinned_h200.json", "pinned_h200_quick.json", "pinned_h200_run1.json"])
def test_recorded_h200_passes_with_figures(name: str) -> None:
    raw, host = recording(name)
    result = judge(raw, host)
    assert result.verdict is Verdict.PASS
    assert result.metrics["link.rate_gbs"].value == pytest.approx(63.02, abs=0.01)
    assert 0.70 <= result.metrics["link.fraction_d2h"].value <= 1.0
    assert result.metrics["pinned.h2d_gbs"].value > result.metrics["pageable.h2d_gbs"].value
    assert "Gen5 x16" in result.summary
    assert len(result.tables) == 5 and result.key_figure


def test_trained_down_link_warns() -> None:
    raw, host = recording()
    raw["state_under_load"]["link"]["gen_current"] = 4
    result = judge(raw, host)
    assert any(v is Verdict.WARN and "trained down" in m for v, m in verdicts(result))


def test_idle_low_power_link_is_reported_not_judged() -> None:
    raw, host = recording()
    raw["state_before"]["link"]["gen_current"] = 1
    result = judge(raw, host)
    assert result.verdict is Verdict.PASS
    assert any("low-power" in m for _, m in verdicts(result))


def test_slow_pinned_copies_warn_against_the_link() -> None:
    raw, host = recording()
    for direction in ("h2d", "d2h"):
        for entry in raw["pinned"][direction]:
            entry["gbs"]["median"] *= 0.6
    result = judge(raw, host)
    assert any(v is Verdict.WARN and "under 70%" in m for v, m in verdicts(result))


def test_pinned_buffer_on_the_far_node_warns() -> None:
    raw, host = recording()
    raw["numa"]["gpu_node"] = 0
    raw["numa"]["pinned_pages"]["nodes"] = {"1": 64}
    result = judge(raw, host)
    assert any(v is Verdict.WARN and "node 1" in m and "node 0" in m for v, m in verdicts(result))


def test_unknown_page_nodes_fall_back_to_pageable_then_say_nothing() -> None:
    raw, _host = recording()
    raw["numa"]["pinned_pages"] = {"nodes": {"errno14": 64}, "source": "move_pages"}
    assert figures.buffer_node_of(raw["numa"]) == (0, "pageable")
    raw["numa"]["pageable_pages"] = {"nodes": {}, "source": "unknown"}
    assert rules.rule_numa(raw, {}) == []


def test_unknown_link_is_not_judged() -> None:
    raw, _host = recording()
    for key in ("state_before", "state_under_load", "state_after"):
        raw[key]["link"] = {k: None for k in raw[key]["link"]}
    raw["sysfs_link"] = raw["sysfs_link_under_load"] = {}
    result = judge(raw, {"gpus": []})
    assert "link.rate_gbs" not in result.metrics
    assert any("unknown" in m for _, m in verdicts(result))


def test_thermal_slowdown_warns() -> None:
    raw, host = recording()
    raw["state_after"]["clock_event_reasons"] = 0x40
    assert any(v is Verdict.WARN and "slowed" in m for v, m in verdicts(judge(raw, host)))


def test_pageable_advice_carries_the_pinning_cost() -> None:
    raw, host = recording()
    finding = next(f for f in judge(raw, host).findings if "pageable copies" in f.message)
    assert "ms per GiB" in finding.advice and "pays after" in finding.advice


def test_judge_does_not_change_its_input() -> None:
    raw, host = recording()
    before = copy.deepcopy(raw)
    judge(raw, host)
    assert raw == before


def test_sweep_sizes_end_at_the_top() -> None:
    assert sweep_sizes(1 << 30, PRESETS.full) == [64 << 10 << (2 * i) for i in range(8)]
    assert sweep_sizes(256 << 20, PRESETS.quick) == [64 << 10, 1 << 20, 16 << 20, 256 << 20]
    assert sweep_sizes(100 << 20, PRESETS.full)[-1] == 100 << 20


def _budget(gib: int, basis: str) -> MemoryBudget:
    return MemoryBudget(gib << 30, basis)


def test_plan_top_respects_both_budgets() -> None:
    device, host = _budget(100, "half of the device's free memory"), _budget(100, "a quarter of the host's")
    assert plan_top(1 << 30, PRESETS.full, device, host) == (1 << 30, None)
    assert plan_top(1 << 30, PRESETS.quick, device, host) == (256 << 20, None)
    top, why = plan_top(1 << 30, PRESETS.full, _budget(1, "half of the device's free memory"), host)
    assert top == 512 << 20 and why == "half of the device's free memory"  # two device buffers
    top, why = plan_top(1 << 30, PRESETS.full, device, _budget(1, "a quarter of NUMA node 1's free memory"))
    assert top == 256 << 20 and why == "a quarter of NUMA node 1's free memory"  # four host buffers


def test_a_capped_top_is_said_with_its_basis() -> None:
    raw, host = recording()
    raw["budget"] = {"requested_bytes": 1 << 30, "top_bytes": 256 << 20,
                     "capped_by": "a quarter of NUMA node 1's free memory"}
    assert any(m == "largest copy capped at 256 MiB (asked 1 GiB) by a quarter of NUMA node 1's free memory"
               for _, m in verdicts(judge(raw, host)))


def test_repeats_are_fewer_for_large_copies() -> None:
    assert repeats_for(1 << 30, PRESETS.full)[1] < repeats_for(1 << 20, PRESETS.full)[1]
    assert repeats_for(1 << 30, PRESETS.quick)[1] <= repeats_for(1 << 30, PRESETS.full)[1]


def test_link_known_only_under_load_is_still_judged() -> None:
    raw, _host = recording()
    for key in ("state_before", "state_after"):
        raw[key]["link"] = {k: None for k in raw[key]["link"]}
    raw["state_under_load"]["link"].update(gen_max=None, width_max=None)
    raw["sysfs_link"] = raw["sysfs_link_under_load"] = {}
    result = judge(raw, {"gpus": []})
    assert "link.rate_gbs" in result.metrics
    assert not any("unknown" in m for _, m in verdicts(result))


def test_a_shared_gpu_is_named_and_a_bandwidth_warn_held_back() -> None:
    """Real figures measured beside the planted GPU hog; NVML's reading added (synthetic-from-real)."""
    import copy
    import json
    from pathlib import Path

    from perfprobe.engine.model import Verdict
    from perfprobe.probes.pinned import judge as pinned_judge

    data = json.loads((Path(__file__).parent / "data" / "pinned_h200_quick_gpu_shared.json").read_text())
    raw, host = data["raw"]["pinned[0]"], data["host"]
    found = pinned_judge(raw, host).findings
    assert any(f.message.startswith("the GPU was shared while measuring: 1 other process on it (pid 6264)")
               for f in found)
    slow = copy.deepcopy(raw)
    for direction in ("h2d", "d2h"):
        slow["pinned"][direction][-1]["gbs"]["median"] /= 3  # under 70% of the link
    assert pinned_judge(slow, host).verdict is Verdict.PASS
    assert any(f.message.startswith("held back (the GPU was shared") for f in pinned_judge(slow, host).findings)
    del slow["gpu_activity"]
    assert pinned_judge(slow, host).verdict is Verdict.WARN
