"""The ring against the physical limit (issue 29): twice the one-way handoff of a line, measured with
falseshare's kernel in the same run; judged on a recording of the slot-polled ring
(tests/data/ipc_kvm2c_quick_slot.json) and on recordings of the naive ring made before, which
replay to the same verdicts without the new figures."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from perfprobe import cli, load_schema
from perfprobe.engine.stability import unstable
from perfprobe.probes import ipc
from perfprobe.probes.ipc import figures, judge, plan, rules

DATA = Path(__file__).parent / "data"
NEW = DATA / "ipc_kvm2c_quick_slot.json"
OLD = [DATA / n for n in ("ipc_h200_full.json", "ipc_h200_quick.json", "ipc_kvm2c_quick.json")]


def _load(path: Path) -> tuple[dict, dict]:
    rec = json.loads(path.read_text())
    return rec["raw"]["ipc"], rec["host"]


def test_the_new_recording_carries_the_limit_with_its_spread() -> None:
    raw, host = _load(NEW)
    metrics = judge(raw, host).metrics
    fraction, handoff, rtt = (metrics[k] for k in ("ring_limit_fraction.64B", "handoff_ns", "rtt_us.shm_spin.64B"))
    assert handoff.unit == "ns" and handoff.spread is not None and handoff.spread.n == 5
    assert fraction.unit == "fraction" and fraction.spread is not None and rtt.spread is not None
    assert fraction.spread.n == rtt.spread.n
    f, h, r = float(fraction.value), float(handoff.value), float(rtt.value)  # type: ignore[arg-type]
    assert rtt.spread is not None and f == pytest.approx(2 * h / 1000 / r, rel=0.01)
    assert figures.ring_protocol(raw) == "slot-polled" and figures.over_limit(raw) == pytest.approx(1 / f, rel=0.01)
    assert raw["runs"]["two_cores"]["shm_spin"]["64B"]["pingpong"]["batch"] == plan.SPIN_BATCH


def test_the_limit_finding_names_the_handoff_and_the_cpus() -> None:
    raw, host = _load(NEW)
    (finding,) = rules.rule_ring_limit(raw, host)
    assert "of the physical limit" in finding.message and "CPUs 0 and 1" in finding.message
    assert "falseshare" in finding.message and "56 B" in finding.advice


@pytest.mark.parametrize("path", OLD, ids=lambda p: p.name)
def test_old_recordings_replay_without_the_limit(path: Path, capsys) -> None:
    """Recorded with the naive ring: no handoff, so no limit figure and no limit finding; the
    verdict is the one they always had (pass) and the report is valid."""
    raw, host = _load(path)
    result = judge(raw, host)
    assert "ring_limit_fraction.64B" not in result.metrics and rules.rule_ring_limit(raw, host) == []
    assert figures.ring_protocol(raw) == "naive"
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["ipc", "--json", "--replay", str(path)])
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, load_schema())
    assert report["results"][0]["verdict"] == "pass" and exit_info.value.code == 0


def test_the_new_recording_replays_through_the_cli(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["ipc", "--json", "--replay", str(NEW)])
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, load_schema())
    result = report["results"][0]
    assert result["verdict"] == "pass" and exit_info.value.code == 0
    assert "of the hardware's limit" in result["summary"]


def test_a_ring_faster_than_two_handoffs_is_named() -> None:
    raw, host = _load(NEW)
    metrics = dict(judge(raw, host).metrics)
    assert unstable(metrics, ipc.PROBE.relations, float("inf")) == {}
    raw["handoff"]["one_way_ns"]["median"] = 1000 * raw["runs"]["two_cores"]["shm_spin"]["64B"]["pingpong"]["rtt_us"]["median"]
    found = unstable(judge(raw, host).metrics, ipc.PROBE.relations, float("inf"))
    assert list(found) == ["ring_limit_fraction.64B"] and "two core-to-core handoffs" in found["ring_limit_fraction.64B"]


def test_only_the_spinning_ring_is_timed_in_batches() -> None:
    assert plan.timing_batch("shm_spin", 64) == plan.timing_batch("shm_spin", 4 << 10) == plan.SPIN_BATCH
    assert plan.timing_batch("shm_spin", 64 << 10) == 1
    assert {plan.timing_batch(t, 64) for t in plan.TRANSPORTS if t != "shm_spin"} == {1}


def test_no_limit_on_one_cpu() -> None:
    from perfprobe.probes.ipc import measure

    assert measure.handoff_of(plan.Placement("same_cpu", (0, 0), ""), plan.QUICK) is None
    raw, host = _load(NEW)
    raw["handoff"] = None
    assert figures.limit_fraction(raw) is None and rules.rule_ring_limit(raw, host) == []
