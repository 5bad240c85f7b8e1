"""`perfprobe streams` judgement on numbers recorded on an H200 host (tests/data/streams_h200*.json),
on copies changed in one place to reach each rule, and the pure arithmetic behind it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.engine.model import Verdict
from perfprobe.kernels import streams_kernels as sk
from perfprobe.probes.streams import figures, judge, rules
from perfprobe.probes.streams.plan import PRESETS, configurations, plan_size
from perfprobe.system.budget import MemoryBudget

DATA = Path(__file__).parent / "data"


def recording(name: str = "streams_h200.json") -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads((DATA / name).read_text())
    return data["raw"]["streams[0]"], data["host"]


def messages(result, verdict: Verdict) -> list[str]:
    return [f.message for f in result.findings if f.verdict is verdict]


@pytest.mark.parametrize("name", ["streams_h200.json", "streams_h200_quick.json"])
def test_recorded_h200_passes_with_a_best_configuration(name: str) -> None:
    raw, host = recording(name)
    result = judge(raw, host)
    assert result.verdict is Verdict.PASS
    assert result.metrics["best.speedup"].value > 2
    assert result.metrics["best.efficiency"].value >= rules.EFFICIENCY_MIN
    assert result.metrics["copy_engines"].value == 3
    assert any("best:" in m for m in messages(result, Verdict.PASS))


def test_a_wrong_result_is_an_error() -> None:
    raw, host = recording()
    raw["configs"][3].update(verified=False, mismatches=1234)
    result = judge(raw, host)
    assert result.verdict is Verdict.ERROR
    assert "1234 wrong elements" in messages(result, Verdict.ERROR)[0]


def test_best_configuration_ignores_unverified_ones() -> None:
    raw, _host = recording()
    fastest = min(raw["configs"], key=lambda c: c["ms"]["median"])
    fastest["verified"] = False
    assert figures.best_config(raw) is not fastest


def test_low_overlap_efficiency_warns() -> None:
    raw, host = recording()
    for config in raw["configs"]:
        config["ms"]["median"] *= 1.6
    assert any("under 80%" in m for m in messages(judge(raw, host), Verdict.WARN))


def test_single_copy_engine_warns() -> None:
    raw, host = recording()
    raw["device"]["async_engine_count"] = 1
    assert any("cannot overlap" in m for m in messages(judge(raw, host), Verdict.WARN))


def test_host_work_that_does_not_hide_warns() -> None:
    raw, host = recording()
    o = raw["host_overlap"]
    o["async_ms"] = o["sync_ms"] - 0.1
    assert any("hidden" in m for m in messages(judge(raw, host), Verdict.WARN))


def test_breakers_are_reported_with_their_cost() -> None:
    raw, host = recording()
    result = judge(raw, host)
    assert result.metrics["pageable.slowdown"].value > 2
    assert "legacy_default_stream.slowdown" in result.metrics


STAGES = st.fixed_dictionaries({k: st.floats(0.1, 100) for k in ("h2d", "kernel", "d2h")}).flatmap(
    lambda s: st.floats(max(s["h2d"], s["d2h"]), s["h2d"] + s["d2h"]).map(lambda both: {**s, "both": both}))
# both directions at once take at least as long as the slower one alone, at most as long as both in turn


@given(STAGES, st.integers(1, 256))
def test_ideal_lies_between_the_bottleneck_and_the_serial_sum(stages, chunks: int) -> None:
    ideal = figures.ideal_ms(stages, chunks)
    serial = stages["h2d"] + stages["kernel"] + stages["d2h"]
    assert ideal <= serial + 1e-9
    assert ideal >= min(serial, max(stages["h2d"], stages["kernel"], stages["d2h"])) - 1e-9


@given(STAGES, st.integers(1, 128))
def test_ideal_never_grows_with_more_chunks(stages, chunks: int) -> None:
    assert figures.ideal_ms(stages, chunks * 2) <= figures.ideal_ms(stages, chunks) + 1e-9


def test_ideal_of_one_chunk_is_the_serial_sum() -> None:
    stages = {"h2d": 19.4, "kernel": 19.4, "d2h": 19.4, "both": 22.0}
    assert figures.ideal_ms(stages, 1) == pytest.approx(58.2)
    # few chunks: the engines' ramp decides; many: both copies sharing the link do
    assert figures.ideal_ms(stages, 2) == pytest.approx(19.4 + 38.8 / 2)
    assert figures.ideal_ms(stages, 32) == pytest.approx(22.0 * 31 / 32 + 38.8 / 32)


def test_configurations_never_use_more_streams_than_chunks() -> None:
    for preset in (PRESETS.full, PRESETS.quick):
        pairs = configurations(preset)
        assert pairs and all(k <= n for n, k in pairs)
    assert len(configurations(PRESETS.quick)) < len(configurations(PRESETS.full))


def test_plan_size_caps_to_budgets() -> None:
    plenty = MemoryBudget(100 << 30, "plenty")
    assert plan_size(1 << 30, plenty, plenty) == (1 << 30, None)
    size, why = plan_size(1 << 30, MemoryBudget(1 << 30, "half of the device's free memory"), plenty)
    assert size == 512 << 20 and why == "half of the device's free memory"  # two device buffers
    size, why = plan_size(1 << 30, plenty, MemoryBudget(1 << 30, "a quarter of NUMA node 0's free memory"))
    assert size == (1 << 30) // 5 // (1 << 20) * (1 << 20) and why == "a quarter of NUMA node 0's free memory"


@pytest.mark.parametrize("iters", [1, 7, 300, 1500])
def test_closed_form_reference_matches_the_kernels_loop(iters: int) -> None:
    """The host reference equals the kernel's v <- fma(v, a, b) loop (emulated, fma rounding once)."""
    x = np.random.default_rng().random(4096, dtype=np.float32) * np.float32(2)
    a, b = sk.coefficients(iters)
    v = x.copy()
    for _ in range(iters):
        v = (v.astype(np.float64) * a + b).astype(np.float32)
    assert np.abs(v - sk.reference(x, iters)).max() <= sk.tolerance(iters)


@pytest.mark.parametrize("iters", [50, 1100, 5000])
def test_an_unprocessed_chunk_fails_the_reference_check(iters: int) -> None:
    x = np.random.default_rng().random(4096, dtype=np.float32) * np.float32(2)
    wrong = np.abs(x - sk.reference(x, iters)) > sk.tolerance(iters)
    assert wrong.mean() > 0.9


def _recorded(name: str) -> tuple[dict, dict]:
    data = json.loads((Path(__file__).parent / "data" / name).read_text())
    return data["raw"]["streams[0]"], data["host"]


def test_a_pipeline_that_beats_the_computed_ideal_reads_at_the_ideal_never_above_it() -> None:
    """Issue 12 item 3 (synthetic-from-real: the H200's "102% of the ideal")."""
    from perfprobe.probes.streams import judge as streams_judge

    raw, host = _recorded("streams_h200_quick_above_ideal_synthetic.json")
    assessment = streams_judge(raw, host)
    assert assessment.metrics["best.efficiency"].value == 1.0
    text = " ".join(f.message for f in assessment.findings)
    assert "at the ideal 6.0 ms (±2%)" in text and "102%" not in text
    percents = [int(cell[:-1]) for table in assessment.tables for row in table.rows for cell in row
                if isinstance(cell, str) and cell.endswith("%") and cell[:-1].isdigit()]
    assert percents and max(percents) <= 100


def test_a_shared_gpu_is_named_and_the_overlap_warn_held_back() -> None:
    """Real figures measured beside the planted GPU hog; NVML's reading added (synthetic-from-real)."""
    from perfprobe.probes.streams import judge as streams_judge

    raw, host = _recorded("streams_h200_quick_gpu_shared.json")
    assessment = streams_judge(raw, host)
    assert assessment.verdict is Verdict.PASS
    messages = [f.message for f in assessment.findings]
    assert any(m.startswith("held back (the GPU was shared: 1 other process on it (pid 6264); 100% "
                            "utilisation before this probe started): best: 4 chunks") for m in messages)
    del raw["gpu_activity"]
    assert streams_judge(raw, host).verdict is Verdict.WARN  # the same figures on an unshared GPU: a warn
