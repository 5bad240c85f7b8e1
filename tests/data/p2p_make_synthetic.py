"""Writes the labelled synthetic p2p matrices (tests/data/p2p_synthetic_*.json): recordings ({"host",
"raw": {"p2p": ...}}, replayable with `perfprobe p2p --replay FILE`) whose raw numbers are shaped
exactly as perfprobe/probes/p2p/measure.py records them, with figures modelled on published ones.
No multi-GPU host was lent when they were made; replace them with recordings when one is.
Run: .venv/bin/python tests/data/p2p_make_synthetic.py"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
GIB = 1 << 30


def s(median: float, spread: float = 0.01) -> dict:
    return {"median": median, "min": median * (1 - spread), "max": median * (1 + spread),
            "iqr": median * spread, "repeats": 5}


def copy(gbs: float, nbytes: int = GIB) -> dict:
    return {"bytes": nbytes, "gbs": s(gbs), "device_ms": s(nbytes / gbs / 1e6)}


def sweep(top_gbs: float) -> list[dict]:
    sizes = [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, GIB]
    shares = [0.35, 0.7, 0.9, 0.97, 0.99, 1.0]
    return [copy(top_gbs * f, n) for n, f in zip(sizes, shares)]


def direction(can: bool, peer_gbs: float | None, staged_gbs: float, bidir: float | None, staged_bidir: float,
              latency: float, staged_latency: float) -> dict:
    out = {"can_access_peer": can, "found_enabled": False, "peer_enabled": peer_gbs is not None,
           "enable_error": None,
           "staged": {"sweep": [copy(staged_gbs)], "latency_us": s(staged_latency, 0.05), "bidir": copy(staged_bidir)}}
    if peer_gbs is not None:
        out["peer"] = {"sweep": sweep(peer_gbs), "latency_us": s(latency, 0.05), "bidir": copy(bidir or 0)}
    return out


def gpu(i: int, name: str, cc: str, bus: str, node: int, gen: int = 5) -> dict:
    pcie = {"gen_current": gen, "gen_max": gen, "width_current": 16, "width_max": 16}
    return {"index": i, "pci_bus_id": bus, "name": name, "compute_capability": cc, "async_engine_count": 3,
            "total_memory_bytes": 150754820096, "numa_node": node, "pcie": pcie, "cuda_driver_version": 13000}


def switch_links(down: tuple[int, ...] = ()) -> list[dict]:
    return [{"link": k, "up": k not in down, "version": 6, "remote_bus_id": None if k in down else "0000:c1:00.0",
             "remote_type": None if k in down else 2} for k in range(18)]


def host(gpus: list[dict], sockets: int = 1) -> dict:
    return {"source": "synthetic", "cpu": {"model": "synthetic", "sockets": sockets},
            "gpus": [{"index": g["index"], "name": g["name"], "pci_bus_id": g["pci_bus_id"],
                      "numa_node": g["numa_node"], "pcie": g["pcie"]} for g in gpus],
            "numa": {"nodes": [{"id": n, "cpus": []} for n in sorted({g["numa_node"] for g in gpus})]}}


def raw(gpus: list[dict], pairs: list[list[int]], results: dict, topo: dict) -> dict:
    return {"devices": gpus, "selected": [g["index"] for g in gpus], "pairs": pairs, "pairs_total": len(pairs),
            "sampled": False, "quick": False, "sizes_bytes": [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, GIB],
            "latency_bytes": 4, "budget": {"requested_bytes": GIB, "top_bytes": GIB, "capped_by": None},
            "topology": topo, "results": results}


def hgx(down: tuple[int, ...], label: str, gbs: tuple[float, float], bidir: float) -> dict:
    gpus = [gpu(0, "NVIDIA H100 80GB HBM3", "9.0", "0000:18:00.0", 0),
            gpu(1, "NVIDIA H100 80GB HBM3", "9.0", "0000:2a:00.0", 0)]
    topo = {"gpus": {"0": {"links": switch_links(), "pcie": gpus[0]["pcie"]},
                     "1": {"links": switch_links(down), "pcie": gpus[1]["pcie"]}},
            "pairs": {k: {"common_ancestor": 40, "p2p_status": {"read": 0, "write": 0, "nvlink": 0}}
                      for k in ("0.1", "1.0")}, "error": None}
    results = {"0.1": direction(True, gbs[0], 19.6, bidir, 31.0, 2.3, 11.8),
               "1.0": direction(True, gbs[1], 19.9, bidir, 31.0, 2.4, 12.1)}
    return {"label": label, "host": host(gpus), "raw": {"p2p": raw(gpus, [[0, 1]], results, topo)}}


def pcie_no_peer() -> dict:
    gpus = [gpu(i, "NVIDIA L40S", "8.9", f"0000:{b}:00.0", 0 if i < 2 else 1, gen=4)
            for i, b in enumerate(("17", "31", "b1", "ca"))]
    pairs = [[a, b] for a in range(4) for b in range(a + 1, 4)]
    same_socket = {(0, 1), (2, 3)}
    topo_pairs, results = {}, {}
    for a, b in pairs:
        near = (a, b) in same_socket
        for x, y in ((a, b), (b, a)):
            topo_pairs[f"{x}.{y}"] = {"common_ancestor": 30 if near else 50,
                                      "p2p_status": {"read": 0 if near else 3, "write": 0 if near else 3, "nvlink": 5}}
            results[f"{x}.{y}"] = direction(False, None, 11.2 if near else 9.4, None, 17.5 if near else 14.1, 0, 9.6)
    topo = {"gpus": {str(g["index"]): {"links": [], "pcie": g["pcie"]} for g in gpus}, "pairs": topo_pairs,
            "error": None}
    label = ("synthetic: 4 PCIe Gen4 x16 GPUs (L40S-class, no NVLink) on two sockets, peer access refused "
             "by CUDA on every pair although NVML says P2P is supported between the GPUs of one host bridge "
             "(an IOMMU in translated mode or ACS redirect); shaped as measure.py records it, figures "
             "modelled on p2pBandwidthLatencyTest 'P2P=Disabled' matrices of PCIe servers (9-12 GB/s one way "
             "staged, ~10 us latency); not a recording")
    return {"label": label, "host": host(gpus, sockets=2), "raw": {"p2p": raw(gpus, pairs, results, topo)}}


def asymmetric() -> dict:
    gpus = [gpu(0, "NVIDIA A30", "8.0", "0000:41:00.0", 0, gen=4), gpu(1, "NVIDIA A30", "8.0", "0000:42:00.0", 0, gen=4)]
    topo = {"gpus": {"0": {"links": [], "pcie": gpus[0]["pcie"]},
                     "1": {"links": [], "pcie": {"gen_current": 4, "gen_max": 4, "width_current": 16, "width_max": 16}}},
            "pairs": {k: {"common_ancestor": 10, "p2p_status": {"read": 0, "write": 0, "nvlink": 5}}
                      for k in ("0.1", "1.0")}, "error": None}
    results = {"0.1": direction(True, 25.1, 12.4, 33.0, 20.0, 1.9, 9.0),
               "1.0": direction(True, 13.2, 12.1, 33.0, 20.0, 2.0, 9.1)}
    label = ("synthetic: 2 PCIe Gen4 x16 GPUs (A30-class, NVLink bridge absent) under one PCIe switch with "
             "peer access on, 0→1 at 25 GB/s (80% of the 31.5 GB/s link, as healthy PCIe P2P runs) and 1→0 "
             "at 13 GB/s (a direction held back: payload size, ACS or a retrained link); not a recording")
    return {"label": label, "host": host(gpus), "raw": {"p2p": raw(gpus, [[0, 1]], results, topo)}}


FILES = {
    "nvlink_healthy_2gpu": hgx((), "synthetic: 2 of the 8 H100 SXM GPUs of an HGX board (NVLink 4, 18 links each "
                                   "to the NVSwitches, 450 GB/s per direction), all links up; figures modelled on "
                                   "published p2pBandwidthLatencyTest / nvbandwidth runs on HGX H100 (~370-390 GB/s "
                                   "one way, ~740 GB/s both ways, ~2.3 us latency; staged ~20 GB/s); not a recording",
                               (376.0, 379.0), 742.0),
    "nvlink_link_down_2gpu": hgx((3, 4, 5, 6, 7, 8, 9), "synthetic: the healthy HGX H100 pair with 7 of GPU 1's 18 "
                                 "NVLink links reported down by NVML (11 up): one way ~235 GB/s (52% of 450), both "
                                 "ways ~470; not a recording", (236.0, 231.0), 468.0),
    "pcie_no_peer_4gpu": pcie_no_peer(),
    "asymmetric_2gpu": asymmetric(),
}

if __name__ == "__main__":
    for name, data in FILES.items():
        (HERE / f"p2p_synthetic_{name}.json").write_text(json.dumps(data, indent=1) + "\n")
