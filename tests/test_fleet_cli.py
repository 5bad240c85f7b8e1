"""compare, fleet and healthcheck through the real CLI: exit codes, one-line errors, nothing dropped."""

from __future__ import annotations

import io
import json

import pytest

import fleet_reports as fr
from cli_invoke import invoke
from perfprobe.errors import UsageError
from perfprobe.fleet import healthcheck as hc
from perfprobe.fleet import hostlist, slurm


def one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfprobe: error:") and "Traceback" not in err
    return lines[0]


@pytest.fixture
def fleet_dir(tmp_path):
    hosts, _ = fr.planted_fleet()
    return fr.write_all(hosts, tmp_path / "fleet")


def test_fleet_command_names_the_planted_hosts(fleet_dir, capsys):
    code, out, _ = invoke(["fleet", str(fleet_dir), "--json"], capsys)
    result = json.loads(out)
    assert code == 1
    assert {(o["host"], o["metric"]) for o in result["groups"][0]["outliers"]} == fr.planted_fleet()[1]


def test_fleet_table_for_people(fleet_dir, capsys):
    code, out, _ = invoke(["fleet", str(fleet_dir)], capsys)
    assert code == 1 and "outlier gpu03: pinned[1]:pinned.h2d_gbs" in out and "8 host(s) in 1 hardware group" in out


def test_fleet_reads_json_lines_on_stdin(fleet_dir, capsys, monkeypatch):
    lines = "\n".join(json.dumps(json.loads(p.read_text())) for p in sorted(fleet_dir.iterdir()))
    monkeypatch.setattr("sys.stdin", io.StringIO(lines + "\n"))
    code, out, _ = invoke(["fleet", "-", "--json"], capsys)
    assert code == 1 and len(json.loads(out)["groups"][0]["hosts"]) == 8


def test_a_truncated_report_in_a_fleet_is_named_not_dropped(fleet_dir, capsys):
    text = (fleet_dir / "gpu01.json").read_text()
    (fleet_dir / "gpu01.json").write_text(text[: len(text) // 2])
    code, out, _ = invoke(["fleet", str(fleet_dir), "--json", "--expect", "gpu[01-08]"], capsys)
    result = json.loads(out)
    assert code == 1
    assert [r["source"].rsplit("/", 1)[-1] for r in result["rejected"]] == ["gpu01.json"]
    assert "truncated" in result["rejected"][0]["reason"] and result["missing"] == []


def test_fleet_expect_names_hosts_without_a_report(fleet_dir, capsys):
    code, out, _ = invoke(["fleet", str(fleet_dir), "--json", "--expect", "gpu[01-10]"], capsys)
    assert json.loads(out)["missing"] == ["gpu09", "gpu10"]


def test_fleet_baseline_out_then_compare_and_healthcheck_accept_it(fleet_dir, tmp_path, capsys):
    target = tmp_path / "baseline.json"
    invoke(["fleet", str(fleet_dir), "--baseline-out", str(target)], capsys)
    code, out, _ = invoke(["compare", str(target), str(fleet_dir / "gpu03.json"), "--json"], capsys)
    said = json.loads(out)
    # the recording's falseshare kept 0.36 of one thread's speed on padded counters: its CPUs were
    # shared, so every host made from it ran disturbed, and compare names that and calls nothing
    assert code == 0 and said["regressions"] == 0 and said["disturbed"][0].startswith("NEW: falseshare: ")
    quiet = json.loads((fleet_dir / "gpu03.json").read_text())
    quiet["disturbance"] = {**quiet["disturbance"], "disturbed": False, "why": []}
    (tmp_path / "gpu03_quiet.json").write_text(json.dumps(quiet))
    code, out, _ = invoke(["compare", str(target), str(tmp_path / "gpu03_quiet.json"), "--json"], capsys)
    assert code == 1 and json.loads(out)["regressions"] == 2
    code, out, _ = invoke(["compare", str(target), str(fleet_dir / "gpu04.json")], capsys)
    assert code == 0 and "0 regression(s)" in out


@pytest.mark.parametrize("damage, words", [
    (lambda r: {**r, "schema_version": 1}, "schema_version 1"),
    (lambda r: json.dumps(r)[:500], "truncated"),
    (lambda r: {"hello": 1}, "not a perfprobe report"),
])
def test_compare_bad_input_is_one_line_exit_2(tmp_path, capsys, damage, words):
    good = fr.h200()
    bad = damage(good)
    (tmp_path / "bad.json").write_text(bad if isinstance(bad, str) else json.dumps(bad))
    (tmp_path / "good.json").write_text(json.dumps(good))
    code, out, err = invoke(["compare", str(tmp_path / "good.json"), str(tmp_path / "bad.json")], capsys)
    assert code == 2 and out == "" and words in one_error_line(err)


def test_compare_of_mixed_hardware_is_exit_2_unless_asked(tmp_path, capsys):
    (tmp_path / "a.json").write_text(json.dumps(fr.h200()))
    (tmp_path / "b.json").write_text(json.dumps(fr.replayed("cache_kvm2c_quick.json", ("cache",))))
    code, _, err = invoke(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")], capsys)
    assert code == 2 and "different hardware" in one_error_line(err)
    code, out, _ = invoke(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--mixed"], capsys)
    # exit 0: both are quick runs, 3 repeats a figure, too few to test (stability.MIN_REPEATS), so
    # the changes are shown untested and none counts as a regression
    assert code == 0 and "compared anyway" in out


def test_fleet_of_an_empty_folder_is_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = invoke(["fleet", str(tmp_path / "empty")], capsys)
    assert code == 2 and "no reports" in one_error_line(err)


def test_fleet_of_only_broken_reports_is_exit_2(tmp_path, capsys):
    (tmp_path / "a.json").write_text("{")
    code, _, err = invoke(["fleet", str(tmp_path / "a.json")], capsys)
    assert code == 2 and "no usable report" in one_error_line(err)


def own_baseline(tmp_path, capsys, **host_changes):
    """A baseline made from this host's own `host` report (changed where asked)."""
    code, out, _ = invoke(["host", "--json"], capsys)
    report = json.loads(out)
    report["host"].update(host_changes)
    (tmp_path / "me.json").write_text(json.dumps(report))
    target = tmp_path / "baseline.json"
    invoke(["fleet", str(tmp_path / "me.json"), "--baseline-out", str(target)], capsys)
    return target


def test_healthcheck_healthy_host_would_only_resume(tmp_path, capsys):
    base = own_baseline(tmp_path, capsys)
    code, out, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host", "--node", "n1",
                             "--dry-run"], capsys)
    assert code == 0 and "healthy" in out and "State=RESUME" in err, (out, err)


def test_healthcheck_drains_on_a_fact_that_differs(tmp_path, capsys):
    code, out, _ = invoke(["host", "--json"], capsys)
    cpus = json.loads(out)["host"]["cpus"]
    base = own_baseline(tmp_path, capsys, cpus={**cpus, "usable": cpus["usable"] + [9998, 9999]})
    code, out, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host", "--node", "n1",
                             "--dry-run"], capsys)
    assert code == 1 and "State=DRAIN" in err and 'Reason=perfprobe: usable CPUs' in err
    code, out, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host", "--mode", "prolog",
                             "--json"], capsys)
    verdict = json.loads(out)
    assert code == 1 and verdict["action"] == "exit 1" and verdict["message"].startswith("perfprobe: usable CPUs")


def test_healthcheck_without_a_node_name_is_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)
    monkeypatch.delenv("SLURM_NODENAME", raising=False)
    base = own_baseline(tmp_path, capsys)
    code, _, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host"], capsys)
    assert code == 2 and "no node name" in one_error_line(err)


def test_policy_overrides_and_bad_policies(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps({"drain_on_warn": True, "regression": 0.5, "ignore": ["memlock"]}))
    policy = hc.load_policy(tmp_path / "p.json")
    assert policy.drain_on_warn and policy.regression == 0.5 and policy.ignore == ("memlock",)
    (tmp_path / "bad.json").write_text(json.dumps({"drain_everything": True}))
    with pytest.raises(UsageError):
        hc.load_policy(tmp_path / "bad.json")


def test_reason_is_prefixed_and_short():
    found = [f"metric{i} 1 GB/s vs baseline 2 GB/s (-50%)" for i in range(20)]
    text = hc.reason(found)
    assert text.startswith("perfprobe: metric0") and len(text) <= hc.MAX_REASON and text.endswith("more)")
    assert hc.ours(text) and not hc.ours("maintenance: new DIMMs") and not hc.ours(None)


def test_scontrol_node_lines_parse():
    line = ("NodeName=n3 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE+DRAIN ThreadsPerCore=1 "
            "Partitions=debug Reason=perfprobe: usable CPUs 1 vs baseline 2 [root@2025-01-31T12:00:00]")
    state = slurm.parse_node(line)
    assert state.drained and state.reason == "perfprobe: usable CPUs 1 vs baseline 2"
    assert slurm.parse_node("NodeName=n1 State=IDLE Partitions=debug").reason is None


def test_srun_command_names_files_by_node(tmp_path):
    command = slurm.srun_command(3, tmp_path, ["all", "--quick"], partition="gpu", python="py")
    assert command[:3] == ["srun", "--nodes=3", "--ntasks-per-node=1"]
    assert "--partition=gpu" in command
    assert command[-6:] == ["-m", "perfprobe.fleet.node_task", str(tmp_path), "all", "--quick", "--json"]


@pytest.mark.parametrize("text, hosts", [("n[1-3]", ["n1", "n2", "n3"]), ("a,b", ["a", "b"]),
                                         ("gpu[01-02,7]x", ["gpu01x", "gpu02x", "gpu7x"])])
def test_hostlists(text, hosts):
    assert hostlist.expand(text) == hosts


def test_a_timing_regression_drains_only_when_the_re_measurement_confirms_it():
    first = ["cache:latency_ns.DRAM 180 ns vs baseline 120 ns (+50%)", "usable CPUs 1 vs baseline 2",
             "cache:read_gbs.L1.1t 50 GB/s vs baseline 100 GB/s (-50%)", "falseshare error: measuring failed"]
    second = ["cache:latency_ns.DRAM 175 ns vs baseline 120 ns (+46%)"]
    assert hc.confirmed(first, second) == first[:2] + first[3:]


def test_no_color_on_a_terminal_prints_no_escape(monkeypatch, capsys):
    from perfprobe.fleet import commands

    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich draws as on a terminal
    commands._print(["[bold red]outlier[/] gpu03"])
    out = capsys.readouterr().out
    assert "outlier gpu03" in out and "\x1b" not in out


@pytest.mark.parametrize("policy, confirms", [(None, False), ({"drain_on_warn": True}, True)])
def test_healthcheck_re_measures_warns_only_when_its_policy_drains_on_them(tmp_path, capsys, monkeypatch,
                                                                          policy, confirms):
    """...and measures only its policy's metrics unless it drains on warns (every rule's figures then)."""
    from perfprobe.fleet import health_run
    from perfprobe.fleet.metrics import KEY_METRICS

    base = own_baseline(tmp_path, capsys)
    report = json.loads((tmp_path / "me.json").read_text())
    asked, judged_asked = [], []

    def measured(names, deadline, outputs=None, confirm_warns=True, judged=None, meanwhile=None):
        asked.append(confirm_warns)
        judged_asked.append(judged)
        return health_run.Measured(report)

    monkeypatch.setattr(health_run, "measure", measured)
    extra = []
    if policy is not None:
        (tmp_path / "policy.json").write_text(json.dumps(policy))
        extra = ["--policy", str(tmp_path / "policy.json")]
    code, out, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host", "--node", "n1",
                             "--dry-run", *extra], capsys)
    assert code == 0 and asked == [confirms], (out, err)
    assert judged_asked == [None if confirms else tuple(KEY_METRICS)]


def test_healthcheck_confirms_on_another_core_than_the_first_measurement(tmp_path, capsys, monkeypatch):
    """The confirmation's one-thread figures avoid the CPU the first measurement timed them on
    (its report's facts.placement.one_thread): one core's neighbour does not drain the node."""
    from perfprobe.fleet import health_run

    base = own_baseline(tmp_path, capsys)
    report = json.loads((tmp_path / "me.json").read_text())

    def on(cpu: int) -> dict:
        return {**report, "results": [*report["results"], {"probe": "cache", "verdict": "pass", "metrics": {},
                                                           "facts": {"placement": {"one_thread": cpu}}}]}

    first, slow = on(3), ["cache:latency_ns.L2 6 ns vs baseline 5.4 (+11%)"]
    monkeypatch.setattr(hc, "problems", lambda rep, group, policy=hc.DEFAULT_POLICY: slow if rep is first else [])
    for second, where in ((on(4), "on another core"), (on(3), "on a re-measurement")):  # one CPU: it could not move
        calls: list = []

        def measured(names, deadline, outputs=None, confirm_warns=True, judged=None, meanwhile=None,
                     avoid_cpus=(), second=second, calls=calls):
            calls.append((list(names), tuple(avoid_cpus)))
            return health_run.Measured(first if len(calls) == 1 else second)

        monkeypatch.setattr(health_run, "measure", measured)
        code, out, err = invoke(["healthcheck", "--baseline", str(base), "--probes", "host", "--node", "n1",
                                 "--dry-run", "--json"], capsys)
        verdict = json.loads(out)
        assert code == 0 and verdict["healthy"] is True, (out, err)
        assert f"not confirmed {where}: {slow[0]}" in verdict["message"] and verdict["not_confirmed"] == slow
        assert calls == [(["host"], ()), (["host", "cache"], (3,))]


def test_one_thread_cpus_read_only_whole_cpu_numbers():
    results = [{"facts": {"placement": {"one_thread": 5}}}, {"facts": {"placement": {"one_thread": True}}},
               {"facts": {"placement": {"one_thread": -1}}}, {"facts": {"placement": "x"}}, {"facts": None}, "x",
               {"facts": {"placement": {"one_thread": 2}}}]
    assert hc.one_thread_cpus({"results": results}) == (2, 5)
    assert hc.one_thread_cpus({}) == ()
