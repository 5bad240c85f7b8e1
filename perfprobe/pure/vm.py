"""Is this host a virtual machine? Effects that every VM shows (vCPUs time-shared by the hypervisor,
a cache share set by the neighbours) are passes with advice there, not faults of the host.

`virtual_machine()` is pure: the CPU's hypervisor flag (host facts `cpu.hypervisor`, read from
/proc/cpuinfo by perfprobe/host/cpus.py; recordings made before it was a host fact carry it in
their raw numbers, passed as `flag`), else paravirtual PCI devices in the host facts (virtio,
VMware, Hyper-V, Xen), else "".
"""

from __future__ import annotations

from typing import Any, Mapping

VM_PCI_VENDORS = {"0x1af4": "virtio", "0x15ad": "VMware", "0x1414": "Hyper-V", "0x5853": "Xen"}


def virtual_machine(flag: object, host: Mapping[str, Any]) -> str:
    """How this host shows it is a VM ("the CPU's hypervisor flag", "virtio devices"), or ""."""
    if flag is None:
        flag = (host.get("cpu") or {}).get("hypervisor")
    if flag:
        return "the CPU's hypervisor flag"
    vendors = {str(d.get("vendor")) for d in host.get("pci_devices") or []}
    return next((f"{VM_PCI_VENDORS[v]} devices" for v in sorted(vendors) if v in VM_PCI_VENDORS), "")
