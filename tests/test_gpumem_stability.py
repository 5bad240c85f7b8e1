"""`perfprobe gpumem`'s figures carry their repeats, --quick times DRAM read at least five times, and
its physical relations (stability.py) hold on every recording and fire on a planted broken figure."""

from __future__ import annotations

from typing import Any

import pytest

from perfprobe.engine import stability
from perfprobe.probes.gpumem import PROBE, figures, judge
from perfprobe.probes.gpumem.plan import PRESETS
from probe_stability import DATA, recorded, set_median

RECORDINGS = sorted(path.name for path in DATA.glob("gpumem_*.json"))
TIMED = ("dram_gbs.read", "dram_gbs.write", "dram_gbs.copy", "d2d_memcpy_gbs", "dram_fraction_of_peak",
         "transpose_gbs.padded")


def recording(name: str = "gpumem_h200_quick.json") -> tuple[dict[str, Any], dict[str, Any]]:
    return recorded(name, "gpumem[0]")


def unstable(raw: dict[str, Any], host: dict[str, Any]) -> dict[str, str]:
    return stability.unstable(judge(raw, host).metrics, PROBE.relations, PROBE.spread_bound)


def test_there_are_recordings() -> None:
    assert len(RECORDINGS) >= 3


def test_timed_metrics_carry_the_repeats_recorded() -> None:
    raw, host = recording()
    metrics = judge(raw, host).metrics
    assert {name for name, m in metrics.items() if m.spread is not None} == set(TIMED)
    read = raw["dram"]["read"]["gbs"]
    spread = metrics["dram_gbs.read"].spread
    assert spread is not None and spread.n == read["repeats"] == 7
    assert (spread.median, spread.min, spread.max) == (read["median"], read["min"], read["max"])
    peak = figures.peak(raw)
    share = metrics["dram_fraction_of_peak"].spread  # the best kind's repeats (read, here) over the peak
    assert peak is not None and share is not None and share.max == pytest.approx(read["max"] / peak["gbs"])
    for plain in ("dram_peak_gbs", "buffer_bytes", "coalesce_slowdown.stride2", "warps_per_sm_to_saturate"):
        assert metrics[plain].spread is None


def test_quick_times_dram_read_at_least_five_times_after_a_warm_up() -> None:
    assert PRESETS.quick.warmup >= 1 and PRESETS.quick.repeats >= 5


@pytest.mark.parametrize("name", RECORDINGS)
def test_no_recording_breaks_a_relation(name: str) -> None:
    """The labelled slow GPU too: slow is not impossible."""
    assert unstable(*recording(name)) == {}


def test_dram_above_its_peak_is_unstable() -> None:
    raw, host = recording()
    set_median(raw["dram"]["read"]["gbs"], 5200.0)  # the H200's peak: 4814 GB/s
    found = unstable(raw, host)
    assert list(found) == ["dram_fraction_of_peak"] and "theoretical peak" in found["dram_fraction_of_peak"]


def test_a_wider_bank_conflict_costing_less_is_unstable() -> None:
    raw, host = recording()
    cases = {int(c["stride"]): c for c in raw["shared"]["cases"]}
    set_median(cases[16]["ms"], 2 * float(cases[32]["ms"]["median"]))
    found = unstable(raw, host)
    assert list(found) == ["bank_conflict_slowdown.16way"] and "cost less" in found["bank_conflict_slowdown.16way"]


def test_a_wider_stride_reading_faster_is_unstable() -> None:
    raw, host = recording()
    cases = {int(c["stride"]): c for c in raw["coalescing"]["cases"] if not int(c["offset"])}
    set_median(cases[4]["gbs"], float(cases[16]["gbs"]["median"]))
    found = unstable(raw, host)
    assert list(found) == ["coalesce_slowdown.stride4"] and "read faster" in found["coalesce_slowdown.stride4"]


def test_four_loads_in_flight_needing_more_warps_is_unstable() -> None:
    raw, host = recording()
    for point in raw["occupancy"]["series"]["unrolled4"][:-1]:
        set_median(point["gbs"], 100.0)  # only the last warp count saturates with four loads in flight
    found = unstable(raw, host)
    assert list(found) == ["warps_per_sm_to_saturate.ilp4"]


def test_repeats_that_disagree_are_unstable() -> None:
    raw, host = recording()
    read = raw["dram"]["read"]["gbs"]
    read.update(samples=[3000.0, 4400.0, 4423.0, 4430.0, 2500.0, 4500.0, 1800.0], mad=800.0)
    assert "repeats disagree" in unstable(raw, host)["dram_gbs.read"]
