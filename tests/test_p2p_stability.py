"""`perfprobe p2p`'s figures carry their repeats and its physical relation (stability.py) holds on the
labelled synthetic matrices and fires on a planted broken figure (no multi-GPU host was lent)."""

from __future__ import annotations

from typing import Any

import pytest

from perfprobe.engine import stability
from perfprobe.probes.p2p import PROBE, judge
from perfprobe.probes.p2p import figures as fig
from probe_stability import DATA, recorded

MATRICES = sorted(path.name for path in DATA.glob("p2p_synthetic_*.json"))


def load(name: str = "p2p_synthetic_nvlink_healthy_2gpu.json") -> tuple[dict[str, Any], dict[str, Any]]:
    return recorded(name, "p2p")


def unstable(raw: dict[str, Any], host: dict[str, Any]) -> dict[str, str]:
    return stability.unstable(judge(raw, host).metrics, PROBE.relations, PROBE.spread_bound)


def test_timed_metrics_carry_the_repeats() -> None:
    raw, host = load()
    metrics = judge(raw, host).metrics
    peer = raw["results"]["0.1"]["peer"]["sweep"][-1]["gbs"]
    spread = metrics["p2p_gbs.0.1"].spread
    assert spread is not None and spread.n == peer["repeats"]
    assert (spread.median, spread.min, spread.max) == (peer["median"], peer["min"], peer["max"])
    for name in ("p2p_bidir_gbs.0.1", "p2p_staged_gbs.0.1", "p2p_latency_us.0.1", "p2p_fraction.0.1"):
        assert metrics[name].spread is not None, name
    share = metrics["p2p_fraction.0.1"].spread
    rate = fig.expected(raw, 0, 1)["gbs"]
    assert share is not None and rate and share.max == pytest.approx(peer["max"] / rate)
    assert metrics["peer_access.0.1"].spread is None and metrics["copy_bytes"].spread is None


def test_directions_without_peer_access_have_no_figure_and_no_spread() -> None:
    raw, host = load("p2p_synthetic_pcie_no_peer_4gpu.json")
    metrics = judge(raw, host).metrics
    assert metrics["p2p_gbs.0.1"].value is None and metrics["p2p_gbs.0.1"].spread is None
    assert metrics["p2p_fraction.0.1"].value is None
    staged = metrics["p2p_latency_us.0.1"]  # the staged copy's latency where peer access is off
    assert staged.spread is not None and staged.value == round(raw["results"]["0.1"]["staged"]["latency_us"]["median"], 2)


@pytest.mark.parametrize("name", MATRICES)
def test_no_matrix_breaks_the_relation(name: str) -> None:
    assert unstable(*load(name)) == {}


def test_a_peer_copy_faster_than_its_links_is_unstable() -> None:
    raw, host = load()
    peer = raw["results"]["1.0"]["peer"]["sweep"][-1]["gbs"]
    peer.update(median=500.0, min=499.0, max=501.0)  # 18 NVLink 4 links: 450 GB/s per direction
    found = unstable(raw, host)
    assert list(found) == ["p2p_fraction.1.0"] and "links' raw rate" in found["p2p_fraction.1.0"]


def test_repeats_that_disagree_are_unstable() -> None:
    raw, host = load()
    raw["results"]["0.1"]["peer"]["sweep"][-1]["gbs"].update(samples=[200.0, 380.0, 376.0, 300.0, 390.0], mad=80.0)
    assert "repeats disagree" in unstable(raw, host)["p2p_gbs.0.1"]
