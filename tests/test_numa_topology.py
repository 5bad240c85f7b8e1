"""numa topology, --bind validation, pair sampling and judgement on every captured sysfs tree.

The trees are real machines (../shared/fixtures/sysfs); the matrices fed to `judge` here are made
from each tree's own distance table (latency proportional to distance, below the table's ratio), so
only the topology is real: the point is that nothing crashes on odd trees and the rules that depend
on topology alone behave.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conftest import fixture_names
from perfprobe.engine.model import Verdict
from perfprobe.errors import UsageError
from perfprobe.host import read_host_facts
from perfprobe.probes import numa
from perfprobe.probes.numa import plan
from perfprobe.probes.numa import rules as numa_rules
from perfprobe.probes.numa.figures import distance
from perfprobe.system import bind

TREES = fixture_names()


_FACTS: dict[str, dict[str, Any]] = {}


def _host(fixture_tree, name: str) -> dict[str, Any]:
    """The tree's host facts, read once per session (reading a big tree takes a while)."""
    if name not in _FACTS:
        _FACTS[name] = read_host_facts(fixture_tree(name))
    return copy.deepcopy(_FACTS[name])


def _synthetic_raw(host: dict[str, Any], pairs: list[tuple[int, int]]) -> dict[str, Any]:
    """A raw dict shaped like measure's, latency = 9 ns x distance x 0.8 (under the SLIT ratio)."""
    def figure(value: float) -> dict[str, float]:
        return {"median": value, "min": value, "max": value, "iqr": 0.0, "repeats": 3}

    mem_nodes = sorted({j for _, j in pairs})
    return {"measured": True, "bind": None, "placement": {"cpus": host["cpus"]["usable"], "mempolicy": "default"},
            "cpu_nodes": sorted({i for i, _ in pairs}), "mem_nodes": mem_nodes, "largest_cache_bytes": 1 << 25,
            "sampling": {"pairs_total": len(pairs), "pairs_measured": len(pairs), "rule": None},
            "method": {"working_set_bytes": 1 << 28},
            "pairs": [{"cpu_node": i, "mem_node": j, "threads": 4,
                       "latency_ns": figure(9.0 * (distance(host, i, j) or 10) * (1 if i == j else 0.8)),
                       "read_gbs": figure(50.0 if i == j else 25.0)} for i, j in pairs],
            "pages": [{"node": j, "checked": 100, "on_node": 100, "elsewhere": {}, "absent": 0} for j in mem_nodes],
            "skipped": [], "notes": []}


@pytest.mark.parametrize("name", TREES)
def test_topology_table_has_every_node_and_memory_only_nodes_are_marked(fixture_tree, name):
    host = _host(fixture_tree, name)
    result = numa.judge({"measured": False, "reason": "captured tree"}, host)
    nodes = host["numa"]["nodes"]
    topology = next(t for t in result.tables if t.title == "NUMA topology")
    assert [row[0] for row in topology.rows] == [n["id"] for n in nodes]
    kinds = {row[0]: row[4] for row in topology.rows}
    for node in host["numa"]["memory_only_nodes"]:
        assert kinds[node] == "memory only"
    assert result.metrics["numa_nodes"].value == len(nodes)


@pytest.mark.parametrize("name", TREES)
def test_bind_validation_on_each_tree(fixture_tree, name):
    host = _host(fixture_tree, name)
    usable = set(host["cpus"]["usable"])
    valid = bind.valid_bind_nodes(host)
    assert valid == sorted(n["id"] for n in host["numa"]["nodes"] if set(n["cpus"]) & usable)
    for node in valid:
        bind.validate_bind_node(node, host)
    for node in host["numa"]["memory_only_nodes"]:
        with pytest.raises(UsageError, match=rf"^node {node} has no CPUs \(memory-only\); valid nodes for --bind: "):
            bind.validate_bind_node(node, host)
    past = max(n["id"] for n in host["numa"]["nodes"]) + 1
    with pytest.raises(UsageError, match=rf"valid nodes for --bind: {', '.join(map(str, valid))}$"):
        bind.validate_bind_node(past, host)


@pytest.mark.parametrize("name", TREES)
def test_sampling_keeps_every_local_pair_and_stays_bounded(fixture_tree, name):
    host = _host(fixture_tree, name)
    cpu_nodes = bind.valid_bind_nodes(host)
    mem_nodes = plan.memory_nodes(host, [n["id"] for n in host["numa"]["nodes"]])
    for cap in (16, 64):
        pairs, rule = plan.choose_pairs(cpu_nodes, mem_nodes, host, cap)
        locals_ = {(i, i) for i in cpu_nodes if i in mem_nodes}
        assert locals_ <= set(pairs)
        assert len(set(pairs)) == len(pairs)
        if rule is None:
            assert len(pairs) == len(cpu_nodes) * len(mem_nodes)
        else:
            assert len(pairs) < len(cpu_nodes) * len(mem_nodes)


@pytest.mark.parametrize("name", TREES)
def test_judge_on_each_tree_with_a_matrix_from_its_distances(fixture_tree, name):
    host = _host(fixture_tree, name)
    cpu_nodes = bind.valid_bind_nodes(host)
    mem_nodes = plan.memory_nodes(host, [n["id"] for n in host["numa"]["nodes"]])
    pairs, _rule = plan.choose_pairs(cpu_nodes, mem_nodes, host, 64)
    result = numa.judge(_synthetic_raw(host, pairs), host)
    latency = next(t for t in result.tables if t.title.startswith("Latency"))
    assert len(latency.rows) == len(cpu_nodes) and len(latency.columns) == len(mem_nodes) + 1
    messages = [f.message for f in result.findings if f.verdict is Verdict.WARN]
    assert not [m for m in messages if "remote latency" in m or "local latency" in m], messages
    if len(host["numa"]["nodes"]) == 1:
        assert result.findings[0].message.startswith("single NUMA node: nothing to place")


def test_unbalanced_memory_on_a_real_tree_is_found(fixture_tree):
    host = _host(fixture_tree, "64amd64-4s2n4ca2co")  # node 5 has half the memory of its peers
    assert any("node 5 has" in f.message and f.verdict is Verdict.WARN
               for f in numa_rules.rule_memory_balance({}, host))


def test_memory_only_nodes_are_memory_targets_only(fixture_tree):
    host = _host(fixture_tree, "fakeheteromemtiers")
    mem_nodes = plan.memory_nodes(host, [n["id"] for n in host["numa"]["nodes"]])
    cpu_nodes = bind.valid_bind_nodes(host)
    assert not set(host["numa"]["memory_only_nodes"]) & set(cpu_nodes)
    pairs, _ = plan.choose_pairs(cpu_nodes, mem_nodes, host, 64)
    assert {j for _, j in pairs} & set(host["numa"]["memory_only_nodes"])
