"""A health check cut off by its deadline while other processes kept the host busy names the busy
host and drains nothing; cut off on a quiet host, it drains the node as slow (health_run.measure,
health_command._checked_within). CI's test-slurm failed on the first: three nodes' checks on two
CPUs, a healthy node drained as "ran past 40 s (the node is slow)" (2026-12-06)."""

from __future__ import annotations

import json

import pytest

from cli_invoke import invoke
from perfprobe.engine.config import RunConfig
from perfprobe.fleet import health_command, health_run
from perfprobe.fleet import healthcheck as hc
from perfprobe.host.load import LoadWatch
from test_fleet_cli import own_baseline


@pytest.mark.parametrize("others, busy", [(0.6, True), (0.1, False), (None, False)])
def test_a_measurement_past_its_deadline_is_busy_only_when_others_used_the_host(monkeypatch, others, busy):
    """A real child, killed half a second in (4 s of the deadline are kept for scontrol); the host's
    load is what /proc/stat would have said (`others`: the share of CPU time other processes used)."""
    monkeypatch.setattr(LoadWatch, "fractions", lambda self: (0.0, others))
    measured = health_run.measure(["host", "cache"], health_run.Deadline(health_run.ACT_RESERVE_S + 0.5))
    assert measured.report is None
    if busy:
        assert measured.problem is None
        assert measured.busy == ("health check ran past 4.5 s while the host was busy, nothing judged: "
                                 "other processes used 60% of the host's CPU time (over 25%)")
    else:
        assert measured.busy is None and measured.problem == "health check ran past 4.5 s (the node is slow)"


def test_a_busy_host_is_left_as_it_is_and_said_so(tmp_path, capsys, monkeypatch):
    base = own_baseline(tmp_path, capsys)
    note = "health check ran past 40 s while the host was busy, nothing judged: other processes used 60% ..."
    monkeypatch.setattr(health_run, "measure", lambda *a, **k: health_run.Measured(None, busy=note))
    code, out, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host", "--node", "n1",
                             "--dry-run", "--json"], capsys)
    assert code == 0 and "scontrol" not in err, (out, err)
    assert json.loads(out) == {"node": "n1", "healthy": None, "action": "none", "message": note, "problems": [],
                               "not_confirmed": [], "waiting": []}


def test_a_busy_re_measurement_drains_on_facts_only(monkeypatch):
    """The first run found a timing regression and a fact; the re-measurement that would confirm the
    timing was cut off on a busy host: the fact stands, the timing does not."""
    regression, fact = "cache:latency_ns.DRAM 180 ns vs baseline 120 ns (+50%)", "usable CPUs 1 vs baseline 2"
    runs = iter([health_run.Measured({"host": {}, "results": []}), health_run.Measured(None, busy="busy")])
    monkeypatch.setattr(health_run, "measure", lambda *a, **k: next(runs))
    monkeypatch.setattr(hc, "problems", lambda report, group, rules: [] if not report.get("results") and
                        "cpus" in report["host"] else [regression, fact])
    monkeypatch.setattr(health_command, "_group", lambda base, host, path: {})
    monkeypatch.setattr("perfprobe.host.read_host_facts", lambda: {"cpus": {}})
    checked = health_command._checked_within(["host", "cache"], RunConfig(quick=True), {}, None, hc.DEFAULT_POLICY,
                                             health_run.Deadline(40))
    assert checked.found == [fact] and checked.busy == "busy"
