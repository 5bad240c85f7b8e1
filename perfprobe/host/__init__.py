"""Host facts: what this host is (CPUs, caches, NUMA, memory, PCI, GPUs, kernel settings).

`read_host_facts()` reads the live host; `read_host_facts(root)` reads a captured tree
(root/sys, root/proc) and never raises on missing or contradictory files, recording `notes`.
The dict's shape is documented in docs/DEVELOPING.md ("Host facts").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from perfprobe.host.caches import read_caches
from perfprobe.host.cgroup import read_cgroup
from perfprobe.host.cpus import cpu_summary, online_and_offline, topology
from perfprobe.host.cpuset import usable_cpus
from perfprobe.host.gpus import read_gpus
from perfprobe.host.identity import host_identity
from perfprobe.host.memory import hugepage_facts, memlock_facts, memory_facts, read_meminfo
from perfprobe.host.numa import read_numa
from perfprobe.host.pci import read_pci_devices
from perfprobe.host.sysroot import SysRoot
from perfprobe.host.system import cpufreq_facts, kernel_release, thp_facts

__all__ = ["read_host_facts", "SysRoot"]


def read_host_facts(root: Path | str | None = None) -> dict[str, Any]:
    """The JSON `host` object of the live host (root=None) or of a captured tree."""
    sr = SysRoot(root)
    notes: list[str] = []
    online, offline = online_and_offline(sr)
    if not online and sr.live and hasattr(os, "sched_getaffinity"):
        online = sorted(os.sched_getaffinity(0))  # sandboxes (gVisor, some containers) hide sysfs
        notes.append("no CPU list in sysfs (sys/devices/system/cpu): this process's affinity taken as online")
    elif not online:
        notes.append("no online CPU could be read from sysfs (sys/devices/system/cpu)")
    cores, packages = topology(sr, online, notes)
    usable, usable_source = usable_cpus(sr, online)
    meminfo = read_meminfo(sr)
    numa = read_numa(sr, online, meminfo)
    gpus, gpu_note = read_gpus(sr, numa["nodes"])
    return {
        **host_identity(sr),  # hostname, slurm_node; the runner adds the run's time_utc
        "source": "live" if sr.live else "fsroot",
        "root": None if sr.live else str(sr.root),
        "kernel": kernel_release(sr),
        "cpu": cpu_summary(sr, cores, packages),
        "cpus": {"online": online, "offline": offline, "usable": usable,
                 "usable_source": usable_source, "cores": cores, "packages": packages},
        "caches": read_caches(sr, online, notes),
        "memory": memory_facts(meminfo, notes),
        "numa": numa,
        "pci_devices": read_pci_devices(sr),
        "thp": thp_facts(sr),
        "hugepages": hugepage_facts(meminfo),
        "cpufreq": cpufreq_facts(sr, online),
        "memlock": memlock_facts(sr),
        "cgroup": read_cgroup(sr),
        "gpus": gpus,
        "gpu_note": gpu_note,
        "notes": notes,
    }
