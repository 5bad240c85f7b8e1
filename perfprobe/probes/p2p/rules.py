"""Judgement of `perfprobe p2p`: pure rules from recorded numbers to findings.

A warn is something wrong with this host and fixable: a pair far under the rate its links imply (a
link down or trained low), peer access refused where the topology offers it or enabled and no
faster than the staged path (IOMMU, ACS, driver), one direction of a pair much slower than the
other. A platform without peer access (GPUs across sockets, a VM) is a pass with the figures.
RULES is in the order of docs/probes/p2p.md's table.
"""

from __future__ import annotations

from typing import Callable

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts
from perfprobe.probes.p2p import figures as fig
from perfprobe.probes.p2p.figures import Raw
from perfprobe.probes.p2p.plan import sampling_words
from perfprobe.system.budget import capped_note

LINK_FRACTION_MIN = 0.60   # healthy NVLink and PCIe peer copies reach ~80-87% of the raw rate
PEER_OVER_STAGED_MIN = 1.2  # direct copies this much faster than staged ones, or the path is wrong
ASYMMETRY_MAX = 1.3        # the faster direction of a pair over the slower
UNIFORM_SPREAD = 0.15      # pairs of one kind within this of their median: a uniform matrix

ACCESS_ADVICE = ("check `nvidia-smi topo -p2p r` and `nvidia-smi topo -m`; an IOMMU in translated mode "
                 "(boot with iommu=pt, or intel_iommu=off / amd_iommu=off for a test), PCIe ACS redirect "
                 "on the switch ports (`lspci -vvv | grep ACSCtl`: SrcValid+ ReqRedir+ sends peer traffic "
                 "to the root complex; the BIOS or setpci can clear it), and in a VM whether the hypervisor "
                 "passes P2P through; NCCL_P2P_LEVEL / NCCL_P2P_DISABLE show which path NCCL takes")


def _name(i: int, j: int) -> str:
    return f"GPU {i}→{j}"


def rule_peer_access(raw: Raw, host: Facts) -> list[Finding]:
    """Peer access refused (or failing to enable) where the topology offers it: warn; refused where
    the topology does not offer it: pass, with the staged figure."""
    out, refused, expected = [], [], []
    for i, j in fig.directions(raw):
        reason = fig.topology_expects_peer(raw, i, j)
        error = fig.entry(raw, i, j).get("enable_error")
        if fig.can_access(raw, i, j) and error:
            out.append(Finding(Verdict.WARN, f"{_name(i, j)}: cudaDeviceEnablePeerAccess failed ({error})",
                               ACCESS_ADVICE))
        elif not fig.can_access(raw, i, j) and reason:
            expected.append((i, j, reason))
        elif not fig.can_access(raw, i, j):
            refused.append((i, j))
    if expected:
        i, j, reason = expected[0]
        names = ", ".join(f"{a}→{b}" for a, b, _r in expected)
        gbs = [g for a, b, _r in expected if (g := fig.staged_gbs(raw, a, b)) is not None]
        out.append(Finding(Verdict.WARN, f"CUDA refuses peer access on GPU {names} although the topology offers "
                                         f"it (GPU {i}→{j}: {reason}); copies are staged through host memory at "
                                         f"{min(gbs, default=0):.1f}-{max(gbs, default=0):.1f} GB/s", ACCESS_ADVICE))
    if refused:
        i, j = refused[0]
        status = fig.nvml_p2p(raw, i, j)
        words = fig.P2P_STATUS_WORDS.get(status, "unknown") if status is not None else "unknown"
        gbs = [g for a, b in refused if (g := fig.staged_gbs(raw, a, b)) is not None]
        out.append(Finding(Verdict.PASS, f"no peer access on {len(refused)} of {len(fig.directions(raw))} "
                                         f"directions (NVML P2P status: {words}; PCIe path through "
                                         f"{fig.pcie_path(raw, i, j)}): copies are staged through host memory, "
                                         f"{min(gbs, default=0):.1f}-{max(gbs, default=0):.1f} GB/s",
                           "this topology offers no direct path: keep tensor-parallel groups on GPUs that "
                           "have one, or expect host-memory speed for GPU-to-GPU traffic"))
    return out


def rule_links_down(raw: Raw, host: Facts) -> list[Finding]:
    """NVLink links down on a GPU whose other links are up: warn, naming them."""
    out = []
    for i in fig.selected(raw):
        down = fig.down_links(raw, i)
        if down:
            total = len(fig.links(raw, i))
            out.append(Finding(Verdict.WARN, f"GPU {i}: NVML reports NVLink link(s) {', '.join(map(str, down))} "
                                             f"down ({total - len(down)} of {total} up)",
                               "check `nvidia-smi nvlink -s -i N` and `nvidia-smi nvlink -e` (error counters); "
                               "on NVSwitch systems check the fabric manager (systemctl status "
                               "nvidia-fabricmanager); a link that stays down needs a reset or the vendor"))
    return out


def rule_link_rate(raw: Raw, host: Facts) -> list[Finding]:
    """A direction with peer access on under 60% of its links' rate: warn, with NVML's link state."""
    out = []
    for i, j in fig.directions(raw):
        share, want, gbs = fig.fraction(raw, i, j), fig.expected(raw, i, j), fig.peer_gbs(raw, i, j)
        if share is None or share >= LINK_FRACTION_MIN or gbs is None:
            continue
        up, healthy, _kind = fig.nvlink_links(raw, i, j)
        state = (f"NVML: {up} of {healthy} links between them up, version code(s) "
                 f"{fig.version_codes(raw, i) or 'unknown'}" + _down_words(raw, i, j)) if want["via"] == "NVLink" \
            else f"PCIe path through {fig.pcie_path(raw, i, j)}"
        out.append(Finding(Verdict.WARN, f"{_name(i, j)} {gbs:.0f} GB/s, {share:.0%} of the {want['gbs']:.0f} GB/s "
                                         f"per direction of {want['words']} ({state})",
                           "a link down or trained low, or other traffic on it: `nvidia-smi nvlink -s` and "
                           "`nvidia-smi nvlink -e` for NVLink, `nvidia-smi -q -d PCIE` / `lspci -vv` (LnkSta) "
                           "for PCIe, and `nvidia-smi` for other processes on either GPU"))
    return out


def _down_words(raw: Raw, i: int, j: int) -> str:
    parts = [f"GPU {g} links {', '.join(map(str, d))} down" for g in (i, j) if (d := fig.down_links(raw, g))]
    return f"; {'; '.join(parts)}" if parts else ""


def rule_peer_vs_staged(raw: Raw, host: Facts) -> list[Finding]:
    """Peer access on and no faster than the staged path: warn (the copy goes the long way)."""
    out = []
    for i, j in fig.directions(raw):
        peer, staged = fig.peer_gbs(raw, i, j), fig.staged_gbs(raw, i, j)
        if peer is None or not staged or peer >= PEER_OVER_STAGED_MIN * staged:
            continue
        out.append(Finding(Verdict.WARN, f"{_name(i, j)}: peer access is on but direct copies run {peer:.1f} GB/s "
                                         f"against {staged:.1f} GB/s staged through host memory "
                                         f"(path: {fig.expected(raw, i, j)['words']}, "
                                         f"{fig.pcie_path(raw, i, j)})", ACCESS_ADVICE))
    return out


def rule_asymmetric(raw: Raw, host: Facts) -> list[Finding]:
    """One direction of a pair over 1.3x faster than the other: warn."""
    out = []
    for a, b in fig.pairs(raw):
        ratio = fig.asymmetry(raw, a, b)
        if ratio is None or ratio <= ASYMMETRY_MAX:
            continue
        ab, ba = fig.best_gbs(raw, a, b) or 0, fig.best_gbs(raw, b, a) or 0
        out.append(Finding(Verdict.WARN, f"asymmetric pair: GPU {a}→{b} {ab:.1f} GB/s, {b}→{a} {ba:.1f} GB/s "
                                         f"({ratio:.2f}x)",
                           "the same links carry both directions: check each GPU's PCIe link (one may have "
                           "trained down: `nvidia-smi -q -d PCIE`), the NVLink state of both GPUs, the "
                           "switch's ACS and max payload / read request sizes (lspci -vv), and other "
                           "traffic on the slower direction"))
    return out


def rule_uniform(raw: Raw, host: Facts) -> list[Finding]:
    """Peer directions of one kind within 15% of their median and near the links' rate: pass with
    the figures; a spread matrix without another cause is said (pass)."""
    out = []
    for via in ("NVLink", "PCIe"):
        group = [(d, g) for d in fig.directions(raw)
                 if fig.expected(raw, *d)["via"] == via and (g := fig.peer_gbs(raw, *d)) is not None]
        if not group:
            continue
        gbs = sorted(g for _d, g in group)
        median = gbs[len(gbs) // 2]
        shares = [s for d, _g in group if (s := fig.fraction(raw, *d)) is not None]
        share = f", {min(shares):.0%}-{max(shares):.0%} of the links' rate" if shares else ""
        if shares and min(shares) < LINK_FRACTION_MIN:
            continue  # rule_link_rate has said which directions are slow
        spread = max(abs(g - median) for g in gbs) / median if median else 0.0
        kind = "uniform" if spread <= UNIFORM_SPREAD else f"spread ({spread:.0%} from the median)"
        out.append(Finding(Verdict.PASS, f"{via} peer copies {kind}: {len(group)} directions "
                                         f"{gbs[0]:.0f}-{gbs[-1]:.0f} GB/s one way{share}"))
    return out


def rule_numa(raw: Raw, host: Facts) -> list[Finding]:
    """GPUs on different NUMA nodes: staged copies cross the socket interconnect (pass, said)."""
    nodes = {i: fig.numa_node(raw, i) for i in fig.selected(raw)}
    known = {n for n in nodes.values() if n is not None}
    if len(known) < 2:
        return []
    words = ", ".join(f"GPU {i}: node {n}" for i, n in nodes.items())
    return [Finding(Verdict.PASS, f"the GPUs sit on {len(known)} NUMA nodes ({words})",
                    "staged copies between GPUs of different nodes cross the socket interconnect: group "
                    "GPUs that exchange data on one node")]


def rule_sampled(raw: Raw, host: Facts) -> list[Finding]:
    if not raw.get("sampled"):
        return []
    return [Finding(Verdict.PASS, f"measured {sampling_words(fig.pairs(raw), int(raw.get('pairs_total') or 0))}",
                    "run without --quick for every pair")]


def rule_budget(raw: Raw, host: Facts) -> list[Finding]:
    """Copies smaller than asked are said, with the budget that capped them."""
    return capped_note(raw.get("budget"), "copies", "top_bytes")


Rule = Callable[[Raw, Facts], list[Finding]]
RULES: tuple[Rule, ...] = (rule_peer_access, rule_links_down, rule_link_rate, rule_peer_vs_staged,
                           rule_asymmetric, rule_uniform, rule_numa, rule_sampled, rule_budget)


def findings(raw: Raw, host: Facts) -> list[Finding]:
    return [finding for rule in RULES for finding in rule(raw, host)]
