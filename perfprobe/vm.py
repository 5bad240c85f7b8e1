"""Is this host a virtual machine? Effects that every VM shows (vCPUs time-shared by the hypervisor,
a cache share set by the neighbours) are passes with advice there, not faults of the host.

`hypervisor_flag()` reads the CPU's flag (x86 /proc/cpuinfo) and is called by measure modules, which
record it in their raw numbers; `virtual_machine()` is pure: that flag, else paravirtual PCI devices
in the host facts (virtio, VMware, Hyper-V, Xen), else "".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

VM_PCI_VENDORS = {"0x1af4": "virtio", "0x15ad": "VMware", "0x1414": "Hyper-V", "0x5853": "Xen"}


def hypervisor_flag(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool | None:
    """Whether the CPU says it runs under a hypervisor; None when cpuinfo has no flags line."""
    try:
        text = cpuinfo.read_text()[: 1 << 16]
    except OSError:
        return None
    flags = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return " hypervisor" in f" {flags.split(':', 1)[-1]} " if flags else None


def virtual_machine(flag: object, host: Mapping[str, Any]) -> str:
    """How this host shows it is a VM ("the CPU's hypervisor flag", "virtio devices"), or ""."""
    if flag:
        return "the CPU's hypervisor flag"
    vendors = {str(d.get("vendor")) for d in host.get("pci_devices") or []}
    return next((f"{VM_PCI_VENDORS[v]} devices" for v in sorted(vendors) if v in VM_PCI_VENDORS), "")
