"""Kernel settings that change measured performance: kernel release, THP, cpufreq governors."""

from __future__ import annotations

import os
from typing import Any

from perfprobe.host.cpus import CPU_DIR
from perfprobe.host.parse import parse_bracketed
from perfprobe.host.sysroot import SysRoot

THP_DIR = "sys/kernel/mm/transparent_hugepage"


def kernel_release(sr: SysRoot) -> str | None:
    """"6.1.0-13-amd64": live from uname, in a tree from proc/sys/kernel/osrelease or proc/version."""
    if sr.live:
        return os.uname().release
    release = sr.read_text("proc/sys/kernel/osrelease")
    if release:
        return release
    words = (sr.read_text("proc/version") or "").split()
    return words[2] if len(words) > 2 and words[:2] == ["Linux", "version"] else None


def thp_facts(sr: SysRoot) -> dict[str, str | None]:
    """The "thp" object: the selected transparent huge page mode and defrag policy."""
    return {"enabled": parse_bracketed(sr.read_text(f"{THP_DIR}/enabled")),
            "defrag": parse_bracketed(sr.read_text(f"{THP_DIR}/defrag"))}


def cpufreq_facts(sr: SysRoot, online: list[int]) -> dict[str, Any]:
    """The "cpufreq" object: governor per online CPU, grouped; "mixed" when they differ."""
    governors: dict[str, list[int]] = {}
    driver = None
    for cpu in online:
        rel = f"{CPU_DIR}/cpu{cpu}/cpufreq"
        governor = sr.read_text(f"{rel}/scaling_governor")
        if governor:
            governors.setdefault(governor, []).append(cpu)
            driver = driver or sr.read_text(f"{rel}/scaling_driver")
    if not governors:
        driver = sr.read_text(f"{CPU_DIR}/cpufreq/policy0/scaling_driver")
    governor = next(iter(governors)) if len(governors) == 1 else ("mixed" if governors else None)
    return {"governor": governor, "governors": governors, "driver": driver}
