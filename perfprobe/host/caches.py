"""The CPU caches as the kernel reports them (/sys/devices/system/cpu/cpuN/cache/indexM).

One entry per (level, type) as seen from the first online CPU; `instances` counts the distinct
groups of CPUs sharing it across all online CPUs (e.g. 2 L3 instances on a 2-socket host).
"""

from __future__ import annotations

from typing import Any

from perfprobe.host.cpus import CPU_DIR, read_cpu_list
from perfprobe.host.parse import format_cpulist, parse_size
from perfprobe.host.sysroot import SysRoot

_TYPE_ORDER = {"Data": 0, "Instruction": 1, "Unified": 2}


def _index_entries(sr: SysRoot, cpu: int) -> list[dict[str, Any]]:
    """Every cache index of one CPU, as raw entries."""
    base = f"{CPU_DIR}/cpu{cpu}/cache"
    entries = []
    for index in sr.numbered(base, "index"):
        rel = f"{base}/index{index}"
        level = sr.read_int(f"{rel}/level")
        if level is None:
            continue
        entries.append({
            "level": level,
            "type": sr.read_text(f"{rel}/type") or "Unified",
            "size_bytes": parse_size(sr.read_text(f"{rel}/size")),
            "line_bytes": sr.read_int(f"{rel}/coherency_line_size"),
            "ways": sr.read_int(f"{rel}/ways_of_associativity"),
            "shared_cpus": read_cpu_list(sr, f"{rel}/shared_cpu_list") or [cpu],
        })
    return entries


def read_caches(sr: SysRoot, online: list[int], notes: list[str]) -> list[dict[str, Any]]:
    """The "caches" list, sorted by level then type (Data, Instruction, Unified)."""
    per_cpu = {cpu: _index_entries(sr, cpu) for cpu in online}
    first = next((cpu for cpu in online if per_cpu[cpu]), None)
    if first is None:
        notes.append("no CPU cache information in sysfs (cpu*/cache/index*)")
        return []
    caches = []
    for entry in per_cpu[first]:
        key = (entry["level"], entry["type"])
        same = [e for cpu in online for e in per_cpu[cpu] if (e["level"], e["type"]) == key]
        groups = {tuple(sorted(set(e["shared_cpus"]) & set(online) or e["shared_cpus"])) for e in same}
        caches.append({**entry, "instances": len(groups)})
        _note_size_spread(key, same, per_cpu, notes)
    return sorted(caches, key=lambda c: (c["level"], _TYPE_ORDER.get(c["type"], 9)))


def _note_size_spread(key: tuple[int, str], same: list[dict[str, Any]],
                      per_cpu: dict[int, list[dict[str, Any]]], notes: list[str]) -> None:
    """Hybrid CPUs (P- and E-cores) have caches of different sizes: say so once per cache."""
    sizes = {e["size_bytes"] for e in same}
    if len(sizes) <= 1:
        return
    by_size = {size: [cpu for cpu, entries in per_cpu.items()
                      if any((e["level"], e["type"]) == key and e["size_bytes"] == size for e in entries)]
               for size in sizes}
    spread = "; ".join(f"{_kib(size)} on CPUs {format_cpulist(cpus)}" for size, cpus in sorted(
        by_size.items(), key=lambda item: item[1][0]))
    notes.append(f"L{key[0]} {key[1]} cache size differs across CPUs ({spread}); "
                 f"the caches list shows the first online CPU's")


def _kib(size: int | None) -> str:
    return "unknown size" if size is None else f"{size // 1024} KiB"
