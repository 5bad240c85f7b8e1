"""`perfprobe pinned`'s figures carry their repeats, and its physical relations (stability.py) hold on
every recording and fire on a planted broken figure. No GPU involved."""

from __future__ import annotations

from typing import Any

import pytest

from perfprobe.engine import stability
from perfprobe.probes.pinned import PROBE, judge
from perfprobe.probes.pinned.plan import LARGE, MIN_SIZE, PRESETS, QUICK_MAX, repeats_for
from probe_stability import recorded, recordings_with
from probe_stability import set_median as plant

RECORDINGS = recordings_with("pinned")
TIMED = ("pinned.h2d_gbs", "pinned.d2h_gbs", "pinned.bidir_gbs", "pageable.h2d_gbs", "pageable.d2h_gbs",
         "link.fraction_h2d", "link.fraction_d2h", "link.fraction_bidir", "pinning.alloc_ms_per_gib",
         "pinning.register_ms_per_gib")


def recording(name: str = "pinned_h200_quick.json", key: str = "pinned[0]") -> tuple[dict[str, Any], dict[str, Any]]:
    return recorded(name, key)


def unstable(raw: dict[str, Any], host: dict[str, Any]) -> dict[str, str]:
    return stability.unstable(judge(raw, host).metrics, PROBE.relations, PROBE.spread_bound)


def test_there_are_recordings() -> None:
    assert len(RECORDINGS) >= 6


def test_timed_metrics_carry_the_repeats_recorded() -> None:
    raw, host = recording()
    metrics = judge(raw, host).metrics
    assert {name for name, m in metrics.items() if m.spread is not None} == set(TIMED)
    h2d = raw["pinned"]["h2d"][-1]["gbs"]
    spread = metrics["pinned.h2d_gbs"].spread
    assert spread is not None and spread.n == h2d["repeats"] == 5
    assert (spread.median, spread.min, spread.max) == (h2d["median"], h2d["min"], h2d["max"])
    assert metrics["pinned.h2d_gbs"].value == round(h2d["median"], 2)
    fraction = metrics["link.fraction_h2d"].spread  # the same repeats over the link's rate
    assert fraction is not None and fraction.max == pytest.approx(h2d["max"] / metrics["link.rate_gbs"].value,
                                                                  rel=1e-3)
    for plain in ("copy_bytes", "link.rate_gbs", "enqueue.pinned_h2d_host_over_device"):
        assert metrics[plain].spread is None


def test_samples_recorded_give_the_mad() -> None:
    raw, host = recording()
    raw["pinned"]["h2d"][-1]["gbs"].update(samples=[55.0, 55.5, 55.4, 55.6, 55.5], mad=0.1)
    spread = judge(raw, host).metrics["pinned.h2d_gbs"].spread
    assert spread is not None and spread.samples == (55.0, 55.5, 55.4, 55.6, 55.5)
    assert spread.relative_mad == pytest.approx(0.1 / 55.497, rel=1e-3)


@pytest.mark.parametrize(("name", "key"), RECORDINGS)
def test_no_recording_breaks_a_relation(name: str, key: str) -> None:
    assert unstable(*recording(name, key)) == {}


def test_a_copy_faster_than_the_link_is_unstable() -> None:
    raw, host = recording()
    plant(raw["pinned"]["h2d"][-1]["gbs"], 70.0)  # the link: Gen5 x16, 63.0 GB/s per direction
    plant(raw["pinned"]["bidir"][-1]["gbs"], 130.0)
    found = unstable(raw, host)
    assert set(found) == {"link.fraction_h2d", "link.fraction_bidir"}
    assert "PCIe link's raw rate" in found["link.fraction_h2d"]


def test_pinned_slower_than_pageable_is_unstable() -> None:
    raw, host = recording()
    plant(raw["pageable"]["d2h"][-1]["gbs"], 65.0)  # pinned D2H: 55.4 GB/s, under 0.9 x 65
    found = unstable(raw, host)
    assert list(found) == ["pinned.d2h_gbs"] and "slower than pageable" in found["pinned.d2h_gbs"]
    plant(raw["pageable"]["d2h"][-1]["gbs"], 58.0)  # within the 10% two measurements may differ by
    assert unstable(raw, host) == {}


def test_repeats_that_disagree_are_unstable() -> None:
    raw, host = recording()
    raw["pinned"]["h2d"][-1]["gbs"].update(samples=[40.0, 55.5, 70.0, 45.0, 62.0], mad=7.5)
    assert "repeats disagree" in unstable(raw, host)["pinned.h2d_gbs"]


@pytest.mark.parametrize("top", [MIN_SIZE, LARGE - 4096, LARGE, QUICK_MAX])
def test_quick_times_the_key_figure_at_least_five_times_after_a_warm_up(top: int) -> None:
    """pinned.h2d_gbs (the largest copy, whatever the budgets left) has a spread to judge in --quick."""
    warm, reps = repeats_for(top, PRESETS.quick)
    assert warm >= 1 and reps >= 5
