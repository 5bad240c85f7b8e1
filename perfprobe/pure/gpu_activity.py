"""Was the GPU shared while a GPU probe measured? Pure reading of what kernels/nvml.py's
`Nvml.activity()` recorded before and after (raw["gpu_activity"]): other processes NVML lists on
the GPU, and its utilisation before the probe started work (after, it counts the probe's own).

A second process keeping the GPU busy slows copies and pipelines: the figures are then this GPU's
under that load, so pinned and streams hold back the timing warns it can produce and say why.
Measured on the H200 (tools/device/verdicts.sh phase 1): idle, no process and 0%; beside the
planted hog, its pid with 3.8 GB and 100% utilisation.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from perfprobe.engine import confirm
from perfprobe.engine.model import Finding

BUSY_UTIL_PERCENT = 10  # a kernel ran over a tenth of NVML's last sample period before the probe started
# NVML clock-event reasons that mean something is wrong: hardware slowdown, hardware thermal
# slowdown, hardware power brake. The software power cap (0x4) is a GPU at its power limit, which a
# healthy GPU reaches under full load; it is no fault of the host's, so no probe warns on it.
FAULT_CLOCK_REASONS = 0x8 | 0x40 | 0x80


def shared_gpu(raw: Mapping[str, Any]) -> str:
    """Why the GPU counts as shared ("2 other processes (pids 61, 62), 100% busy before ..."), or ""."""
    activity = raw.get("gpu_activity") or {}
    before, after = activity.get("before") or {}, activity.get("after") or {}
    others = _others(before) | _others(after)
    unknown = _unattributed(before) or _unattributed(after)
    util = before.get("gpu_util_percent")
    parts = []
    if others:
        pids = ", ".join(str(p) for p in sorted(others))
        parts.append(f"{len(others)} other process{'es' if len(others) > 1 else ''} on it (pid {pids})")
    elif unknown:
        parts.append(f"{unknown} process(es) NVML lists beside this one (pids from another namespace)")
    if isinstance(util, (int, float)) and util >= BUSY_UTIL_PERCENT:
        parts.append(f"{util:.0f}% utilisation before this probe started")
    return "; ".join(parts)


def findings_held_back_if_shared(rules: Sequence[Callable[[Any, Any], list[Finding]]], sensitive: Sequence[str],
                                 raw: Mapping[str, Any], host: Any) -> list[Finding]:
    """Every rule's findings, in order; on a shared GPU the warns of the rules named in `sensitive`
    become notes saying why (pinned's and streams' `findings`)."""
    why = shared_gpu(raw)
    return [held_back(finding, why) if why and rule.__name__ in sensitive else finding
            for rule in rules for finding in rule(raw, host)]


def held_back(finding: Finding, why: str) -> Finding:
    """A warn as a pass note "held back (the GPU was shared: WHY): MESSAGE"; other verdicts unchanged."""
    return confirm.held_back(finding, f"the GPU was shared: {why}")


def _others(reading: Mapping[str, Any]) -> set[int]:
    """Processes other than this one, where NVML's pids are this namespace's (own pid listed)."""
    if not reading.get("own_listed"):
        return set()
    own = reading.get("own_pid")
    return {int(p["pid"]) for p in reading.get("processes") or [] if p.get("pid") != own}


def _unattributed(reading: Mapping[str, Any]) -> int:
    """Where this process's pid is not among NVML's: how many besides one (ours) it lists."""
    if reading.get("own_listed") or not reading.get("readable"):
        return 0
    return max(0, len(reading.get("processes") or []) - 1)
