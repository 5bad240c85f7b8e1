"""A caller that judges only some figures gets only those measured (issue 28 item 4: the health check
measures what its policy judges): RunConfig.judged, ProbeContext.judges, the health check's
judged_figures, and what cache's judgement makes of a run that left parts out."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Verdict
from perfprobe.engine.probe import ProbeContext
from perfprobe.engine.progress import null_progress
from perfprobe.fleet import healthcheck as hc
from perfprobe.probes.cache import judge
from perfprobe.probes.cache.declared import DECLARED
from perfprobe.probes.cache.measure import PART_FIGURES, _Parts

DATA = Path(__file__).parent / "data"


def _ctx(judged: tuple[str, ...] | None, probe: str = "cache") -> ProbeContext:
    return ProbeContext(config=RunConfig(quick=True, judged=judged), host={}, progress=null_progress, probe=probe)


def test_every_figure_is_judged_unless_the_caller_names_some() -> None:
    assert _ctx(None).judges("seq_over_random")
    judged = ("cache:latency_ns.L?", "cache:read_gbs.DRAM.1t", "pinned:pinned.h2d_gbs")
    ctx = _ctx(judged)
    assert ctx.judges("latency_ns.L2") and ctx.judges("seq_over_random", "read_gbs.DRAM.1t")
    assert not ctx.judges("seq_over_random") and not ctx.judges("read_gbs.DRAM.all")
    assert not _ctx(judged, probe="ipc").judges("latency_ns.L2")  # another probe's pattern
    assert not _ctx(()).judges("latency_ns.L1")


def test_the_default_policy_judges_its_key_metrics_and_a_warn_draining_one_everything() -> None:
    judged = hc.judged_figures(hc.DEFAULT_POLICY)
    assert judged is not None and {f"cache:{p}" for p in DECLARED.key_figures or ()} <= set(judged)
    assert hc.judged_figures(replace(hc.DEFAULT_POLICY, drain_on_warn=True)) is None
    ignoring = replace(hc.DEFAULT_POLICY, ignore=("cache:latency_ns.DRAM",))
    assert "cache:latency_ns.DRAM" not in (hc.judged_figures(ignoring) or ())


def test_under_the_default_policy_cache_leaves_out_every_part_but_the_key_figures() -> None:
    parts = _Parts(_ctx(hc.judged_figures(hc.DEFAULT_POLICY)))
    assert not any(parts.wanted(part) for part in PART_FIGURES)
    assert parts.left_out == list(PART_FIGURES)
    assert parts.wanted("read_gbs DRAM", "read_gbs.DRAM.1t", "read_gbs.DRAM.all")
    assert not parts.wanted("triad_gbs DRAM", "triad_gbs.DRAM.1t", "triad_gbs.DRAM.all")
    everything = _Parts(_ctx(None))
    assert all(everything.wanted(part) for part in PART_FIGURES) and everything.left_out == []


def _recorded_as_a_health_check() -> tuple[dict, dict]:
    """A real quick run (2-vCPU Xeon guest) cut to what a health check under the default policy
    measures: the curve, the trials, DRAM read; no pattern, line, pages, sweep, other bandwidth."""
    data = json.loads((DATA / "cache_xeon2c_quick_l3set.json").read_text())
    raw, host = dict(data["raw"]["cache"]), data["host"]
    for part in ("pattern", "line", "pages", "sweep"):
        raw.pop(part, None)
    raw["bandwidth"] = {"DRAM": {"read_gbs": raw["bandwidth"]["DRAM"]["read_gbs"]}}
    raw["not_judged"] = ["pattern", "line", "pages", "read_gbs L1", "triad_gbs DRAM", "sweep"]
    return raw, host


def test_a_run_that_left_parts_out_gives_the_key_figures_and_says_what_it_left_out() -> None:
    raw, host = _recorded_as_a_health_check()
    assessment = judge(raw, host)
    assert {"latency_ns.L1", "latency_ns.L2", "latency_ns.L3", "latency_ns.DRAM", "read_gbs.DRAM.1t",
            "read_gbs.DRAM.all"} <= set(assessment.metrics)
    assert not {"seq_over_random", "line_bytes", "triad_gbs.DRAM.1t", "dram_read_gbs.t1"} & set(assessment.metrics)
    assert assessment.facts["not_measured"]["parts"] == raw["not_judged"]
    messages = " ".join(f.message for f in assessment.findings)
    assert "line size could not be read" not in messages  # a part not measured is not a failed reading
    assert all(f.verdict in (Verdict.PASS, Verdict.WARN) for f in assessment.findings)


@pytest.mark.parametrize("part", ["pattern", "line", "sweep"])
def test_the_full_recording_keeps_each_part_the_cut_one_leaves_out(part: str) -> None:
    data = json.loads((DATA / "cache_xeon2c_quick_l3set.json").read_text())
    assert part in data["raw"]["cache"]  # else the test above would prove nothing about leaving it out


def test_the_health_check_child_runs_with_the_figures_it_was_given(tmp_path, monkeypatch) -> None:
    from perfprobe.engine import runner
    from perfprobe.fleet import health_run

    seen: list[RunConfig] = []
    real_run = runner.run

    def run(names, config):
        seen.append(config)
        return real_run([], RunConfig(quick=True, json=True))

    monkeypatch.setattr(runner, "run", run)
    for judged in (["cache:latency_ns.L?"], None):
        spec = {"names": ["cache"], "out": str(tmp_path / "report.json"), "confirm_warns": False, "judged": judged}
        health_run._child(json.dumps(spec))
    assert [c.judged for c in seen] == [("cache:latency_ns.L?",), None]
    assert json.loads((tmp_path / "report.json").read_text())["results"] == []


def test_where_the_all_thread_dram_read_is_judged_the_sweep_is_timed_at_its_ends(monkeypatch) -> None:
    """The health check judges read_gbs.DRAM.all, whose relations rest on the sweep's one-thread and
    top counts: those are read (no triad, no count between), and no saturation count is claimed."""
    from types import SimpleNamespace

    from perfprobe.probes.cache import measure

    timed: list[tuple[str, int]] = []
    together: list[int] = []

    def placed_rate(k, kind, total_bytes, cpus, timing, huge):  # noqa: ANN001, ANN202 - the kernel's stand-in
        assert huge is True  # the caller's page policy reaches every run of the sweep
        timed.append((kind, len(cpus)))
        together.append(total_bytes)
        return {"median": 10.0 * len(cpus), "samples": [10.0 * len(cpus)] * 3, "repeats": 3}

    monkeypatch.setattr(measure.m, "placed_rate", placed_rate)
    plan = SimpleNamespace(max_bytes=64 << 20, llc_bytes=32 << 20, cap_bytes=None)
    place = SimpleNamespace(counts=(1, 2, 4, 8, 16), sweep_cpus=lambda n: list(range(n)))
    ctx = _ctx(hc.judged_figures(hc.DEFAULT_POLICY))
    ends = measure._sweep(ctx, None, plan, None, place, True, True)
    assert timed == [("read_gbs", 1), ("read_gbs", 16)] and ends["threads"] == [1, 16] and ends["ends_only"]
    assert together == ends["bytes_together"] == [64 << 20, 1 << 30]   # 64 MiB a thread, at most 1 GiB in all
    timed.clear()
    whole = measure._sweep(ctx, None, plan, None, place, True)
    assert len(timed) == 10 and "ends_only" not in whole


def test_a_health_check_run_with_the_sweeps_ends_names_trials_that_read_low() -> None:
    """The 16-vCPU guest's run whose trials read 140.7 GB/s beside its sweep's 218.7 on 16 threads,
    cut to what a health check measures (the sweep at 1 and 16 threads, read only): the all-thread
    figure is named, and no saturation count is made of two points."""
    from perfprobe.engine.stability import unstable
    from perfprobe.probes.cache import PROBE

    data = json.loads((DATA / "cache_xeon16c_quick_dram_all_low.json").read_text())
    raw, host = dict(data["raw"]["cache"]), data["host"]
    sweep = raw["sweep"]
    keep = [0, len(sweep["threads"]) - 1]
    raw["sweep"] = {"bytes": sweep["bytes"], "threads": [sweep["threads"][i] for i in keep],
                    "read_gbs": [sweep["read_gbs"][i] for i in keep], "ends_only": True}
    metrics = judge(raw, host).metrics
    assert {"dram_read_gbs.t1", "dram_read_gbs.t16"} <= set(metrics) and "cores_to_saturate_dram" not in metrics
    assert "dram_triad_gbs.t1" not in metrics
    found = unstable(metrics, PROBE.relations, float("inf"))
    assert "140.7 against dram_read_gbs.t16 218.7" in found["read_gbs.DRAM.all"]


def test_a_part_run_in_part_says_what_of_it_was_left_out() -> None:
    parts = _Parts(_ctx(hc.judged_figures(hc.DEFAULT_POLICY)))
    assert not parts.wanted("pattern") and not parts.wanted("sweep")
    parts.partly("sweep", "sweep between one thread and the most, and its triad")
    assert parts.left_out == ["pattern", "sweep between one thread and the most, and its triad"]
