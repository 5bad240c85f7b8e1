"""`perfprobe gpumem` judgement on numbers recorded on an H200 (tests/data/gpumem_h200*.json), on
the labelled synthetic slow GPU, and on copies changed in one place to reach each rule. No GPU."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.engine.model import Verdict
from perfprobe.errors import UsageError
from perfprobe.probes.gpumem import figures, judge, plan, rules
from perfprobe.system.budget import MemoryBudget

DATA = Path(__file__).parent / "data"
REAL = sorted(DATA.glob("gpumem_h200*.json"))
SLOW = "slow GPU memory"


def recording(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads(path.read_text())
    return data["raw"]["gpumem[0]"], data["host"]


def real() -> tuple[dict[str, Any], dict[str, Any]]:
    return recording(DATA / "gpumem_h200.json")


def messages(raw: dict[str, Any], host: dict[str, Any], verdict: Verdict) -> list[str]:
    return [f.message for f in rules.findings(raw, host) if f.verdict is verdict]


def scale_dram(raw: dict[str, Any], factor: float) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    for kind in figures.DRAM_KINDS:
        out["dram"][kind]["gbs"]["median"] *= factor
    return out


def test_the_recordings_are_found() -> None:
    assert len(REAL) >= 2


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem)
def test_real_h200_runs_pass_and_the_slow_gpu_rule_stays_quiet(path: Path) -> None:
    raw, host = recording(path)
    result = judge(raw, host)
    assert result.verdict is Verdict.PASS
    assert not any(SLOW in f.message for f in result.findings)
    assert 0.85 <= result.metrics["dram_fraction_of_peak"].value <= 1.0
    assert result.metrics["dram_peak_gbs"].value == pytest.approx(4814.3, abs=0.1)
    assert result.metrics["d2d_memcpy_gbs"].value > 4000


def test_the_synthetic_slow_gpu_fires_the_slow_gpu_rule() -> None:
    data = json.loads((DATA / "gpumem_synthetic_slow_gpu.json").read_text())
    raw = data["raw"]["gpumem[0]"]
    assert raw["synthetic"].startswith("SYNTHETIC")
    result = judge(raw, data["host"])
    assert result.verdict is Verdict.WARN
    slow = [f for f in result.findings if SLOW in f.message]
    assert len(slow) == 1 and slow[0].verdict is Verdict.WARN
    assert "1593 MHz under load" in slow[0].message and "hardware thermal slowdown" in slow[0].message
    assert result.metrics["dram_fraction_of_peak"].value < rules.DRAM_FRACTION_MIN


def test_the_slow_gpu_warn_is_held_back_on_a_shared_gpu_but_not_for_its_own_process() -> None:
    """Another process on the GPU takes bandwidth too: the slow-memory warn becomes a note naming it
    (as pinned's and streams' timing warns); under a PID namespace NVML's one listed pid is this
    process, not another, and the warn stands."""
    raw, host = real()
    slow = scale_dram(raw, 0.5)
    slow["activity_before"] = {**raw["activity_before"], "processes": [{"pid": 519}, {"pid": 6264}]}
    assert not any(SLOW in m for m in messages(slow, host, Verdict.WARN))
    assert any(m.startswith("held back (the GPU was shared: 1 other process on it (pid 6264)") and SLOW in m
               for m in messages(slow, host, Verdict.PASS))
    slow["activity_before"] = {**raw["activity_before"], "processes": [{"pid": 91234}], "own_listed": False}
    assert any(SLOW in m and "other process" not in m for m in messages(slow, host, Verdict.WARN))


@pytest.mark.parametrize("share, verdict", [(0.69, Verdict.WARN), (0.71, Verdict.PASS)])
def test_the_threshold_sits_at_70_percent_of_the_peak(share: float, verdict: Verdict) -> None:
    raw, host = real()
    peak = figures.peak(raw)
    assert peak is not None
    raw = scale_dram(raw, share * peak["gbs"] / figures.best_dram(raw)[1])
    assert [f.verdict for f in rules.rule_dram_bandwidth(raw, host)] == [verdict]


def test_the_peak_is_nvml_clock_times_two_times_the_bus_width() -> None:
    raw, _ = real()
    peak = figures.peak(raw)
    assert peak is not None and peak["gbs"] == pytest.approx(3201e6 * 2 * 6016 / 8 / 1e9)
    assert peak["source"].startswith("NVML")


def test_without_nvml_the_peak_comes_from_cuda_and_without_either_it_is_not_judged() -> None:
    raw, host = real()
    raw = copy.deepcopy(raw)
    raw["memory_interface"]["nvml"] = {"bus_width_bits": None, "mem_clock_max_mhz": None}
    peak = figures.peak(raw)
    assert peak is not None and peak["source"].startswith("CUDA") and peak["gbs"] == pytest.approx(4814.3, abs=0.1)
    raw["memory_interface"]["cuda"] = {"bus_width_bits": None, "memory_clock_khz": None}
    found = rules.rule_dram_bandwidth(scale_dram(raw, 0.1), host)
    assert [f.verdict for f in found] == [Verdict.PASS] and "not judged" in found[0].message
    assert judge(raw, host).metrics["dram_fraction_of_peak"].value is None


@pytest.mark.parametrize("reasons, fires", [(0x40, True), (0x80, True), (0x8, True), (0x4, False), (0x1, False),
                                            (0x0, False)])
def test_throttle_reasons_warn_but_an_idle_gpu_does_not(reasons: int, fires: bool) -> None:
    """Hardware slowdown, thermal and power brake warn; a GPU at its software power cap (0x4, a
    healthy GPU under full load) or idle does not."""
    raw, host = real()
    raw = copy.deepcopy(raw)
    raw["state_under_load"]["clock_event_reasons"] = reasons
    assert bool(rules.rule_throttle(raw, host)) is fires


def test_a_wrong_result_is_a_warning() -> None:
    raw, host = real()
    assert rules.rule_results(raw, host) == []
    raw = copy.deepcopy(raw)
    raw["transpose"]["padded"]["verified"] = False
    assert [f.verdict for f in rules.rule_results(raw, host)] == [Verdict.WARN]


def test_properties_of_every_gpu_are_passes_with_their_numbers_and_advice() -> None:
    raw, host = real()
    expected = {rules.rule_coalescing: "consecutive threads", rules.rule_banks: "33 columns",
                rules.rule_occupancy: "keep at least 48 warps", rules.rule_tiling: "faster here",
                rules.rule_divergence: "threadIdx.x / 32"}
    for rule, advice in expected.items():
        found = rule(raw, host)
        assert [f.verdict for f in found] == [Verdict.PASS] and advice in found[0].advice


def test_the_metrics_have_the_documented_names_and_units() -> None:
    raw, host = real()
    metrics = judge(raw, host).metrics
    units = {"dram_gbs.read": "GB/s", "dram_gbs.write": "GB/s", "dram_gbs.copy": "GB/s", "d2d_memcpy_gbs": "GB/s",
             "dram_fraction_of_peak": "ratio", "coalesce_slowdown.stride2": "x", "coalesce_slowdown.stride32": "x",
             "bank_conflict_slowdown.32way": "x", "padded_speedup": "x", "warps_per_sm_to_saturate": "warps",
             "transpose_tiled_speedup": "x", "divergence_slowdown": "x"}
    assert {k: metrics[k].unit for k in units} == units
    assert 1.8 <= metrics["coalesce_slowdown.stride2"].value <= 2.2
    assert metrics["bank_conflict_slowdown.32way"].value > 20 and metrics["padded_speedup"].value > 20
    assert 1.8 <= metrics["divergence_slowdown"].value <= 2.2 and metrics["transpose_tiled_speedup"].value > 3


def test_every_rule_is_in_rules_and_returns_a_list() -> None:
    raw, host = real()
    named = [name for name in dir(rules) if name.startswith("rule_")]
    assert sorted(r.__name__ for r in rules.RULES) == sorted(named)
    assert all(isinstance(rule(raw, host), list) for rule in rules.RULES)


def test_a_capped_or_small_buffer_is_said() -> None:
    raw, host = real()
    assert rules.rule_budget(raw, host) == []
    raw = copy.deepcopy(raw)
    raw["budget"].update(capped_by="half of the device's free memory", size_bytes=64 << 20)
    raw["dram"]["buffer_bytes"] = 64 << 20
    assert len(rules.rule_budget(raw, host)) == 2


@given(st.lists(st.floats(min_value=1.0, max_value=5000.0), min_size=1, max_size=10))
def test_warps_to_saturate_is_the_first_point_near_the_best(values: list[float]) -> None:
    raw = {"occupancy": {"series": {"serial": [{"warps_per_sm": i + 1, "gbs": {"median": v}}
                                               for i, v in enumerate(values)]}}}
    warps, gbs, best = figures.warps_to_saturate(raw)
    assert best == max(values) and gbs >= plan.SATURATED * best
    assert all(v < plan.SATURATED * best for v in values[:warps - 1])


def test_plan_caps_two_buffers_within_the_budget_and_shapes_the_launches() -> None:
    assert plan.plan_size(1 << 30, MemoryBudget(4 << 30, "half")) == (1 << 30, None)
    assert plan.plan_size(1 << 30, MemoryBudget(1 << 30, "half")) == (512 << 20, "half")
    assert [plan.occupancy_shape(w) for w in (1, 32, 48, 64)] == [(32, 1), (1024, 1), (768, 2), (1024, 2)]
    assert plan.transpose_n(1 << 30) == 8192 and plan.transpose_n(64 << 20) == 4096
    assert plan.stride_count(1024, 32, 0) == 32 and plan.stride_count(1024, 1, 1) == 1023
    assert plan.grid_blocks(132, 2048) == 132 * 8
    assert plan.occupancy_warps(1536) == [1, 2, 4, 8, 12, 16, 24, 32, 48]


def test_check_knobs_refuses_a_buffer_under_16m() -> None:
    plan.check_knobs(RunConfig(options=Knobs(size=16 << 20)), {})
    with pytest.raises(UsageError):
        plan.check_knobs(RunConfig(options=Knobs(size=1 << 20)), {})


def test_the_activity_is_read_under_pinned_s_and_streams_name_and_the_old_one() -> None:
    """measure records gpu_activity.before, as pinned and streams do; recordings made before keep it
    as activity_before, and both hold the slow-memory warn back the same way."""
    raw, host = real()
    slow = scale_dram(raw, 0.5)
    shared = {**raw["activity_before"], "processes": [{"pid": 519}, {"pid": 6264}]}
    old = {**slow, "activity_before": shared}
    new = {k: v for k, v in slow.items() if k != "activity_before"} | {"gpu_activity": {"before": shared}}
    for numbers in (old, new):
        assert not any(SLOW in m for m in messages(numbers, host, Verdict.WARN))
        assert any(m.startswith("held back (the GPU was shared") for m in messages(numbers, host, Verdict.PASS))
