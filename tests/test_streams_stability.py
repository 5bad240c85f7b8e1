"""`perfprobe streams`' figures carry their repeats (the stages' too, since measure records them), and
its physical relations (stability.py) hold on every recording and fire on a planted broken figure."""

from __future__ import annotations

from typing import Any

import pytest

import fake_cuda
from fake_cuda import FakeRuntime, install, streams_kernels
from perfprobe.engine import stability
from perfprobe.probes.streams import PROBE, figures, judge, measure
from probe_stability import recorded, recordings_with

RECORDINGS = recordings_with("streams")


def recording(name: str = "streams_h200_quick.json", key: str = "streams[0]") -> tuple[dict[str, Any], dict[str, Any]]:
    return recorded(name, key)


def unstable(raw: dict[str, Any], host: dict[str, Any]) -> dict[str, str]:
    return stability.unstable(judge(raw, host).metrics, PROBE.relations, PROBE.spread_bound)


def test_there_are_recordings() -> None:
    assert len(RECORDINGS) >= 6


def test_pipeline_times_carry_their_repeats_and_derived_ratios_stay_plain() -> None:
    raw, host = recording()
    metrics = judge(raw, host).metrics
    best = figures.best_config(raw)
    spread = metrics["best.ms"].spread
    assert spread is not None and spread.n == best["ms"]["repeats"] == 3
    assert (spread.min, spread.max) == (best["ms"]["min"], best["ms"]["max"])
    assert metrics["serial.ms"].spread is not None
    for plain in ("best.efficiency", "best.speedup", "best.ideal_ms", "best.chunks", "pageable.slowdown",
                  "stage_ms.h2d", "both_directions_gbs"):  # the stages: no repeats in this older recording
        assert metrics[plain].spread is None, plain
    assert metrics["best.ideal_ms"].value == round(figures.ideal_ms(raw["stage_ms"], best["chunks"]), 3)


def test_measure_records_the_stages_repeats_and_the_metrics_carry_them(monkeypatch) -> None:
    runtime = FakeRuntime()
    install(monkeypatch, runtime, streams_kernels())
    raw = measure.measure(fake_cuda.context(4 << 20))
    assert set(raw["stage_stats"]) == set(raw["stage_ms"]) == {"h2d", "kernel", "d2h", "both"}
    for stage, stat in raw["stage_stats"].items():
        assert stat["repeats"] == 3 and len(stat["samples"]) == 3
        assert stat["median"] == raw["stage_ms"][stage]
    metrics = judge(raw, {"gpus": []}).metrics
    for stage in ("h2d", "kernel", "d2h", "both"):
        spread = metrics[f"stage_ms.{stage}"].spread
        assert spread is not None and spread.n == 3 and spread.mad is not None
    both = metrics["both_directions_gbs"]
    assert both.spread is not None and both.value == round(raw["both_gbs"], 2)
    assert both.spread.median == raw["both_gbs"] and both.spread.min <= both.spread.max


def test_the_both_directions_rate_turns_each_repeat_into_a_rate() -> None:
    raw, host = recording()
    nbytes = int(raw["elements"]) * 4
    ms = [5.20, 5.30, 5.50]
    raw["stage_ms"]["both"] = 5.30
    raw["both_gbs"] = 2 * nbytes / (5.30 * 1e-3) / 1e9
    raw["stage_stats"] = {"both": {"median": 5.30, "min": 5.20, "max": 5.50, "repeats": 3, "samples": ms}}
    spread = judge(raw, host).metrics["both_directions_gbs"].spread
    rates = [2 * nbytes / (t * 1e-3) / 1e9 for t in ms]
    assert spread is not None and spread.max == pytest.approx(rates[0]) and spread.min == pytest.approx(rates[2])
    assert spread.mad == pytest.approx(min(rates[0] - rates[1], rates[1] - rates[2]), rel=1e-5)
    raw["stage_stats"]["both"]["median"] = 5.31  # repeats of another median (a stale re-measurement): none
    assert judge(raw, host).metrics["both_directions_gbs"].spread is None


@pytest.mark.parametrize(("name", "key"), RECORDINGS)
def test_no_recording_breaks_a_relation(name: str, key: str) -> None:
    """The synthetic "102% of the ideal" case included: within the 5% noise the rule reads "at the ideal"."""
    assert unstable(*recording(name, key)) == {}


def test_a_pipeline_well_under_its_ideal_is_unstable() -> None:
    raw, host = recording("streams_h200_quick_above_ideal_synthetic.json")
    raw["stage_ms"]["both"] = 6.5  # the 32-chunk ideal rises to ~6.6 ms; the pipeline took 5.9
    found = unstable(raw, host)
    assert list(found) == ["best.ms"] and "faster than its ideal" in found["best.ms"]


def test_a_speed_up_beyond_three_stages_is_unstable() -> None:
    raw, host = recording()
    for key in ("median", "min", "max"):
        raw["serial"]["ms"][key] *= 1.5  # 2.7x becomes 4x
    found = unstable(raw, host)
    assert list(found) == ["best.speedup"] and "3 stages" in found["best.speedup"]


def test_both_directions_faster_than_one_is_unstable() -> None:
    raw, host = recording()
    raw["stage_ms"]["both"] = 0.8 * raw["stage_ms"]["h2d"]
    found = unstable(raw, host)
    assert list(found) == ["stage_ms.both"] and "one direction alone" in found["stage_ms.both"]


def test_pipeline_repeats_that_disagree_are_unstable() -> None:
    raw, host = recording()
    best = figures.best_config(raw)
    best["ms"].update(samples=[4.0, 4.5, 5.9, 7.5, 8.0], mad=1.6, repeats=5)
    assert "repeats disagree" in unstable(raw, host)["best.ms"]


def test_a_remeasured_overlap_keeps_the_stages_repeats_with_their_medians(monkeypatch) -> None:
    runtime = FakeRuntime()
    install(monkeypatch, runtime, streams_kernels())
    raw = measure.measure(fake_cuda.context(4 << 20))
    again = measure.remeasure(fake_cuda.context(4 << 20), raw, ("overlap",))
    for stage in ("h2d", "kernel", "d2h", "both"):
        assert again["stage_stats"][stage]["median"] == again["stage_ms"][stage]
        assert judge(again, {"gpus": []}).metrics[f"stage_ms.{stage}"].spread is not None
    assert again["stage_stats"]["both"] == raw["stage_stats"]["both"]  # not re-timed
    assert not runtime.live
