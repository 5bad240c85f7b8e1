"""The runner: verdicts, skips, errors, --require-gpu, exit codes, record and replay."""

from __future__ import annotations

import json

import pytest

import fake_probes
from perfprobe.engine import runner
from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Verdict
from perfprobe.errors import UsageError


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setattr(runner, "load_probe", lambda name: fake_probes.PROBES[name])
    monkeypatch.setattr(runner, "_read_host", lambda config: fake_probes.HOST)


def test_pass_result_carries_metrics_and_exit_0():
    report = runner.run(["good"], RunConfig())
    (result,) = report.results
    assert result.verdict is Verdict.PASS and result.metrics["latency_ns.L1"].value == 1.5
    assert runner.exit_code(report) == 0


def test_warn_gives_exit_1_and_error_beats_it():
    assert runner.exit_code(runner.run(["warny"], RunConfig())) == 1
    report = runner.run(["warny", "boom", "good"], RunConfig())
    assert [r.verdict for r in report.results] == [Verdict.WARN, Verdict.ERROR, Verdict.PASS]
    assert runner.exit_code(report) == 3
    assert "kernel exploded" in report.results[1].summary


def test_skip_keeps_reason_and_hint():
    (result,) = runner.run(["skippy"], RunConfig()).results
    assert result.verdict is Verdict.SKIP
    assert result.findings[0].message == "needs 2 CPUs" and result.findings[0].advice == "run without taskset"


def test_missing_gpu_is_skip_or_error_under_require_gpu():
    assert runner.run(["gpu"], RunConfig()).results[0].verdict is Verdict.SKIP
    report = runner.run(["gpu"], RunConfig(require_gpu=True))
    assert report.results[0].verdict is Verdict.ERROR and runner.exit_code(report) == 3


def test_record_then_replay_gives_the_same_judgement(tmp_path):
    recording = tmp_path / "rec.json"
    first = runner.run(["good", "warny"], RunConfig(record=recording))
    saved = json.loads(recording.read_text())
    assert saved["raw"]["good"] == {"latency_ns": 1.5} and saved["host"]["cpu"]["model"] == "Test CPU"
    replayed = runner.run(["good", "warny"], RunConfig(replay=recording))
    assert [r.summary for r in replayed.results] == [r.summary for r in first.results]


def test_replay_of_a_probe_not_recorded_is_a_skip(tmp_path):
    recording = tmp_path / "rec.json"
    recording.write_text(json.dumps({"host": fake_probes.HOST, "raw": {}}))
    (result,) = runner.run(["good"], RunConfig(replay=recording)).results
    assert result.verdict is Verdict.SKIP and "not in the recording" in result.summary


@pytest.mark.parametrize("content", ["not json", "[]", '{"host": {}}'])
def test_unreadable_recording_is_usage_error(tmp_path, content):
    recording = tmp_path / "rec.json"
    recording.write_text(content)
    with pytest.raises(UsageError, match="--replay"):
        runner.run(["good"], RunConfig(replay=recording))


def test_fsroot_must_be_a_tree(tmp_path, monkeypatch):
    monkeypatch.undo()
    with pytest.raises(UsageError, match="not a directory"):
        runner._check_fsroot(RunConfig(fsroot=tmp_path / "missing"))
    with pytest.raises(UsageError, match="no sys/ or proc/"):
        runner._check_fsroot(RunConfig(fsroot=tmp_path))


def test_replay_of_device_all_gives_every_recorded_gpu(tmp_path):
    recording = tmp_path / "rec.json"
    recording.write_text(json.dumps({"host": fake_probes.HOST,
                                     "raw": {"gpu[0]": {"latency_ns": 1}, "gpu[1]": {"latency_ns": 2}}}))
    results = runner.run(["gpu"], RunConfig(replay=recording, device="all")).results
    assert [(r.device, r.verdict) for r in results] == [(0, Verdict.PASS), (1, Verdict.PASS)]


def test_a_recording_that_cannot_be_written_at_the_end_is_said_not_raised(fakes, tmp_path, capsys):
    """--record is checked before the run; if its folder vanishes meanwhile, the report survives."""
    target = tmp_path / "gone" / "rec.json"
    report = runner.run(["good"], RunConfig(record=target))
    assert report.results[0].verdict is Verdict.PASS
    assert "--record" in capsys.readouterr().err and not target.exists()
