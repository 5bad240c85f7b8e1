"""--bind: validation messages (pure), and binding for real on this host in a child process.

The real bindings run in subprocesses so the test process's own affinity and memory policy never
change.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from perfprobe.errors import UsageError
from perfprobe.host import read_host_facts
from perfprobe.system import bind

TWO_NODES_ONE_FENCED = {
    "cpus": {"online": [0, 1, 2, 3], "usable": [0, 1]},
    "numa": {"nodes": [{"id": 0, "cpus": [0, 1]}, {"id": 1, "cpus": [2, 3]}, {"id": 2, "cpus": []}]},
}


def _child(code: str) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON object, which is returned."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _live_valid_nodes() -> list[int]:
    return bind.valid_bind_nodes(read_host_facts())


def test_missing_node_names_the_valid_ones():
    with pytest.raises(UsageError, match=r"^NUMA node 7 does not exist; valid nodes for --bind: 0$"):
        bind.validate_bind_node(7, TWO_NODES_ONE_FENCED)


def test_memory_only_node_is_refused():
    with pytest.raises(UsageError, match=r"^node 2 has no CPUs \(memory-only\); valid nodes for --bind: 0$"):
        bind.validate_bind_node(2, TWO_NODES_ONE_FENCED)


def test_node_outside_cpuset_is_refused():
    with pytest.raises(UsageError, match=r"node 1's CPUs \(2-3\) are outside this process's cpuset"):
        bind.validate_bind_node(1, TWO_NODES_ONE_FENCED)
    assert bind.valid_bind_nodes(TWO_NODES_ONE_FENCED) == [0]
    assert bind.node_cpus(1, TWO_NODES_ONE_FENCED) == []


def test_no_numa_nodes_at_all_is_one_line():
    with pytest.raises(UsageError, match="no NUMA nodes"):
        bind.validate_bind_node(0, {"cpus": {"usable": [0]}, "numa": {"nodes": []}})


def test_this_host_refuses_a_node_past_the_last_naming_the_valid_ones():
    valid = _live_valid_nodes()
    past = max(n["id"] for n in read_host_facts()["numa"]["nodes"]) + 1
    with pytest.raises(UsageError) as caught:
        bind.validate_bind_node(past, read_host_facts())
    assert str(caught.value).endswith("valid nodes for --bind: " + ", ".join(map(str, valid)))


def test_bind_to_first_valid_node_binds_and_verifies_in_a_child():
    node = _live_valid_nodes()[0]
    record = _child(
        "import json, os, threading, time\n"
        "from perfprobe.system import bind, numa_sys\n"
        "from perfprobe.host import read_host_facts\n"
        "t = threading.Thread(target=time.sleep, args=(5,), daemon=True); t.start()\n"
        f"rec = bind.bind_to_node({node}, read_host_facts())\n"
        "rec['other_thread_cpus'] = sorted(os.sched_getaffinity(t.native_id))\n"
        "rec['policy'] = numa_sys.get_mempolicy().mode\n"
        "print(json.dumps(rec))\n")
    expected_cpus = bind.node_cpus(node, read_host_facts())
    assert record["verified"] is True and record["node"] == node
    assert record["mempolicy"] == "bind" and record["mems"] == [node] and record["policy"] == "bind"
    assert record["cpus"] == expected_cpus and record["other_thread_cpus"] == expected_cpus


def test_verification_catches_cpus_bound_but_memory_not():
    node = _live_valid_nodes()[0]
    outcome = _child(
        "import json, os\n"
        "from perfprobe.system import bind\n"
        "from perfprobe.errors import BindError\n"
        "from perfprobe.host import read_host_facts\n"
        f"cpus = bind.node_cpus({node}, read_host_facts())\n"
        "os.sched_setaffinity(0, cpus)\n"
        "try:\n"
        f"    bind.verify_binding({node}, cpus); print(json.dumps({{'raised': False}}))\n"
        "except BindError as exc:\n"
        "    print(json.dumps({'raised': True, 'message': str(exc)}))\n")
    assert outcome["raised"] and "memory policy is default" in outcome["message"]


def test_threads_pinned_moves_every_thread_and_restores_each():
    cpus = sorted(_live_valid_nodes() and bind.node_cpus(_live_valid_nodes()[0], read_host_facts()))
    outcome = _child(
        "import json, os, threading, time\n"
        "from perfprobe.system import bind\n"
        "t = threading.Thread(target=time.sleep, args=(5,), daemon=True); t.start()\n"
        "before = sorted(os.sched_getaffinity(t.native_id))\n"
        f"with bind.threads_pinned([{cpus[0]}]):\n"
        "    inside = [sorted(os.sched_getaffinity(0)), sorted(os.sched_getaffinity(t.native_id))]\n"
        "after = sorted(os.sched_getaffinity(t.native_id))\n"
        "print(json.dumps({'before': before, 'inside': inside, 'after': after}))\n")
    assert outcome["inside"] == [[cpus[0]], [cpus[0]]]
    assert outcome["after"] == outcome["before"]


def test_cli_bind_to_a_missing_node_exits_2_with_one_line():
    done = subprocess.run([sys.executable, "-m", "perfprobe", "numa", "--bind", "7"],
                          capture_output=True, text=True, timeout=60)
    valid = ", ".join(map(str, _live_valid_nodes()))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"perfprobe: error: NUMA node 7 does not exist; "
                                                f"valid nodes for --bind: {valid}"]


def test_a_binding_that_does_not_take_is_an_error_and_exit_3():
    node = _live_valid_nodes()[0]
    code = (
        "import sys\n"
        "from perfprobe.system import bind\nfrom perfprobe import cli\n"
        "bind.numa_sys.set_mempolicy = lambda mode, nodes: None  # the memory half silently ignored\n"
        f"cli.main(['numa', '--bind', '{node}', '--quick', '--json'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    (result,) = json.loads(done.stdout)["results"]
    assert result["verdict"] == "error"
    assert result["summary"].startswith(f"binding to NUMA node {node} did not take: memory policy is default")
