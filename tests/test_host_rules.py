"""The host probe's judge: each set-up rule on a healthy host (no warning) and on its bad fact,
and the whole judge on every captured tree."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import fixture_names
from perfprobe.engine.model import Verdict
from perfprobe.host import read_host_facts
from perfprobe.probes.host import PROBE, judge
from perfprobe.probes.host import rules as host_rules


def healthy() -> dict[str, Any]:
    """A 2-socket GPU server set up as it should be (numbers shaped like a real capture)."""
    return {
        "source": "live", "root": None, "kernel": "6.8.0",
        "cpu": {"model": "Xeon", "vendor": "GenuineIntel", "sockets": 2, "cores_per_socket": 2,
                "threads_per_core": 1},
        "cpus": {"online": [0, 1, 2, 3], "offline": [], "usable": [0, 1, 2, 3], "usable_source": "affinity",
                 "cores": [[0], [1], [2], [3]], "packages": [[0, 1], [2, 3]]},
        "caches": [{"level": 1, "type": "Data", "size_bytes": 49152, "line_bytes": 64, "ways": 12,
                    "shared_cpus": [0], "instances": 4},
                   {"level": 3, "type": "Unified", "size_bytes": 32 << 20, "line_bytes": 64, "ways": 16,
                    "shared_cpus": [0, 1], "instances": 2}],
        "memory": {"total_bytes": 64 << 30, "available_bytes": 60 << 30},
        "numa": {"nodes": [{"id": 0, "cpus": [0, 1], "memory_total_bytes": 32 << 30, "memory_free_bytes": 30 << 30},
                           {"id": 1, "cpus": [2, 3], "memory_total_bytes": 32 << 30, "memory_free_bytes": 30 << 30}],
                 "distances": [[10, 21], [21, 10]], "memory_only_nodes": [], "balancing": 0, "notes": []},
        "pci_devices": [], "thp": {"enabled": "madvise", "defrag": "madvise"},
        "hugepages": {"size_bytes": 2 << 20, "total": 0, "free": 0},
        "cpufreq": {"governor": "performance", "governors": {"performance": [0, 1, 2, 3]}, "driver": "acpi-cpufreq"},
        "memlock": {"soft_bytes": None, "hard_bytes": None},
        "gpus": [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "memory_total_bytes": 141 << 30,
                  "pci_bus_id": "0000:3b:00.0", "numa_node": 0, "numa_node_source": "sysfs",
                  "pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16},
                  "driver_version": "550.54.15"}],
        "gpu_note": None, "notes": [],
    }


def with_(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    host = copy.deepcopy(healthy())
    change(host)
    return host


def warnings(host: dict[str, Any]) -> list[str]:
    return [f.message for f in judge({}, host).findings if f.verdict is Verdict.WARN]


def test_healthy_host_passes() -> None:
    assessment = judge({}, healthy())
    assert assessment.verdict is Verdict.PASS, [f.message for f in assessment.findings]
    assert assessment.metrics["cpus.online"].value == 4
    assert assessment.metrics["cache_bytes.L1d"].value == 49152
    assert assessment.metrics["cache_bytes.L3"].value == 32 << 20
    assert assessment.metrics["gpus"].value == 1
    assert [t.title for t in assessment.tables][-2:] == ["NUMA distances (10 = local)", "GPUs"]
    assert assessment.tables[-2].heat == "row"


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(host: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = host
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value
    return change


BAD_FACTS = [
    ("cpufreq.governors", {"powersave": [0, 1, 2, 3]}, "governor is not 'performance'"),
    ("thp.enabled", "never", "Transparent huge pages are off"),
    ("gpus.0.pcie.width_current", 8, "link is x8, below its x16"),
    ("numa.balancing", 1, "Automatic NUMA balancing is on"),
    ("cpus.usable", [0, 1], "may use 2 of 4 online CPUs"),
    ("cpus.offline", [4, 5], "CPUs 4-5 are offline"),
    ("numa.distances", [[10, 10], [10, 10]], "every node-to-node distance is 10"),
    ("numa.distances", [[10, 21], [None, None]], "distances from node(s) 1 are unknown"),
    ("numa.nodes.1.cpus", [1, 2, 3], "CPUs 1 are listed in several nodes"),
    ("numa.nodes.1.memory_total_bytes", 0, "node 1 has CPUs but no memory"),
]


@pytest.mark.parametrize("path,value,expected", BAD_FACTS, ids=[f"{p}={v}" for p, v, _ in BAD_FACTS])
def test_each_bad_fact_warns(path: str, value: Any, expected: str) -> None:
    found = warnings(with_(_set(path, value)))
    assert any(expected in message for message in found), found


def test_gpu_on_a_cpuless_node_warns() -> None:
    def change(host: dict[str, Any]) -> None:
        host["numa"]["nodes"].append({"id": 2, "cpus": [], "memory_total_bytes": 1 << 30, "memory_free_bytes": 0})
        host["numa"]["distances"] = [[10, 21, 40], [21, 10, 40], [40, 40, 10]]
        host["numa"]["memory_only_nodes"] = [2]
        host["gpus"][0]["numa_node"] = 2
    assert any("sits on NUMA node 2, which has no CPUs" in m for m in warnings(with_(change)))


def test_idle_link_generation_is_not_a_warning() -> None:
    host = with_(_set("gpus.0.pcie.gen_current", 1))
    findings = judge({}, host).findings
    assert judge({}, host).verdict is Verdict.PASS
    assert any("idle GPU lowers its link speed" in f.message and "Re-check under load" in f.advice
               for f in findings)


def test_balancing_on_a_single_node_host_is_fine() -> None:
    def change(host: dict[str, Any]) -> None:
        host["numa"]["nodes"] = host["numa"]["nodes"][:1]
        host["numa"]["nodes"][0]["cpus"] = [0, 1, 2, 3]
        host["numa"]["distances"] = [[10]]
        host["numa"]["balancing"] = 1
    assert warnings(with_(change)) == []


def test_informational_findings_pass() -> None:
    def change(host: dict[str, Any]) -> None:
        host["cpu"]["threads_per_core"] = 2
        host["hugepages"]["total"] = 16
        host["notes"] = ["something odd but harmless"]
        host["gpus"], host["gpu_note"] = [], "NVML reports no GPU"
    findings = judge({}, with_(change)).findings
    assert all(f.verdict is Verdict.PASS for f in findings)
    text = " ".join(f.message for f in findings)
    assert "SMT is on" in text and "16 huge pages" in text and "something odd" in text and "No GPU facts" in text


def test_nvidia_cards_without_nvml_are_named() -> None:
    def change(host: dict[str, Any]) -> None:
        host["gpus"], host["gpu_note"] = [], "nvidia-ml-py (pynvml) is not installed"
        host["pci_devices"] = [{"address": "0000:3b:00.0", "class": "0x030200", "vendor": "0x10de", "numa_node": 0}]
    findings = judge({}, with_(change)).findings
    assert any("1 NVIDIA GPU(s) on the PCI bus" in f.message and "nvidia-ml-py" in f.advice for f in findings)


def test_every_rule_tolerates_an_empty_host() -> None:
    for rule in host_rules.RULES:
        assert rule.__name__.startswith("rule_")
        assert all(f.verdict is Verdict.PASS for f in rule({}, {}))
        assert all(f.verdict is Verdict.PASS for f in rule({}, {"cpus": "junk", "numa": None, "thp": 3}))
    assert judge({}, {}).verdict is Verdict.PASS


def test_warnings_come_first() -> None:
    host = with_(_set("thp.enabled", "never"))
    host["cpu"]["threads_per_core"] = 2
    verdicts = [f.verdict for f in judge({}, host).findings]
    assert verdicts == sorted(verdicts, key=lambda v: -v.severity)


def test_probe_measures_nothing_without_a_cpu_quota() -> None:
    from types import SimpleNamespace

    ctx = SimpleNamespace(config=SimpleNamespace(fsroot=None), host={"source": "live", "cgroup": {}})
    assert PROBE.name == "host" and PROBE.measure(ctx) == {}  # type: ignore[arg-type]


@pytest.mark.parametrize("name", fixture_names())
def test_judge_on_every_tree(name: str, fixture_tree: Callable[[str], Path]) -> None:
    host = read_host_facts(fixture_tree(name))
    assessment = judge({}, host)
    assert assessment.summary.startswith("captured tree")
    json.dumps([t.rows for t in assessment.tables])
    if name == "8em64t-2s2ca2c-buggynuma":
        assert assessment.verdict is Verdict.WARN
        assert sum("NUMA facts contradict" in f.message for f in assessment.findings) == 2


DATA = Path(__file__).parent / "data"


def test_recorded_h200_host_passes() -> None:
    """Facts read live on the device machine (one H200, Firecracker guest): a healthy GPU host."""
    host = json.loads((DATA / "host_h200_facts.json").read_text())
    assessment = judge({}, host)
    assert assessment.verdict is Verdict.PASS, [f.message for f in assessment.findings]
    assert assessment.metrics["gpus"].value == 1 and assessment.metrics["cache_bytes.L3"].value == 300 << 20
    gpu_rows = next(t for t in assessment.tables if t.title == "GPUs").rows
    assert gpu_rows[0][1] == "NVIDIA H200" and gpu_rows[0][4] == gpu_rows[0][5] == "Gen5 x16"


def test_recorded_dev_vm_has_no_warning_its_memlock_limit_is_a_note() -> None:
    """Facts read on the 2-core KVM dev VM (no GPU, no RDMA device): its 8 MiB memlock limit can
    limit nothing it runs, so it is a note (issue 12), and a healthy host exits 0."""
    host = json.loads((DATA / "host_dev_kvm2c_facts.json").read_text())
    found = judge({}, host).findings
    assert [f.message for f in found if f.verdict is Verdict.WARN] == []
    note = next(f for f in found if "Locked-memory limit" in f.message)
    assert note.verdict is Verdict.PASS and "no RDMA device here and no GPU" in note.message


def test_memlock_on_a_gpu_host_without_rdma_is_a_note_saying_cuda_is_not_limited() -> None:
    """The note says what the limit does not bind, with no figure measured on another host."""
    found = judge({}, with_(_set("memlock.soft_bytes", 8 << 20))).findings
    note = next(f for f in found if "Locked-memory limit (ulimit -l) is 8 MiB" in f.message)
    assert note.verdict is Verdict.PASS and "CUDA's pinned memory (cudaHostAlloc, cudaHostRegister) is not " \
        "limited by it" in note.message
    assert "H200" not in note.message and "1 GiB" not in note.message


def test_memlock_with_an_rdma_adapter_warns() -> None:
    def change(host: dict[str, Any]) -> None:
        host["memlock"]["soft_bytes"] = 8 << 20
        host["pci_devices"] = [{"vendor": "0x15b3", "class": "0x020000"}, {"vendor": "0x1234", "class": "0x020700"}]
    warned = warnings(with_(change))
    assert any("RDMA memory registration" in m and "InfiniBand, Mellanox/NVIDIA ConnectX" in m for m in warned)


def test_host_figures_are_facts_with_no_spread_and_nothing_to_relate() -> None:
    """host times nothing: its counts and bytes carry no repeats, declare no relation, and nothing
    in them can be unstable (docs/probes/host.md: Relations)."""
    from perfprobe.engine.stability import unstable

    metrics = judge({}, healthy()).metrics
    assert metrics and all(m.spread is None for m in metrics.values())
    assert PROBE.relations == ()
    assert unstable(metrics, PROBE.relations, PROBE.spread_bound) == {}
