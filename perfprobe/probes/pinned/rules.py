"""Judgement of `perfprobe pinned`: pure rules from recorded numbers and host facts to findings.

Each rule is one function; RULES lists them in the order of docs/probes/pinned.md's table. The link
is judged under load: GPUs drop their link to a low-power generation when idle, so an idle reading
below the maximum is reported as power management, never as a slow or trained-down link.
"""

from __future__ import annotations

from typing import Callable

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts
from perfprobe.probes.gpu_raw import STATES
from perfprobe.probes.pinned.figures import (
    Raw,
    buffer_node_of,
    enqueue_ratio,
    gbs,
    gpu_node_of,
    judged_rate,
    largest_bytes,
    largest_index,
    link_readings,
    state,
)
from perfprobe.pure.gpu_activity import FAULT_CLOCK_REASONS, findings_held_back_if_shared, shared_gpu
from perfprobe.pure.units import format_bytes
from perfprobe.system.budget import capped_note

LINK_FRACTION_MIN = 0.70      # pinned large copies below this share of the link's rate: warn
PAGEABLE_HELPS_BELOW = 0.5    # pageable under half of pinned: pinned buffers are worth the cost
THROTTLE_MASK = FAULT_CLOCK_REASONS


def rule_link(raw: Raw, host: Facts) -> list[Finding]:
    """Trained down (under load below max) is a warning; an idle low-power link is only reported."""
    links = link_readings(raw, host)
    idle, load, top = links["idle"], links["load"], links["max"]
    if top is None:
        return []
    if load is not None and (load[0] < top[0] or load[1] < top[1]):
        return [Finding(Verdict.WARN, f"PCIe link trained down: Gen{load[0]} x{load[1]} under load, "
                                      f"Gen{top[0]} x{top[1]} possible",
                        "reseat the card or move it to a full-width slot; check riser cables and the "
                        "BIOS PCIe speed setting")]
    if idle is not None and (idle[0] < top[0] or idle[1] < top[1]):
        under = f"Gen{load[0]} x{load[1]} under load" if load else "no reading under load"
        return [Finding(Verdict.PASS, f"PCIe link idled at Gen{idle[0]} x{idle[1]} (power saving; "
                                      f"{under}): a low-power state, not judged as slow")]
    return []


def rule_bandwidth(raw: Raw, host: Facts) -> list[Finding]:
    """Large pinned copies under 70% of the link's rate per direction: warn."""
    rate = judged_rate(link_readings(raw, host))
    if rate is None:
        return [Finding(Verdict.PASS, "PCIe link generation and width unknown (no NVML, no sysfs "
                                      "link files): bandwidth not judged against the link")]
    index = largest_index(raw)
    h2d, d2h = gbs(raw, "pinned", "h2d", index), gbs(raw, "pinned", "d2h", index)
    share = min(h2d, d2h) / rate.gbs_per_direction
    text = (f"pinned {format_bytes(largest_bytes(raw))} copies: H2D {h2d:.1f} GB/s, D2H {d2h:.1f} GB/s "
            f"— {share:.0%} of the {rate.label} link's {rate.gbs_per_direction:.1f} GB/s per direction")
    if share < LINK_FRACTION_MIN:
        return [Finding(Verdict.WARN, text + f" (under {LINK_FRACTION_MIN:.0%})",
                        "check other traffic on the link, the IOMMU mode, and that the buffer's NUMA "
                        "node is the GPU's (perfprobe numa)", confirm=("bandwidth",), figure=share)]
    return [Finding(Verdict.PASS, text, confirm=("bandwidth",), figure=share)]


def rule_numa(raw: Raw, host: Facts) -> list[Finding]:
    """The pinned buffer's pages on a node other than the GPU's: warn (every copy crosses sockets)."""
    gpu_node = gpu_node_of(raw, host)
    buffer_node, which = buffer_node_of(raw.get("numa") or {})
    if gpu_node is None or buffer_node is None:
        return []
    if buffer_node != gpu_node:
        return [Finding(Verdict.WARN, f"the {which} buffer's pages are on NUMA node {buffer_node}, the "
                                      f"GPU hangs off node {gpu_node}",
                        f"run near the GPU: numactl --cpunodebind={gpu_node} --membind={gpu_node} "
                        f"(perfprobe pinned --bind {gpu_node} shows the difference)")]
    return [Finding(Verdict.PASS, f"{which} buffer and GPU on the same NUMA node ({gpu_node})")]


def rule_pageable(raw: Raw, host: Facts) -> list[Finding]:
    """Pageable far slower than pinned: say so with the pinning cost and the break-even count."""
    index = largest_index(raw)
    up_pin, up_page = gbs(raw, "pinned", "h2d", index), gbs(raw, "pageable", "h2d", index)
    down_pin, down_page = gbs(raw, "pinned", "d2h", index), gbs(raw, "pageable", "d2h", index)
    ratio = min(up_page / up_pin, down_page / down_pin)
    if ratio >= PAGEABLE_HELPS_BELOW:
        return [Finding(Verdict.PASS, f"pageable copies reach {ratio:.0%} of pinned here")]
    alloc = float(raw["pinning_cost"]["alloc_ms_per_gib"]["median"])
    saved = (1 / up_page - 1 / up_pin) * (1 << 30) / 1e6  # ms saved per GiB copied H2D
    blocked = enqueue_ratio(raw, "pageable", "h2d", index)
    return [Finding(Verdict.PASS,
                    f"pageable copies: H2D {up_page:.1f} GB/s, D2H {down_page:.1f} GB/s against pinned "
                    f"{up_pin:.1f} / {down_pin:.1f}; a pageable async copy held the host thread for "
                    f"{blocked:.0%} of the copy",
                    f"copy through pinned buffers (cudaHostAlloc / cupyx.empty_pinned) and allocate them "
                    f"once: pinning costs {alloc:.0f} ms per GiB and saves {saved:.0f} ms per GiB copied, "
                    f"so it pays after {max(1.0, alloc / saved):.0f} copies")]


def rule_throttle(raw: Raw, host: Facts) -> list[Finding]:
    """Thermal or power slowdown while measuring makes every figure low: warn."""
    for _, when in STATES[1:]:
        reasons = state(raw, when).get("clock_event_reasons")
        if reasons and int(reasons) & THROTTLE_MASK:
            return [Finding(Verdict.WARN, f"GPU clocks were slowed ({when}: reasons 0x{int(reasons):x})",
                            "check cooling and power; figures measured now are low")]
    return []


def rule_budget(raw: Raw, host: Facts) -> list[Finding]:
    """A largest copy smaller than asked is said, with the budget that capped it."""
    return capped_note(raw.get("budget"), "largest copy", "top_bytes")


def rule_shared_gpu(raw: Raw, host: Facts) -> list[Finding]:
    """Other work on the GPU while measuring (gpu_activity.py): named, as a note; `findings` holds
    back the bandwidth warn it can produce (another process's copies share the link)."""
    why = shared_gpu(raw)
    if not why:
        return []
    return [Finding(Verdict.PASS, f"the GPU was shared while measuring: {why}; copy rates are this GPU's "
                    "under that load, and the bandwidth warn it can produce is held back",
                    "measure again with the GPU to itself (nvidia-smi lists the processes on it)")]


Rule = Callable[[Raw, Facts], list[Finding]]
RULES: tuple[Rule, ...] = (rule_link, rule_bandwidth, rule_numa, rule_pageable, rule_throttle, rule_budget,
                           rule_shared_gpu)
LOAD_SENSITIVE = ("rule_bandwidth",)


def findings(raw: Raw, host: Facts) -> list[Finding]:
    """Every rule's findings, in RULES order; on a shared GPU the bandwidth warn held back."""
    return findings_held_back_if_shared(RULES, LOAD_SENSITIVE, raw, host)
