"""Pure readers of `perfprobe p2p`'s raw numbers: what the rules and the tables both read.

The rate a pair's links imply, per direction: NVLink links between the two GPUs (direct links whose
far end is the peer; through NVSwitch, the fewer of the two GPUs' links to switches) times the
per-link rate of the GPU's NVLink generation — NVLink 4 (Hopper, H100/H200): 25 GB/s per direction
per link, 18 links = 450 GB/s; NVLink 3 (A100): 25 GB/s x 12 = 300 GB/s; NVLink 5 (Blackwell):
50 GB/s x 18. The generation comes from the compute capability: NVML's version code is shown as
read (its numbering has changed between drivers: 4 on one, 6 or 7 for the same NVLink 4 on others).
Without NVLink, peer copies cross PCIe: the narrower of the two GPUs' links (perfprobe/pcie.py).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict

from perfprobe.pcie import link_rate_or_none

Raw = Mapping[str, Any]
Pair = tuple[int, int]
NVLINK_GEN_BY_CC = {"6.0": 1, "7.0": 2, "7.2": 2, "7.5": 2, "8.0": 3, "8.6": 3, "9.0": 4, "10.0": 5, "10.3": 5}
GBS_PER_LINK = {1: 20.0, 2: 25.0, 3: 25.0, 4: 25.0, 5: 50.0}
GBS_PER_LINK_BY_CC = {"8.6": 14.0625}  # GA102 (A40, RTX 3090) bridges: 4 narrower links
SWITCH = 2  # NVML_NVLINK_DEVICE_TYPE_SWITCH
ANCESTOR_WORDS = {0: "the same board", 10: "one PCIe switch", 20: "several PCIe switches",
                  30: "one host bridge (root complex)", 40: "host bridges of one NUMA node",
                  50: "the socket interconnect (SMP bus)"}
P2P_STATUS_WORDS = {0: "OK", 1: "chipset not supported", 2: "GPU not supported", 3: "IOH topology not supported",
                    4: "disabled by a registry key", 5: "not supported"}


class Expected(TypedDict):
    via: str                 # "NVLink" or "PCIe"
    gbs: Optional[float]     # per direction; None when unknown
    words: str


def selected(raw: Raw) -> list[int]:
    return [int(d) for d in raw.get("selected") or []]


def pairs(raw: Raw) -> list[Pair]:
    """The unordered pairs measured."""
    return [(int(a), int(b)) for a, b in raw.get("pairs") or []]


def directions(raw: Raw) -> list[Pair]:
    return [d for a, b in pairs(raw) for d in ((a, b), (b, a))]


def entry(raw: Raw, i: int, j: int) -> Mapping[str, Any]:
    found: Mapping[str, Any] = (raw.get("results") or {}).get(f"{i}.{j}") or {}
    return found


def device(raw: Raw, i: int) -> Mapping[str, Any]:
    found: Mapping[str, Any] = next((d for d in raw.get("devices") or [] if d.get("index") == i), {})
    return found


def _top_stat(sweep: list[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    found: Optional[Mapping[str, Any]] = sweep[-1]["gbs"] if sweep else None
    return found


def _median(stat: Optional[Mapping[str, Any]]) -> Optional[float]:
    return float(stat["median"]) if stat else None


def peer_stat(raw: Raw, i: int, j: int) -> Optional[Mapping[str, Any]]:
    """The repeats behind peer_gbs (the largest size, peer access on)."""
    return _top_stat(list((entry(raw, i, j).get("peer") or {}).get("sweep") or []))


def staged_stat(raw: Raw, i: int, j: int) -> Optional[Mapping[str, Any]]:
    """The repeats behind staged_gbs."""
    return _top_stat(list((entry(raw, i, j).get("staged") or {}).get("sweep") or []))


def bidir_stat(raw: Raw, i: int, j: int, staged: bool = False) -> Optional[Mapping[str, Any]]:
    """The repeats behind bidir_gbs (peer access on, or staged)."""
    part = (entry(raw, i, j).get("staged" if staged else "peer") or {}).get("bidir")
    found: Optional[Mapping[str, Any]] = part["gbs"] if part else None
    return found


def _latency_stat(raw: Raw, i: int, j: int, staged: bool = False) -> Optional[Mapping[str, Any]]:
    part = (entry(raw, i, j).get("staged" if staged else "peer") or {}).get("latency_us")
    found: Optional[Mapping[str, Any]] = part or None
    return found


def latency_stat(raw: Raw, i: int, j: int) -> Optional[Mapping[str, Any]]:
    """The repeats of the small-copy latency as the process finds the pair: peer when enabled, else staged."""
    return _latency_stat(raw, i, j, staged=not peer_enabled(raw, i, j))


def can_access(raw: Raw, i: int, j: int) -> bool:
    return bool(entry(raw, i, j).get("can_access_peer"))


def peer_enabled(raw: Raw, i: int, j: int) -> bool:
    return bool(entry(raw, i, j).get("peer_enabled"))


def peer_gbs(raw: Raw, i: int, j: int) -> Optional[float]:
    """i→j GB/s at the largest size with peer access on (None when it could not be enabled)."""
    return _median(peer_stat(raw, i, j))


def staged_gbs(raw: Raw, i: int, j: int) -> Optional[float]:
    return _median(staged_stat(raw, i, j))


def best_gbs(raw: Raw, i: int, j: int) -> Optional[float]:
    """What i→j delivers as the process finds it: peer when enabled, else staged."""
    peer = peer_gbs(raw, i, j)
    return peer if peer is not None else staged_gbs(raw, i, j)


def bidir_gbs(raw: Raw, i: int, j: int, staged: bool = False) -> Optional[float]:
    """Both ways at once (total of both copies), peer on (or staged)."""
    return _median(bidir_stat(raw, i, j, staged))


def latency_us(raw: Raw, i: int, j: int, staged: bool = False) -> Optional[float]:
    return _median(_latency_stat(raw, i, j, staged))


def links(raw: Raw, i: int) -> list[Mapping[str, Any]]:
    return list((((raw.get("topology") or {}).get("gpus") or {}).get(str(i)) or {}).get("links") or [])


def down_links(raw: Raw, i: int) -> list[int]:
    """Links NVML reports down on a GPU whose other links are up (all down: no NVLink fitted)."""
    found = links(raw, i)
    if not any(link.get("up") for link in found):
        return []
    return [int(link["link"]) for link in found if not link.get("up")]


def nvlink_generation(raw: Raw, i: int) -> Optional[int]:
    return NVLINK_GEN_BY_CC.get(str(device(raw, i).get("compute_capability")))


def per_link_gbs(raw: Raw, i: int) -> Optional[float]:
    cc = str(device(raw, i).get("compute_capability"))
    gen = nvlink_generation(raw, i)
    return GBS_PER_LINK_BY_CC.get(cc) or (GBS_PER_LINK.get(gen) if gen else None)


def nvlink_links(raw: Raw, i: int, j: int) -> tuple[int, int, str]:
    """(links up between i and j, links a healthy pair would have, "direct" / "NVSwitch" / "")."""
    bus_j = device(raw, j).get("pci_bus_id")
    direct = [link for link in links(raw, i) if link.get("remote_bus_id") == bus_j]
    if direct:
        return sum(1 for link in direct if link.get("up")), len(direct), "direct"
    switched = [[link for link in links(raw, g) if link.get("remote_type") == SWITCH or
                 (not link.get("up") and down_links(raw, g))] for g in (i, j)]
    if all(switched):
        up = min(sum(1 for link in s if link.get("up")) for s in switched)
        return up, min(len(s) for s in switched), "NVSwitch"
    return 0, 0, ""


def version_codes(raw: Raw, i: int) -> list[int]:
    return sorted({int(link["version"]) for link in links(raw, i) if link.get("version") is not None})


def pcie_link(raw: Raw, i: int) -> Optional[tuple[int, int]]:
    """(generation, width) the GPU's PCIe link runs at now (NVML, else the host facts)."""
    nv = (((raw.get("topology") or {}).get("gpus") or {}).get(str(i)) or {}).get("pcie") or {}
    facts = device(raw, i).get("pcie") or {}
    for source in (nv, facts):
        gen = source.get("gen_current") or source.get("gen_max")
        width = source.get("width_current") or source.get("width_max")
        if gen and width:
            return int(gen), int(width)
    return None


def expected(raw: Raw, i: int, j: int) -> Expected:
    """The per-direction rate the pair's links imply: NVLink when linked, else PCIe."""
    _up, healthy, kind = nvlink_links(raw, i, j)
    per_link = per_link_gbs(raw, i)
    if healthy:
        gen = nvlink_generation(raw, i)
        gbs = healthy * per_link if per_link else None
        return {"via": "NVLink", "gbs": gbs,
                "words": f"{healthy} NVLink {gen or '?'} links ({kind}) x {per_link or '?'} GB/s"}
    rates = [link_rate_or_none(*link) for g in (i, j) if (link := pcie_link(raw, g))]
    known = [r for r in rates if r is not None]
    if len(known) < 2:
        return {"via": "PCIe", "gbs": None, "words": "PCIe link unknown"}
    slow = min(known, key=lambda r: r.gbs_per_direction)
    return {"via": "PCIe", "gbs": slow.gbs_per_direction, "words": f"a PCIe {slow.label} link"}


def fraction(raw: Raw, i: int, j: int) -> Optional[float]:
    """Peer GB/s i→j over the links' rate (None without peer access or a known rate)."""
    rate, peer = expected(raw, i, j)["gbs"], peer_gbs(raw, i, j)
    return peer / rate if rate and peer is not None else None


def pair_topology(raw: Raw, i: int, j: int) -> Mapping[str, Any]:
    found: Mapping[str, Any] = ((raw.get("topology") or {}).get("pairs") or {}).get(f"{i}.{j}") or {}
    return found


def pcie_path(raw: Raw, i: int, j: int) -> str:
    code = pair_topology(raw, i, j).get("common_ancestor")
    return ANCESTOR_WORDS.get(int(code), f"NVML code {code}") if code is not None else "unknown"


def nvml_p2p(raw: Raw, i: int, j: int, kind: str = "read") -> Optional[int]:
    """NVML's P2P status code for reads (or "nvlink") between i and j: 0 means supported."""
    code = (pair_topology(raw, i, j).get("p2p_status") or {}).get(kind)
    return int(code) if code is not None else None


def topology_expects_peer(raw: Raw, i: int, j: int) -> Optional[str]:
    """Why the topology says i may access j directly (NVLink up, NVML's P2P status OK), or None."""
    up, _healthy, kind = nvlink_links(raw, i, j)
    if up:
        return f"{up} NVLink links up ({kind})"
    if nvml_p2p(raw, i, j) == 0:
        return f"NVML's P2P read status is OK (PCIe path through {pcie_path(raw, i, j)})"
    return None


def numa_node(raw: Raw, i: int) -> Optional[int]:
    node = device(raw, i).get("numa_node")
    return int(node) if node is not None else None


def asymmetry(raw: Raw, a: int, b: int) -> Optional[float]:
    """The faster direction over the slower of one pair (as the process finds it)."""
    ab, ba = best_gbs(raw, a, b), best_gbs(raw, b, a)
    if not ab or not ba:
        return None
    return max(ab, ba) / min(ab, ba)
