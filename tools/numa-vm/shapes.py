"""The emulated machines: NUMA shapes QEMU builds, what each guest must then report, and which
checks run in it.

A shape is the single source of truth for both ends: `qemu_args` turns it into QEMU's -numa options
and `expected` into what the guest's kernel (and so `perfprobe host`) must show. QEMU 7.2 refuses
sparse node ids ("numa: Node ID missing"), so the sparse shape gives QEMU a dense set with one node
whose memory the guest kernel is told to ignore (memmap=SIZE$START): a node with neither CPUs nor
memory never comes online, and the guest sees ids 0, 1, 3 — as on hosts with an empty socket.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# What each check proves (the guest side is guest/checks.py).
CHECKS = {
    "topology": "perfprobe host --json reports the node ids, CPUs, distances and memory QEMU was given",
    "numa-matrix": "perfprobe numa --json --quick: full CPU-node x memory-node matrix, every page verified",
    "numa-bind": "perfprobe numa --bind B --json --quick: binding verified, one row, pages verified",
    "bind-placement": "bind_to_node(B), then the harness's own syscalls: affinity, MPOL_BIND, pages on B",
    "cache-bind": "perfprobe cache --bind B --quick runs bound (binding verified in the report)",
    "bind-memory-only": "perfprobe numa --bind M (memory-only node) exits 2 with one line",
    "bind-small-node": "cache --bind N --quick --max-size 256M (and all --quick --bind N) on each small "
                       "node: runs within the node's memory or exits 2 with one line, never killed",
    "pytest-multinode": "pytest -m multinode (the project's multi-node tests) passes",
}


@dataclass(frozen=True)
class Node:
    """One QEMU NUMA node. `hidden`: the guest kernel ignores its memory, so it never comes online."""

    id: int
    cpus: tuple[int, ...]
    memory_mib: int
    hidden: bool = False


@dataclass(frozen=True)
class Shape:
    """One guest: its nodes, the SLIT distances of node pairs (i < j), the node `--bind` uses, the
    checks to run, and whether the run must fail (the negative case)."""

    name: str
    title: str
    nodes: tuple[Node, ...]
    distances: dict[tuple[int, int], int]
    bind: int
    checks: tuple[str, ...]
    expect_fail: bool = False
    guest_env: dict[str, str] = field(default_factory=dict)

    @property
    def cpu_count(self) -> int:
        return sum(len(n.cpus) for n in self.nodes)

    @property
    def memory_mib(self) -> int:
        return sum(n.memory_mib for n in self.nodes)

    def visible(self) -> list[Node]:
        return [n for n in self.nodes if not n.hidden]

    def distance(self, i: int, j: int) -> int:
        return 10 if i == j else self.distances[(min(i, j), max(i, j))]

    def memory_only(self) -> list[int]:
        return [n.id for n in self.visible() if not n.cpus]


def qemu_args(shape: Shape) -> list[str]:
    """-smp/-m/-numa options for `shape` (TCG machine options are added by the runner)."""
    args = ["-smp", str(shape.cpu_count), "-m", f"{shape.memory_mib}M"]
    for node in shape.nodes:
        cpus = f",cpus={node.cpus[0]}-{node.cpus[-1]}" if node.cpus else ""
        args += ["-object", f"memory-backend-ram,size={node.memory_mib}M,id=m{node.id}",
                 "-numa", f"node,nodeid={node.id}{cpus},memdev=m{node.id}"]
    for (i, j), value in sorted(shape.distances.items()):
        args += ["-numa", f"dist,src={i},dst={j},val={value}"]
    return args


def kernel_args(shape: Shape) -> str:
    """Kernel command-line additions: hide the memory of hidden nodes (QEMU lays nodes out in id
    order from address 0, all below 4 GiB for the sizes used here)."""
    start, hide = 0, []
    for node in shape.nodes:
        if node.hidden:
            hide.append(f"memmap={node.memory_mib}M${start}M")
        start += node.memory_mib
    return " ".join(hide)


def expected(shape: Shape) -> dict:
    """What the guest must report: visible nodes, their CPUs and memory, distances between them."""
    nodes = shape.visible()
    return {
        "nodes": [{"id": n.id, "cpus": list(n.cpus), "memory_mib": n.memory_mib} for n in nodes],
        "distances": [[shape.distance(a.id, b.id) for b in nodes] for a in nodes],
        "memory_only_nodes": shape.memory_only(),
        "bind": shape.bind,
        "checks": list(shape.checks),
        "expect_fail": shape.expect_fail,
        "env": dict(shape.guest_env),
    }


def _two_nodes(name: str, title: str, checks: tuple[str, ...], **extra) -> Shape:
    return Shape(name, title, (Node(0, (0,), 1024), Node(1, (1,), 384)), {(0, 1): 21}, 1, checks,
                 **extra)


SHAPES: tuple[Shape, ...] = (
    _two_nodes("two-nodes", "2 nodes, 1 CPU each, distance 21",
               ("topology", "numa-matrix", "numa-bind", "bind-placement", "cache-bind")),
    Shape("four-nodes", "4 nodes in a line, distances 16/22/28 (not uniform)",
          (Node(0, (0,), 1024), Node(1, (1,), 256), Node(2, (2,), 256), Node(3, (3,), 256)),
          {(0, 1): 16, (0, 2): 22, (0, 3): 28, (1, 2): 16, (1, 3): 22, (2, 3): 16}, 3,
          ("topology", "numa-matrix", "bind-placement")),
    Shape("memory-only", "2 CPU nodes + node 2 with memory and no CPUs (CXL-like)",
          (Node(0, (0,), 1024), Node(1, (1,), 256), Node(2, (), 256)),
          {(0, 1): 21, (0, 2): 17, (1, 2): 28}, 1,
          ("topology", "numa-matrix", "bind-memory-only")),
    Shape("sparse-ids", "nodes 0, 1, 3 (QEMU node 2 hidden by memmap=), node 3 memory-only",
          (Node(0, (0,), 1024), Node(1, (1,), 384), Node(2, (), 64, hidden=True), Node(3, (), 256)),
          {(0, 1): 21, (0, 2): 40, (0, 3): 17, (1, 2): 40, (1, 3): 28, (2, 3): 40}, 1,
          ("topology", "bind-placement", "bind-memory-only", "pytest-multinode")),
    Shape("small-nodes", "node 1 of 128 MiB (too small to run bound), node 2 of 320 MiB (runs capped)",
          (Node(0, (0,), 1024), Node(1, (1,), 128), Node(2, (2,), 320)),
          {(0, 1): 21, (0, 2): 21, (1, 2): 21}, 1, ("topology", "bind-small-node")),
    _two_nodes("broken-membind", "negative: 2 nodes, set_mempolicy made a silent no-op",
               ("numa-bind", "bind-placement"), expect_fail=True,
               guest_env={"PERFPROBE_TEST_BREAK_MEMBIND": "1"}),
)


def by_name(names: list[str]) -> list[Shape]:
    """The shapes named (all of them when `names` is empty); ValueError naming the valid ones."""
    known = {s.name: s for s in SHAPES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown shape {', '.join(unknown)}; valid: {', '.join(known)}")
    return [known[n] for n in names] if names else list(SHAPES)
