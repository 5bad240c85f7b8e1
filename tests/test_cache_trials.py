"""The DRAM figures over trial buffers: how many buffers fit, and one figure from their trials."""

from __future__ import annotations

import pytest

from perfprobe.probes.cache.trials import TRIALS, more_buffers, one_node, over_trials


def test_as_many_more_trial_buffers_as_the_memory_cap_holds_beside_the_curves() -> None:
    assert more_buffers(32 << 20, None, 32 << 20) == TRIALS - 1
    assert more_buffers(32 << 20, 1 << 30, 32 << 20) == TRIALS - 1
    assert more_buffers(32 << 20, 100 << 20, 32 << 20) == 2
    assert more_buffers(32 << 20, 40 << 20, 32 << 20) == 0
    assert more_buffers(0, None, 0) == 0


def test_read_trials_reuse_the_latency_buffers_only_where_the_readers_share_a_node() -> None:
    two = {"numa": {"nodes": [{"id": 0, "cpus": [0, 1]}, {"id": 1, "cpus": [2, 3]}]}}
    assert one_node(two, [0, 1]) and not one_node(two, [0, 2])
    assert one_node({"numa": {"nodes": [{"id": 0, "cpus": [0, 1]}]}}, [0, 1]) and one_node({}, [0, 5])


def test_one_figure_from_trials_is_the_median_of_their_medians_and_says_so() -> None:
    # the six held buffers of one process on the 2-vCPU guest (docs/results/compare-stability.md)
    per_trial = [{"median": v, "repeats": 5} for v in (120.5, 126.4, 156.2, 116.3, 118.1, 116.0)]
    figure = over_trials(per_trial)
    assert figure["median"] == 119.3 and figure["trials"] is True
    assert figure["samples"] == [120.5, 126.4, 156.2, 116.3, 118.1, 116.0]
    assert figure["repeats"] == 6 and figure["repeats_per_trial"] == 5


def test_a_single_trial_keeps_its_own_repeats_which_are_not_independent() -> None:
    one = {"median": 120.0, "repeats": 3, "samples": [119.0, 120.0, 121.0]}
    assert over_trials([one]) == one and "trials" not in over_trials([one])


def test_l3_latency_of_a_real_run_is_the_median_of_five_buffers_at_the_planned_set() -> None:
    """Recorded on the 2-vCPU Xeon guest (tests/data/cache_xeon2c_quick_l3set.json): L3 read at
    plan.l3_bytes over five trial buffers held at once, judged by compare as trials."""
    import json
    from pathlib import Path

    from perfprobe.probes.cache import judge
    from perfprobe.probes.cache.curve import point_at

    data = json.loads((Path(__file__).parent / "data" / "cache_xeon2c_quick_l3set.json").read_text())
    raw = data["raw"]["cache"]
    at = point_at(raw["curve"]["sizes_bytes"], raw["plan"]["l3_bytes"])
    point = raw["curve"]["latency_ns"][at]
    l3 = judge(raw, data["host"]).metrics["latency_ns.L3"]
    assert raw["plan"]["l3_bytes"] == 4 << 20 and point["trials"] is True and len(point["samples"]) == TRIALS
    assert l3.value == pytest.approx(point["median"], abs=0.01) and 30 < l3.value < 45
    assert l3.spread is not None and l3.spread.n == TRIALS and l3.spread.trials and l3.unstable is None


def test_l2_latency_of_a_real_run_is_its_point_at_the_planned_set_with_that_points_repeats() -> None:
    """Recorded on the 2-vCPU EPYC guest (tests/data/cache_epyc2c_quick_l2set.json): L2 read at
    plan.l2_bytes (64 KiB beside its 32 KiB L1), that point's own five repeats its spread; read off
    the plateau (the recording without l2_bytes) its repeats are the medians over the plateau's points."""
    import json
    from pathlib import Path

    from perfprobe.probes.cache import judge
    from perfprobe.probes.cache.curve import point_at

    data = json.loads((Path(__file__).parent / "data" / "cache_epyc2c_quick_l2set.json").read_text())
    raw = data["raw"]["cache"]
    at = point_at(raw["curve"]["sizes_bytes"], raw["plan"]["l2_bytes"])
    point = raw["curve"]["latency_ns"][at]
    l2 = judge(raw, data["host"]).metrics["latency_ns.L2"]
    assert raw["plan"]["l2_bytes"] == raw["curve"]["sizes_bytes"][at] == 64 << 10
    assert l2.value == pytest.approx(point["median"], abs=0.01) and 3 < l2.value < 5
    assert l2.spread is not None and l2.spread.n == len(point["samples"]) == 5 and l2.unstable is None
    assert list(l2.spread.samples) == point["samples"]
    plateau = {**raw, "plan": {k: v for k, v in raw["plan"].items() if k != "l2_bytes"}}
    assert list(judge(plateau, data["host"]).metrics["latency_ns.L2"].spread.samples) != point["samples"]


def test_a_freshly_linked_cycle_is_walked_several_times_before_it_is_timed() -> None:
    """One walk left a 4 MiB set at 55-200 ns where it keeps 33-37 ns (the 2-vCPU Xeon guest):
    small sets get WARM_PASSES walks, sets past WARM_LOADS[1] lines one walk, never more."""
    from perfprobe.probes.cache.timing import WARM_LOADS, WARM_PASSES, warm_loads

    assert warm_loads(65536) == WARM_PASSES * 65536 <= WARM_LOADS[0]      # 4 MiB of lines
    assert warm_loads(131072) == WARM_LOADS[0]                              # 8 MiB: four walks
    assert warm_loads(1 << 20) == WARM_LOADS[1] and warm_loads(1 << 22) == WARM_LOADS[1]
    assert warm_loads(64) == WARM_PASSES * 64


def test_a_set_dram_latency_is_read_at_is_warmed_by_a_quarter_walk_at_most() -> None:
    """Issue 28: a DRAM-sized set keeps no cache state to settle, only page tables to warm; on the
    EPYC guest 2^18 loads read what 2^20 did (timing.DRAM_WARM_LOADS), 0.12 s less a buffer."""
    from perfprobe.probes.cache.timing import DRAM_WARM_LOADS, WARM_PASSES, warm_loads

    assert warm_loads(1 << 20, dram=True) == warm_loads(1 << 22, dram=True) == DRAM_WARM_LOADS == 1 << 18
    assert warm_loads(1 << 20) == 1 << 20                                    # any other set: as before
    assert warm_loads(65536, dram=True) == DRAM_WARM_LOADS                  # a small LLC's 4 MiB DRAM set: 4 walks
    assert warm_loads(16384, dram=True) == WARM_PASSES * 16384 < DRAM_WARM_LOADS


def test_the_curve_warms_only_its_points_at_or_past_the_dram_set_as_dram(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextlib import contextmanager

    from perfprobe.engine.config import Knobs, RunConfig
    from perfprobe.probes.cache import measure, timing
    from perfprobe.probes.cache.plan import PRESETS, make_plan
    from perfprobe.system.budget import MemoryBudget

    host = {"caches": [{"level": 1, "type": "Data", "size_bytes": 32 << 10, "line_bytes": 64},
                       {"level": 2, "type": "Unified", "size_bytes": 1 << 20, "line_bytes": 64},
                       {"level": 3, "type": "Unified", "size_bytes": 32 << 20, "line_bytes": 64}],
            "memory": {"total_bytes": 8 << 30, "available_bytes": 7 << 30}}
    calls: list[tuple[int, bool]] = []
    monkeypatch.setattr(timing, "random_chase_ns",
                        lambda k, buf, size, line, t, seed=1, dram=False: calls.append((size, dram)) or {"median": 1.0})

    class Context:
        @contextmanager
        def progress(self, what: str, total: int):  # type: ignore[no-untyped-def]
            yield type("Task", (), {"advance": lambda self: None})()

    for quick in (True, False):
        calls.clear()
        plan = make_plan(host, Knobs(), RunConfig(quick=quick).preset(PRESETS), 2, MemoryBudget(1 << 30, "test"))
        measure._curve(Context(), None, None, plan, timing.Timing(0.001, 1))  # type: ignore[arg-type]
        assert plan.dram_bytes == 64 << 20
        assert [size for size, dram in calls if dram] == [s for s, _ in calls[1:] if s >= 64 << 20] != []
