"""The stability re-measurement times again only what the unstable figures rest on where the probe
says what each of its re-measure keys times (Probe.remeasures), else the whole probe (fake probes,
no kernels); and the cache probe's keys cover what its witnesses break."""

from __future__ import annotations

import sys
import types
from typing import Any, Mapping

import pytest

from perfprobe.engine import runner, stability
from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Assessment, Metric, Spread
from perfprobe.engine.probe import Probe, ProbeContext
from perfprobe.engine.progress import null_progress
from perfprobe.probes import cache


def spread(value: float, mad: float) -> Spread:
    return Spread(5, value, value - 2 * mad, value + 2 * mad, mad, 2 * mad, (value,) * 5)


def judge(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Assessment:
    """Two figures whose repeats' MAD the raw numbers set: over 10% of the median is unstable."""
    return Assessment(summary="", metrics={
        "near.fast": Metric(10.0, "ns", spread(10.0, raw["near_mad"])),
        "far.slow": Metric(100.0, "ns", spread(100.0, raw["far_mad"]))})


class FakeMeasure:
    def __init__(self) -> None:
        self.asked: list[tuple[str, ...]] = []

    def remeasure(self, ctx: ProbeContext, raw: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
        self.asked.append(keys)
        return {**raw, "near_mad": 0.1}


def _run(monkeypatch: Any, first: dict[str, Any], remeasures: Mapping[str, tuple[str, ...]] | None) -> tuple[Any, FakeMeasure, list[int]]:
    fake = FakeMeasure()
    module = types.ModuleType("fake_stability_measure")
    module.remeasure = fake.remeasure  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_stability_measure", module)
    whole: list[int] = []

    def measure(probe: Probe, ctx: ProbeContext) -> dict[str, Any]:
        whole.append(1)
        return dict(first) if len(whole) == 1 else {"near_mad": 0.1, "far_mad": 0.1}

    monkeypatch.setattr(runner, "_measure", measure)
    probe = Probe(name="fake", title="fake", judge=judge, measure_module="fake_stability_measure",
                  spread_bound=0.1, remeasures=remeasures)
    result, raw = runner.run_one(probe, ProbeContext(config=RunConfig(), host={}, progress=null_progress), None)
    return raw, fake, whole


def test_covered_unstable_figures_are_remeasured_alone(monkeypatch: Any) -> None:
    raw, fake, whole = _run(monkeypatch, {"near_mad": 3.0, "far_mad": 1.0}, {"near": ("near.*",), "far": ("far.*",)})
    assert fake.asked == [("near",)] and whole == [1]          # the first measurement only, then the key
    assert raw[stability.SECOND_RAW] == {"near_mad": 0.1, "far_mad": 1.0}   # the rest kept from the first


def test_an_uncovered_figure_remeasures_the_whole_probe(monkeypatch: Any) -> None:
    raw, fake, whole = _run(monkeypatch, {"near_mad": 3.0, "far_mad": 50.0}, {"near": ("near.*",)})
    assert fake.asked == [] and whole == [1, 1]
    raw, fake, whole = _run(monkeypatch, {"near_mad": 3.0, "far_mad": 1.0}, None)   # no keys declared
    assert fake.asked == [] and whole == [1, 1]


@pytest.mark.parametrize("figures,keys", [
    (["latency_ns.L1", "read_gbs.L2.all"], ("core",)),
    (["read_gbs.DRAM.all"], ("bandwidth",)),
    (["latency_ns.L1", "triad_gbs.DRAM.1t"], ("core", "bandwidth")),
    (["latency_ns.L3"], None),            # timed by the L3 trials: the whole probe
    (["read_gbs.DRAM.all", "dram_read_gbs.t2"], None),   # the sweep: the whole probe
])
def test_the_cache_probes_keys(figures: list[str], keys: tuple[str, ...] | None) -> None:
    assert cache.PROBE.remeasure_keys(figures) == keys


def test_the_l1_witness_breaks_only_figures_the_core_key_times_again() -> None:
    """Every figure StandsWhile(l1_held) can mark is in RE_MEASURES["core"]: a run whose L1 lost its
    speed re-measures its core's caches, not DRAM."""
    witness = next(r for r in cache.RELATIONS if isinstance(r, stability.StandsWhile) and r.witness == "l1_held")
    assert cache.PROBE.remeasure_keys(witness.patterns) == ("core",)


def test_core_and_bandwidth_together_keep_what_each_timed_again(monkeypatch: Any) -> None:
    """A run with an unstable L1 figure and an unstable DRAM read re-measures both keys: the DRAM
    step must not put the first measurement's L1/L2 bandwidth back over the fresh one."""
    import contextlib
    import json
    from pathlib import Path

    from perfprobe.probes.cache import measure

    data = json.loads((Path(__file__).parent / "data" / "cache_epyc2c_quick_shared_llc.json").read_text())
    raw, host = data["raw"]["cache"], data["host"]
    monkeypatch.setattr(measure, "core_figures", lambda ctx, k, plan, timing, huge, held, cpus: {
        "curve": {**held["curve"], "fresh": True},
        "bandwidth": {**held["bandwidth"], "L1": "fresh L1", "L2": "fresh L2"}})
    monkeypatch.setattr(measure.tr, "held_together", lambda *a, **k: contextlib.nullcontext((None, [])))
    monkeypatch.setattr(measure.tr, "read_trials", lambda *a, **k: "fresh DRAM read")
    monkeypatch.setattr(measure.m, "triad_rates", lambda *a, **k: "fresh DRAM triad")
    monkeypatch.setattr(measure.m, "read_rates", lambda *a, **k: "fresh DRAM read")
    monkeypatch.setattr(measure, "first_toucher", lambda *a, **k: None)
    ctx = ProbeContext(config=RunConfig(quick=True), host=host, progress=null_progress)
    out = measure.remeasure(ctx, raw, ("core", "bandwidth"))
    assert out["curve"]["fresh"] is True
    assert out["bandwidth"]["L1"] == "fresh L1" and out["bandwidth"]["L2"] == "fresh L2"
    assert out["bandwidth"]["DRAM"] == {"read_gbs": "fresh DRAM read", "triad_gbs": "fresh DRAM triad"}
