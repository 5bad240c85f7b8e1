"""Pure readers of `perfprobe p2p`'s raw numbers: what the rules and the tables both read.

The rate a pair's links imply, per direction: NVLink links between the two GPUs (direct links whose
far end is the peer; through NVSwitch, the fewer of the two GPUs' links to switches) times the
per-link rate of the GPU's NVLink generation — NVLink 4 (Hopper, H100/H200): 25 GB/s per direction
per link, 18 links = 450 GB/s; NVLink 3 (A100): 25 GB/s x 12 = 300 GB/s; NVLink 5 (Blackwell):
50 GB/s x 18. The generation comes from the compute capability: NVML's version code is shown as
read (its numbering has changed between drivers: 4 on one, 6 or 7 for the same NVLink 4 on others).
Without NVLink, peer copies cross PCIe: the narrower of the two GPUs' links (perfprobe/pure/pcie_rate.py).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict, cast

from perfprobe.probes.gpu_raw import Budget, Device, Link
from perfprobe.pure.pcie_rate import link_rate_or_none
from perfprobe.pure.stats import Stat


class GpuDevice(Device, total=False):
    """One selected GPU: cuda_runtime's properties, with the NUMA node and PCIe link the host facts give it."""

    numa_node: Optional[int]
    pcie: Optional[Link]


class Copy(TypedDict, total=False):
    """One timed copy (p2p_kernels.peer_copy, peer_bidirectional): its bytes (each way), the GB/s
    and the device time of each repeat."""

    bytes: int
    gbs: Stat
    device_ms: Stat


class Route(TypedDict, total=False):
    """One direction in one peer-access state (peer on, or staged through host memory): a size
    sweep, a small copy's latency, and both ways at once at the largest size."""

    sweep: list[Copy]
    latency_us: Stat
    bidir: Copy


class Result(TypedDict, total=False):
    """raw["results"]["i.j"]: whether CUDA allows i to access j, the state found and set, and both routes."""

    can_access_peer: bool
    found_enabled: Optional[bool]
    peer_enabled: bool
    enable_error: Optional[str]
    staged: Route
    peer: Route
    """Only where peer access could be enabled."""


class NvLink(TypedDict, total=False):
    """One NVLink link as NVML reads it: up, its version code, the remote end (type 2: NVSwitch)."""

    link: int
    up: bool
    version: Optional[int]
    remote_bus_id: Optional[str]
    remote_type: Optional[int]


class GpuLinks(TypedDict, total=False):
    links: list[NvLink]
    pcie: Link


class PairTopology(TypedDict, total=False):
    """NVML on one ordered pair: the PCIe common ancestor and the P2P status by capability (0: OK)."""

    common_ancestor: Optional[int]
    p2p_status: dict[str, Optional[int]]


class Topology(TypedDict, total=False):
    """kernels/nvml.p2p_topology: per GPU (by CUDA index, a string) and per pair ("i.j"); error when NVML was not there."""

    gpus: dict[str, GpuLinks]
    pairs: dict[str, PairTopology]
    error: Optional[str]


class P2pRaw(TypedDict, total=False):
    """What measure() returns (docs/probes/p2p.md): the GPUs, the pairs measured and each direction's results."""

    devices: list[GpuDevice]
    selected: list[int]
    pairs: list[list[int]]
    pairs_total: int
    sampled: bool
    quick: bool
    sizes_bytes: list[int]
    latency_bytes: int
    budget: Budget
    topology: Topology
    results: dict[str, Result]
    """By direction, "i.j"."""


Raw = P2pRaw
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


def typed(raw: Mapping[str, Any]) -> P2pRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(P2pRaw, raw)


def selected(raw: Raw) -> list[int]:
    return [int(d) for d in raw.get("selected") or []]


def pairs(raw: Raw) -> list[Pair]:
    """The unordered pairs measured."""
    return [(int(a), int(b)) for a, b in raw.get("pairs") or []]


def directions(raw: Raw) -> list[Pair]:
    return [d for a, b in pairs(raw) for d in ((a, b), (b, a))]


def entry(raw: Raw, i: int, j: int) -> Result:
    """Direction i→j's results ({} when not measured)."""
    return (raw.get("results") or {}).get(f"{i}.{j}") or Result()


def device(raw: Raw, i: int) -> GpuDevice:
    return next((d for d in raw.get("devices") or [] if d.get("index") == i), GpuDevice())


def route(raw: Raw, i: int, j: int, staged: bool = False) -> Route:
    """i→j with peer access on ({} where it was not enabled), or staged through host memory."""
    found = entry(raw, i, j)
    return (found.get("staged") if staged else found.get("peer")) or Route()


def _top_stat(sweep: list[Copy]) -> Optional[Stat]:
    return sweep[-1]["gbs"] if sweep else None


def _median(stat: Optional[Stat]) -> Optional[float]:
    return float(stat["median"]) if stat else None


def peer_stat(raw: Raw, i: int, j: int) -> Optional[Stat]:
    """The repeats behind peer_gbs (the largest size, peer access on)."""
    return _top_stat(list(route(raw, i, j).get("sweep") or []))


def staged_stat(raw: Raw, i: int, j: int) -> Optional[Stat]:
    """The repeats behind staged_gbs."""
    return _top_stat(list(route(raw, i, j, staged=True).get("sweep") or []))


def bidir_stat(raw: Raw, i: int, j: int, staged: bool = False) -> Optional[Stat]:
    """The repeats behind bidir_gbs (peer access on, or staged)."""
    part = route(raw, i, j, staged).get("bidir")
    return part["gbs"] if part else None


def _latency_stat(raw: Raw, i: int, j: int, staged: bool = False) -> Optional[Stat]:
    return route(raw, i, j, staged).get("latency_us") or None


def latency_stat(raw: Raw, i: int, j: int) -> Optional[Stat]:
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


def gpu_links(raw: Raw, i: int) -> GpuLinks:
    """NVML's NVLink links and PCIe link of GPU i ({} when NVML did not answer)."""
    return ((raw.get("topology") or Topology()).get("gpus") or {}).get(str(i)) or GpuLinks()


def links(raw: Raw, i: int) -> list[NvLink]:
    return list(gpu_links(raw, i).get("links") or [])


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
    return sorted({int(version) for link in links(raw, i) if (version := link.get("version")) is not None})


def pcie_link(raw: Raw, i: int) -> Optional[tuple[int, int]]:
    """(generation, width) the GPU's PCIe link runs at now (NVML, else the host facts)."""
    nv = gpu_links(raw, i).get("pcie") or Link()
    facts = device(raw, i).get("pcie") or Link()
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


def pair_topology(raw: Raw, i: int, j: int) -> PairTopology:
    return ((raw.get("topology") or Topology()).get("pairs") or {}).get(f"{i}.{j}") or PairTopology()


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
