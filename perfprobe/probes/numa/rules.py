"""Judgement of the numa probe: pure rules from measured matrices + host facts to findings.

Each rule takes the raw numbers (`measure`'s dict, or one recorded on another host) and the host
facts, and returns a list of findings; nothing here measures or draws. Thresholds are named
constants, documented in docs/probes/numa.md. Figures are compared only when they were measured
alike: the same working set (a capped node's smaller one hits cache more) and, for bandwidth, the
same thread count.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Mapping

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts, numa_nodes
from perfprobe.probes.numa.figures import (
    NumaRaw,
    Pair,
    comparable_ratios,
    distance,
    implied_ratio,
    local_working_set,
    mib,
    numa_facts,
    pair_figures,
    remote_ratios,
    stat_of,
    typed,
    unlike_pairs,
)

SLOW_LATENCY_RATIO = 1.25      # a node's local latency this far above the others' median: slow node
SLOW_BANDWIDTH_RATIO = 0.75    # a node's local bandwidth this far below the others' median: slow node
PENALTY_OVER_DISTANCE = 1.25   # measured remote/local above the distance table's ratio by this factor
EMULATED_PENALTY = 1.10        # measured remote/local below this while the table implies >= 1.5
MEMORY_TOTAL_RATIO = 1.5       # largest/smallest node memory (CPU nodes) above this: unbalanced
LOW_FREE_FRACTION, HIGH_FREE_FRACTION = 0.10, 0.50
SMALL_WORKING_SET = 4          # working set below this many times the largest cache: a note
NOISE_LIMIT = 0.15             # IQR / median above this: the pair's figure is too noisy to compare

Rule = Callable[[NumaRaw, Facts], list[Finding]]


def _gib(value: float | int | None) -> str:
    return "?" if value is None else f"{value / (1 << 30):.1f} GiB"


def noisy_pairs(raw: NumaRaw, key: str) -> dict[Pair, float]:
    """Pairs whose repeats of `key` spread too far (IQR / median) for their median to be compared."""
    noisy = {}
    for pair in raw.get("pairs", []):
        figure = stat_of(pair, key)
        if figure.get("median") and figure.get("iqr", 0) / figure["median"] > NOISE_LIMIT:
            noisy[(pair["cpu_node"], pair["mem_node"])] = figure["iqr"] / figure["median"]
    return noisy


def rule_single_node(raw: NumaRaw, host: Facts) -> list[Finding]:
    """One node: the figures are the local ones and there is nothing to place."""
    nodes = numa_nodes(host)
    if len(nodes) > 1:
        return []
    latency, bandwidth = pair_figures(raw, "latency_ns"), pair_figures(raw, "read_gbs")
    figures = ", ".join(f"{v:.0f} ns" for v in latency.values())
    bw = ", ".join(f"{v:.1f} GB/s" for v in bandwidth.values())
    local = f" (local memory: {figures or '?'} latency, {bw or '?'} read)" if latency else ""
    return [Finding(Verdict.PASS, f"single NUMA node: nothing to place{local}")]


def rule_misplaced_pages(raw: NumaRaw, host: Facts) -> list[Finding]:
    """Pages asked for on node j but found elsewhere: the pair's figures are not figures."""
    findings = []
    for p in raw.get("pages", []):
        if p.get("on_node", 0) >= p.get("checked", 0):
            continue
        where = ", ".join(f"node {n}: {c}" for n, c in sorted((p.get("elsewhere") or {}).items()))
        absent = f", not present: {p['absent']}" if p.get("absent") else ""
        findings.append(Finding(
            Verdict.WARN,
            f"memory node {p['node']}: only {p['on_node']} of {p['checked']} checked pages were on it "
            f"({where or 'none elsewhere'}{absent}); its latency and bandwidth are left out",
            f"node {p['node']} is short of free memory or fenced off (cpuset mems): free memory there "
            "(numastat -m) and run again"))
    return findings


def rule_unverified_pages(raw: NumaRaw, host: Facts) -> list[Finding]:
    """Placement that could not be checked: harmless on one node, a doubt on several."""
    several = len(numa_nodes(host)) > 1
    return [Finding(Verdict.WARN if several else Verdict.PASS,
                    f"memory node {p['node']}: page placement not verified ({p['error']})"
                    + ("; its figures may be for another node" if several else ""),
                    "run on a kernel with move_pages (any Linux with CONFIG_NUMA, not a sandbox like gVisor)"
                    if several else "")
            for p in raw.get("pages", []) if p.get("error")]


def rule_skipped_pairs(raw: NumaRaw, host: Facts) -> list[Finding]:
    """Pairs not measured, with why (too little free memory on a node, say)."""
    return [Finding(Verdict.PASS, f"not measured: memory node {s['mem_node']}: {s['reason']}")
            for s in raw.get("skipped", [])]


def rule_notes(raw: NumaRaw, host: Facts) -> list[Finding]:
    """What the measurement itself noted (a working set capped to fit free memory, say)."""
    return [Finding(Verdict.PASS, note) for note in raw.get("notes", [])]


def rule_sampled(raw: NumaRaw, host: Facts) -> list[Finding]:
    """Say what was sampled when the matrix was not measured in full."""
    sampling = raw.get("sampling")
    if not sampling or not sampling.get("rule"):
        return []
    return [Finding(Verdict.PASS, f"sampled {sampling['pairs_measured']} of {sampling['pairs_total']} "
                    f"node pairs: {sampling['rule']}", "run without --quick for more pairs")]


def _others_median(values: Mapping[int, float], node: int) -> float | None:
    others = [v for n, v in values.items() if n != node]
    return statistics.median(others) if others else None


def rule_slow_node(raw: NumaRaw, host: Facts) -> list[Finding]:
    """A node whose local latency or bandwidth is far off the other nodes' (missing DIMM, throttling),
    against the nodes measured on the same working set (and, for bandwidth, thread count)."""
    noisy = set(noisy_pairs(raw, "latency_ns")) | set(noisy_pairs(raw, "read_gbs"))
    latency = {i: v for (i, j), v in pair_figures(raw, "latency_ns").items() if i == j and (i, j) not in noisy}
    bandwidth = {i: v for (i, j), v in pair_figures(raw, "read_gbs").items() if i == j and (i, j) not in noisy}
    threads = {p["cpu_node"]: p.get("threads") for p in raw.get("pairs", [])
               if p["cpu_node"] == p["mem_node"]}
    size = {node: local_working_set(raw, node) for node in latency.keys() | bandwidth.keys()}
    advice = ("check that every memory channel of this socket is populated like the others' "
              "(dmidecode -t memory), memory errors (edac-util, dmesg), and thermal/power throttling; "
              "until then keep latency-critical work off this node")
    slow: dict[int, list[str]] = {}
    worst: dict[int, float] = {}   # how far off the node is (x the others'), the finding's figure
    for node, value in sorted(latency.items()):
        median = _others_median({n: v for n, v in latency.items() if size[n] == size[node]}, node)
        if median and value > SLOW_LATENCY_RATIO * median:
            slow.setdefault(node, []).append(f"local latency {value:.0f} ns is {value / median:.2f}x the "
                                             f"other nodes' {median:.0f} ns")
            worst[node] = max(worst.get(node, 0.0), value / median)
    for node, value in sorted(bandwidth.items()):
        median = _others_median({n: v for n, v in bandwidth.items()
                                 if threads.get(n) == threads.get(node) and size[n] == size[node]}, node)
        if median and value < SLOW_BANDWIDTH_RATIO * median:
            slow.setdefault(node, []).append(f"local read bandwidth {value:.1f} GB/s is {value / median:.0%} "
                                             f"of the other nodes' {median:.1f} GB/s (same thread count)")
            worst[node] = max(worst.get(node, 0.0), median / value)
    # timings: confirmed on a re-measurement of the matrix before they are issued (confirm.py)
    return [Finding(Verdict.WARN, f"node {node}: " + "; ".join(parts), advice,
                    confirm=("slow_node", str(node)), figure=worst[node])
            for node, parts in sorted(slow.items())]


def rule_remote_penalty(raw: NumaRaw, host: Facts) -> list[Finding]:
    """Measured remote/local latency against the distance table's ratio, for the pairs measured on
    the same working set as their local pair (rule_unlike_working_sets says which were not)."""
    noisy = noisy_pairs(raw, "latency_ns")
    ratios = {(i, j): r for (i, j), r in comparable_ratios(raw).items()
              if (i, j) not in noisy and (i, i) not in noisy}
    if not ratios:
        return []
    findings = []
    for (i, j), measured in sorted(ratios.items()):
        implied = implied_ratio(host, i, j)
        if implied is not None and measured > PENALTY_OVER_DISTANCE * implied:
            table = "treats it as local" if implied <= 1.0 else f"implies {implied:.2f}x"
            findings.append(Finding(
                Verdict.WARN,
                f"CPU node {i} -> memory node {j}: remote latency is {measured:.2f}x local, but the "
                f"distance table {table} (distance {distance(host, i, j)})",
                "the interconnect is slower than the firmware says (down-trained or missing socket "
                "links, a wrong SLIT): check link status in the BIOS/BMC, update firmware, and bind "
                f"latency-critical work explicitly (perfprobe numa --bind {i}; numactl "
                f"--cpunodebind={i} --membind={i}) rather than trust automatic placement",
                confirm=("remote_penalty", f"{i}-{j}"), figure=measured))
    if findings:
        return findings
    (i, j), worst = max(ratios.items(), key=lambda kv: kv[1])
    implied = implied_ratio(host, i, j)
    if implied is not None and implied >= 1.5 and worst < EMULATED_PENALTY:
        return [Finding(Verdict.PASS, f"remote latency is at most {worst:.2f}x local although the "
                        f"distance table implies {implied:.2f}x: emulated NUMA (a VM) or memory "
                        "interleaved across sockets", "placement matters little on this host")]
    said = f" (distance table: {implied:.2f}x)" if implied else ""
    return [Finding(Verdict.PASS, f"remote latency costs up to {worst:.2f}x local (node {i} -> node "
                    f"{j}){said}", "keep each thread's memory on its own node: first-touch from the "
                    "thread that uses it, or bind (numactl --cpunodebind=N --membind=N)")]


def rule_unlike_working_sets(raw: NumaRaw, host: Facts) -> list[Finding]:
    """Remote pairs measured on another working set than their local pair (a node's set capped to
    fit its free memory): their ratio mixes node distance with cache hits, so it is not compared."""
    unlike = unlike_pairs(raw)
    if not unlike:
        return []
    ratios = {pair: r for pair, r in remote_ratios(raw).items() if pair in unlike}
    parts = [f"{i}->{j} on {mib(remote)} against {mib(local)} locally"
             + (f" ({ratios[(i, j)]:.2f}x as measured)" if (i, j) in ratios else "")
             for (i, j), (remote, local) in sorted(unlike.items())]
    smallest = min(size for pair in unlike.values() for size in pair)
    return [Finding(Verdict.PASS, "remote/local latency not compared for CPU->memory node pair(s) "
                    + "; ".join(parts) + ": the working sets differed (a node's was capped to fit its free "
                    "memory), and a smaller set hits cache more often",
                    f"free memory on the capped node, or give every node the same working set "
                    f"(perfprobe numa --size {smallest >> 20}M)")]


def rule_noise(raw: NumaRaw, host: Facts) -> list[Finding]:
    """Figures whose repeats spread too far are shown but left out of the comparisons: say so."""
    findings = []
    for key, what in (("latency_ns", "latency"), ("read_gbs", "read bandwidth")):
        noisy = noisy_pairs(raw, key)
        if noisy:
            pairs = ", ".join(f"{i}->{j}" for i, j in sorted(noisy))
            findings.append(Finding(Verdict.PASS, f"{what} of CPU->memory node pair(s) {pairs} varied between "
                                    f"repeats by up to {max(noisy.values()):.0%} of the median (IQR): left out "
                                    "of the slow-node and remote-penalty comparisons",
                                    "re-run on a quiet host (nothing else running), without --quick for more repeats"))
    return findings


def _process_nodes(raw: NumaRaw, host: Facts) -> set[int]:
    cpus = set((raw.get("placement") or {}).get("cpus") or [])
    return {n["id"] for n in numa_nodes(host) if cpus & set(n.get("cpus") or [])}


def _cpu_node_count(host: Facts) -> int:
    return sum(1 for n in numa_nodes(host) if n.get("cpus"))


def rule_gpu_locality(raw: NumaRaw, host: Facts) -> list[Finding]:
    """A GPU on a different node than the CPUs this process runs on: copies cross the interconnect."""
    if _cpu_node_count(host) < 2:
        return []
    mine = _process_nodes(raw, host)
    cpu_nodes = {n["id"] for n in numa_nodes(host) if n.get("cpus")}
    findings = []
    for gpu in host.get("gpus") or []:
        node = gpu.get("numa_node")
        if node is None or node not in cpu_nodes or not mine:
            continue
        label = f"GPU {gpu.get('index')} ({gpu.get('name', '?')})"
        bind = f"perfprobe pinned --bind {node}; numactl --cpunodebind={node} --membind={node} <app>"
        if node not in mine:
            findings.append(Finding(Verdict.WARN, f"{label} hangs off node {node}, but this process "
                                    f"runs on node(s) {', '.join(map(str, sorted(mine)))}: host-GPU "
                                    "copies cross the socket interconnect", f"bind near the GPU: {bind}"))
        elif len(mine) > 1:
            findings.append(Finding(Verdict.PASS, f"{label} hangs off node {node}",
                                    f"run the threads that feed it on that node: {bind}"))
    return findings


def _bound(raw: NumaRaw, host: Facts) -> bool:
    placement = raw.get("placement") or {}
    return raw.get("bind") is not None or placement.get("mempolicy") == "bind" \
        or len(_process_nodes(raw, host)) == 1


def rule_balancing_while_bound(raw: NumaRaw, host: Facts) -> list[Finding]:
    """Automatic NUMA balancing on while this workload is bound to a node."""
    balancing = numa_facts(host).get("balancing")
    automatic = isinstance(balancing, int) and balancing & 1  # bit 0; 2 alone is memory tiering
    if not automatic or len(numa_nodes(host)) < 2 or not _bound(raw, host):
        return []
    return [Finding(Verdict.WARN, "kernel.numa_balancing is on while this workload is bound to a node: "
                    "its scanner adds page faults to a workload that is already placed",
                    "for bound workloads turn it off: sysctl kernel.numa_balancing=0 (it helps only "
                    "unbound ones)")]


def rule_memory_balance(raw: NumaRaw, host: Facts) -> list[Finding]:
    """Memory badly unbalanced between CPU nodes: installed (DIMMs) or free (one node nearly full)."""
    total = {n["id"]: size for n in numa_nodes(host) if n.get("cpus") and (size := n.get("memory_total_bytes"))}
    if len(total) < 2:
        return []
    findings = []
    small, big = min(total, key=total.__getitem__), max(total, key=total.__getitem__)
    if total[big] > MEMORY_TOTAL_RATIO * total[small]:
        findings.append(Finding(Verdict.WARN, f"node {small} has {_gib(total[small])} "
                                f"of memory, node {big} {_gib(total[big])}: threads on "
                                f"node {small} will spill to remote memory sooner",
                                "populate every socket's memory channels alike (dmidecode -t memory)"))
    fractions = {n["id"]: free / total[n["id"]] for n in numa_nodes(host)
                 if n["id"] in total and (free := n.get("memory_free_bytes")) is not None}
    if fractions and min(fractions.values()) < LOW_FREE_FRACTION < HIGH_FREE_FRACTION < max(fractions.values()):
        low = min(fractions, key=fractions.__getitem__)
        high = max(fractions, key=fractions.__getitem__)
        findings.append(Finding(Verdict.WARN, f"node {low} has {fractions[low]:.0%} of its memory free, "
                                f"node {high} {fractions[high]:.0%}: new allocations on node {low} go "
                                "remote or force reclaim", f"find what fills node {low} (numastat -m, "
                                "numastat -p PID) and spread or move it; if it is page cache, it will be "
                                "reclaimed as needed"))
    return findings


def rule_working_set(raw: NumaRaw, host: Facts) -> list[Finding]:
    """A working set not far above the largest cache reads low: say so."""
    sizes = [p["working_set_bytes"] for p in raw.get("pairs", []) if p.get("working_set_bytes")]
    size = min(sizes) if sizes else (raw.get("method") or {}).get("working_set_bytes")
    cache = raw.get("largest_cache_bytes")
    if not size or not cache or size >= SMALL_WORKING_SET * cache:
        return []
    return [Finding(Verdict.PASS, f"working set {size >> 20} MiB is only {size / cache:.1f}x the largest "
                    f"cache ({cache >> 20} MiB): some loads hit in cache, so latency reads low",
                    "give more memory or run without --quick for a larger working set")]


RULES: tuple[Rule, ...] = (
    rule_single_node, rule_misplaced_pages, rule_unverified_pages, rule_skipped_pairs, rule_notes, rule_sampled,
    rule_noise, rule_slow_node, rule_unlike_working_sets, rule_remote_penalty, rule_gpu_locality,
    rule_balancing_while_bound, rule_memory_balance, rule_working_set)


def findings(raw: Mapping[str, Any], host: Facts) -> tuple[Finding, ...]:
    """Every rule's findings, in rule order."""
    numbers = typed(raw)
    return tuple(f for rule in RULES for f in rule(numbers, host))
