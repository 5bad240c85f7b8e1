"""NVIDIA GPUs: live through NVML (perfprobe/kernels/nvml.py, imported lazily), in a captured tree
through sysfs.

Nothing here raises: no pynvml, no driver or no device gives `gpus = []` and a `gpu_note` saying
why. A GPU's NUMA node comes from sysfs first (what the kernel routes by), NVML second.
"""

from __future__ import annotations

from typing import Any

from perfprobe.host.pci import PCI_DIR, device_facts, link_facts, local_node
from perfprobe.host.sysroot import SysRoot

NVIDIA_VENDOR = "0x10de"
NVIDIA_PROC = "proc/driver/nvidia"


def read_gpus(sr: SysRoot, nodes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """(gpus, gpu_note): NVML live, sysfs for a captured tree."""
    if sr.live:
        return nvml_gpus(sr, nodes)
    gpus = sysfs_gpus(sr, nodes)
    return gpus, None if gpus else "no NVIDIA GPU in the tree's PCI devices"


def nvidia_addresses(sr: SysRoot) -> list[str]:
    """PCI addresses of NVIDIA display/3D controllers (class 0x03xxxx), or of the GPUs the
    NVIDIA driver lists under /proc when the tree has no vendor files."""
    found = []
    for address in sr.listdir(PCI_DIR) or []:
        facts = device_facts(sr, address)
        is_gpu = (facts["class"] or "").startswith("0x03")
        driver_lists = sr.exists(f"{NVIDIA_PROC}/gpus/{address}")
        if is_gpu and (facts["vendor"] == NVIDIA_VENDOR or (facts["vendor"] is None and driver_lists)):
            found.append(address)
    return found


def sysfs_gpus(sr: SysRoot, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GPUs of a captured tree, with what sysfs and /proc/driver/nvidia say about them."""
    driver = _driver_version(sr)
    gpus = []
    for index, address in enumerate(nvidia_addresses(sr)):
        info = _proc_information(sr, address)
        device_id = sr.read_text(f"{PCI_DIR}/{address}/device")
        node, source = _sysfs_node(sr, address, nodes)
        gpus.append({"index": index, "name": info.get("model") or f"NVIDIA GPU {device_id or address}",
                     "uuid": info.get("gpu uuid"), "memory_total_bytes": None, "pci_bus_id": address,
                     "numa_node": node, "numa_node_source": source,
                     "pcie": link_facts(sr, address), "driver_version": driver})
    return gpus


def _sysfs_node(sr: SysRoot, address: str, nodes: list[dict[str, Any]]) -> tuple[int | None, str]:
    node = device_facts(sr, address)["numa_node"]
    if node is None:
        node = local_node(sr, address, nodes)
    return node, "unknown" if node is None else "sysfs"


def _proc_information(sr: SysRoot, address: str) -> dict[str, str]:
    info = {}
    for line in sr.read_lines(f"{NVIDIA_PROC}/gpus/{address}/information"):
        key, sep, value = line.partition(":")
        if sep:
            info[key.strip().lower()] = value.strip()
    return info


def _driver_version(sr: SysRoot) -> str | None:
    """"NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ..." -> "550.54.15"."""
    words = (sr.read_text(f"{NVIDIA_PROC}/version") or "").split()
    if "Module" in words and words.index("Module") + 1 < len(words):
        return words[words.index("Module") + 1]
    return None


def nvml_gpus(sr: SysRoot, nodes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """Live GPUs as NVML lists them (perfprobe/kernels/nvml.py), each placed on its NUMA node by
    sysfs first (what the kernel routes by), NVML second; never raises."""
    from perfprobe.kernels import nvml

    listed, note = nvml.list_gpus()
    return [_placed(sr, gpu, nodes) for gpu in listed], note


def _placed(sr: SysRoot, gpu: dict[str, Any], nodes: list[dict[str, Any]]) -> dict[str, Any]:
    bus_id = gpu["pci_bus_id"]
    node, source = _sysfs_node(sr, bus_id, nodes) if bus_id else (None, "unknown")
    if node is None and gpu["numa_node"] is not None:
        node, source = gpu["numa_node"], "nvml"
    return {"index": gpu["index"], "name": gpu["name"], "uuid": gpu["uuid"],
            "memory_total_bytes": gpu["memory_total_bytes"], "pci_bus_id": bus_id,
            "numa_node": node, "numa_node_source": source, "pcie": gpu["pcie"],
            "driver_version": gpu["driver_version"]}
