"""read_host_facts on tiny trees built in tmp_path: the odd cases real captures rarely show,
and the live host (smoke only: no assertion depends on this machine's hardware)."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfprobe.host import read_host_facts
from perfprobe.host.gpus import nvml_gpus
from perfprobe.host.pci import link_facts, sysfs_address
from perfprobe.host.sysroot import SysRoot
from perfprobe.pure.pcie_rate import gen_from_speed as pcie_gen


def write(root: Path, files: dict[str, str]) -> Path:
    """Create `files` ({relative path: content}) under root."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def cpus(n: int, **extra: str) -> dict[str, str]:
    """A tree of n online single-thread CPUs on one package."""
    files = {"sys/devices/system/cpu/online": f"0-{n - 1}\n", **extra}
    for cpu in range(n):
        files[f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"] = f"{cpu}\n"
        files[f"sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"] = "0\n"
    return files


def node(nid: int, cpulist: str, distance: str, mem_kib: int = 1024) -> dict[str, str]:
    base = f"sys/devices/system/node/node{nid}"
    return {f"{base}/cpulist": cpulist + "\n", f"{base}/distance": distance + "\n",
            f"{base}/meminfo": f"Node {nid} MemTotal: {mem_kib} kB\nNode {nid} MemFree: 10 kB\n"}


def test_empty_tree_does_not_raise(tmp_path: Path) -> None:
    facts = read_host_facts(tmp_path)
    assert facts["cpus"]["online"] == [] and facts["caches"] == []
    assert facts["numa"]["distances"] == [[10]] and facts["notes"]
    assert facts["gpus"] == [] and facts["gpu_note"]


def test_no_node_folder_gives_one_node_with_every_cpu(tmp_path: Path) -> None:
    facts = read_host_facts(write(tmp_path, {**cpus(4), "proc/meminfo": "MemTotal: 2048 kB\n"}))
    assert facts["numa"]["nodes"] == [{"id": 0, "cpus": [0, 1, 2, 3], "memory_total_bytes": 2 << 20,
                                       "memory_free_bytes": None}]
    assert "no NUMA nodes" in facts["numa"]["notes"][0]


def test_distance_row_of_wrong_length_is_unknown_and_noted(tmp_path: Path) -> None:
    tree = {**cpus(4), **node(0, "0-1", "10 20"), **node(1, "2-3", "20 10 30")}
    facts = read_host_facts(write(tmp_path, tree))
    assert facts["numa"]["distances"] == [[10, 20], [None, None]]
    assert any("distances from node(s) 1 are unknown" in n for n in facts["numa"]["notes"])


def test_sparse_node_ids_map_distance_columns(tmp_path: Path) -> None:
    tree = {**cpus(4), **node(0, "0-1", "10 21"), **node(4, "2-3", "21 10"),
            "sys/devices/system/node/online": "0,4\n"}
    facts = read_host_facts(write(tmp_path, tree))
    assert [n["id"] for n in facts["numa"]["nodes"]] == [0, 4]
    assert facts["numa"]["distances"] == [[10, 21], [21, 10]]
    assert facts["numa"]["notes"] == []


def test_cpu_in_two_nodes_and_memory_mismatch_are_noted(tmp_path: Path) -> None:
    tree = {**cpus(4), **node(0, "0-2", "10 20", 1024), **node(1, "2-3", "20 10", 1024),
            "proc/meminfo": "MemTotal: 4096 kB\n"}
    notes = " ".join(read_host_facts(write(tmp_path, tree))["numa"]["notes"])
    assert "CPUs 2 are listed in several nodes" in notes
    assert "per-node MemTotal adds up to" in notes


def test_memory_only_node(tmp_path: Path) -> None:
    tree = {**cpus(2), **node(0, "0-1", "10 20"), **node(1, "", "20 10")}
    assert read_host_facts(write(tmp_path, tree))["numa"]["memory_only_nodes"] == [1]


def test_cgroup_v2_cpuset_limits_usable(tmp_path: Path) -> None:
    tree = {**cpus(8), "proc/mounts": "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
            "proc/self/cgroup": "0::/job/step\n", "sys/fs/cgroup/job/cpuset.cpus.effective": "2-5\n"}
    facts = read_host_facts(write(tmp_path, tree))
    assert facts["cpus"]["usable"] == [2, 3, 4, 5] and facts["cpus"]["usable_source"] == "cpuset"


def test_settings_are_parsed(tmp_path: Path) -> None:
    tree = {**cpus(2), "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
            "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "powersave\n",
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver": "intel_pstate\n",
            "proc/sys/kernel/numa_balancing": "1\n", "proc/sys/kernel/osrelease": "6.1.0-x\n",
            "proc/meminfo": "Hugepagesize: 2048 kB\nHugePages_Total: 8\nHugePages_Free: 3\n"}
    facts = read_host_facts(write(tmp_path, tree))
    assert facts["thp"]["enabled"] == "never" and facts["kernel"] == "6.1.0-x"
    assert facts["cpufreq"] == {"governor": "mixed", "governors": {"performance": [0], "powersave": [1]},
                                "driver": "intel_pstate"}
    assert facts["numa"]["balancing"] == 1
    assert facts["hugepages"] == {"size_bytes": 2 << 20, "total": 8, "free": 3}


def test_nvidia_pci_device_in_a_tree(tmp_path: Path) -> None:
    base = "sys/bus/pci/devices/0000:3b:00.0"
    tree = {**cpus(2), **node(0, "0-1", "10"), f"{base}/class": "0x030200\n", f"{base}/vendor": "0x10de\n",
            f"{base}/numa_node": "-1\n", f"{base}/local_cpulist": "0-1\n",
            f"{base}/current_link_speed": "2.5 GT/s PCIe\n", f"{base}/max_link_speed": "32.0 GT/s PCIe\n",
            f"{base}/current_link_width": "8\n", f"{base}/max_link_width": "16\n",
            "sys/bus/pci/devices/0000:00:1f.0/class": "0x060100\n"}
    facts = read_host_facts(write(tmp_path, tree))
    assert facts["pci_devices"][1] == {"address": "0000:3b:00.0", "class": "0x030200", "vendor": "0x10de",
                                       "numa_node": None}
    (gpu,) = facts["gpus"]
    assert gpu["pcie"] == {"gen_current": 1, "gen_max": 5, "width_current": 8, "width_max": 16}
    assert (gpu["numa_node"], gpu["numa_node_source"]) == (0, "sysfs")


def test_pcie_helpers() -> None:
    assert [pcie_gen(s) for s in ("2.5 GT/s", "5 GT/s", "8.0 GT/s PCIe", "16.0 GT/s", "64.0 GT/s", "x")] == \
        [1, 2, 3, 4, 6, None]
    assert sysfs_address("00000000:3B:00.0") == "0000:3b:00.0"
    assert sysfs_address("0000:3b:00.0") == "0000:3b:00.0"


def test_live_read_is_complete() -> None:
    facts = read_host_facts()
    assert facts["source"] == "live" and facts["root"] is None and facts["kernel"]
    assert facts["cpus"]["usable_source"] == "affinity"
    assert set(facts["cpus"]["usable"]) == os.sched_getaffinity(0)
    assert facts["memory"]["total_bytes"] and facts["numa"]["nodes"]


class FakeNvml(types.ModuleType):
    """The slice of pynvml the reader calls, for one GPU."""

    class NVMLError(Exception):
        pass

    def __init__(self, numa_node: int = 1) -> None:
        super().__init__("pynvml")
        self.numa_node, self.shut = numa_node, False
        pci = types.SimpleNamespace(busId=b"00000000:3B:00.0")
        unsupported = self._raise
        self.nvmlInit = lambda: None
        self.nvmlShutdown = lambda: setattr(self, "shut", True)
        self.nvmlSystemGetDriverVersion = lambda: b"550.54.15"
        self.nvmlDeviceGetCount = lambda: 1
        self.nvmlDeviceGetHandleByIndex = lambda i: f"h{i}"
        self.nvmlDeviceGetName = lambda h: "NVIDIA H200"
        self.nvmlDeviceGetUUID = lambda h: "GPU-1234"
        self.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=141 << 30)
        self.nvmlDeviceGetPciInfo = lambda h: pci
        self.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: 5
        self.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: 5
        self.nvmlDeviceGetCurrPcieLinkWidth = lambda h: 16
        self.nvmlDeviceGetMaxPcieLinkWidth = unsupported
        self.nvmlDeviceGetNumaNodeId = lambda h: self.numa_node

    def _raise(self, *args: Any) -> Any:
        raise self.NVMLError("Not Supported")


def test_nvml_path_with_a_fake_pynvml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = FakeNvml(numa_node=1)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    write(tmp_path, {"sys/bus/pci/devices/0000:3b:00.0/numa_node": "-1\n"})
    sr = SysRoot(tmp_path)
    sr.live = True  # NVML is only asked live; point the sysfs side at the tiny tree
    gpus, note = nvml_gpus(sr, [{"id": 0, "cpus": [0]}, {"id": 1, "cpus": [1]}])
    assert note is None and fake.shut
    assert gpus == [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1234", "memory_total_bytes": 141 << 30,
                     "pci_bus_id": "0000:3b:00.0", "numa_node": 1, "numa_node_source": "nvml",
                     "pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": None},
                     "driver_version": "550.54.15"}]


def test_nvml_missing_or_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    gpus, note = nvml_gpus(SysRoot(None), [])
    assert gpus == [] and note is not None and "not installed" in note
    broken = FakeNvml()
    broken.nvmlInit = broken._raise
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    gpus, note = nvml_gpus(SysRoot(None), [])
    assert gpus == [] and note is not None and "NVML did not start" in note


FUZZED_FILES = (
    "sys/devices/system/cpu/online", "sys/devices/system/cpu/present",
    "sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
    "sys/devices/system/cpu/cpu0/cache/index0/level", "sys/devices/system/cpu/cpu0/cache/index0/size",
    "sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list",
    "sys/devices/system/node/node0/cpulist", "sys/devices/system/node/node0/distance",
    "sys/devices/system/node/node0/meminfo", "sys/devices/system/node/node2/distance",
    "sys/devices/system/node/online", "proc/meminfo", "proc/cpuinfo", "proc/mounts", "proc/self/cpuset",
    "sys/kernel/mm/transparent_hugepage/enabled", "sys/bus/pci/devices/0000:01:00.0/class",
    "sys/bus/pci/devices/0000:01:00.0/vendor", "sys/bus/pci/devices/0000:01:00.0/numa_node",
    "sys/bus/pci/devices/0000:01:00.0/max_link_speed",
)
garbage = st.one_of(st.text(max_size=40), st.sampled_from(["0-3", "0-1,5", "10 20", "-1", "0x10de", "0x030200",
                                                         "48K", "[never]", "\x00", "3-1", "99999999999"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(FUZZED_FILES), garbage, max_size=len(FUZZED_FILES)))
def test_garbage_files_never_raise(tmp_path_factory: pytest.TempPathFactory, files: dict[str, str]) -> None:
    facts = read_host_facts(write(tmp_path_factory.mktemp("fuzz"), files))
    matrix = facts["numa"]["distances"]
    assert len(matrix) == len(facts["numa"]["nodes"]) and all(len(row) == len(matrix) for row in matrix)
    assert set(facts["cpus"]["usable"]) <= set(facts["cpus"]["online"]) or not facts["cpus"]["online"]


def test_live_without_sysfs_cpus_falls_back_to_affinity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("perfprobe.host.SysRoot", lambda root: _LiveAt(tmp_path))
    monkeypatch.setitem(sys.modules, "pynvml", None)
    facts = read_host_facts()
    assert facts["cpus"]["online"] == sorted(os.sched_getaffinity(0))
    assert any("affinity taken as online" in note for note in facts["notes"])


class _LiveAt(SysRoot):
    """A live reader whose /sys and /proc are an (empty) tmp tree."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.live = True


@pytest.mark.parametrize("speed, width", [(". GT/s", "²"), ("1.2.3 GT/s", "x"), ("Unknown", "0"), ("", "")])
def test_damaged_link_files_give_unknown_not_a_crash(tmp_path, speed, width) -> None:
    device = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:3b:00.0"
    device.mkdir(parents=True)
    for name, text in (("current_link_speed", speed), ("max_link_speed", speed),
                       ("current_link_width", width), ("max_link_width", width)):
        (device / name).write_text(text + "\n")
    assert link_facts(SysRoot(tmp_path), "0000:3b:00.0") == {
        "gen_current": None, "gen_max": None, "width_current": None, "width_max": None}


def test_hypervisor_flag_is_a_host_fact_read_through_the_root(fixture_tree, tmp_path):
    """The VM rules read it from the facts, so --fsroot trees and replays judge as the host was."""
    from perfprobe.host import read_host_facts
    from perfprobe.pure.vm import virtual_machine

    guest = read_host_facts(fixture_tree("fakeheteromemtiers"))  # a captured guest: flags say hypervisor
    assert guest["cpu"]["hypervisor"] is True
    assert virtual_machine(None, guest) == "the CPU's hypervisor flag"
    assert virtual_machine(False, guest) == ""  # a recording's own raw flag wins over the facts
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text("processor : 0\nflags : fpu sse2 avx2\n")
    assert read_host_facts(tmp_path)["cpu"]["hypervisor"] is False
    (tmp_path / "proc" / "cpuinfo").write_text("processor : 0\n")
    assert read_host_facts(tmp_path)["cpu"]["hypervisor"] is None
