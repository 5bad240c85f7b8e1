"""The host facts that explain most regressions, flattened for side-by-side display.

Kernel, governor, THP, huge pages, the locked-memory limit, NUMA balancing, usable CPUs, the cgroup
CPU quota and memory limit, the GPU driver and each GPU's current link: a report's `host` object
read into {"fact": "value"}. A report of a perfprobe that read no cgroup limits (no `cgroup`) has
neither fact, so a baseline built from such reports judges neither.
"""

from __future__ import annotations

from typing import Any, Mapping


def flat_facts(host: Mapping[str, Any]) -> dict[str, str]:
    cpus = host.get("cpus") or {}
    thp = host.get("thp") or {}
    memlock = host.get("memlock") or {}
    facts = {
        "kernel": host.get("kernel"),
        "cpu model": (host.get("cpu") or {}).get("model"),
        "usable CPUs": len(cpus.get("usable") or []) or None,
        "online CPUs": len(cpus.get("online") or []) or None,
        "governor": (host.get("cpufreq") or {}).get("governor"),
        "THP": f"{thp.get('enabled')} (defrag {thp.get('defrag')})" if thp.get("enabled") else None,
        "huge pages": (host.get("hugepages") or {}).get("total"),
        "memlock": _limit(memlock.get("soft_bytes")),
        "NUMA balancing": (host.get("numa") or {}).get("balancing"),
        "NUMA nodes": len((host.get("numa") or {}).get("nodes") or []) or None,
        "GPUs": len(host.get("gpus") or []),
        **_cgroup(host),
    }
    for gpu in host.get("gpus") or []:
        pcie = gpu.get("pcie") or {}
        facts[f"GPU {gpu.get('index')} link"] = f"Gen{pcie.get('gen_current')} x{pcie.get('width_current')}"
        facts["GPU driver"] = gpu.get("driver_version")
    return {name: "unknown" if value is None else str(value) for name, value in facts.items()}


def _cgroup(host: Mapping[str, Any]) -> dict[str, Any]:
    """"CPU quota" ("0.2 CPUs", "unlimited") and "memory limit" ("300 MiB", "unlimited"), when read."""
    from perfprobe.host.facts import cpu_quota, memory_limit

    if not isinstance(host.get("cgroup"), Mapping):
        return {}
    quota, limit = cpu_quota(host), memory_limit(host)
    return {"CPU quota": "unlimited" if quota is None else f"{quota:g} CPUs",
            "memory limit": "unlimited" if limit is None else _limit(limit)}


def differing(base: Mapping[str, str], new: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(fact, base, new) for each fact that differs; a fact only one side has reads as 'absent'."""
    names = list(base) + [n for n in new if n not in base]
    return [(n, base.get(n, "absent"), new.get(n, "absent")) for n in names if base.get(n) != new.get(n)]


def _limit(value: Any) -> str:
    if value is None:
        return "unlimited"
    if isinstance(value, int) and value >= 1 << 20:
        return f"{value / (1 << 20):g} MiB"
    return f"{value} B"
