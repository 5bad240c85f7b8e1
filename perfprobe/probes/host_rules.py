"""The `host` probe's set-up checks: one pure function per check, host facts -> findings.

Each rule reads only the host-facts dict (perfprobe.host) and returns findings: `warn` where the
set-up costs performance or skews measurements, `pass` for what is worth knowing. A healthy host
gets no warning. The rules run in the order of RULES.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from perfprobe.host.numa import contradictions
from perfprobe.host.parse import format_cpulist
from perfprobe.model import Finding, Verdict
from perfprobe.units import format_bytes

Host = Mapping[str, Any]
Rule = Callable[[Host], list[Finding]]

MEMLOCK_MIN_BYTES = 64 << 20


def _get(host: Host, *keys: str) -> Any:
    """host[k1][k2]... or None when any level is missing (recorded files may be partial)."""
    value: Any = host
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def governor(host: Host) -> list[Finding]:
    """Any governor but `performance` lets the clock drop between and during measurements."""
    governors = _get(host, "cpufreq", "governors") or {}
    slow = {name: cpus for name, cpus in governors.items() if name != "performance"}
    if not slow:
        return []
    where = "; ".join(f"'{name}' on CPUs {format_cpulist(cpus)}" for name, cpus in slow.items())
    return [Finding(Verdict.WARN, f"CPU frequency governor is not 'performance': {where}",
                    "Use the 'performance' governor while measuring: "
                    "sudo cpupower frequency-set -g performance")]


def thp(host: Host) -> list[Finding]:
    """THP `never` takes 2 MiB pages away from every large buffer: more TLB misses."""
    if _get(host, "thp", "enabled") != "never":
        return []
    return [Finding(Verdict.WARN, "Transparent huge pages are off ('never'): large buffers pay "
                    "extra TLB misses", "Enable them for programs that ask: echo madvise | sudo tee "
                    "/sys/kernel/mm/transparent_hugepage/enabled")]


def gpu_links(host: Host) -> list[Finding]:
    """A link narrower than it can train is lost bandwidth; a slower generation may be idle power saving."""
    findings = []
    for gpu in host.get("gpus") or []:
        link = gpu.get("pcie") or {}
        name = f"GPU {gpu.get('index')} ({gpu.get('pci_bus_id')})"
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


def gpu_nodes(host: Host) -> list[Finding]:
    """A GPU on a node without CPUs has no local CPU to feed it; its threads must cross nodes."""
    nodes = {n.get("id"): n for n in _get(host, "numa", "nodes") or []}
    findings = []
    for gpu in host.get("gpus") or []:
        node = gpu.get("numa_node")
        name = f"GPU {gpu.get('index')} ({gpu.get('pci_bus_id')})"
        if node in nodes and not nodes[node].get("cpus"):
            findings.append(Finding(Verdict.WARN, f"{name} sits on NUMA node {node}, which has no CPUs",
                                    "Bind the threads that feed it to the nearest node with CPUs "
                                    "(see the distance table): perfprobe pinned --bind NODE"))
        elif node is None and len(nodes) > 1:
            findings.append(Finding(Verdict.PASS, f"{name}: NUMA node unknown (sysfs numa_node is -1)",
                                    "Find its local CPUs in /sys/bus/pci/devices/<bus id>/local_cpulist"))
    return findings


def numa_balancing(host: Host) -> list[Finding]:
    """Automatic NUMA balancing migrates pages and threads during a measurement."""
    value = _get(host, "numa", "balancing")
    if not value or not int(value) & 1 or len(_get(host, "numa", "nodes") or []) < 2:
        return []
    return [Finding(Verdict.WARN, "Automatic NUMA balancing is on: the kernel moves pages and threads "
                    "between nodes while programs run", "Turn it off while measuring: "
                    "echo 0 | sudo tee /proc/sys/kernel/numa_balancing")]


def usable_cpus(host: Host) -> list[Finding]:
    """A cpuset or taskset hides CPUs: results describe only the CPUs this process may use."""
    online = _get(host, "cpus", "online") or []
    usable = _get(host, "cpus", "usable") or []
    if not online or len(usable) >= len(online):
        return []
    source = _get(host, "cpus", "usable_source") or "affinity"
    return [Finding(Verdict.WARN, f"This process may use {len(usable)} of {len(online)} online CPUs "
                    f"({format_cpulist(usable)}, from its {source})",
                    "Run without taskset/numactl limits, or in a cgroup/container with every CPU, "
                    "to measure the whole host")]


def memlock(host: Host) -> list[Finding]:
    """A small RLIMIT_MEMLOCK makes large page-locked (pinned) allocations fail."""
    soft = _get(host, "memlock", "soft_bytes")
    if soft is None or soft >= MEMLOCK_MIN_BYTES:
        return []
    return [Finding(Verdict.WARN, f"Locked-memory limit (ulimit -l) is {format_bytes(soft)}: "
                    f"page-locked buffers larger than that cannot be pinned",
                    "Raise it: `ulimit -l unlimited` in this shell (as allowed by the hard limit), or "
                    "'<user> - memlock unlimited' in /etc/security/limits.conf")]


def offline_cpus(host: Host) -> list[Finding]:
    offline = _get(host, "cpus", "offline") or []
    if not offline:
        return []
    return [Finding(Verdict.WARN, f"CPUs {format_cpulist(offline)} are offline",
                    "Bring them back unless offlined on purpose: "
                    "echo 1 | sudo tee /sys/devices/system/cpu/cpuN/online")]


def smt(host: Host) -> list[Finding]:
    """Whether hyperthreads share cores decides how to place threads; worth saying, not a fault."""
    threads = _get(host, "cpu", "threads_per_core")
    if not threads:
        return []
    if threads > 1:
        return [Finding(Verdict.PASS, f"SMT is on: {threads} hardware threads per core share its "
                        "caches and execution units", "For per-core figures, use one thread per core "
                        "(see the cores in `perfprobe host --json`)")]
    return [Finding(Verdict.PASS, "SMT is off or absent: one hardware thread per core")]


def numa_consistency(host: Host) -> list[Finding]:
    """Contradictory NUMA tables make every NUMA-aware placement a guess."""
    numa = host.get("numa") or {}
    bad = contradictions(numa.get("nodes") or [], numa.get("distances") or [],
                         _get(host, "cpus", "online") or [])
    return [Finding(Verdict.WARN, f"NUMA facts contradict each other: {note}",
                    "Update the BIOS/firmware (ACPI SRAT/SLIT); until then do not trust NUMA binding "
                    "on this host") for note in bad]


def node_memory(host: Host) -> list[Finding]:
    """A CPU node without memory makes every access of its threads remote.

    Unequal (but present) node memory is judged once, by the numa probe, against its own threshold.
    """
    nodes = [n for n in _get(host, "numa", "nodes") or [] if n.get("cpus")]
    return [Finding(Verdict.WARN, f"NUMA node {n['id']} has CPUs but no memory: all its accesses are remote",
                    "Populate DIMMs on every socket") for n in nodes if n.get("memory_total_bytes") == 0]


def memory_only_nodes(host: Host) -> list[Finding]:
    ids = _get(host, "numa", "memory_only_nodes") or []
    if not ids:
        return []
    return [Finding(Verdict.PASS, f"NUMA node(s) {format_cpulist(ids)} have memory but no CPUs "
                    "(GPU, CXL or persistent memory exposed as a node)")]


def hugepages(host: Host) -> list[Finding]:
    total = _get(host, "hugepages", "total")
    size = _get(host, "hugepages", "size_bytes")
    if not total or not size:
        return []
    free = _get(host, "hugepages", "free")
    return [Finding(Verdict.PASS, f"{total} huge pages of {format_bytes(size)} are reserved "
                    f"({format_bytes(total * size)}), {free if free is not None else '?'} free")]


def gpu_facts(host: Host) -> list[Finding]:
    """Why there are no GPU facts, and whether NVIDIA cards sit on the PCI bus all the same."""
    note = host.get("gpu_note")
    if host.get("gpus") or not note:
        return []
    cards = [d for d in host.get("pci_devices") or []
             if d.get("vendor") == "0x10de" and str(d.get("class") or "").startswith("0x03")]
    if not cards:
        return [Finding(Verdict.PASS, f"No GPU facts: {note}")]
    return [Finding(Verdict.PASS, f"{len(cards)} NVIDIA GPU(s) on the PCI bus, but no GPU facts: {note}",
                    "Install the NVIDIA driver and perfprobe[gpu] (nvidia-ml-py) to read their links "
                    "and NUMA nodes")]


def notes(host: Host) -> list[Finding]:
    """What the reader noticed (missing files, odd but harmless data), minus what is warned above."""
    numa = host.get("numa") or {}
    warned = set(contradictions(numa.get("nodes") or [], numa.get("distances") or [],
                                _get(host, "cpus", "online") or []))
    said = [n for n in list(host.get("notes") or []) + list(numa.get("notes") or []) if n not in warned]
    return [Finding(Verdict.PASS, f"Note: {note}") for note in said]


RULES: tuple[Rule, ...] = (usable_cpus, offline_cpus, governor, thp, numa_balancing, numa_consistency,
                           node_memory, memlock, gpu_links, gpu_nodes, smt, memory_only_nodes,
                           hugepages, gpu_facts, notes)


def run_rules(host: Host) -> tuple[Finding, ...]:
    """Every rule's findings, warnings first (stable within each verdict)."""
    found = [finding for rule in RULES for finding in rule(host)]
    return tuple(sorted(found, key=lambda f: -f.verdict.severity))
