"""numa measure for real, with tiny sizes: every pair's pages verified, nothing left behind.

The single-host tests run anywhere (one node here); those marked multinode need two or more NUMA
nodes with CPUs and run inside the emulated multi-node guests of `make test-numa-vm`.
No timing is asserted: speed and accuracy belong to benchmarks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.engine.model import Verdict
from perfprobe.engine.probe import ProbeContext
from perfprobe.engine.progress import null_progress
from perfprobe.host import read_host_facts
from perfprobe.probes import numa
from perfprobe.probes.numa import measure
from perfprobe.system import bind, numa_sys

TINY = {"size": 16 << 20, "steps": 20_000, "repeats": 2}
HOST = read_host_facts()
CPU_NODES = bind.valid_bind_nodes(HOST)
multinode = pytest.mark.skipif(len(CPU_NODES) < 2, reason="needs >= 2 NUMA nodes with usable CPUs")


def _measure(**config: Any) -> dict[str, Any]:
    ctx = ProbeContext(config=RunConfig(quick=True, options=Knobs(**TINY), **config), host=HOST, progress=null_progress)
    return measure.measure(ctx)


def _cli(*args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "perfprobe", "numa", "--json", "--quick", "--size", "16M", *args],
                          capture_output=True, text=True, timeout=300)
    # a run that printed no report says how it ended (its exit status: -9 is the kernel's OOM killer)
    ended = f"perfprobe numa {' '.join(args)}: exit {done.returncode}, no report; stderr: {done.stderr.strip()[-1500:]}"
    assert done.stdout.strip(), ended
    return done.returncode, json.loads(done.stdout)


def test_measure_verifies_every_page_and_restores_this_process():
    affinity, policy = os.sched_getaffinity(0), numa_sys.get_mempolicy()
    raw = _measure()
    assert os.sched_getaffinity(0) == affinity and numa_sys.get_mempolicy() == policy
    mem_nodes = raw["mem_nodes"]
    assert {(p["cpu_node"], p["mem_node"]) for p in raw["pairs"]} == {(i, j) for i in CPU_NODES for j in mem_nodes}
    assert all(p["checked"] > 0 and p["on_node"] == p["checked"] for p in raw["pages"])
    assert all(p["latency_ns"]["median"] > 0 and p["read_gbs"]["median"] > 0 for p in raw["pairs"])
    result = numa.judge(raw, HOST)
    assert result.verdict in (Verdict.PASS, Verdict.WARN)
    assert f"latency_ns.{CPU_NODES[0]}.{mem_nodes[0]}" in result.metrics


def test_cli_json_reports_matrix_and_placement():
    code, report = _cli()
    (result,) = report["results"]
    assert code in (0, 1) and result["probe"] == "numa"
    assert result["facts"]["placement"]["cpus"] == sorted(os.sched_getaffinity(0))
    assert any(name.startswith("latency_ns.") for name in result["metrics"])


def test_cli_bind_reports_the_verified_binding_and_one_row():
    node = CPU_NODES[-1]
    code, report = _cli("--bind", str(node))
    (result,) = report["results"]
    assert code in (0, 1)
    binding = result["facts"]["binding"]
    assert binding["verified"] is True and binding["node"] == node and binding["mems"] == [node]
    assert binding["cpus"] == bind.node_cpus(node, HOST)
    assert {k.split(".")[1] for k in result["metrics"] if k.startswith("latency_ns.")} == {str(node)}


@pytest.mark.multinode
@multinode
def test_full_matrix_on_several_nodes_has_every_page_on_its_node():
    raw = _measure()
    assert len(raw["pages"]) == len(raw["mem_nodes"]) >= 2
    for pages in raw["pages"]:
        assert pages["on_node"] == pages["checked"], pages
    result = numa.judge(raw, HOST)
    assert result.metrics["remote_over_local_latency.max"].value is not None


@pytest.mark.multinode
@multinode
def test_bind_to_the_second_node_measures_it_against_every_memory_node():
    node = CPU_NODES[1]
    code, report = _cli("--bind", str(node))
    (result,) = report["results"]
    assert result["facts"]["binding"]["verified"] is True
    rows = {k.split(".")[1] for k in result["metrics"] if k.startswith("latency_ns.")}
    columns = {k.split(".")[2] for k in result["metrics"] if k.startswith("latency_ns.")}
    assert rows == {str(node)} and len(columns) >= 2


def test_page_check_falls_back_to_get_mempolicy_then_reports_an_error(monkeypatch):
    import ctypes
    import mmap

    region = mmap.mmap(-1, 8 * mmap.PAGESIZE)
    region[:] = b"x" * len(region)
    anchor = ctypes.c_char.from_buffer(region)
    base = ctypes.addressof(anchor)
    del anchor
    node = numa_sys.node_of_address(base)

    def missing(*_args: Any) -> None:
        raise numa_sys.NumaUnavailable(38, "no such call here")

    try:
        monkeypatch.setattr(numa_sys, "page_nodes", missing)
        fallback = measure.check_pages(base, len(region), node)
        assert fallback["method"].startswith("get_mempolicy") and fallback["on_node"] == fallback["checked"] == 8
        monkeypatch.setattr(numa_sys, "node_of_address", missing)
        assert "error" in measure.check_pages(base, len(region), node)
    finally:
        region.close()
