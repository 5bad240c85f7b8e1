"""The --quick time budget: declared once per probe and summed, a run past it names where its time
went on stderr and in the JSON, a run within it says nothing. The runner's clock is a fake moved by
the fake probes (tests/fake_probes.py): no test here depends on this machine's speed."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any, Callable

import jsonschema
import pytest

import fake_probes
from cli_invoke import invoke
from perfprobe import load_schema
from perfprobe.engine import quick_budget, registry, runner
from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Overrun, ProbeResult, QuickBudget, Verdict
from perfprobe.engine.registry import all_probe_names, declaration
from perfprobe.engine.stages import StageClock
from perfprobe.render.json import report_to_dict

BUDGETS = {"good": 1.0, "slow": 5.0, "skippy": 3.0, "warny": 2.0}


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> fake_probes.FakeClock:
    """Fake probes with BUDGETS, on a fake clock that only the slow probe moves."""
    monkeypatch.setattr(runner, "load_probe", lambda name: fake_probes.PROBES[name])
    monkeypatch.setattr(runner, "_read_host", lambda config: fake_probes.HOST)
    monkeypatch.setattr(runner._LoadWatch, "start", classmethod(lambda cls, config: None))
    monkeypatch.setattr(quick_budget, "declared_budgets", lambda names: {n: BUDGETS[n] for n in names})
    clock = fake_probes.CLOCK
    clock.now = 0.0
    monkeypatch.setattr(runner, "_now", clock)
    monkeypatch.setattr(runner, "_compile_seconds", lambda: 0.0)
    return clock


def test_every_probe_declares_a_budget_and_all_quick_s_is_their_sum() -> None:
    declared = {name: declaration(name).quick_budget_s for name in all_probe_names()}
    assert all(isinstance(s, float) and s > 0 for s in declared.values()), declared
    def budget_of(names: list[str]) -> float:  # a run that measured each of `names` once (on one GPU)
        budgets = quick_budget.declared_budgets(names)
        assert budgets is not None
        results = [ProbeResult(probe=n, verdict=Verdict.PASS, summary="", duration_s=0.1) for n in names]
        return quick_budget.assess(results, budgets, wall_s=1.0).budget_s

    assert budget_of(all_probe_names()) == pytest.approx(sum(declared.values()))
    assert budget_of(["cache", "numa"]) == declared["cache"] + declared["numa"]


def test_a_probe_that_declares_no_budget_leaves_the_run_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.PROBE_MODULES, "toy", "toy_probe")
    assert declaration("toy").quick_budget_s is None
    assert quick_budget.declared_budgets(["cache", "toy"]) is None
    assert quick_budget.declared_budgets(["no-such-probe"]) is None


def test_the_stage_clock_counts_each_second_once_and_compiles_apart() -> None:
    now, compiled = [0.0], [0.0]
    stages = StageClock(lambda: now[0], lambda: compiled[0])
    with stages.stage("measure"):
        now[0], compiled[0] = 3.0, 1.0  # 1 s of the 3 compiling
    with stages.stage("judge"):
        now[0] = 3.5
        with stages.stage("remeasure"):  # a warn confirmed while judging
            now[0] = 5.5
        now[0] = 6.0
    assert stages.seconds == {"compile": 1.0, "measure": 2.0, "judge": 1.0, "remeasure": 2.0}


def _result(probe: str, seconds: float, device: int | None = None, verdict: Verdict = Verdict.PASS,
            stages: dict[str, float] | None = None) -> ProbeResult:
    return ProbeResult(probe, verdict, "", duration_s=seconds, device=device, stages_s=stages or {})


def test_assess_budgets_each_gpu_and_nothing_for_a_skip() -> None:
    results = [_result("host", 0.1), _result("cache", 14.0, stages={"measure": 10.0, "remeasure": 4.0}),
               _result("pinned", 2.0, 0), _result("pinned", 3.0, 1), _result("p2p", 0.0, verdict=Verdict.SKIP)]
    budget = quick_budget.assess(results, {"host": 0.5, "cache": 13.0, "pinned": 2.5, "p2p": 4.0}, 20.0, 0.5)
    assert budget.budget_s == 0.5 + 13.0 + 2 * 2.5
    assert budget.outside_s == pytest.approx(20.0 - 19.1) and budget.compile_ahead_s == 0.5
    assert budget.spent_s == pytest.approx(19.1 + 0.5) and budget.exceeded
    assert budget.over == (Overrun("cache", None, 13.0, 14.0, {"measure": 10.0, "remeasure": 4.0}),
                           Overrun("pinned", 1, 2.5, 3.0, {}))


def test_start_up_is_not_budgeted_and_nothing_budgeted_is_never_exceeded() -> None:
    one_probe = quick_budget.assess([_result("branch", 0.2)], {"branch": 0.5}, wall_s=0.9)  # 0.7 s start-up
    assert one_probe.spent_s == pytest.approx(0.2) and not one_probe.exceeded
    cold = quick_budget.assess([_result("branch", 0.2)], {"branch": 0.5}, wall_s=5.9, compile_ahead_s=5.0)
    assert cold.spent_s == pytest.approx(5.2) and cold.exceeded and cold.over == ()
    skipped = quick_budget.assess([_result("pinned", 0.4, 0, Verdict.SKIP)], {"pinned": 2.5}, wall_s=0.9)
    assert skipped.budget_s == 0 and not skipped.exceeded


def test_the_overrun_block_on_fixed_numbers() -> None:
    budget = QuickBudget(budget_s=20.0, wall_s=31.24, outside_s=15.0, compile_ahead_s=14.3, over=(
        Overrun("cache", None, 13.0, 14.1, {"measure": 9.1, "remeasure": 4.8, "judge": 0.2}),
        Overrun("pinned", 0, 2.5, 3.04, {"compile": 0.5, "measure": 2.54})))
    assert quick_budget.overrun_text(budget) == (
        "perfprobe: --quick ran past its budget: 30.5 s of 20.0 s (its probes' budgets summed), 31.2 s wall; "
        "a slow run fails nothing\n"
        "  compiling kernels ahead 14.3 s (numba's cache was cold: `perfprobe warmup` fills it once)\n"
        "  cache 14.1 s of 13.0: compile 0.0, measure 9.1, re-measure 4.8, judge 0.2\n"
        "  pinned[0] 3.0 s of 2.5: compile 0.5, measure 2.5, re-measure 0.0, judge 0.0\n")
    warm = dataclasses.replace(budget, compile_ahead_s=0.0, outside_s=0.3, over=())
    assert quick_budget.overrun_text(warm) == (
        "perfprobe: --quick ran past its budget: 30.9 s of 20.0 s (its probes' budgets summed), 31.2 s wall; "
        "a slow run fails nothing\n")
    assert quick_budget.overrun_text(dataclasses.replace(budget, wall_s=19.9, compile_ahead_s=0.0, outside_s=0.0)) == ""


def test_a_slow_probe_runs_past_the_budget_and_says_where_its_time_went(fakes: fake_probes.FakeClock) -> None:
    report = runner.run(["good", "slow", "skippy"], RunConfig(quick=True))
    budget = report.quick_budget
    assert budget is not None and budget.budget_s == BUDGETS["good"] + BUDGETS["slow"]  # skippy: skipped
    assert budget.exceeded and budget.wall_s == budget.spent_s == fake_probes.SLOW_S
    assert budget.over == (Overrun("slow", None, BUDGETS["slow"], fake_probes.SLOW_S, {"measure": fake_probes.SLOW_S}),)
    assert runner.exit_code(report) == 0  # slow is no failure


def test_compiling_ahead_counts_against_the_budget(fakes: fake_probes.FakeClock,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def compile_ahead(names: Any) -> int:
        fakes.now += 14.0
        return 73

    monkeypatch.setattr(runner, "_compile_ahead", compile_ahead)
    budget = runner.run(["good"], RunConfig(quick=True)).quick_budget
    assert budget is not None and budget.compile_ahead_s == 14.0 and budget.exceeded and budget.over == ()


def test_fast_full_and_replayed_runs(fakes: fake_probes.FakeClock, tmp_path: Any) -> None:
    fast = runner.run(["good", "warny"], RunConfig(quick=True, record=tmp_path / "rec.json")).quick_budget
    assert fast is not None and not fast.exceeded and fast.over == ()
    assert runner.run(["slow"], RunConfig()).quick_budget is None  # a full run has no budget
    assert runner.run(["good"], RunConfig(quick=True, replay=tmp_path / "rec.json")).quick_budget is None


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Callable[[float], tuple[int, str, str]]:
    """`perfprobe toy --quick --json` with a 2 s budget, its measurement taking the given seconds
    of the runner's fake clock."""
    monkeypatch.setitem(registry.PROBE_MODULES, "toy", "toy_probe")
    declared = declaration("toy")
    monkeypatch.setattr(sys.modules["toy_probe.declared"], "DECLARED", dataclasses.replace(declared, quick_budget_s=2.0))
    monkeypatch.setattr(runner._LoadWatch, "start", classmethod(lambda cls, config: None))
    monkeypatch.setattr(runner, "_read_host", lambda config: fake_probes.HOST)
    clock = fake_probes.FakeClock()
    monkeypatch.setattr(runner, "_now", clock)
    monkeypatch.setattr(runner, "_compile_seconds", lambda: 0.0)
    import toy_probe.measure as toy_measure

    real = toy_measure.measure

    def run(seconds: float) -> tuple[int, str, str]:
        def measure(ctx: Any) -> Any:
            clock.now += seconds
            return real(ctx)

        monkeypatch.setattr(toy_measure, "measure", measure)
        return invoke(["toy", "--quick", "--json"], capsys)

    return run


def test_the_cli_prints_the_block_on_stderr_and_keeps_stdout_json(toy: Callable[[float], tuple[int, str, str]]) -> None:
    code, out, err = toy(7.5)
    report = json.loads(out)
    jsonschema.validate(report, load_schema())
    assert report["quick_budget"]["exceeded"] is True and report["quick_budget"]["budget_s"] == 2.0
    assert report["quick_budget"]["over"] == [{"probe": "toy", "device": None, "budget_s": 2.0, "wall_s": 7.5,
                                               "stages_s": {"measure": 7.5}}]
    assert err.startswith("perfprobe: --quick ran past its budget: 7.5 s of 2.0 s")
    assert "  toy 7.5 s of 2.0: compile 0.0, measure 7.5, re-measure 0.0, judge 0.0" in err
    assert code == 0


def test_the_cli_says_nothing_of_a_run_within_its_budget(toy: Callable[[float], tuple[int, str, str]]) -> None:
    code, out, err = toy(1.0)
    report = json.loads(out)
    jsonschema.validate(report, load_schema())
    assert report["quick_budget"]["exceeded"] is False and report["quick_budget"]["over"] == []
    assert "budget" not in err and code == 0


def test_a_full_run_report_has_no_budget_field(fakes: fake_probes.FakeClock) -> None:
    assert "quick_budget" not in report_to_dict(runner.run(["good"], RunConfig()))
