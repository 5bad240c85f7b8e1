"""cgroup limits as host facts (perfprobe/host/cgroup.py), host's rules on them, the memory budget
under a limit, the health check's facts; on captured trees (tests/data/cgroup_v1_quota, captured on
this project's test host by tests/data/capture_cgroup_tree.sh; tests/data/cgroup_v2_synthetic,
written by hand, its README says how) and on small trees built in tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from perfprobe.engine.model import Verdict
from perfprobe.fleet import healthcheck as hc
from perfprobe.fleet.facts import flat_facts
from perfprobe.host import read_host_facts
from perfprobe.host.cgroup import read_cgroup
from perfprobe.host.facts import cpu_bound, cpu_quota, memory_limit
from perfprobe.host.sysroot import SysRoot
from perfprobe.probes.host import judge, limits
from perfprobe.system import budget

DATA = Path(__file__).parent / "data"
V1, V2 = DATA / "cgroup_v1_quota", DATA / "cgroup_v2_synthetic"


def _messages(host: dict, raw: dict | None = None, verdict: Verdict | None = None) -> list[str]:
    return [f.message for f in judge(raw or {}, host).findings if verdict is None or f.verdict is verdict]


def test_v1_tree_reads_the_quota_the_limit_and_the_throttling() -> None:
    cg = read_host_facts(V1)["cgroup"]
    assert cg["version"] == 1 and cg["cpu_quota_cpus"] == 0.2
    assert (cg["cpu_quota_us"], cg["cpu_period_us"], cg["cpu_quota_file"]) == (20000, 100000, "cpu.cfs_quota_us")
    assert cg["cpu_quota_group"].startswith("/perfprobe-capture-")
    assert cg["nr_throttled"] == 7 and cg["throttled_usec"] == 399854  # v1's throttled_time is ns
    assert cg["memory_max_bytes"] == 300 << 20 and cg["memory_high_bytes"] is None  # v1 has no high mark
    assert cg["pids_max"] == 64 and cg["pids_current"] == 2


def test_v2_tree_takes_the_tightest_limit_on_the_path() -> None:
    cg = read_host_facts(V2)["cgroup"]
    assert cg["version"] == 2 and cg["cpu_quota_cpus"] == 1.5 and cg["cpu_quota_group"] == "/kubepods/pod1"
    assert (cg["nr_periods"], cg["nr_throttled"], cg["throttled_usec"]) == (5000, 1200, 36_000_000)  # the pod's
    assert cg["memory_max_bytes"] == 1 << 30 and cg["memory_high_bytes"] == 768 << 20
    assert cg["memory_limit_group"] == "/kubepods/pod1/ctr" and cg["memory_current_bytes"] == 384 << 20
    assert cg["pids_max"] == 128 and cg["pids_current"] == 17
    assert memory_limit(read_host_facts(V2)) == 768 << 20


def test_host_warns_on_the_quota_and_the_memory_limit_of_both_trees() -> None:
    for tree, quota, usable, limit in ((V1, "0.2 CPUs", 2, "300 MiB"), (V2, "1.5 CPUs", 4, "768 MiB")):
        warns = _messages(read_host_facts(tree), verdict=Verdict.WARN)
        assert any(m.startswith(f"CPU quota of {quota}") and f"below the {usable} usable CPUs" in m for m in warns)
        assert any(m.startswith(f"Memory limit of {limit}") for m in warns), warns


def test_a_container_sees_its_own_group_as_the_top(tmp_path: Path) -> None:
    """cgroup namespaces: proc/self/cgroup says "/" and the mount's root is the container's group."""
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("0::/\n")
    (tmp_path / "proc/self/mountinfo").write_text(
        "30 23 0:26 /kubepods/pod1 /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n")
    top = tmp_path / "sys/fs/cgroup"
    top.mkdir(parents=True)
    (top / "cgroup.controllers").write_text("cpu memory pids\n")
    (top / "cpu.max").write_text("50000 100000\n")
    (top / "memory.max").write_text("max\n")
    cg = read_cgroup(SysRoot(tmp_path))
    assert cg["cpu_quota_cpus"] == 0.5 and cg["cpu_quota_group"] == "/" and cg["memory_max_bytes"] is None


def test_no_cgroup_no_quota_no_finding(fixture_tree: Callable[[str], Path]) -> None:
    host = read_host_facts(fixture_tree("16amd64-8n2c"))
    assert host["cgroup"]["cpu_quota_cpus"] is None and cpu_quota(host) is None and memory_limit(host) is None
    assert not [m for m in _messages(host) if "quota" in m or "Memory limit" in m or "Throttled" in m]
    assert "cgroup.cpu_quota_cpus" not in judge({}, host).metrics


def test_unlimited_v1_values_are_no_limit(tmp_path: Path) -> None:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("4:memory:/\n1:cpu,cpuacct:/\n")
    (tmp_path / "proc/mounts").write_text("cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n"
                                          "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n")
    cpu, memory = tmp_path / "sys/fs/cgroup/cpu,cpuacct", tmp_path / "sys/fs/cgroup/memory"
    cpu.mkdir(parents=True)
    memory.mkdir(parents=True)
    (cpu / "cpu.cfs_quota_us").write_text("-1\n")
    (cpu / "cpu.cfs_period_us").write_text("100000\n")
    (memory / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    cg = read_cgroup(SysRoot(tmp_path))
    assert cg["version"] == 1 and cg["cpu_quota_cpus"] is None and cg["memory_max_bytes"] is None


def test_throttling_during_the_run_is_noted_with_both_counts() -> None:
    host = read_host_facts(V1)
    after = {"nr_periods": 10, "nr_throttled": 10, "throttled_usec": 640000}
    notes = [m for m in _messages(host, {"cgroup_after": after, "window_s": 0.3}) if m.startswith("Throttled")]
    assert notes == ["Throttled during the run (0.3 s of one busy thread): in 3 of 3 CPU period(s), nr_throttled "
                     "7 before and 10 after, 0.24 s throttled"]
    unchanged = {"nr_periods": 7, "nr_throttled": 7, "throttled_usec": 399854}
    assert not [m for m in _messages(host, {"cgroup_after": unchanged}) if m.startswith("Throttled")]


def test_a_quota_at_or_above_the_usable_cpus_is_a_pass() -> None:
    host = read_host_facts(V2)
    host["cgroup"] = {**host["cgroup"], "cpu_quota_cpus": 4.0, "cpu_quota_us": 400000}
    assert [f.verdict for f in limits.rule_cpu_quota({}, host)] == [Verdict.PASS]
    assert cpu_bound(host, 4) is None and cpu_bound(read_host_facts(V2), 4) == 1.5


def test_limits_show_in_the_tables_and_metrics() -> None:
    assessment = judge({}, read_host_facts(V2))
    table = next(t for t in assessment.tables if t.title == "cgroup limits")
    rows = {row[0]: row[1] for row in table.rows}
    assert rows["CPU quota"] == "1.5 CPUs (cpu.max 150000 100000 on /kubepods/pod1)"
    assert rows["memory max / high"] == "1 GiB / 768 MiB"
    assert assessment.metrics["cgroup.cpu_quota_cpus"].value == 1.5
    assert assessment.metrics["cgroup.memory_limit_bytes"].value == 768 << 20


def test_memory_budget_stays_under_what_the_limit_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("perfprobe.host.cgroup.memory_room_now", lambda: (200 << 20, 300 << 20))
    found = budget.host_memory_budget({"memory": {"available_bytes": 16 << 30}})
    assert found.bytes <= 50 << 20 and "cgroup memory limit (300 MiB)" in found.basis
    assert found.cap(1 << 30) == (found.bytes, found.basis)
    monkeypatch.setattr("perfprobe.host.cgroup.memory_room_now", lambda: None)
    assert "cgroup" not in budget.host_memory_budget({"memory": {"available_bytes": 16 << 30}}).basis


def test_health_check_drains_on_a_quota_the_baseline_did_not_have() -> None:
    quota, free = read_host_facts(V1), read_host_facts(V1)
    free["cgroup"] = {**free["cgroup"], "cpu_quota_cpus": None, "memory_max_bytes": None}
    assert flat_facts(quota)["CPU quota"] == "0.2 CPUs" and flat_facts(free)["CPU quota"] == "unlimited"
    group = {"facts": flat_facts(free), "verdicts": {}, "metrics": {}}
    found = hc.problems({"host": quota, "results": []}, group)
    assert hc.reason(found) == ("perfprobe: CPU quota 0.2 CPUs vs baseline unlimited; "
                                "memory limit 300 MiB vs baseline unlimited")
    older = {name: value for name, value in group["facts"].items() if name not in hc.SINCE_CGROUP}
    assert hc.problems({"host": quota, "results": []}, {**group, "facts": older}) == []
