"""numa's matrices carry each pair's repeats, and its relation (a node's own memory is not slower to
reach than another's) names both figures of a pair that contradict each other (stability.py)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import probe_stability as shared
from perfprobe.engine.model import Metric
from perfprobe.probes import numa
from perfprobe.pure.stats import metric, summarize

DATA = Path(__file__).parent / "data"
RECORDINGS = sorted(DATA.glob("numa_*.json"))


judged = partial(shared.judged, numa)
broken = partial(shared.broken, numa)

planted = shared.planted


def test_latency_and_bandwidth_carry_each_pairs_repeats():
    metrics = judged("numa_two_socket_healthy.json")
    latency, bandwidth = metrics["latency_ns.0.1"], metrics["read_gbs.1.1"]
    assert latency.spread.n == 7 and latency.spread.median == pytest.approx(139.8)
    assert bandwidth.spread.n == 5 and bandwidth.spread.min < 62.0 < bandwidth.spread.max
    assert metrics["remote_over_local_latency.max"].spread is None and metrics["numa_nodes"].spread is None


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_no_recording_breaks_the_relation(path):
    assert broken(judged(path.name)) == {}


def test_local_latency_above_remote_names_both_figures():
    found = broken(planted(judged("numa_two_socket_healthy.json"), "latency_ns.1.1", 200.0))   # remote 141.2
    assert set(found) == {"latency_ns.1.1", "latency_ns.1.0"}
    assert all("local latency above remote" in why for why in found.values())


def test_a_remote_pair_read_faster_than_local_is_named_too():
    """A remote working set capped to fit a nearly full node hits cache: its latency reads low."""
    found = broken(planted(judged("numa_two_socket_healthy.json"), "latency_ns.0.1", 40.0))   # local 89.4
    assert set(found) == {"latency_ns.0.0", "latency_ns.0.1"}


def test_local_and_remote_within_ten_percent_do_not_contradict():
    """Sub-NUMA clusters and emulated nodes put local and remote within a few percent."""
    assert broken(planted(judged("numa_two_socket_healthy.json"), "latency_ns.0.0", 139.8 * 1.09)) == {}


def test_node_ids_beyond_the_first_pair_are_covered():
    metrics = {"latency_ns.7.7": Metric(150.0, "ns"), "latency_ns.7.3": Metric(100.0, "ns")}
    assert set(broken(metrics)) == {"latency_ns.7.7", "latency_ns.7.3"}


def test_bandwidth_has_no_relation():
    """A memory-only node (HBM in flat mode) reads faster than local DDR on a healthy host."""
    metrics = judged("numa_two_socket_healthy.json")
    assert broken(planted(metrics, "read_gbs.0.1", 3 * metrics["read_gbs.0.0"].value)) == {}


def test_repeats_that_disagree_beyond_the_default_bound_are_named():
    assert numa.PROBE.spread_bound == 0.10
    noisy = metric(summarize([340.0, 380.0, 438.7, 500.0, 642.0, 610.0, 300.0]), "ns", 1)   # a full run's 7
    assert "repeats disagree" in broken({"latency_ns.0.0": noisy})["latency_ns.0.0"]
    quiet = metric(summarize([89.0, 89.4, 90.1, 91.0, 88.7, 89.9, 95.0]), "ns", 1)
    assert broken({"latency_ns.0.0": quiet}) == {}
