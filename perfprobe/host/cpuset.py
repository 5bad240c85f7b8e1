"""Which CPUs this process may use: its affinity (live), or the cgroup cpuset of a captured tree.

A captured tree has no process to ask, so the cpuset of the capturing shell (proc/self/cpuset,
found under the cpuset mount of proc/mounts, cgroup v1 or v2) stands in for the affinity.
"""

from __future__ import annotations

import os

from perfprobe.host.parse import parse_cpulist
from perfprobe.host.sysroot import SysRoot

_V1_FILES = ("cpuset.effective_cpus", "cpuset.cpus", "effective_cpus", "cpus")
_V2_FILES = ("cpuset.cpus.effective",)


def usable_cpus(sr: SysRoot, online: list[int]) -> tuple[list[int], str]:
    """(usable CPUs, source): "affinity" live, "cpuset" when a tree has one, else "online"."""
    if sr.live and hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0)), "affinity"
    cpus = cpuset_cpus(sr)
    if cpus:
        usable = sorted(set(cpus) & set(online))
        if usable:
            return usable, "cpuset"
    return list(online), "online"


def cpuset_cpus(sr: SysRoot) -> list[int] | None:
    """The CPUs of the cpuset that proc/self belongs to, or None when the tree does not say."""
    mounts = _cgroup_mounts(sr)
    v1 = next((point for fstype, point, opts in mounts if fstype == "cgroup" and "cpuset" in opts), None)
    if v1:
        group = sr.read_text("proc/self/cpuset") or "/"
        found = _read_up(sr, v1, group, _V1_FILES)
        if found is not None:
            return found
    v2 = next((point for fstype, point, _opts in mounts if fstype == "cgroup2"), None)
    if v2:
        return _read_up(sr, v2, _v2_group(sr), _V2_FILES)
    return None


def _cgroup_mounts(sr: SysRoot) -> list[tuple[str, str, list[str]]]:
    mounts = []
    for line in sr.read_lines("proc/mounts"):
        fields = line.split()
        if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
            mounts.append((fields[2], fields[1], fields[3].split(",")))
    return mounts


def _v2_group(sr: SysRoot) -> str:
    for line in sr.read_lines("proc/self/cgroup"):
        if line.startswith("0::"):
            return line[3:] or "/"
    return "/"


def _read_up(sr: SysRoot, mount: str, group: str, names: tuple[str, ...]) -> list[int] | None:
    """The first non-empty CPU list of `names` in `group` or, failing that, its nearest ancestor."""
    parts = [part for part in group.split("/") if part]
    for depth in range(len(parts), -1, -1):
        base = "/".join([mount.rstrip("/")] + parts[:depth])
        for name in names:
            cpus = parse_cpulist(sr.read_text(f"{base}/{name}"))
            if cpus:
                return cpus
    return None
