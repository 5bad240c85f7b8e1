"""The `host` probe's set-up checks: one pure rule per check, host facts -> findings.

Each rule reads only the host facts (perfprobe.host; host measures nothing, so `raw` is empty) and
returns findings: `warn` where the set-up costs performance or skews measurements, `pass` for what
is worth knowing. A healthy host gets no warning. The rules run in the order of RULES; `findings`
lists warnings first.
"""

from __future__ import annotations

from typing import Any, Callable, cast

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts
from perfprobe.host.numa import contradictions
from perfprobe.host.parse import format_cpulist
from perfprobe.probes.host import limits
from perfprobe.probes.host.figures import (
    HostRaw,
    cpu,
    cpu_list,
    cpus,
    distances,
    gpu_name,
    gpus,
    nodes,
    numa,
    pcie,
    section,
)
from perfprobe.pure.units import format_bytes

Raw = HostRaw
Rule = Callable[[Raw, Facts], list[Finding]]

MEMLOCK_MIN_BYTES = 64 << 20


def rule_governor(raw: Raw, host: Facts) -> list[Finding]:
    """Any governor but `performance` lets the clock drop between and during measurements."""
    governors = section(host, "cpufreq").get("governors") or {}
    slow = {name: cpus for name, cpus in governors.items() if name != "performance"}
    if not slow:
        return []
    where = "; ".join(f"'{name}' on CPUs {format_cpulist(cpus)}" for name, cpus in slow.items())
    return [Finding(Verdict.WARN, f"CPU frequency governor is not 'performance': {where}",
                    "Use the 'performance' governor while measuring: "
                    "sudo cpupower frequency-set -g performance")]


def rule_thp(raw: Raw, host: Facts) -> list[Finding]:
    """THP `never` takes 2 MiB pages away from every large buffer: more TLB misses."""
    if section(host, "thp").get("enabled") != "never":
        return []
    return [Finding(Verdict.WARN, "Transparent huge pages are off ('never'): large buffers pay "
                    "extra TLB misses", "Enable them for programs that ask: echo madvise | sudo tee "
                    "/sys/kernel/mm/transparent_hugepage/enabled")]


def rule_gpu_links(raw: Raw, host: Facts) -> list[Finding]:
    """A link narrower than it can train is lost bandwidth; a slower generation may be idle power saving."""
    findings = []
    for gpu in gpus(host):
        link, name = pcie(gpu), gpu_name(gpu)
        width, width_max = link.get("width_current"), link.get("width_max")
        gen, gen_max = link.get("gen_current"), link.get("gen_max")
        if width and width_max and width < width_max:
            findings.append(Finding(Verdict.WARN, f"{name} PCIe link is x{width}, below its x{width_max}: "
                                    f"host-GPU bandwidth is cut to {width / width_max:.0%}",
                                    "Reseat the card or move it to a full-width slot; check the "
                                    "slot's bifurcation setting in the BIOS"))
        if gen and gen_max and gen < gen_max:
            findings.append(Finding(Verdict.PASS, f"{name} PCIe link runs Gen{gen} now, Gen{gen_max} at "
                                    f"most: an idle GPU lowers its link speed to save power",
                                    "Re-check under load (e.g. during `perfprobe pinned`); Gen"
                                    f"{gen} under load would be a slot or riser problem"))
    return findings


def rule_gpu_nodes(raw: Raw, host: Facts) -> list[Finding]:
    """A GPU on a node without CPUs has no local CPU to feed it; its threads must cross nodes."""
    by_id = {n.get("id"): n for n in nodes(host)}
    findings = []
    for gpu in gpus(host):
        node, name = gpu.get("numa_node"), gpu_name(gpu)
        if node in by_id and not by_id[node].get("cpus"):
            findings.append(Finding(Verdict.WARN, f"{name} sits on NUMA node {node}, which has no CPUs",
                                    "Bind the threads that feed it to the nearest node with CPUs "
                                    "(see the distance table): perfprobe pinned --bind NODE"))
        elif node is None and len(by_id) > 1:
            findings.append(Finding(Verdict.PASS, f"{name}: NUMA node unknown (sysfs numa_node is -1)",
                                    "Find its local CPUs in /sys/bus/pci/devices/<bus id>/local_cpulist"))
    return findings


def rule_numa_balancing(raw: Raw, host: Facts) -> list[Finding]:
    """Automatic NUMA balancing migrates pages and threads during a measurement."""
    value = numa(host).get("balancing")
    if not value or not int(value) & 1 or len(nodes(host)) < 2:
        return []
    return [Finding(Verdict.WARN, "Automatic NUMA balancing is on: the kernel moves pages and threads "
                    "between nodes while programs run", "Turn it off while measuring: "
                    "echo 0 | sudo tee /proc/sys/kernel/numa_balancing")]


def rule_usable_cpus(raw: Raw, host: Facts) -> list[Finding]:
    """A cpuset or taskset hides CPUs: results describe only the CPUs this process may use."""
    online, usable = cpu_list(host, "online"), cpu_list(host, "usable")
    if not online or len(usable) >= len(online):
        return []
    source = cpus(host).get("usable_source") or "affinity"
    return [Finding(Verdict.WARN, f"This process may use {len(usable)} of {len(online)} online CPUs "
                    f"({format_cpulist(usable)}, from its {source})",
                    "Run without taskset/numactl limits, or in a cgroup/container with every CPU, "
                    "to measure the whole host")]


MEMLOCK_RAISE = ("Raise it: `ulimit -l unlimited` in this shell (as allowed by the hard limit), or "
                 "'<user> - memlock unlimited' in /etc/security/limits.conf")
CUDA_UNLIMITED = ("CUDA's pinned memory (cudaHostAlloc, cudaHostRegister) is not limited by it "
                  "(docs/probes/host.md says where that was measured)")


def rule_memlock(raw: Raw, host: Facts) -> list[Finding]:
    """RLIMIT_MEMLOCK limits mlock(2) and RDMA memory registration (ibv_reg_mr, which NCCL and MPI
    over InfiniBand/RoCE use), not CUDA's pinned allocations (measured: docs/probes/host.md). It
    is a fault only where an RDMA device could use it; elsewhere a note."""
    soft = section(host, "memlock").get("soft_bytes")
    if soft is None or soft >= MEMLOCK_MIN_BYTES:
        return []
    limit = f"Locked-memory limit (ulimit -l) is {format_bytes(soft)}"
    rdma = rdma_devices(host)
    if rdma:
        return [Finding(Verdict.WARN, f"{limit}: RDMA memory registration (ibv_reg_mr: NCCL, MPI over "
                        f"{', '.join(rdma)}) and mlock of more than that fail", MEMLOCK_RAISE)]
    where = "no RDMA device here" + ("" if gpus(host) else " and no GPU")
    return [Finding(Verdict.PASS, f"{limit}: it limits mlock and RDMA memory registration, and {where}; "
                    f"{CUDA_UNLIMITED}", MEMLOCK_RAISE + " before using RDMA or mlock")]


RDMA_VENDORS = {"0x15b3": "Mellanox/NVIDIA ConnectX", "0x1d0f": "AWS EFA", "0x1077": "QLogic"}


def rdma_devices(host: Facts) -> list[str]:
    """RDMA-capable adapters on the PCI bus: any InfiniBand controller (class 0x0207), or a
    network controller (0x02) of a vendor whose adapters do RDMA (ConnectX, EFA, QLogic)."""
    found = []
    for device in host.get("pci_devices") or []:
        cls, vendor = str(device.get("class") or ""), str(device.get("vendor") or "")
        if cls.startswith("0x0207"):
            found.append("InfiniBand")
        elif cls.startswith("0x02") and RDMA_VENDORS.get(vendor):
            found.append(RDMA_VENDORS[vendor])
    return sorted(set(found))


def rule_offline_cpus(raw: Raw, host: Facts) -> list[Finding]:
    """Offline CPUs are missing from every figure (and often offlined by mistake)."""
    offline = cpu_list(host, "offline")
    if not offline:
        return []
    return [Finding(Verdict.WARN, f"CPUs {format_cpulist(offline)} are offline",
                    "Bring them back unless offlined on purpose: "
                    "echo 1 | sudo tee /sys/devices/system/cpu/cpuN/online")]


def rule_smt(raw: Raw, host: Facts) -> list[Finding]:
    """Whether hyperthreads share cores decides how to place threads; worth saying, not a fault."""
    threads = cpu(host).get("threads_per_core")
    if not threads:
        return []
    if threads > 1:
        return [Finding(Verdict.PASS, f"SMT is on: {threads} hardware threads per core share its "
                        "caches and execution units", "For per-core figures, use one thread per core "
                        "(see the cores in `perfprobe host --json`)")]
    return [Finding(Verdict.PASS, "SMT is off or absent: one hardware thread per core")]


def _contradictions(host: Facts) -> list[str]:
    listed = cast(list[dict[str, Any]], nodes(host))
    return list(contradictions(listed, distances(host), cpu_list(host, "online")))


def rule_numa_consistency(raw: Raw, host: Facts) -> list[Finding]:
    """Contradictory NUMA tables make every NUMA-aware placement a guess."""
    return [Finding(Verdict.WARN, f"NUMA facts contradict each other: {note}",
                    "Update the BIOS/firmware (ACPI SRAT/SLIT); until then do not trust NUMA binding "
                    "on this host") for note in _contradictions(host)]


def rule_node_memory(raw: Raw, host: Facts) -> list[Finding]:
    """A CPU node without memory makes every access of its threads remote.

    Unequal (but present) node memory is judged once, by the numa probe, against its own threshold.
    """
    with_cpus = [n for n in nodes(host) if n.get("cpus")]
    return [Finding(Verdict.WARN, f"NUMA node {n['id']} has CPUs but no memory: all its accesses are remote",
                    "Populate DIMMs on every socket") for n in with_cpus if n.get("memory_total_bytes") == 0]


def rule_memory_only_nodes(raw: Raw, host: Facts) -> list[Finding]:
    """Memory-only nodes (GPU, CXL, persistent memory) are worth naming."""
    ids = numa(host).get("memory_only_nodes") or []
    if not ids:
        return []
    return [Finding(Verdict.PASS, f"NUMA node(s) {format_cpulist(ids)} have memory but no CPUs "
                    "(GPU, CXL or persistent memory exposed as a node)")]


def rule_hugepages(raw: Raw, host: Facts) -> list[Finding]:
    """Reserved huge pages are memory no ordinary allocation gets: say how much."""
    huge = section(host, "hugepages")
    total, size, free = huge.get("total"), huge.get("size_bytes"), huge.get("free")
    if not total or not size:
        return []
    return [Finding(Verdict.PASS, f"{total} huge pages of {format_bytes(size)} are reserved "
                    f"({format_bytes(total * size)}), {free if free is not None else '?'} free")]


def rule_gpu_facts(raw: Raw, host: Facts) -> list[Finding]:
    """Why there are no GPU facts, and whether NVIDIA cards sit on the PCI bus all the same."""
    note = host.get("gpu_note")
    if gpus(host) or not note:
        return []
    cards = [d for d in host.get("pci_devices") or []
             if d.get("vendor") == "0x10de" and str(d.get("class") or "").startswith("0x03")]
    if not cards:
        return [Finding(Verdict.PASS, f"No GPU facts: {note}")]
    return [Finding(Verdict.PASS, f"{len(cards)} NVIDIA GPU(s) on the PCI bus, but no GPU facts: {note}",
                    "Install the NVIDIA driver and perfprobe[gpu] (nvidia-ml-py) to read their links "
                    "and NUMA nodes")]


def rule_notes(raw: Raw, host: Facts) -> list[Finding]:
    """What the reader noticed (missing files, odd but harmless data), minus what is warned above."""
    warned = set(_contradictions(host))
    said = [n for n in list(host.get("notes") or []) + list(numa(host).get("notes") or []) if n not in warned]
    return [Finding(Verdict.PASS, f"Note: {note}") for note in said]


RULES: tuple[Rule, ...] = (rule_usable_cpus, *limits.RULES, rule_offline_cpus, rule_governor, rule_thp, rule_numa_balancing,
                           rule_numa_consistency, rule_node_memory, rule_memlock, rule_gpu_links, rule_gpu_nodes,
                           rule_smt, rule_memory_only_nodes, rule_hugepages, rule_gpu_facts, rule_notes)


def findings(raw: Raw, host: Facts) -> tuple[Finding, ...]:
    """Every rule's findings, warnings first (stable within each verdict)."""
    found = [finding for rule in RULES for finding in rule(raw, host)]
    return tuple(sorted(found, key=lambda f: -f.verdict.severity))
