"""layout's timed figures carry their statistics, and its relations name impossible figures
(stability.py), on numbers recorded on real hosts (tests/data/layout_*.json)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from perfprobe.engine.model import Metric
from perfprobe.engine.stability import unstable
from perfprobe.probes import layout
from perfprobe.pure.stats import metric, summarize

DATA = Path(__file__).parent / "data"
RECORDINGS = sorted(DATA.glob("layout_*.json"))


def recorded(name: str) -> tuple[dict, dict[str, Metric]]:
    recording = json.loads((DATA / name).read_text())
    raw = recording["raw"]["layout"]
    return raw, dict(layout.judge(raw, recording["host"]).metrics)


def broken(metrics: dict[str, Metric]) -> dict[str, str]:
    return unstable(metrics, layout.PROBE.relations, layout.PROBE.spread_bound)


def planted(metrics: dict[str, Metric], name: str, value: float) -> dict[str, Metric]:
    return {**metrics, name: dataclasses.replace(metrics[name], value=value)}


def test_record_figures_carry_their_repeats():
    raw, metrics = recorded("layout_h200xeon_quick.json")
    point = next(p for p in raw["records"] if (p["level"], p["fields"], p["layout"], p["op"]) == ("dram", 16, "aos", "sum"))
    spread = metrics["ns_per_record.aos.sum.k16.dram"].spread
    assert spread.n == point["ns_per_record"]["repeats"] == 3
    assert (spread.min, spread.max) == (point["ns_per_record"]["min"], point["ns_per_record"]["max"])


def test_aligned_loads_carry_the_spread_over_their_offsets():
    raw, metrics = recorded("layout_kvm2c_full.json")
    aligned = metrics["load_ns.aligned.8B"]
    fastest = sorted(p["throughput_ns"]["min"] for p in raw["split"]["by_width"]["8"] if p["offset"] % 8 == 0)
    assert aligned.spread.n == len(fastest) == 8
    assert aligned.value == round(aligned.spread.median, 4) and aligned.spread.min == fastest[0]
    assert metrics["load_latency_ns.aligned.32B"].spread.n == 2    # 0 and 32: too few to judge their spread
    assert metrics["split_penalty.line.8B"].spread is None and metrics["working_set_bytes.l1"].spread is None


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_no_recording_breaks_a_relation(path):
    _, metrics = recorded(path.name)
    assert unstable(metrics, layout.PROBE.relations, float("inf")) == {}


def test_a_latency_below_the_load_throughput_is_named():
    _, metrics = recorded("layout_h200xeon_quick.json")
    found = broken(planted(metrics, "load_latency_ns.aligned.16B", 0.1))   # throughput: 0.19 ns a load
    assert list(found) == ["load_latency_ns.aligned.16B"] and "latency below" in found["load_latency_ns.aligned.16B"]


def test_one_field_summed_faster_from_records_than_from_its_array_is_named():
    _, metrics = recorded("layout_h200xeon_quick.json")
    soa = metrics["ns_per_record.soa.sum.k8.l2"].value
    assert broken(planted(metrics, "ns_per_record.aos.sum.k8.l2", soa * 0.95)) == {}   # within the allowance
    found = broken(planted(metrics, "ns_per_record.aos.sum.k8.l2", soa * 0.5))
    assert list(found) == ["ns_per_record.aos.sum.k8.l2"]


def test_the_spread_bound_passes_a_quiet_record_loop_and_names_a_disturbed_one():
    quiet = summarize([2.80374, 4.20246, 3.02839, 3.71213, 3.78814])   # SoA, every field, k8, L2: a quiet full run, H200 guest (MAD 13%)
    disturbed = summarize([2.1741, 9.333, 12.6464, 5.6, 3.0])   # other work on the core
    assert 0.10 < quiet["mad"] / quiet["median"] < layout.PROBE.spread_bound
    assert broken({"ns_per_record.soa.all.k8.l2": metric(quiet, "ns", 4)}) == {}
    assert "repeats disagree" in broken({"x": metric(disturbed, "ns", 4)})["x"]


def test_three_repeats_are_too_few_to_judge():
    """--quick's record loops: the MAD of three is the middle one's distance to its nearer neighbour."""
    assert broken({"x": metric(summarize([1.1196, 1.7261, 2.1941]), "ns", 4)}) == {}
