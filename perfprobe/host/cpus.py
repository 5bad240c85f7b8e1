"""Which CPUs exist, which are online, how they group into cores and packages, and the CPU model.

Topology comes from /sys/devices/system/cpu/cpuN/topology (the *_list files, or the older hex
masks); the model from /proc/cpuinfo, whose "model name" is instant where py-cpuinfo takes ~1 s.
"""

from __future__ import annotations

from typing import Any

from perfprobe.host.parse import parse_cpulist, parse_cpumask
from perfprobe.host.sysroot import SysRoot

CPU_DIR = "sys/devices/system/cpu"

_ARM_IMPLEMENTERS = {0x41: "ARM", 0x42: "Broadcom", 0x43: "Cavium", 0x46: "Fujitsu",
                     0x48: "HiSilicon", 0x4E: "NVIDIA", 0x50: "APM", 0x51: "Qualcomm",
                     0x61: "Apple", 0xC0: "Ampere"}


def read_cpu_list(sr: SysRoot, rel: str) -> list[int] | None:
    """A CPU set from `rel` (a cpulist) or, when absent, from the old hex mask file beside it."""
    cpus = parse_cpulist(sr.read_text(rel))
    if cpus is None and rel.endswith("_list"):
        cpus = parse_cpumask(sr.read_text(rel[: -len("_list")]))
    return cpus


def online_and_offline(sr: SysRoot) -> tuple[list[int], list[int]]:
    """Online CPUs, and present-but-offline ones (not the merely "possible" hot-plug slots)."""
    dirs = sr.numbered(CPU_DIR, "cpu")
    present = parse_cpulist(sr.read_text(f"{CPU_DIR}/present")) or dirs
    online = parse_cpulist(sr.read_text(f"{CPU_DIR}/online"))
    if online is None:
        # Old kernels: no "online" file; cpuN/online is "0" for an offline CPU (cpu0 has none).
        online = [cpu for cpu in dirs if sr.read_int(f"{CPU_DIR}/cpu{cpu}/online") != 0]
    offline = sorted(set(present) - set(online))
    return online, offline


def _groups(sr: SysRoot, online: list[int], names: tuple[str, ...]) -> list[list[int]] | None:
    """Distinct CPU groups (restricted to online CPUs) from the first topology file that exists."""
    keep = set(online)
    found: set[tuple[int, ...]] = set()
    for cpu in online:
        cpus = None
        for name in names:
            cpus = read_cpu_list(sr, f"{CPU_DIR}/cpu{cpu}/topology/{name}")
            if cpus:
                break
        if not cpus:
            return None
        found.add(tuple(sorted(keep.intersection(cpus) | {cpu})))
    return sorted((list(group) for group in found), key=lambda group: group[0])


def _packages_by_id(sr: SysRoot, online: list[int]) -> list[list[int]] | None:
    by_id: dict[int, list[int]] = {}
    for cpu in online:
        pkg = sr.read_int(f"{CPU_DIR}/cpu{cpu}/topology/physical_package_id")
        if pkg is None:
            return None
        by_id.setdefault(pkg, []).append(cpu)
    return sorted(by_id.values(), key=lambda group: group[0])


def topology(sr: SysRoot, online: list[int], notes: list[str]) -> tuple[list[list[int]], list[list[int]]]:
    """(cores, packages): online CPUs grouped by physical core and by package."""
    cores = _groups(sr, online, ("thread_siblings_list", "core_cpus_list"))
    packages = _groups(sr, online, ("package_cpus_list", "core_siblings_list")) or _packages_by_id(sr, online)
    if cores is None:
        notes.append("CPU thread siblings are not in sysfs: each CPU is counted as its own core")
        cores = [[cpu] for cpu in online]
    if packages is None:
        notes.append("CPU package ids are not in sysfs: all CPUs are counted as one package")
        packages = [list(online)] if online else []
    return cores, packages


def cpuinfo_fields(sr: SysRoot) -> dict[str, str]:
    """The first value of each key in /proc/cpuinfo (keys lowercased)."""
    fields: dict[str, str] = {}
    for line in sr.read_lines("proc/cpuinfo"):
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key and key not in fields:
            fields[key] = " ".join(value.split())
    return fields


def model_and_vendor(sr: SysRoot) -> tuple[str | None, str | None]:
    """CPU model and vendor from /proc/cpuinfo (x86, POWER, ARM); py-cpuinfo only live, as a fallback."""
    info = cpuinfo_fields(sr)
    model = info.get("model name") or info.get("cpu") or info.get("processor name") or None
    vendor = info.get("vendor_id") or _arm_vendor(info.get("cpu implementer")) or None
    if vendor is None and model and "POWER" in model.upper():
        vendor = "IBM"
    if model is None and info.get("cpu part") and vendor:
        model = f"{vendor} CPU part {info['cpu part']}"  # ARM: /proc/cpuinfo has no model name
    if model is None and sr.live:
        model = _py_cpuinfo_brand()
    return model, vendor


def _arm_vendor(implementer: str | None) -> str | None:
    try:
        code = int(implementer or "", 0)
    except ValueError:
        return None
    return _ARM_IMPLEMENTERS.get(code, f"ARM implementer {code:#x}")


def _py_cpuinfo_brand() -> str | None:
    try:
        import cpuinfo  # py-cpuinfo: slow (~1 s), so only when /proc/cpuinfo has no model

        return cpuinfo.get_cpu_info().get("brand_raw") or None
    except Exception:
        return None


def cpu_summary(sr: SysRoot, cores: list[list[int]], packages: list[list[int]]) -> dict[str, Any]:
    """The "cpu" object: model, vendor, the socket / core / thread counts, and the hypervisor flag."""
    model, vendor = model_and_vendor(sr)
    sockets = len(packages) or None
    per_socket = len(cores) // sockets if sockets and len(cores) % sockets == 0 else None
    threads = max((len(core) for core in cores), default=None)
    return {"model": model, "vendor": vendor, "sockets": sockets,
            "cores_per_socket": per_socket, "threads_per_core": threads, "hypervisor": hypervisor_flag(sr)}


def hypervisor_flag(sr: SysRoot) -> bool | None:
    """Whether the CPU says it runs under a hypervisor (x86 `flags`); None without a flags line."""
    flags = cpuinfo_fields(sr).get("flags")
    return None if flags is None else "hypervisor" in flags.split()
