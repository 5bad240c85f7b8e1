"""Inside an emulated NUMA guest: run perfprobe against the shape QEMU was given and say, check by
check, whether it held.

Usage (from /init): python checks.py SHAPE. Reads /numavm/shapes.json (written by the host side,
tools/numa-vm/shapes.py). Every result is one console line `@@numavm {json}`; reports worth keeping
for docs/results are `@@numavm-artifact {json}` lines. Exit 0 only when every check passed.

PERFPROBE_TEST_BREAK_MEMBIND=1 (set by the negative shape only) runs the binding checks under
break_membind.py, which makes set_mempolicy a silent no-op: CPUs bound, memory not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import guest_syscalls

SHAPES = Path("/numavm/shapes.json")
MTIMES = Path("/numavm/mtimes.json")
TIMEOUT_S = 180  # per command; a guest's whole run takes 20-90 s
NUMA_SIZE = "16M"  # per memory node: enough to leave the caches, small enough for emulation
Result = tuple[bool, str]


class Guest:
    """The shape's expectations and how to run perfprobe in this guest."""

    def __init__(self, name: str) -> None:
        data = self.data = json.loads(SHAPES.read_text())
        self.project = data["project"]
        self.shape: dict[str, Any] = data["shapes"][name]
        self.bind: int = self.shape["bind"]
        self.broken = os.environ.get("PERFPROBE_TEST_BREAK_MEMBIND") == "1"

    def nodes(self) -> list[dict[str, Any]]:
        return self.shape["nodes"]

    def cpu_nodes(self) -> list[int]:
        return [n["id"] for n in self.nodes() if n["cpus"]]

    def cpus_of(self, node: int) -> list[int]:
        return next(n["cpus"] for n in self.nodes() if n["id"] == node)

    def run(self, args: list[str], bind_hook: bool = False) -> subprocess.CompletedProcess:
        """Run a command in the checkout; under the negative shape, binding commands get the hook."""
        prefix = [sys.executable, "/numavm/break_membind.py"] if bind_hook and self.broken else []
        return subprocess.run(prefix + args, cwd=self.project, capture_output=True, text=True,
                              timeout=TIMEOUT_S)

    def perfprobe(self, *args: str, bind_hook: bool = False) -> subprocess.CompletedProcess:
        return self.run([sys.executable, "-m", "perfprobe", *args], bind_hook)


def emit(tag: str, payload: dict[str, Any]) -> None:
    print(f"{tag} {json.dumps(payload, separators=(',', ':'))}", flush=True)


def report_of(proc: subprocess.CompletedProcess, accept: tuple[int, ...] = (0, 1)) -> dict[str, Any]:
    """The JSON report of a perfprobe run; ValueError with the tail of stderr when there is none."""
    if proc.returncode not in accept:
        raise ValueError(f"exit {proc.returncode}: {last_lines(proc.stderr or proc.stdout)}")
    return json.loads(proc.stdout)


def last_lines(text: str, count: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-count:])


def check_topology(g: Guest) -> Result:
    """perfprobe host sees exactly the nodes, CPUs, distances and memory QEMU was given."""
    report = report_of(g.perfprobe("host", "--json"))
    emit("@@numavm-artifact", {"name": "host", "data": report["host"]})
    numa = report["host"]["numa"]
    seen = [{"id": n["id"], "cpus": n["cpus"]} for n in numa["nodes"]]
    want = [{"id": n["id"], "cpus": n["cpus"]} for n in g.nodes()]
    problems = []
    if seen != want:
        problems.append(f"nodes {seen} != {want} (sysfs: {guest_syscalls.sysfs_nodes()})")
    if numa["distances"] != g.shape["distances"]:
        problems.append(f"distances {numa['distances']} != {g.shape['distances']}")
    if sorted(numa.get("memory_only_nodes") or []) != g.shape["memory_only_nodes"]:
        problems.append(f"memory-only {numa.get('memory_only_nodes')} != {g.shape['memory_only_nodes']}")
    problems += memory_problems(numa["nodes"], g.nodes())
    memory = {n["id"]: f"{(n.get('memory_total_bytes') or 0) >> 20}M" for n in numa["nodes"]}
    summary = f"nodes {seen}, memory {memory}, distances {numa['distances']}"
    return not problems, "; ".join(problems) or summary


def memory_problems(seen: list[dict[str, Any]], want: list[dict[str, Any]]) -> list[str]:
    """Each node's MemTotal must be what QEMU gave it, less what the kernel keeps: under 40 %, or
    under 64 MiB on a small node (small-nodes' 128 MiB node 1 read 72 MiB in one boot of three)."""
    given = {n["id"]: n["memory_mib"] << 20 for n in want}
    problems = []
    for node in seen:
        total = node.get("memory_total_bytes") or 0
        wanted = given.get(node["id"], 0)
        if not min(0.6 * wanted, wanted - (64 << 20)) <= total <= wanted:
            problems.append(f"node {node['id']} MemTotal {total >> 20} MiB, QEMU gave "
                            f"{given.get(node['id'], 0) >> 20} MiB")
    return problems


def matrix_problems(result: dict[str, Any], cpu_nodes: list[int], mem_nodes: list[int]) -> list[str]:
    """Every (CPU node, memory node) pair has both figures; every buffer's pages sat on its node."""
    metrics = result.get("metrics") or {}
    problems = [f"missing {kind}.{i}.{j}" for i in cpu_nodes for j in mem_nodes
                for kind in ("latency_ns", "read_gbs") if f"{kind}.{i}.{j}" not in metrics]
    extra = [k for k in metrics if k.startswith("latency_ns.")
             and int(k.split(".")[1]) not in cpu_nodes]
    problems += [f"unexpected row {k}" for k in extra]
    pages = {p["node"]: p for p in (result.get("facts") or {}).get("pages") or []}
    for j in mem_nodes:
        page = pages.get(j)
        if page is None:
            problems.append(f"no page check for memory node {j}")
        elif page["checked"] == 0 or page["on_node"] != page["checked"]:
            problems.append(f"memory node {j}: {page['on_node']}/{page['checked']} pages on node, "
                            f"elsewhere {page['elsewhere']}, absent {page['absent']}")
    if result.get("verdict") in ("error", "skip"):
        problems.append(f"verdict {result.get('verdict')}: {result.get('summary')}")
    return problems


def check_numa_matrix(g: Guest) -> Result:
    report = report_of(g.perfprobe("numa", "--json", "--quick", "--size", NUMA_SIZE))
    emit("@@numavm-artifact", {"name": "numa", "data": report["results"][0]})
    result = report["results"][0]
    mem_nodes = [n["id"] for n in g.nodes()]
    problems = matrix_problems(result, g.cpu_nodes(), mem_nodes)
    return not problems, "; ".join(problems) or (
        f"{len(g.cpu_nodes())}x{len(mem_nodes)} matrix, pages verified; {result['summary']}")


def binding_problems(result: dict[str, Any], node: int, cpus: list[int]) -> list[str]:
    binding = (result.get("facts") or {}).get("binding")
    want = {"node": node, "cpus": cpus, "mempolicy": "bind", "mems": [node], "verified": True}
    if not binding:
        return [f"no binding in the report ({result.get('verdict')}: {result.get('summary')})"]
    wrong = {k: binding.get(k) for k, v in want.items() if binding.get(k) != v}
    return [f"binding {wrong} != {want}"] if wrong else []


def check_numa_bind(g: Guest) -> Result:
    proc = g.perfprobe("numa", "--bind", str(g.bind), "--json", "--quick", "--size", NUMA_SIZE,
                       bind_hook=True)
    report = report_of(proc)
    result = report["results"][0]
    emit("@@numavm-artifact", {"name": f"numa-bind-{g.bind}", "data": result})
    problems = binding_problems(result, g.bind, g.cpus_of(g.bind))
    problems += matrix_problems(result, [g.bind], [n["id"] for n in g.nodes()])
    return not problems, "; ".join(problems) or f"bound to node {g.bind}, one row, pages verified"


def check_bind_placement(g: Guest) -> Result:
    """bind_to_node in a fresh process, then this harness's own syscalls look at what took."""
    proc = g.run([sys.executable, "/numavm/guest_syscalls.py", str(g.bind)], bind_hook=True)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        return False, f"exit {proc.returncode}: {last_lines(proc.stderr)}"
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    problems = guest_syscalls.placement_problems(seen, g.bind, g.cpus_of(g.bind))
    return not problems, "; ".join(problems) or (
        f"affinity {seen['affinity']}, policy {seen['policy']} {seen['policy_nodes']}, "
        f"{seen['pages_on'].get(str(g.bind), 0)}/{seen['pages']} pages on node {g.bind}")


def check_cache_bind(g: Guest) -> Result:
    proc = g.perfprobe("cache", "--bind", str(g.bind), "--quick", "--max-size", "8M",
                       "--repeats", "1", "--json", bind_hook=True)
    result = report_of(proc)["results"][0]
    problems = binding_problems(result, g.bind, g.cpus_of(g.bind))
    if result.get("verdict") in ("error", "skip"):
        problems.append(f"verdict {result['verdict']}: {result.get('summary')}")
    return not problems, "; ".join(problems) or f"ran bound to node {g.bind}: {result['summary']}"


def check_bind_memory_only(g: Guest) -> Result:
    node = g.shape["memory_only_nodes"][0]
    proc = g.perfprobe("numa", "--bind", str(node))
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    problems = []
    if proc.returncode != 2:
        problems.append(f"exit {proc.returncode}, expected 2")
    if len(lines) != 1 or "no CPUs" not in proc.stderr:
        problems.append(f"stderr should be one line naming 'no CPUs', got {lines}")
    if proc.stdout.strip():
        problems.append(f"stdout not empty: {proc.stdout.strip()[:200]}")
    return not problems, "; ".join(problems) or f"exit 2: {lines[0]}"


SMALL_NODE_MIB = 384  # the nodes check_bind_small_node binds to: smaller than a quarter of the host


def check_bind_small_node(g: Guest) -> Result:
    """--bind to a small node: the run fits the node's memory (budgets are the node's) or is refused
    with one line, exit 2, before binding; a kill by the kernel (137, nothing said) is the bug."""
    small = [n["id"] for n in g.nodes() if n["cpus"] and n["memory_mib"] <= SMALL_NODE_MIB]
    problems, seen = [], []
    for node in small:
        runs = [("cache", "--bind", str(node), "--quick", "--max-size", "256M", "--repeats", "1", "--json")]
        if node == min(small, key=lambda n: next(m["memory_mib"] for m in g.nodes() if m["id"] == n)):
            runs += [("all", "--quick", "--bind", str(node), "--json")]  # the smallest only: TCG is slow
        for args in runs:
            proc = g.perfprobe(*args)
            verdict, problem = _bound_or_refused(proc, node, g.cpus_of(node))
            seen.append(f"{args[0]} --bind {node}: {verdict}")
            if problem:
                problems.append(f"{args[0]} --bind {node}: {problem}")
    if not small:
        problems.append(f"no CPU node of at most {SMALL_NODE_MIB} MiB in this shape")
    return not problems, "; ".join(problems) or "; ".join(seen)


def _bound_or_refused(proc: subprocess.CompletedProcess, node: int, cpus: list[int]) -> tuple[str, str]:
    """(what happened, the problem or '') for one run bound to a small node."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    if proc.returncode == 2:
        if len(lines) != 1 or proc.stdout.strip():
            return "exit 2", f"exit 2 should print one stderr line and no stdout, got {lines[:3]}"
        return f"exit 2: {lines[0]}", ""
    if proc.returncode not in (0, 1):
        return f"exit {proc.returncode}", f"exit {proc.returncode} (137: killed by the kernel): {last_lines(proc.stderr)}"
    results = json.loads(proc.stdout)["results"]
    problems = [p for r in results if r.get("probe") == "cache" for p in binding_problems(r, node, cpus)]
    problems += [f"{r['probe']} error: {r.get('summary')}" for r in results if r.get("verdict") == "error"]
    return f"ran bound (exit {proc.returncode})", "; ".join(problems)


def check_pytest_multinode(g: Guest) -> Result:
    """The project's multinode-marked tests; their output goes to the console log either way."""
    files = sorted(str(p) for p in Path(g.project, "tests").glob("test_*.py")
                   if "multinode" in p.read_text())
    if not files:
        return False, "no test file is marked multinode"
    proc = g.run([sys.executable, "-m", "pytest", "-m", "multinode", "--color=no",
                  "-p", "no:cacheprovider", "-q", "--durations=8", *files])
    tail = last_lines(proc.stdout, 1)
    for line in proc.stdout.splitlines()[-60:]:
        print(f"  pytest| {line}", flush=True)
    if proc.returncode != 0:
        return False, f"exit {proc.returncode}: {tail} (pytest's output is above in the console log)"
    return True, f"{len(files)} file(s): {tail}"


def check_profile(g: Guest) -> Result:
    """Not a check: how long the building blocks take under emulation (debugging, --checks profile)."""
    steps = {"python": ["-c", "pass"], "numpy": ["-c", "import numpy"], "numba": ["-c", "import numba"],
             "rich+typer": ["-c", "import rich.console, typer"], "cli": ["-m", "perfprobe", "--help"],
             "host": ["-m", "perfprobe", "host", "--json"],
             "numa 16M": ["-m", "perfprobe", "numa", "--quick", "--size", "16M", "--json"]}
    times = []
    for name, args in steps.items():
        started = time.monotonic()
        g.run([sys.executable, *args])
        times.append(f"{name} {time.monotonic() - started:.1f}s")
    return True, ", ".join(times)


CHECKS: dict[str, Callable[[Guest], Result]] = {
    "profile": check_profile,
    "topology": check_topology, "numa-matrix": check_numa_matrix, "numa-bind": check_numa_bind,
    "bind-placement": check_bind_placement, "cache-bind": check_cache_bind,
    "bind-memory-only": check_bind_memory_only, "pytest-multinode": check_pytest_multinode,
    "bind-small-node": check_bind_small_node,
}


def run_check(g: Guest, name: str) -> bool:
    started = time.monotonic()
    try:
        ok, detail = CHECKS[name](g)
    except Exception as exc:  # noqa: BLE001 - a check that blows up is a failed check, with why
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    emit("@@numavm", {"check": name, "result": "pass" if ok else "fail", "detail": detail,
                      "seconds": round(time.monotonic() - started, 1)})
    return ok


def use_host_numba_cache(data: dict[str, Any]) -> None:
    """Point numba at the kernels compiled on the host (tools/numa-vm/numba_warm.py): same cache
    path, generic CPU, and each source file's exact host mtime (cpio kept whole seconds only)."""
    for path, ns in json.loads(MTIMES.read_text()).items():
        try:
            os.utime(path, ns=(ns, ns))
        except OSError:
            continue
    os.environ.update(NUMBA_CACHE_DIR=data["numba_cache_dir"], NUMBA_CPU_NAME="generic")


def main(argv: list[str]) -> int:
    g = Guest(argv[1])
    use_host_numba_cache(g.data)
    emit("@@numavm-guest", {"shape": argv[1], "uptime_s": guest_syscalls.uptime(),
                            "sysfs_nodes": guest_syscalls.sysfs_nodes(), "broken_membind": g.broken})
    results = [run_check(g, name) for name in g.shape["checks"]]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
