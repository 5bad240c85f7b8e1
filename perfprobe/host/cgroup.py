"""The cgroup limits this process runs under: CPU quota, throttling, memory limit, pids limit.

Every container runtime, Kubernetes pod and Slurm job with cgroup confinement sets these, and a
CPU quota below the CPUs a process sees is among the most common performance faults in containers:
the process sees (and starts threads for) every CPU, then is throttled each period.

Read through the root-aware reader (live, or a captured tree under `--fsroot`): the process's
groups come from proc/self/cgroup, the hierarchies from proc/self/mountinfo (else proc/mounts), v1
(a mount per controller: cpu, memory, pids) and v2 (one cgroup2 mount) alike; a v1 mount of the
controller wins on hybrid hosts, where the unified tree holds no controller. A limit set on an
ancestor binds the child as well, so each limit is the tightest between the process's group and
the top of the mounted tree, and throttling is counted where the binding quota is set (the kernel
counts a period there). Nothing raises: an unreadable file is a limit not known (None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfprobe.host.facts import memory_limit
from perfprobe.host.sysroot import SysRoot

UNLIMITED_FROM = 1 << 62
"""v1 writes "no limit" as PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB pages); anything
this large is no limit."""


@dataclass(frozen=True)
class Hierarchy:
    """Where one controller's tree is mounted, which version it is, and this process's group in it."""

    version: int
    mount: str
    group: str

    def dirs(self) -> list[str]:
        """The process's group folder first, then each ancestor up to the mounted tree's top."""
        parts = [p for p in self.group.split("/") if p]
        return ["/".join([self.mount.rstrip("/"), *parts[:depth]]) or "/" for depth in range(len(parts), -1, -1)]

    def name(self, folder: str) -> str:
        """A folder as the group's path inside the hierarchy ("/" for the top)."""
        return folder[len(self.mount.rstrip("/")):] or "/"


def read_cgroup(sr: SysRoot) -> dict[str, Any]:
    """The JSON `cgroup` object (docs/DEVELOPING.md, "Host facts"); None fields where not limited or
    not readable, `version` None where no cgroup is mounted."""
    cpu, memory, pids = (hierarchy(sr, c) for c in ("cpu", "memory", "pids"))
    facts: dict[str, Any] = {"version": next((h.version for h in (cpu, memory, pids) if h), None)}
    facts.update(_cpu(sr, cpu))
    facts.update(_memory(sr, memory))
    facts.update(_pids(sr, pids))
    return facts


def hierarchy(sr: SysRoot, controller: str) -> Hierarchy | None:
    """The hierarchy that holds `controller` for this process: its v1 mount, else the v2 mount when
    the unified tree offers it."""
    groups = _groups(sr)
    mounts = _mounts(sr)
    for fstype, point, root, opts in mounts:
        if fstype == "cgroup" and controller in opts:
            key = next((k for k in groups if controller in k.split(",")), None)
            return Hierarchy(1, point, _relative(groups.get(key or "", "/"), root))
    for fstype, point, root, _opts in mounts:
        if fstype == "cgroup2" and controller in (sr.read_text(f"{point}/cgroup.controllers") or "").split():
            return Hierarchy(2, point, _relative(groups.get("", "/"), root))
    return None


def _groups(sr: SysRoot) -> dict[str, str]:
    """proc/self/cgroup as {controllers: path}; v2's line has the key ""."""
    out = {}
    for line in sr.read_lines("proc/self/cgroup"):
        fields = line.split(":", 2)
        if len(fields) == 3:
            out[fields[1]] = fields[2] or "/"
    return out


def _mounts(sr: SysRoot) -> list[tuple[str, str, str, list[str]]]:
    """(fstype, mount point, root inside the hierarchy, options) of each cgroup mount."""
    found = []
    for line in sr.read_lines("proc/self/mountinfo"):
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((tail[0], fields[4], fields[3], tail[2].split(",")))
    if found:
        return found
    for line in sr.read_lines("proc/mounts"):
        fields = line.split()
        if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
            found.append((fields[2], fields[1], "/", fields[3].split(",")))
    return found


def _relative(group: str, root: str) -> str:
    """The group's path below the mounted root (a container sees its own group as its tree's top)."""
    root = root.rstrip("/")
    if root and (group == root or group.startswith(root + "/")):
        return group[len(root):] or "/"
    return group


def _cpu(sr: SysRoot, h: Hierarchy | None) -> dict[str, Any]:
    out: dict[str, Any] = {"cpu_group": None, "cpu_quota_cpus": None, "cpu_quota_us": None, "cpu_period_us": None,
                           "cpu_quota_file": None, "cpu_quota_group": None,
                           "nr_periods": None, "nr_throttled": None, "throttled_usec": None}
    if h is None:
        return out
    out["cpu_group"] = h.group
    binding = None
    for folder in h.dirs():
        quota = _quota(sr, folder, h.version)
        if quota is not None and (binding is None or quota[0] / quota[1] < binding[1][0] / binding[1][1]):
            binding = (folder, quota)
    counted = binding[0] if binding else h.dirs()[0]
    if binding:
        folder, (quota_us, period_us) = binding
        out.update(cpu_quota_cpus=round(quota_us / period_us, 4), cpu_quota_us=quota_us, cpu_period_us=period_us,
                   cpu_quota_file="cpu.max" if h.version == 2 else "cpu.cfs_quota_us", cpu_quota_group=h.name(folder))
    out.update(throttling(sr, counted))
    return out


def _quota(sr: SysRoot, folder: str, version: int) -> tuple[int, int] | None:
    """(quota µs, period µs) set in this folder, or None (no quota, unreadable)."""
    if version == 2:
        words = (sr.read_text(f"{folder}/cpu.max") or "").split()
        if len(words) != 2 or not all(w.isdigit() for w in words):
            return None  # "max 100000": no quota
        quota, period = int(words[0]), int(words[1])
    else:
        quota_v1, period_v1 = sr.read_int(f"{folder}/cpu.cfs_quota_us"), sr.read_int(f"{folder}/cpu.cfs_period_us")
        if quota_v1 is None or period_v1 is None:
            return None
        quota, period = quota_v1, period_v1
    return (quota, period) if quota > 0 and period > 0 else None


def throttling(sr: SysRoot, folder: str) -> dict[str, int | None]:
    """cpu.stat's periods, throttled periods and throttled time (µs; v1 counts ns) of one group."""
    stat: dict[str, int] = {}
    for line in sr.read_lines(f"{folder}/cpu.stat"):
        words = line.split()
        if len(words) == 2 and words[1].isdigit():
            stat[words[0]] = int(words[1])
    usec = stat.get("throttled_usec")
    if usec is None and "throttled_time" in stat:
        usec = stat["throttled_time"] // 1000
    return {"nr_periods": stat.get("nr_periods"), "nr_throttled": stat.get("nr_throttled"), "throttled_usec": usec}


def _memory(sr: SysRoot, h: Hierarchy | None) -> dict[str, Any]:
    out: dict[str, Any] = {"memory_group": None, "memory_max_bytes": None, "memory_high_bytes": None,
                           "memory_limit_group": None, "memory_current_bytes": None}
    if h is None:
        return out
    out["memory_group"] = h.group
    names = ("memory.max", "memory.high") if h.version == 2 else ("memory.limit_in_bytes",)
    found = {name: _tightest(sr, h, name) for name in names}
    out["memory_max_bytes"] = (found[names[0]] or (None, None))[1]
    out["memory_high_bytes"] = (found.get("memory.high") or (None, None))[1]
    limits = [f for f in found.values() if f]
    where = min(limits, key=lambda f: f[1])[0] if limits else h.dirs()[0]
    out["memory_limit_group"] = h.name(where) if limits else None
    out["memory_current_bytes"] = sr.read_int(f"{where}/{'memory.current' if h.version == 2 else 'memory.usage_in_bytes'}")
    return out


def _pids(sr: SysRoot, h: Hierarchy | None) -> dict[str, Any]:
    if h is None:
        return {"pids_max": None, "pids_current": None}
    found = _tightest(sr, h, "pids.max")
    where = found[0] if found else h.dirs()[0]
    return {"pids_max": found[1] if found else None, "pids_current": sr.read_int(f"{where}/pids.current")}


def _tightest(sr: SysRoot, h: Hierarchy, name: str) -> tuple[str, int] | None:
    """(folder, value) of the smallest limit `name` between the group and the top; None: no limit."""
    best = None
    for folder in h.dirs():
        value = sr.read_int(f"{folder}/{name}")  # "max" (v2's no limit) reads as None
        if value is not None and 0 <= value < UNLIMITED_FROM and (best is None or value < best[1]):
            best = (folder, value)
    return best


def memory_room_now() -> tuple[int, int] | None:
    """(bytes this process's memory cgroup has left now, its limit), read live; None without a limit."""
    sr = SysRoot(None)
    facts = _memory(sr, hierarchy(sr, "memory"))
    limit = memory_limit({"cgroup": facts})
    if limit is None:
        return None
    return max(0, limit - int(facts["memory_current_bytes"] or 0)), limit


def throttling_now() -> dict[str, int | None]:
    """The live throttling counters of the group whose quota binds this process (as read_cgroup)."""
    sr = SysRoot(None)
    cpu = _cpu(sr, hierarchy(sr, "cpu"))
    return {k: cpu[k] for k in ("nr_periods", "nr_throttled", "throttled_usec")}
