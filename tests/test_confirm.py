"""Confirm before warning (issue 12 item 1): the pure combination of a first and a second judgement,
and the runner's use of a probe's `remeasure` (fake probes, no kernels)."""

from __future__ import annotations

import sys
import types
from typing import Any, Mapping

import jsonschema

from perfprobe import load_schema
from perfprobe.engine import confirm, runner
from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Assessment, Finding, Report, Verdict
from perfprobe.engine.probe import Probe, ProbeContext
from perfprobe.engine.progress import null_progress
from perfprobe.render.json import report_to_dict

LINE = ("line",)


def warn(message: str, figure: float, keys: tuple[str, ...] = LINE) -> Finding:
    return Finding(Verdict.WARN, message, "pad", confirm=keys, figure=figure)


def test_a_warn_the_second_judgement_repeats_stands_with_both_figures() -> None:
    (found,) = confirm.combine([warn("line 128 B", 128)], [warn("line 128 B", 128)])
    assert found.verdict is Verdict.WARN and found.message == "line 128 B"
    assert found.confirmation is not None and found.confirmation["confirmed"] is True
    assert (found.confirmation["first"]["figure"], found.confirmation["second"]["figure"]) == (128, 128)


def test_a_warn_not_repeated_becomes_a_pass_note_with_both_figures() -> None:
    second = [Finding(Verdict.PASS, "line 64 B, as reported", confirm=LINE, figure=64)]
    (found,) = confirm.combine([warn("line 512 B", 512)], second)
    assert found.verdict is Verdict.PASS
    assert found.message == "not confirmed on a re-measurement: line 512 B then line 64 B, as reported"
    assert found.confirmation is not None and found.confirmation["confirmed"] is False
    assert (found.confirmation["first"]["figure"], found.confirmation["second"]["figure"]) == (512, 64)


def test_facts_and_passes_are_never_touched_and_keys_are_gathered_once() -> None:
    fact = Finding(Verdict.WARN, "governor powersave")
    note = Finding(Verdict.PASS, "fine", confirm=LINE)
    first = [fact, note, warn("a", 1, ("x", "y")), warn("b", 2, ("y",))]
    assert confirm.keys_to_confirm(first) == ("x", "y")
    assert confirm.keys_to_confirm([fact, note]) == ()
    combined = confirm.combine(first, [])
    assert combined[:2] == (fact, note)
    assert [f.verdict for f in combined[2:]] == [Verdict.PASS, Verdict.PASS]  # nothing to confirm them


class FakeMeasure:
    """A measure module: the first measurement says 512, the re-measurement `second`."""

    def __init__(self, second: int) -> None:
        self.second = second
        self.asked: list[tuple[str, ...]] = []

    def remeasure(self, ctx: ProbeContext, raw: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
        self.asked.append(keys)
        return {**raw, "line": self.second}


def judge(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Assessment:
    line = int(raw["line"])
    verdict = Verdict.WARN if line != 64 else Verdict.PASS
    return Assessment(summary=f"line {line}", findings=(Finding(verdict, f"line {line} B", confirm=LINE,
                                                                 figure=line),))


def _run(monkeypatch: Any, second: int, replayed: Mapping[str, Any] | None = None,
         measure_module: str = "fake_confirm_measure") -> tuple[Any, Any, FakeMeasure]:
    fake = FakeMeasure(second)
    module = types.ModuleType("fake_confirm_measure")
    module.remeasure = fake.remeasure  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_confirm_measure", module)
    probe = Probe(name="fake", title="fake", judge=judge, measure_module=measure_module)
    monkeypatch.setattr(runner, "_measure", lambda p, c: {"line": 512})
    ctx = ProbeContext(config=RunConfig(), host={}, progress=null_progress)
    result, raw = runner.run_one(probe, ctx, None, replayed)
    return result, raw, fake


def test_the_runner_issues_a_warn_only_when_the_remeasurement_agrees(monkeypatch: Any) -> None:
    result, raw, fake = _run(monkeypatch, second=512)
    assert result.verdict is Verdict.WARN and fake.asked == [LINE]
    assert raw[confirm.SECOND_RAW] == {"line": 512}
    result, raw, _ = _run(monkeypatch, second=64)
    assert result.verdict is Verdict.PASS and result.findings[0].message.startswith("not confirmed")
    written = report_to_dict(Report("0", {}, (result,)))["results"][0]
    schema = load_schema()
    jsonschema.validate(written, {**schema["$defs"]["result"], "$defs": schema["$defs"]})  # optional field
    assert written["findings"][0]["confirmation"]["second"]["figure"] == 64


def test_remeasure_is_found_when_measure_module_names_a_function(monkeypatch: Any) -> None:
    result, raw, fake = _run(monkeypatch, second=64, measure_module="fake_confirm_measure:measure")
    assert fake.asked == [LINE] and raw[confirm.SECOND_RAW] == {"line": 64}
    assert result.verdict is Verdict.PASS and result.findings[0].message.startswith("not confirmed")


def test_a_replay_judges_the_recorded_remeasurement_and_measures_nothing(monkeypatch: Any) -> None:
    result, _, fake = _run(monkeypatch, second=512, replayed={"line": 512, confirm.SECOND_RAW: {"line": 64}})
    assert result.verdict is Verdict.PASS and fake.asked == []
    old, _, fake = _run(monkeypatch, second=64, replayed={"line": 512})  # recorded before confirmation
    assert old.verdict is Verdict.WARN and fake.asked == []


def test_a_remeasurement_that_cannot_be_judged_leaves_the_first_judgement(monkeypatch: Any) -> None:
    result, _, _ = _run(monkeypatch, second=512, replayed={"line": 512, confirm.SECOND_RAW: {"no": "line"}})
    assert result.verdict is Verdict.WARN and result.findings[0].confirmation is None


def test_without_confirming_a_warn_becomes_a_not_confirmed_note_and_nothing_is_measured(monkeypatch: Any) -> None:
    # the health check under a policy that drains on no warn (RunConfig.confirm_warns False)
    fake = FakeMeasure(512)
    module = types.ModuleType("fake_confirm_measure")
    module.remeasure = fake.remeasure  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_confirm_measure", module)
    probe = Probe(name="fake", title="fake", judge=judge, measure_module="fake_confirm_measure")
    monkeypatch.setattr(runner, "_measure", lambda p, c: {"line": 512})
    ctx = ProbeContext(config=RunConfig(confirm_warns=False), host={}, progress=null_progress)
    result, raw = runner.run_one(probe, ctx, None, None)
    assert result.verdict is Verdict.PASS and fake.asked == [] and confirm.SECOND_RAW not in raw
    assert result.findings[0].message.startswith(confirm.NOT_CONFIRMED) and "line 512 B" in result.findings[0].message
