"""Where the all-thread DRAM read's threads sat (figures.threads_placement): one last-level cache,
two, or moved between them while it was timed; a moved figure is unstable, and compare does not
judge a figure between two placements. On EPYC guest recordings of 12-07 (tests/data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfprobe.engine import stability
from perfprobe.engine.model import APART, MOVED, SHARED_LLC
from perfprobe.fleet import compare
from perfprobe.fleet.compare import Figure
from perfprobe.probes import cache
from perfprobe.probes.cache.figures import LLC_APART, threads_placement

DATA = Path(__file__).parent / "data"


def recording(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads((DATA / name).read_text())
    return data["raw"]["cache"], data["host"]


def dram_all(raw: dict[str, Any], host: dict[str, Any]) -> Any:
    return dict(cache.judge(raw, host).metrics)["read_gbs.DRAM.all"]


@pytest.mark.parametrize("name,placement,gbs", [
    ("cache_epyc2c_quick_shared_llc.json", SHARED_LLC, (30, 37)),   # handoffs 49.9 and 45.2 ns
    ("cache_epyc2c_quick_apart.json", APART, (52, 62)),             # handoffs 177.0 and 170.5 ns
])
def test_a_recorded_run_names_where_its_threads_sat(name: str, placement: str, gbs: tuple[int, int]) -> None:
    metric = dram_all(*recording(name))
    assert metric.spread.placement == placement
    assert gbs[0] <= metric.value <= gbs[1]


def test_threads_that_moved_while_timed_make_the_figure_unstable() -> None:
    """The first measurement's handoffs were 165.5 ns before and 47.9 after; its re-measurement
    (kept in the recording) shared one L3 both times and stands."""
    raw, host = recording("cache_epyc2c_quick_moved.json")
    first = {k: v for k, v in raw.items() if k != stability.SECOND_RAW}
    metrics = dict(cache.judge(first, host).metrics)
    assert metrics["read_gbs.DRAM.all"].spread.placement == MOVED
    found = stability.unstable(metrics, cache.PROBE.relations, cache.PROBE.spread_bound)
    assert "moved between sharing a last-level cache" in found["read_gbs.DRAM.all"]
    again = dict(cache.judge(raw[stability.SECOND_RAW], host).metrics)
    assert again["read_gbs.DRAM.all"].spread.placement == SHARED_LLC
    assert "read_gbs.DRAM.all" not in stability.unstable(again, cache.PROBE.relations, cache.PROBE.spread_bound)


@pytest.mark.parametrize("handoffs,llc,placement", [
    ([45.0, 47.0], 13.5, SHARED_LLC),
    ([170.0, 165.0], 13.5, APART),
    ([45.0, 170.0], 13.5, MOVED),
    ([LLC_APART * 10.0, LLC_APART * 10.0 - 0.1], 10.0, MOVED),   # the boundary belongs to "apart"
    ([110.0, 52.0], 35.0, SHARED_LLC),                          # one Xeon L3: slow handoffs, one cache
    ([], 13.5, None),                                            # one CPU: no handoff timed
    ([45.0, 47.0], None, None),                                  # no cache level measured
])
def test_placement_from_the_handoffs_against_the_runs_llc(handoffs: list[float], llc: float | None,
                                                            placement: str | None) -> None:
    assert threads_placement({"handoff_ns": handoffs}, llc) == placement


def test_compare_does_not_judge_a_figure_between_two_placements() -> None:
    base = Figure(33.0, "GB/s", (32.5, 33.0, 33.4, 32.8, 33.2), placement=SHARED_LLC)
    new = Figure(55.0, "GB/s", (54.5, 55.0, 55.4, 54.8, 55.2), placement=APART)
    assert compare.judge("cache:read_gbs.DRAM.all", new, base).kind == compare.OTHER_PLACEMENT
    same = Figure(33.0, "GB/s", (32.5, 33.0, 33.4, 32.8, 33.2), placement=APART)
    assert compare.judge("cache:read_gbs.DRAM.all", new, same).kind == "regression"
    unknown = Figure(33.0, "GB/s", (32.5, 33.0, 33.4, 32.8, 33.2))   # a report from before the witness
    assert compare.judge("cache:read_gbs.DRAM.all", new, unknown).kind == "regression"


def test_two_recorded_runs_in_two_placements_compare_without_a_regression(tmp_path: Path) -> None:
    """The 1.7x between the two recordings' all-thread reads is the host's placement, not a change."""
    import subprocess
    import sys

    reports = []
    for name in ("cache_epyc2c_quick_apart.json", "cache_epyc2c_quick_shared_llc.json"):
        out = tmp_path / f"{name}.report.json"
        done = subprocess.run([sys.executable, "-m", "perfprobe", "cache", "--replay", str(DATA / name),
                               "--json", "-o", str(out)], capture_output=True, text=True, timeout=120)
        assert done.returncode in (0, 1), done.stderr
        reports.append(out)
    done = subprocess.run([sys.executable, "-m", "perfprobe", "compare", *map(str, reports), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    changes = {c["metric"]: c["kind"] for c in json.loads(done.stdout)["changes"]}
    assert changes["cache:read_gbs.DRAM.all"] == compare.OTHER_PLACEMENT


def _hosts_in_two_placements(shared_count: int = 3, apart_count: int = 3) -> list[dict[str, Any]]:
    """Runs of the EPYC guest as hosts: some whose all-thread DRAM read shared one L3 (~34 GB/s)
    and some whose threads sat apart (~60), each with ±3% of run-to-run noise."""
    import fleet_reports as fr

    shared = fr.replayed("cache_epyc2c_quick_shared_llc.json", ("cache",))
    apart = fr.replayed("cache_epyc2c_quick_apart.json", ("cache",))
    for report in (shared, apart):   # one hardware group: the two recordings' host facts as one
        report["host"] = shared["host"]
    return ([fr.as_host(shared, f"s{n}", seed=n) for n in range(shared_count)]
            + [fr.as_host(apart, f"a{n}", seed=10 + n) for n in range(apart_count)])


def test_fleet_judges_a_placed_figure_among_peers_placed_alike() -> None:
    """Pooled, the two 'apart' hosts' 1.7x would be outliers of the seven; per placement, none is
    (two hosts alike are too few to name one)."""
    from perfprobe.fleet import peers
    from perfprobe.fleet.reports import Loaded

    hosts = _hosts_in_two_placements(5, 2)
    fleet = peers.judge([Loaded(f"{r['host']['hostname']}.json", r) for r in hosts])
    assert [o for o in fleet.groups[0].outliers if o.metric == "cache:read_gbs.DRAM.all"] == []


def test_a_baseline_keeps_each_placement_and_judges_a_run_against_its_own(tmp_path: Path) -> None:
    import fleet_reports as fr
    from perfprobe.fleet import baseline, peers
    from perfprobe.fleet.reports import Loaded
    from perfprobe.system.untrusted import problem

    hosts = _hosts_in_two_placements()
    data = baseline.build(peers.judge([Loaded(f"{r['host']['hostname']}.json", r) for r in hosts]))
    assert problem(json.loads(json.dumps(data)), "baseline") is None
    metric = data["groups"][0]["metrics"]["cache:read_gbs.DRAM.all"]
    assert set(metric["placements"]) == {SHARED_LLC, APART}
    base = baseline.reference(data["groups"][0])["cache:read_gbs.DRAM.all"]
    run = fr.as_host(fr.replayed("cache_epyc2c_quick_apart.json", ("cache",)), "new", seed=99, jitter=0.0)
    new = compare.report_reference(run)["cache:read_gbs.DRAM.all"]
    assert compare.judge("cache:read_gbs.DRAM.all", base, new).kind == "no significant change"
    fr.set_metric(run, "cache", None, "read_gbs.DRAM.all", 0.75)   # a real loss, in its own placement
    slower = compare.report_reference(run)["cache:read_gbs.DRAM.all"]
    assert compare.judge("cache:read_gbs.DRAM.all", base, slower).kind == "regression"
    only_shared = Figure(33.0, "GB/s", (33.0,) * 5, by_placement=((SHARED_LLC, Figure(33.0, "GB/s", (33.0,) * 5)),))
    assert compare.judge("cache:read_gbs.DRAM.all", only_shared, new).kind == compare.OTHER_PLACEMENT


def _placed(value: float, placement: str | None) -> Any:
    from perfprobe.engine.model import Metric, Spread

    return Metric(value, "GB/s", Spread(5, value, value, value, 0.0, 0.0, (value,) * 5, placement=placement))


@pytest.mark.parametrize("subject,top,broken", [
    (SHARED_LLC, SHARED_LLC, True),     # the same work in one placement: 33 against 55 is broken
    (SHARED_LLC, APART, False),         # two placements: not the same work
    (APART, MOVED, False),
    (None, APART, True),                # a recording from before the witness: judged as before
])
def test_the_all_thread_read_agrees_with_the_sweep_only_in_one_placement(subject: str | None, top: str,
                                                                          broken: bool) -> None:
    relation = next(r for r in cache.RELATIONS if isinstance(r, stability.AgreesWithTopCount))
    metrics = {"read_gbs.DRAM.all": _placed(33.0, subject), "dram_read_gbs.t1": _placed(28.0, None),
               "dram_read_gbs.t2": _placed(55.0, top)}
    assert bool(relation.broken(metrics)) is broken


def test_a_moved_figure_against_a_placed_baseline_is_unstable_not_other_placement() -> None:
    moved = Figure(40.0, "GB/s", (40.0,) * 5, unstable="the threads moved", placement=MOVED)
    base = Figure(33.0, "GB/s", (33.0,) * 5, by_placement=((SHARED_LLC, Figure(33.0, "GB/s", (33.0,) * 5)),))
    assert compare.judge("cache:read_gbs.DRAM.all", base, moved).kind == "unstable"


def test_a_placement_seen_in_fewer_than_three_runs_is_not_kept_in_a_baseline() -> None:
    """One or two runs at a placement are too few to say what is normal there: a run at it is then
    'other placement' against the baseline, never judged against one possibly odd run."""
    from perfprobe.fleet import baseline, peers
    from perfprobe.fleet.reports import Loaded

    hosts = _hosts_in_two_placements(4, 2)
    data = baseline.build(peers.judge([Loaded(f"{r['host']['hostname']}.json", r) for r in hosts]))
    metric = data["groups"][0]["metrics"]["cache:read_gbs.DRAM.all"]
    assert set(metric["placements"]) == {SHARED_LLC}
    base = baseline.reference(data["groups"][0])["cache:read_gbs.DRAM.all"]
    apart = compare.report_reference(hosts[-1])["cache:read_gbs.DRAM.all"]
    assert compare.judge("cache:read_gbs.DRAM.all", base, apart).kind == compare.OTHER_PLACEMENT
