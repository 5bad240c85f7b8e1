"""Binding, page placement and enumeration on a host with several NUMA nodes.

Every host this project is developed on has one node, so these skip there; they run for real inside
the emulated multi-node guests of `make test-numa-vm` (tools/numa-vm), where the kernel does real
NUMA: affinity, set_mempolicy, mbind and move_pages behave as on a multi-socket server. Binding is
done in child processes so this process's own placement never changes.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perfprobe.errors import UsageError
from perfprobe.host import read_host_facts
from perfprobe.host.parse import parse_cpulist
from perfprobe.system import bind, numa_sys

pytestmark = pytest.mark.multinode
NODE_SYSFS = Path("/sys/devices/system/node")

BIND_CHILD = """
import json, os, sys
from perfprobe.system.bind import bind_to_node
from perfprobe.host import read_host_facts
from perfprobe.system import numa_sys
record = bind_to_node(int(sys.argv[1]), read_host_facts())
policy = numa_sys.get_mempolicy()
print(json.dumps({"record": record, "affinity": sorted(os.sched_getaffinity(0)),
                  "mode": policy.mode, "nodes": policy.nodes}))
"""


@pytest.fixture(scope="module")
def host() -> dict[str, Any]:
    facts = read_host_facts()
    if len(facts["numa"]["nodes"]) < 2:
        pytest.skip("needs a host with several NUMA nodes (make test-numa-vm runs these)")
    return facts


def memory_nodes(host: dict[str, Any]) -> list[int]:
    return [n["id"] for n in host["numa"]["nodes"] if (n.get("memory_total_bytes") or 0) > 0]


def test_nodes_and_distances_are_what_the_kernel_says(host: dict[str, Any]) -> None:
    ids = parse_cpulist((NODE_SYSFS / "online").read_text())
    assert [n["id"] for n in host["numa"]["nodes"]] == ids
    for row, node in zip(host["numa"]["distances"], ids):
        assert row == [int(v) for v in (NODE_SYSFS / f"node{node}" / "distance").read_text().split()]
    for node in host["numa"]["nodes"]:
        cpus = parse_cpulist((NODE_SYSFS / f"node{node['id']}" / "cpulist").read_text())
        assert node["cpus"] == cpus


def test_every_cpu_node_binds_and_verifies_in_a_child(host: dict[str, Any]) -> None:
    nodes = bind.valid_bind_nodes(host)
    assert len(nodes) >= 2 or host["numa"]["memory_only_nodes"]
    for node in nodes:
        out = subprocess.run([sys.executable, "-c", BIND_CHILD, str(node)], capture_output=True,
                             text=True, check=True).stdout
        seen = json.loads(out)
        assert seen["record"]["verified"] is True
        assert seen["affinity"] == bind.node_cpus(node, host)
        assert (seen["mode"], seen["nodes"]) == ("bind", [node])


def test_mbind_places_every_page_on_each_memory_node(host: dict[str, Any]) -> None:
    size, page = 4 << 20, mmap.PAGESIZE
    for node in memory_nodes(host):
        region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        try:
            anchor = ctypes.c_char.from_buffer(region)
            address = ctypes.addressof(anchor)
            del anchor
            numa_sys.mbind(address, size, numa_sys.MPOL_BIND, [node])
            for offset in range(0, size, page):
                region[offset] = 1
            where = numa_sys.page_nodes([address + k for k in range(0, size, page)])
            assert set(where) == {node}, f"pages meant for node {node} are on {sorted(set(where))}"
        finally:
            region.close()


def test_memory_only_nodes_are_refused_for_bind_in_one_line(host: dict[str, Any]) -> None:
    memory_only = host["numa"]["memory_only_nodes"]
    if not memory_only:
        pytest.skip("this host has no memory-only node")
    for node in memory_only:
        with pytest.raises(UsageError, match="no CPUs") as info:
            bind.validate_bind_node(node, host)
        assert "\n" not in str(info.value)
        assert node not in bind.valid_bind_nodes(host)


def test_a_missing_node_id_is_refused_naming_the_valid_ones(host: dict[str, Any]) -> None:
    ids = [n["id"] for n in host["numa"]["nodes"]]
    gaps = [i for i in range(max(ids) + 2) if i not in ids]
    with pytest.raises(UsageError, match="does not exist") as info:
        bind.validate_bind_node(gaps[0], host)
    assert ", ".join(map(str, bind.valid_bind_nodes(host))) in str(info.value)
