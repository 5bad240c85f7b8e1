"""alloc's timed figures carry their statistics (the pool's bimodal ones excepted), and its
relations name impossible figures (stability.py), on recorded numbers (tests/data/alloc_*.json)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import probe_stability as shared
from perfprobe.engine.stability import unstable
from perfprobe.probes import alloc
from perfprobe.pure.stats import metric, summarize

DATA = Path(__file__).parent / "data"
RECORDINGS = sorted(DATA.glob("alloc_*.json"))


judged = partial(shared.judged, alloc)
broken = partial(shared.broken, alloc)

planted = shared.planted


def test_timed_figures_carry_their_repeats():
    assert judged("alloc_kvm2c_full.json")["allocator.jemalloc.malloc_ns.1t.64B"].spread.n == 5
    metrics = judged("alloc_h200xeon_quiet_full.json")
    for name in ("malloc_ns.1t.64B", "malloc_ns.all.mixed", "first_touch_ns.4K", "first_touch_ns.2M", "reuse_ns.4K", "first_touch_ns.all.4K",
                 "mlock_ns.4K", "memcpy_gbs.DRAM", "copy_ms.64M", "move_ns"):
        spread = metrics[name].spread
        assert spread is not None and spread.n >= 3, name
        assert spread.min <= metrics[name].value <= spread.max, name


def test_the_pool_ratios_and_counts_stay_bare():
    metrics = judged("alloc_h200xeon_quiet_full.json")
    for name in ("pool_ns.1t.64B", "pool_ns.all.mixed", "pool_speedup.1t.64B", "malloc_contention.64B",
                 "huge_page_fraction", "threads"):
        assert metrics[name].spread is None, name


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_no_recording_breaks_a_relation(path):
    assert unstable(judged(path.name), alloc.PROBE.relations, float("inf")) == {}


@pytest.mark.parametrize("name, value, why", [
    ("malloc_ns.1t.64B", 0.3, "cheaper than a free-list pool"),        # pool: 0.366 ns
    ("malloc_ns.all.mixed", 10.0, "cheaper than a free-list pool"),    # pool: 14.0 ns
    ("first_touch_ns.4K", 10.0, "first touch (fault and zeroing) cheaper"),
    ("first_touch_ns.all.4K", 1000.0, "from every CPU at once cheaper"),
    ("mlock_ns.4K", 150.0, "mlock of fresh memory"),
])
def test_each_relation_names_its_planted_figure(name, value, why):
    found = broken(planted(judged("alloc_h200xeon_quiet_full.json"), name, value))
    assert list(found) == [name] and why in found[name]


def test_all_cpu_faults_within_the_allowance_are_no_contradiction():
    metrics = judged("alloc_h200xeon_quiet_full.json")   # one thread: 1542 ns a page
    assert broken(planted(metrics, "first_touch_ns.all.4K", 1542 * 0.85)) == {}


def test_the_spread_bound_passes_a_quiet_reuse_and_names_a_busy_fault():
    quiet = summarize([23.58, 22.795, 26.319, 16.645, 17.169])   # reuse_ns.4K, a quiet full run, H200 guest
    busy = summarize([2011.2, 1120.0, 3400.0, 1500.0, 2900.0])   # first touch with other work on the CPUs
    assert 0.10 < quiet["mad"] / quiet["median"] < alloc.PROBE.spread_bound
    assert broken({"reuse_ns.4K": metric(quiet, "ns", 2)}) == {}
    assert "repeats disagree" in broken({"first_touch_ns.4K": metric(busy, "ns", 1)})["first_touch_ns.4K"]
