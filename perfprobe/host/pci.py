"""PCI devices with their class, vendor and NUMA node (/sys/bus/pci/devices/*).

Which node a NIC or GPU hangs off decides where the threads feeding it should run.
"""

from __future__ import annotations

from typing import Any

from perfprobe.host.parse import parse_cpulist, parse_cpumask
from perfprobe.host.sysroot import SysRoot
from perfprobe.pure.pcie_rate import gen_from_speed, width_from_text

PCI_DIR = "sys/bus/pci/devices"


def read_pci_devices(sr: SysRoot) -> list[dict[str, Any]]:
    """The "pci_devices" list, in address order."""
    return [device_facts(sr, address) for address in sr.listdir(PCI_DIR) or []]


def device_facts(sr: SysRoot, address: str) -> dict[str, Any]:
    rel = f"{PCI_DIR}/{address}"
    node = sr.read_int(f"{rel}/numa_node")
    return {"address": address, "class": sr.read_text(f"{rel}/class"),
            "vendor": sr.read_text(f"{rel}/vendor"), "numa_node": None if node is None or node < 0 else node}


def gpu_link(sr: SysRoot, bus_id: str | bytes) -> dict[str, int | None]:
    """A GPU's link (as link_facts) and its NUMA node, by CUDA's or NVML's bus id; None where absent.

    The GPU probes read it idle and under load; it is the same reading the host facts make."""
    address = sysfs_address(bus_id)
    return {**link_facts(sr, address), "numa_node": device_facts(sr, address)["numa_node"]}


def link_facts(sr: SysRoot, address: str) -> dict[str, int | None]:
    """PCIe generation and width, current and max, from the device's link files (None if absent)."""
    rel = f"{PCI_DIR}/{address}"
    return {"gen_current": gen_from_speed(sr.read_text(f"{rel}/current_link_speed")),
            "gen_max": gen_from_speed(sr.read_text(f"{rel}/max_link_speed")),
            "width_current": width_from_text(sr.read_text(f"{rel}/current_link_width")),
            "width_max": width_from_text(sr.read_text(f"{rel}/max_link_width"))}


def local_node(sr: SysRoot, address: str, nodes: list[dict[str, Any]]) -> int | None:
    """The one node holding the device's local CPUs (local_cpulist), when numa_node says -1."""
    rel = f"{PCI_DIR}/{address}"
    cpus = parse_cpulist(sr.read_text(f"{rel}/local_cpulist"))
    if cpus is None:
        cpus = parse_cpumask(sr.read_text(f"{rel}/local_cpus"))
    if not cpus:
        return None
    matches = [n["id"] for n in nodes if set(n["cpus"]) & set(cpus)]
    return matches[0] if len(matches) == 1 else None


def sysfs_address(bus_id: str | bytes) -> str:
    """NVML's "00000000:3B:00.0" (or CUDA's, as bytes) -> sysfs's "0000:3b:00.0"; other text lowered."""
    text = (bus_id.decode(errors="replace") if isinstance(bus_id, bytes) else str(bus_id)).strip().lower()
    domain, _, rest = text.partition(":")
    if not rest:
        return text
    is_hex = bool(domain) and all(c in "0123456789abcdef" for c in domain)
    return f"{int(domain, 16):04x}:{rest}" if is_hex else text
