"""Policy.regression_checks: a timing regression drains only when that many consecutive health checks
showed it (healthcheck.streaks, held_for_streak; the count in --state DIR, health_streak.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli_invoke import invoke
from perfprobe.fleet import health_run, health_streak
from perfprobe.fleet import healthcheck as hc
from test_fleet_cli import own_baseline

SLOW = "cache:latency_ns.DRAM 200 ns vs baseline 168 (+19%)"
FACT = "usable CPUs 1 vs baseline 2"


def test_a_streak_grows_while_checks_show_the_metric_and_breaks_when_one_does_not():
    first = hc.streaks({}, {"cache:a": SLOW})
    assert first == {"cache:a": 1}
    second = hc.streaks(first, {"cache:a": SLOW, "cache:b": SLOW})
    assert second == {"cache:a": 2, "cache:b": 1}
    assert hc.streaks(second, {"cache:b": SLOW}) == {"cache:b": 2}


@given(st.lists(st.booleans(), max_size=30), st.integers(1, 5))
def test_a_metric_drains_exactly_when_its_last_checks_in_a_row_showed_it(shown, needed):
    policy = hc.Policy(regression_checks=needed)
    counts: dict[str, int] = {}
    run = 0  # checks in a row that showed it, counted here independently
    for regressed in shown:
        run = run + 1 if regressed else 0
        found = [SLOW, FACT] if regressed else [FACT]
        counts = hc.streaks(counts, hc.regressed_metrics(found))
        drains, waits = hc.held_for_streak(found, counts, policy)
        assert FACT in drains  # a fact never waits
        assert (SLOW in drains) == (regressed and run >= needed)
        assert len(waits) == (1 if regressed and run < needed else 0)


def test_what_waits_is_named_with_its_count():
    drains, waits = hc.held_for_streak([SLOW], {"cache:latency_ns.DRAM": 1}, hc.Policy(regression_checks=3))
    assert drains == [] and waits == [f"{SLOW} [1 of 3 consecutive checks]"]


def test_the_count_is_kept_between_checks_and_forgotten_after_the_gap(tmp_path):
    state = tmp_path / "state"
    assert health_streak.previous(state, 1000.0, 60.0) == health_streak.Streaks({})
    health_streak.save(state, health_streak.Streaks({"cache:a": 2}, "2026-12-07T22:04:15Z"), 1000.0)
    assert health_streak.previous(state, 1050.0, 60.0) == ({"cache:a": 2}, "2026-12-07T22:04:15Z")
    assert health_streak.previous(state, 1061.0, 60.0).counts == {}  # the checks stopped for longer than the gap
    assert health_streak.previous(state, 999.0, 60.0).counts == {}   # written in the future: the clock went back
    assert sorted(p.name for p in state.iterdir()) == [health_streak.STREAK_FILE]


@pytest.mark.parametrize("content", ["{", '{"time": 1, "counts": {"cache:a": 0}}', '{"time": 1}', "[]",
                                     '{"time": 1, "counts": {"cache:a": true}}'])
def test_a_damaged_count_is_an_error_naming_the_file(tmp_path, content):
    (tmp_path / health_streak.STREAK_FILE).write_text(content)
    with pytest.raises(health_streak.StreakError, match=health_streak.STREAK_FILE):
        health_streak.previous(tmp_path, 2.0, 60.0)


def test_a_fifo_in_its_place_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / health_streak.STREAK_FILE)
    with pytest.raises(health_streak.StreakError, match="FIFO|fifo"):
        health_streak.previous(tmp_path, 2.0, 60.0)


def test_an_unwritable_folder_is_an_error_and_leaves_nothing(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(health_streak.StreakError, match="cannot write"):
        health_streak.save(tmp_path / "file" / "state", health_streak.Streaks({"cache:a": 1}), 1.0)
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


@pytest.mark.parametrize("policy, needle", [({"regression_checks": 0}, "regression_checks"),
                                            ({"regression_checks": True}, "regression_checks"),
                                            ({"regression_checks": 2.5}, "regression_checks"),
                                            ({"regression_gap_s": 0}, "regression_gap_s")])
def test_a_bad_streak_policy_is_one_line_and_exit_2(tmp_path, capsys, policy, needle):
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    code, out, err = invoke(["healthcheck", "--baseline", str(tmp_path / "none.json"), "--policy",
                             str(tmp_path / "policy.json"), "--dry-run"], capsys)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err


def _check(tmp_path: Path, capsys, base: Path, state: Path) -> tuple[int, dict]:
    code, out, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host", "--node", "n1", "--dry-run",
                             "--json", "--policy", str(tmp_path / "policy.json"), "--state", str(state)], capsys)
    return code, json.loads(out)


@pytest.fixture
def checks(tmp_path, capsys, monkeypatch):
    """A health check under regression_checks 2 whose every measurement shows (and confirms) SLOW
    while `shown[0]` is true; returns a function running one check."""
    base = own_baseline(tmp_path, capsys)
    report = json.loads((tmp_path / "me.json").read_text())
    report["disturbance"] = {"disturbed": False}  # whatever else ran beside this test's `host` run
    (tmp_path / "policy.json").write_text(json.dumps({"regression_checks": 2}))
    shown = [True]
    runs = iter(range(10_000))
    monkeypatch.setattr(hc, "problems", lambda rep, group, policy=hc.DEFAULT_POLICY:  # as problems: none if disturbed,
                        [SLOW] if shown[0] and rep.get("results") and not hc.disturbed(rep, "run") else [])  # no facts
    monkeypatch.setattr(health_run, "measure", lambda *a, **k: health_run.Measured(  # each run its own start
        {**report, "host": {**report["host"], "time_utc": f"2026-12-07T22:00:00.{next(runs):06d}Z"}}))

    def check(state: Path, regressed: bool = True) -> tuple[int, dict]:
        shown[0] = regressed
        return _check(tmp_path, capsys, base, state)
    return check


def test_the_second_check_in_a_row_drains_and_a_clean_check_between_starts_again(tmp_path, checks):
    state = tmp_path / "state"
    code, verdict = checks(state)
    assert code == 0 and verdict["healthy"] is True and verdict["problems"] == []
    assert verdict["waiting"] == [f"{SLOW} [1 of 2 consecutive checks]"]
    assert "waiting for 2 consecutive checks to drain" in verdict["message"]
    assert checks(state, regressed=False)[0] == 0
    assert checks(state)[0] == 0  # the streak was broken: 1 of 2 again
    code, verdict = checks(state)
    assert code == 1 and verdict["problems"] == [SLOW] and verdict["waiting"] == []


def test_a_count_that_cannot_be_read_drains_at_once_and_says_why(tmp_path, checks):
    state = tmp_path / "state"
    state.mkdir()
    (state / health_streak.STREAK_FILE).write_text("{")
    code, verdict = checks(state)
    assert code == 1 and verdict["problems"] == [SLOW]
    assert "drained at the first check: the count of consecutive checks could not be read" in verdict["message"]
    assert checks(state)[0] == 1  # counted again from the last check: 2 of 2


def test_a_disturbed_run_neither_extends_nor_breaks_a_streak(tmp_path, checks, monkeypatch):
    state = tmp_path / "state"
    assert checks(state)[0] == 0
    judged = hc.disturbed
    monkeypatch.setattr(hc, "disturbed", lambda report, side: [f"{side}: the hypervisor took 9%"])
    for regressed in (False, True):  # judged no figure: the streak stays at 1
        code, verdict = checks(state, regressed=regressed)
        assert code == 0 and "the run was disturbed" in verdict["message"]
    monkeypatch.setattr(hc, "disturbed", judged)
    code, verdict = checks(state)
    assert code == 1 and verdict["problems"] == [SLOW]


def test_a_count_that_cannot_be_kept_drains_at_once(tmp_path, checks):
    (tmp_path / "file").write_text("")
    code, verdict = checks(tmp_path / "file" / "state")
    assert code == 1 and "could not be kept" in verdict["message"]


def test_detached_counts_the_background_run_it_judges_once(tmp_path, capsys, monkeypatch):
    """--detached judges the last finished background run until the next one finishes: two checks
    of one run are one check of the streak, a new run the next."""
    from perfprobe.fleet import health_command

    base = own_baseline(tmp_path, capsys)
    report = json.loads((tmp_path / "me.json").read_text())
    report["disturbance"] = {"disturbed": False}
    (tmp_path / "policy.json").write_text(json.dumps({"regression_checks": 2}))
    monkeypatch.setattr(hc, "problems", lambda rep, group, policy=hc.DEFAULT_POLICY: [SLOW])
    last = {**report, "host": {**report["host"], "time_utc": "2026-12-07T22:00:00Z"}}
    monkeypatch.setattr(health_command, "_last_background", lambda state: last)
    state = tmp_path / "state"
    for _ in range(3):
        code, out, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host", "--node", "n1",
                                 "--dry-run", "--json", "--detached", "--policy", str(tmp_path / "policy.json"),
                                 "--state", str(state)], capsys)
        assert code == 0 and json.loads(out)["waiting"], (out, err)
    last = {**report, "host": {**report["host"], "time_utc": "2026-12-07T22:05:00Z"}}
    code, out, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host", "--node", "n1", "--dry-run",
                             "--json", "--detached", "--policy", str(tmp_path / "policy.json"), "--state", str(state)],
                            capsys)
    assert code == 1 and json.loads(out)["problems"] == [SLOW]


def test_a_confirmation_cut_off_on_a_busy_host_neither_extends_nor_breaks_a_streak(tmp_path, checks, monkeypatch):
    """The first run showed the regression and a fact; the re-measurement that would confirm the
    timing was cut off while the host was busy: the fact drains, the streak stays where it was."""
    state = tmp_path / "state"
    assert checks(state)[0] == 0  # 1 of 2
    before = (state / health_streak.STREAK_FILE).read_text()
    fact = "usable CPUs 1 vs baseline 2"
    monkeypatch.setattr(hc, "problems", lambda rep, group, policy=hc.DEFAULT_POLICY:
                        [SLOW, fact] if rep.get("results") else [])
    first = health_run.measure
    calls = []

    def measured(*args, **kwargs):
        calls.append(1)
        return first() if len(calls) == 1 else health_run.Measured(None, busy="busy")
    monkeypatch.setattr(health_run, "measure", measured)
    code, verdict = checks(state)
    assert code == 1 and verdict["problems"] == [fact] and verdict["waiting"] == []
    assert (state / health_streak.STREAK_FILE).read_text() == before


def test_a_waiting_regression_leaves_the_node_as_it_is(tmp_path, checks):
    """Neither drained (1 of 2) nor resumed: a node perfprobe drained that still shows the regression
    at the first check of a new streak (the policy raised, the checks stopped) stays drained."""
    code, verdict = checks(tmp_path / "state")
    assert code == 0 and verdict["waiting"] and verdict["action"] == "none"


def test_a_disturbed_confirmation_neither_extends_nor_breaks_a_streak(tmp_path, checks, monkeypatch):
    state = tmp_path / "state"
    assert checks(state)[0] == 0
    before = (state / health_streak.STREAK_FILE).read_text()
    first, calls = health_run.measure, []

    def measured(*args, **kwargs):
        calls.append(1)
        report = first().report
        if len(calls) % 2 == 0:  # each check's re-measurement marked itself disturbed
            report = {**report, "disturbance": {"disturbed": True, "why": ["the hypervisor took 9%"]}}
        return health_run.Measured(report)
    monkeypatch.setattr(health_run, "measure", measured)
    code, verdict = checks(state)
    assert code == 0 and verdict["not_confirmed"] == [SLOW] and verdict["waiting"] == []
    assert (state / health_streak.STREAK_FILE).read_text() == before


def test_a_check_under_one_check_forgets_the_counts_of_an_earlier_policy(tmp_path, checks):
    state = tmp_path / "state"
    assert checks(state)[0] == 0 and (state / health_streak.STREAK_FILE).exists()
    (tmp_path / "policy.json").write_text(json.dumps({"regression_checks": 1}))
    assert checks(state)[0] == 1
    assert not (state / health_streak.STREAK_FILE).exists()
    (tmp_path / "policy.json").write_text(json.dumps({"regression_checks": 2}))
    assert checks(state)[0] == 0  # 1 of 2 again, not 2 of 2 from the count before


def test_a_long_run_name_is_kept_within_the_schema(tmp_path):
    health_streak.save(tmp_path, health_streak.Streaks({"cache:a": 1}, "x" * 500), 10.0)
    assert health_streak.previous(tmp_path, 11.0, 60.0).run == "x" * health_streak.RUN_CHARS
