"""The compare benches' own parts (tools/compare_stability.py, tools/planted_changes.py), no timing:
the planting scales the raw numbers a key figure is computed from (the replayed figure moves by the
factor, the probe's other key figures stay), and the pair counting and its summary read right."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

import fleet_reports as fr
from cli_invoke import invoke

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import compare_stability as cs  # noqa: E402
import planted_changes as pc  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


def _recording(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _replayed(recording: dict, figure: pc.Figure, tmp_path: Path, capsys, tag: str) -> dict:
    """The report `perfprobe PROBE --quick --replay` makes of `recording`, through the real CLI."""
    path = tmp_path / f"{tag}.rec.json"
    path.write_text(json.dumps(recording))
    argv = [figure.probe, "--quick", "--json", "--replay", str(path)]
    if figure.device is not None:
        argv += ["--device", str(figure.device)]
    code, out, err = invoke(argv, capsys)
    assert code in (0, 1), err
    return json.loads(out)


def test_the_key_figures_of_a_recorded_all_run():
    figures = pc.figures_in(_recording("all_quick_h200x2.rec.json"))
    assert [f.key for f in figures] == [
        "cache:latency_ns.L1", "cache:latency_ns.L2", "cache:latency_ns.L3", "cache:latency_ns.DRAM",
        "cache:read_gbs.DRAM.1t", "cache:read_gbs.DRAM.all", "falseshare:ns_per_update.atomic.64B",
        "pinned[0]:pinned.h2d_gbs", "pinned[1]:pinned.h2d_gbs"]
    assert [f.key for f in pc.figures_in(_recording("gpumem_h200_quick.json"))] == ["gpumem[0]:dram_gbs.read"]


PLANTED = [("all_quick_h200x2.rec.json", 1.15, key) for key in (
    "cache:latency_ns.L1", "cache:latency_ns.L2", "cache:latency_ns.L3", "cache:latency_ns.DRAM",
    "cache:read_gbs.DRAM.1t", "cache:read_gbs.DRAM.all", "falseshare:ns_per_update.atomic.64B",
    "pinned[1]:pinned.h2d_gbs")] + [
    ("cache_kvm2c_quick.json", 1.30, "cache:latency_ns.L2"), ("cache_kvm2c_quick.json", 1.30, "cache:latency_ns.DRAM"),
    ("cache_kvm2c_quick.json", 1.05, "cache:read_gbs.DRAM.all"),
    ("gpumem_h200_quick.json", 1.15, "gpumem[0]:dram_gbs.read"), ("pinned_h200_quick.json", 1.30, "pinned[0]:pinned.h2d_gbs"),
    ("falseshare_kvm_2cpu.json", 1.30, "falseshare:ns_per_update.atomic.64B")]


@pytest.mark.parametrize(("name", "factor", "key"), PLANTED)
def test_a_planted_slowdown_moves_its_figure_and_no_other(name, factor, key, tmp_path, capsys):
    recording = _recording(name)
    figures = pc.figures_in(recording)
    figure = next(f for f in figures if f.key == key)
    before = _replayed(recording, figure, tmp_path, capsys, "before")
    after = _replayed(pc.plant(recording, figure, factor), figure, tmp_path, capsys, "after")
    assert pc.planting_check(figure, factor, before, after, figures) == []
    old, new = pc.metric_of(before, key)["value"], pc.metric_of(after, key)["value"]
    want = factor if not figure.rate else 1 / factor   # a time up by the factor, a rate down by it
    assert new / old == pytest.approx(want, rel=0.012)
    assert recording == _recording(name)   # the recording itself is left as it was


def test_a_rate_slowed_by_value_is_lower_by_the_percentage():
    recording = _recording("gpumem_h200_quick.json")
    figure = pc.figures_in(recording)[0]
    planted = pc.plant(recording, figure, 1.15, rates="value")
    before, after = (r["raw"]["gpumem[0]"]["dram"]["read"] for r in (recording, planted))
    assert after["gbs"]["median"] == pytest.approx(before["gbs"]["median"] * 0.85)
    assert after["ms"]["median"] == pytest.approx(before["ms"]["median"] * 1.15)   # its time, up


def test_every_number_of_a_stat_is_scaled_and_its_counts_are_not():
    stat = {"median": 2.0, "min": 1.0, "max": 4.0, "iqr": 1.0, "mad": 0.5, "repeats": 3, "steps": 100,
            "samples": [1.0, 2.0, 4.0]}
    pc.scale_stat(stat, 1.5)
    assert stat == {"median": 3.0, "min": 1.5, "max": 6.0, "iqr": 1.5, "mad": 0.75, "repeats": 3, "steps": 100,
                    "samples": [1.5, 3.0, 6.0]}


def test_the_recorded_re_measurements_are_planted_too():
    recording = _recording("falseshare_kvm_2cpu.json")
    raw = recording["raw"]["falseshare"]
    raw["confirmation_raw"] = copy.deepcopy(raw)
    raw["instability_raw"] = copy.deepcopy(raw)
    figure = pc.figures_in(recording)[0]
    planted = pc.plant(recording, figure, 1.2)["raw"]["falseshare"]
    for where in (planted, planted["confirmation_raw"], planted["instability_raw"]):
        old, new = (pc._falseshare_atomic_64(r)[0]["median"] for r in (raw, where))
        assert new == pytest.approx(old * 1.2)


def test_the_ramps_of_a_slowed_level_stay_between_the_levels():
    recording = _recording("all_quick_h200x2.rec.json")
    figure = next(f for f in pc.figures_in(recording) if f.key == "cache:latency_ns.L2")
    old = [p["median"] for p in recording["raw"]["cache"]["curve"]["latency_ns"]]
    new = [p["median"] for p in pc.plant(recording, figure, 1.3)["raw"]["cache"]["curve"]["latency_ns"]]
    grew = [n / o for o, n in zip(old, new)]
    assert all(1.0 <= g <= 1.3 + 1e-9 for g in grew)
    assert grew[0] == 1.0 and grew[-1] == 1.0          # L1 and DRAM points stay
    assert any(1.0 < g < 1.3 for g in grew)            # the ramps beside L2 move part of the way


def test_a_figure_with_nothing_behind_it_is_refused():
    figure = pc.Figure("pinned[3] H2D", "pinned[3]", "pinned.h2d_gbs", "pinned_h2d")
    with pytest.raises(ValueError, match="no raw numbers"):
        pc.plant(_recording("pinned_h200_quick.json"), figure, 1.1)


def test_a_planting_that_lands_off_the_factor_is_named():
    figure = pc.Figure("DRAM read 1t", "cache", "read_gbs.DRAM.1t", "dram_read_1t")
    other = pc.Figure("cache latency L1", "cache", "latency_ns.L1", "latency")

    def report(dram: float, l1: float) -> dict:
        return {"results": [{"probe": "cache", "device": None, "metrics": {
            "read_gbs.DRAM.1t": {"value": dram, "unit": "GB/s"}, "latency_ns.L1": {"value": l1, "unit": "ns"}}}]}

    assert pc.planting_check(figure, 1.25, report(10.0, 1.5), report(8.0, 1.5), [figure, other]) == []
    said = pc.planting_check(figure, 1.25, report(10.0, 1.5), report(9.0, 1.9), [figure, other])
    assert said == ["cache:read_gbs.DRAM.1t moved x0.9000, planted x0.8000", "cache:latency_ns.L1 moved too (1.5 -> 1.9)"]


def test_trials_pair_different_runs():
    pairs = pc.compare_trials(5, 10)
    assert len(set(pairs)) == 10 and all(i != j for i, j in pairs)
    assert sorted(j for _, j in pairs) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert pc.compare_trials(1, 3) == [(0, 0)] * 3
    assert pc.health_trials(5, 5) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]


def test_the_smallest_factor_is_found_in_every_trial_at_it_and_above():
    tallies = {f: pc.Tally() for f in (1.05, 1.1, 1.15, 1.2)}
    for factor, found in ((1.05, [True, False]), (1.1, [True, True]), (1.15, [False, True]), (1.2, [True, True])):
        for hit in found:
            tallies[factor].add(hit, "found" if hit else "no significant change", False)
    assert pc.smallest_found(tallies) == 1.2
    assert tallies[1.15].text() == "1 of 2 (no significant change 1)"


def test_a_trial_on_a_figure_its_own_run_marked_unstable_is_left_out_and_named():
    report = {"results": [{"probe": "falseshare", "metrics": {
        "ns_per_update.atomic.64B": {"value": 5.9, "unit": "ns", "unstable": "threads shared a core"},
        "ns_per_update.atomic.8B": {"value": 31.0, "unit": "ns"}}}]}
    assert pc.unstable_in(report, "falseshare:ns_per_update.atomic.64B")
    assert not pc.unstable_in(report, "falseshare:ns_per_update.atomic.8B")
    assert not pc.unstable_in(report, "cache:latency_ns.L1")
    tally = pc.Tally()
    tally.add(True, "found", False)
    tally.leave_out()
    assert tally.all_found and tally.cell() == "1 of 1 (1 left out)"
    assert tally.text() == "1 of 1 (1 left out: the figure unstable in the run itself)"
    assert not pc.Tally(left_out=2).all_found


def test_pairs_of_ten_runs_and_ordered_pairs_of_five():
    assert len(cs.pairs(10, ordered=False)) == 45 and cs.default_need(45) == 44
    assert len(cs.pairs(5, ordered=True)) == 20 and cs.default_need(20) == 19
    assert (1, 0) in cs.pairs(5, ordered=True) and (1, 0) not in cs.pairs(5, ordered=False)


def _comparison(*kinds: str, disturbed: list[str] | None = None) -> str:
    changes = [{"metric": f"cache:latency_ns.L{i + 1}", "kind": kind, "ratio": 1.2} for i, kind in enumerate(kinds)]
    return json.dumps({"regressions": kinds.count("regression"), "changes": changes, "disturbed": disturbed or []})


def test_a_comparison_is_read_from_compares_json():
    said = cs.parse_comparison(1, _comparison("regression", "no significant change", "regression"))
    assert said["regressions"] == [("cache:latency_ns.L1", 1.2), ("cache:latency_ns.L3", 1.2)]
    assert said["kinds"]["cache:latency_ns.L2"] == "no significant change" and said["error"] is None
    quiet = cs.parse_comparison(0, _comparison("untested", disturbed=["NEW: load held back findings of cache"]))
    assert quiet["regressions"] == [] and quiet["disturbed"] == ["NEW: load held back findings of cache"]
    assert "exit 1 but 0 regression" in cs.parse_comparison(1, _comparison("untested"))["error"]
    assert cs.parse_comparison(2, "", "perfprobe: error: BASE x.json: no such file")["error"].startswith("exit 2:")


def test_the_summary_counts_pairs_with_no_regression():
    results = [cs.PairResult("a", "b", 0), cs.PairResult("a", "c", 1, [("cache:latency_ns.L3", 1.4)]),
               cs.PairResult("b", "c", 0, disturbed=["BASE: steal"]), cs.PairResult("c", "d", 2, error="exit 2: bad")]
    summary = cs.summarise(results)
    assert (summary["clean"], summary["pairs"], summary["need"], summary["disturbed"], summary["failed"]) == (2, 4, 3, 1, 1)
    assert not summary["ok"] and cs.summarise(results, need=1)["ok"]
    text = "\n".join(cs.summary_lines(summary))
    assert cs.parse_summary_line(text) == (2, 4)
    assert "cache:latency_ns.L3 in 1" in text
    assert cs.pair_line(results[1]) == "a -> c: 1 regression(s): cache:latency_ns.L3 (+40%)"


def _fake_run(l1_factor: float) -> dict:
    """A small real report (one cache recording replayed) where only L1 latency carries samples."""
    report = fr.replayed("cache_kvm2c_quick.json", ("host", "cache"))
    report["disturbance"] = {"disturbed": False}
    for result in report["results"]:
        for metric in result["metrics"].values():
            metric.pop("stats", None)
            metric.pop("unstable", None)
    l1 = next(r for r in report["results"] if r["probe"] == "cache")["metrics"]["latency_ns.L1"]
    samples = [1.80, 1.85, 1.88, 1.90, 1.95]
    l1.update(value=1.88 * l1_factor, stats={"n": 5, "median": 1.88 * l1_factor, "min": 1.8 * l1_factor,
                                             "max": 1.95 * l1_factor, "samples": [s * l1_factor for s in samples]})
    return report


def test_the_pair_bench_counts_a_planted_run_in_every_pair_it_is_in(tmp_path, capsys):
    for name, factor in (("run01", 1.0), ("run02", 1.0), ("run03", 1.5)):
        (tmp_path / f"{name}.json").write_text(json.dumps(_fake_run(factor)))
        (tmp_path / f"{name}.rec.json").write_text("{}")   # a recording beside it is not a report
    assert [p.name for p in cs.run_reports(tmp_path)] == ["run01.json", "run02.json", "run03.json"]
    code = cs.main(["--reports", str(tmp_path)])
    out = capsys.readouterr().out
    assert cs.parse_summary_line(out) == (1, 3) and code == 1
    assert "run01.json -> run03.json: 1 regression(s): cache:latency_ns.L1 (+50%)" in out
    assert "run01.json -> run02.json: 0 regressions" in out


def test_a_planted_all_thread_dram_slowdown_slows_the_sweep_too_and_stays_judged(tmp_path, capsys):
    """cache's relation keeps DRAM read over the trial buffers in step with the thread sweep's top
    count: a slower memory system slows both, so a planting of one alone would read as unstable."""
    recording = _recording("cache_epyc2c_quick.json")
    figure = next(f for f in pc.figures_in(recording) if f.key == "cache:read_gbs.DRAM.all")
    after = _replayed(pc.plant(recording, figure, 1.30), figure, tmp_path, capsys, "after")
    assert not pc.metric_of(after, "cache:read_gbs.DRAM.all").get("unstable")
    sweep = recording["raw"]["cache"]["sweep"]
    planted = pc.plant(recording, figure, 1.30)["raw"]["cache"]["sweep"]
    for count, old, new in zip(sweep["threads"], sweep["read_gbs"], planted["read_gbs"]):
        assert new["median"] == pytest.approx(old["median"] / 1.30 if count > 1 else old["median"])
