"""read_host_facts on every captured tree of real machines (../shared/fixtures/sysfs).

Expectations are computed here from the raw files with a plain glob and a tiny parser of our own,
not with the reader under test, so a bug in the reader cannot hide by agreeing with itself.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import FIXTURES_DIR, fixture_names
from perfprobe import load_schema
from perfprobe.host import read_host_facts

NAMES = fixture_names()
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
MISSING = f"no captured trees in {FIXTURES_DIR} (../shared/fixtures/sysfs beside the checkout)"
# Outside CI a checkout without ../shared may skip these; in CI the copy is always there, so a
# missing one fails test_the_captured_trees_are_here instead of silently skipping the module.
pytestmark = pytest.mark.skipif(not NAMES and not IN_CI, reason=MISSING + "; skipped outside CI only (CI is not true)")

Unpack = Callable[[str], Path]


def test_the_captured_trees_are_here() -> None:
    assert NAMES, MISSING + ": CI carries a read-only copy beside the clone, so this is a broken setup"


def _raw_cpulist(text: str) -> list[int]:
    """Independent reading of a cpulist ("0-3,8")."""
    cpus: list[int] = []
    for part in filter(None, text.strip().strip("\x00").split(",")):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return sorted(cpus)


def _raw_cpumask(text: str) -> list[int]:
    """Independent reading of a hex cpumask ("00000000,0000ffff")."""
    value = int(text.strip().replace(",", ""), 16)
    return [bit for bit in range(value.bit_length()) if value >> bit & 1]


def _raw_nodes(root: Path) -> dict[int, Path]:
    return {int(p.name[4:]): p for p in (root / "sys/devices/system/node").glob("node[0-9]*")}


def _node_cpus(folder: Path) -> list[int]:
    if (folder / "cpulist").exists():
        return _raw_cpulist((folder / "cpulist").read_text())
    return _raw_cpumask((folder / "cpumap").read_text()) if (folder / "cpumap").exists() else []


@pytest.fixture(params=NAMES)
def tree(request: pytest.FixtureRequest, fixture_tree: Unpack) -> tuple[Path, dict[str, Any]]:
    root = fixture_tree(request.param)
    return root, read_host_facts(root)


def test_node_ids_and_cpus_match_the_files(tree: tuple[Path, dict[str, Any]]) -> None:
    root, facts = tree
    raw = _raw_nodes(root)
    nodes = facts["numa"]["nodes"]
    if not raw:
        assert [n["id"] for n in nodes] == [0]
        assert nodes[0]["cpus"] == facts["cpus"]["online"]
        assert facts["numa"]["distances"] == [[10]]
        assert any("no NUMA nodes" in note for note in facts["numa"]["notes"])
        return
    assert [n["id"] for n in nodes] == sorted(raw)
    for node in nodes:
        assert node["cpus"] == _node_cpus(raw[node["id"]]), node["id"]


def test_distances_match_the_files(tree: tuple[Path, dict[str, Any]]) -> None:
    root, facts = tree
    raw = _raw_nodes(root)
    matrix = facts["numa"]["distances"]
    assert len(matrix) == len(facts["numa"]["nodes"])
    assert all(len(row) == len(matrix) for row in matrix)
    rows = {node: [int(x) for x in (path / "distance").read_text().split()] for node, path in raw.items()}
    if raw and all(len(row) == len(raw) for row in rows.values()):
        assert matrix == [rows[node] for node in sorted(raw)]


def test_node_memory_matches_the_files(tree: tuple[Path, dict[str, Any]]) -> None:
    root, facts = tree
    for node in facts["numa"]["nodes"]:
        meminfo = _raw_nodes(root).get(node["id"], root / "none") / "meminfo"
        if meminfo.exists():
            kib = re.search(r"MemTotal:\s+(\d+) kB", meminfo.read_text())
            assert kib is not None, meminfo
            assert node["memory_total_bytes"] == int(kib.group(1)) * 1024


def test_cache_sizes_match_the_files(tree: tuple[Path, dict[str, Any]]) -> None:
    root, facts = tree
    first = facts["cpus"]["online"][0]
    raw = set()
    for index in (root / f"sys/devices/system/cpu/cpu{first}/cache").glob("index*"):
        size = (index / "size").read_text().strip()
        parsed = re.fullmatch(r"(\d+)([KM]?)", size)
        assert parsed is not None, f"{index}/size: {size!r}"
        number, unit = parsed.groups()
        raw.add((int((index / "level").read_text()), (index / "type").read_text().strip(),
                 int(number) * {"": 1, "K": 1024, "M": 1 << 20}[unit]))
    assert {(c["level"], c["type"], c["size_bytes"]) for c in facts["caches"]} == raw
    assert all(c["instances"] >= 1 for c in facts["caches"])


def test_facts_are_json_and_match_the_schema(tree: tuple[Path, dict[str, Any]]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    _root, facts = tree
    schema = load_schema()
    host_schema = {**schema["$defs"]["host"], "$defs": schema["$defs"]}
    jsonschema.validate(json.loads(json.dumps(facts)), host_schema)
    assert facts["source"] == "fsroot" and facts["memlock"] == {"soft_bytes": None, "hard_bytes": None}


def test_online_plus_offline_cpus_are_present(tree: tuple[Path, dict[str, Any]]) -> None:
    root, facts = tree
    dirs = {int(p.name[3:]) for p in (root / "sys/devices/system/cpu").glob("cpu[0-9]*")}
    assert set(facts["cpus"]["online"]) | set(facts["cpus"]["offline"]) <= dirs
    assert set(facts["cpus"]["usable"]) <= set(facts["cpus"]["online"])
    assert sorted(c for core in facts["cpus"]["cores"] for c in core) == facts["cpus"]["online"]


def test_offlines(fixture_tree: Unpack) -> None:
    facts = read_host_facts(fixture_tree("16em64t-4s2c2t-offlines"))
    assert facts["cpus"]["offline"] == [2, 5, 13, 14]
    assert len(facts["cpus"]["online"]) == 12


def test_offline_cpu0_without_node0(fixture_tree: Unpack) -> None:
    facts = read_host_facts(fixture_tree("offline-cpu0-node0"))
    assert facts["cpus"]["online"] == list(range(4, 21))
    assert [n["id"] for n in facts["numa"]["nodes"]] == [1]
    assert facts["numa"]["distances"] == [[10]]  # node1's row "21 10" covers possible nodes 0-1
    assert any("in no NUMA node" in n for n in facts["numa"]["notes"])


def test_buggy_numa_is_noted_not_fatal(fixture_tree: Unpack) -> None:
    facts = read_host_facts(fixture_tree("8em64t-2s2ca2c-buggynuma"))
    notes = " ".join(facts["numa"]["notes"])
    assert "several nodes" in notes and "ACPI SLIT" in notes


def test_no_hugepages_no_nodes(fixture_tree: Unpack) -> None:
    facts = read_host_facts(fixture_tree("2i386-2c-nohugepage"))
    assert facts["hugepages"] == {"size_bytes": None, "total": None, "free": None}
    assert facts["memory"]["available_bytes"] is not None  # MemFree stands in, with a note
    assert any("MemAvailable" in n for n in facts["notes"])


def test_memory_only_and_sparse_nodes(fixture_tree: Unpack) -> None:
    facts = read_host_facts(fixture_tree("fakeheteromemtiers"))
    assert [n["id"] for n in facts["numa"]["nodes"]] == [0, 1, 2, 4, 6, 8, 9]
    assert facts["numa"]["memory_only_nodes"] == [4, 6, 8, 9]
    assert facts["cpus"]["usable_source"] == "cpuset"


def test_gpu_tree(fixture_tree: Unpack) -> None:
    facts = read_host_facts(fixture_tree("nvidiagpunumanodes"))
    assert [g["pci_bus_id"] for g in facts["gpus"]][:2] == ["0004:05:00.0", "0004:06:00.0"]
    assert [g["numa_node"] for g in facts["gpus"]] == [0, 0, 0, 8, 8, 8]  # from local_cpus
    assert facts["numa"]["memory_only_nodes"] == [250, 251, 252, 253, 254, 255]
    assert facts["cpus"]["usable"] == list(range(16))  # cpuset /jjh effective 0-87 ∩ online
    assert facts["cpu"]["threads_per_core"] == 4


def test_hybrid_cache_spread_is_noted(fixture_tree: Unpack) -> None:
    facts = read_host_facts(fixture_tree("20em64t-hybrid-1p6c2t+2ca4co1t"))
    assert facts["cpufreq"]["governor"] == "powersave"
    assert any("L2 Unified cache size differs" in n for n in facts["notes"])
