"""Judgement of `perfprobe pinned`: pure functions from recorded numbers and host facts to findings.

Each rule is one function returning findings; docs/probes/pinned.md's table lists them. The link is
judged under load: GPUs drop their link to a low-power generation when idle, so an idle reading
below the maximum is reported as power management, never as a slow or trained-down link.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.model import Assessment, Curve, Finding, Metric, Verdict
from perfprobe.pcie import LinkRate, link_rate_or_none
from perfprobe.probes.pinned_tables import tables
from perfprobe.units import format_bytes

LINK_FRACTION_MIN = 0.70      # pinned large copies below this share of the link's rate: warn
PAGEABLE_HELPS_BELOW = 0.5    # pageable under half of pinned: pinned buffers are worth the cost
THROTTLE_MASK = 0x8 | 0x40 | 0x80  # NVML clock-event reasons: HW slowdown, HW thermal, power brake


def largest_index(raw: Mapping[str, Any]) -> int:
    """Index of the largest copy size measured (the one judged against the link)."""
    sizes = raw["sizes_bytes"]
    return max(range(len(sizes)), key=lambda i: sizes[i])


def gbs(raw: Mapping[str, Any], mode: str, direction: str, index: int) -> float:
    return float(raw[mode][direction][index]["gbs"]["median"])


def link_readings(raw: Mapping[str, Any], host: Mapping[str, Any]) -> dict[str, Any]:
    """Idle, under-load and maximum (gen, width), NVML first, then sysfs, then the host facts."""
    def pick(*sources: Mapping[str, Any] | None) -> Mapping[str, Any]:
        for source in sources:
            if source and source.get("gen_current") and source.get("width_current"):
                return source
        return {}

    idle = pick((raw.get("state_before") or {}).get("link"), raw.get("sysfs_link"), _host_link(raw, host))
    load = pick((raw.get("state_under_load") or {}).get("link"), raw.get("sysfs_link_under_load"))
    maximum = pick(*(_as_current_of_max(s) for s in ((raw.get("state_before") or {}).get("link"),
                                                       raw.get("sysfs_link"), _host_link(raw, host))))
    return {"idle": _pair(idle), "load": _pair(load), "max": _pair(maximum)}


def _host_link(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Mapping[str, Any] | None:
    bus = str((raw.get("device") or {}).get("pci_bus_id") or "").lower()[-7:]
    for gpu in host.get("gpus") or []:
        if bus and str(gpu.get("pci_bus_id") or "").lower().endswith(bus):
            return gpu.get("pcie")
    return None


def _as_current_of_max(source: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not source:
        return None
    return {"gen_current": source.get("gen_max"), "width_current": source.get("width_max")}


def _pair(source: Mapping[str, Any]) -> tuple[int, int] | None:
    return (int(source["gen_current"]), int(source["width_current"])) if source else None


def _rate(pair: tuple[int, int] | None) -> LinkRate | None:
    return link_rate_or_none(*pair) if pair else None


def link_findings(links: Mapping[str, Any]) -> list[Finding]:
    """Trained down (under load below max) is a warning; an idle low-power link is only reported."""
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


def bandwidth_findings(raw: Mapping[str, Any], rate: LinkRate | None, index: int) -> list[Finding]:
    """Large pinned copies under 70% of the link's rate per direction: warn."""
    if rate is None:
        return [Finding(Verdict.PASS, "PCIe link generation and width unknown (no NVML, no sysfs "
                                      "link files): bandwidth not judged against the link")]
    h2d, d2h = gbs(raw, "pinned", "h2d", index), gbs(raw, "pinned", "d2h", index)
    worst = min(h2d, d2h)
    share = worst / rate.gbs_per_direction
    text = (f"pinned {format_bytes(raw['sizes_bytes'][index])} copies: H2D {h2d:.1f} GB/s, D2H {d2h:.1f} GB/s "
            f"— {share:.0%} of the {rate.label} link's {rate.gbs_per_direction:.1f} GB/s per direction")
    if share < LINK_FRACTION_MIN:
        return [Finding(Verdict.WARN, text + f" (under {LINK_FRACTION_MIN:.0%})",
                        "check other traffic on the link, the IOMMU mode, and that the buffer's NUMA "
                        "node is the GPU's (perfprobe numa)")]
    return [Finding(Verdict.PASS, text)]


def gpu_node_of(raw: Mapping[str, Any], host: Mapping[str, Any]) -> int | None:
    """The GPU's NUMA node: as measured (sysfs), else from the host facts."""
    node = (raw.get("numa") or {}).get("gpu_node")
    if node is None:
        bus = str((raw.get("device") or {}).get("pci_bus_id") or "").lower()[-7:]
        for gpu in host.get("gpus") or []:
            if bus and str(gpu.get("pci_bus_id") or "").lower().endswith(bus):
                node = gpu.get("numa_node")
    return node


def numa_findings(raw: Mapping[str, Any], host: Mapping[str, Any]) -> list[Finding]:
    """The pinned buffer's pages on a node other than the GPU's: warn (every copy crosses sockets)."""
    numa = raw.get("numa") or {}
    gpu_node = gpu_node_of(raw, host)
    buffer_node, which = buffer_node_of(numa)
    if gpu_node is None or buffer_node is None:
        return []
    if buffer_node != gpu_node:
        return [Finding(Verdict.WARN, f"the {which} buffer's pages are on NUMA node {buffer_node}, the "
                                      f"GPU hangs off node {gpu_node}",
                        f"run near the GPU: numactl --cpunodebind={gpu_node} --membind={gpu_node} "
                        f"(perfprobe pinned --bind {gpu_node} shows the difference)")]
    return [Finding(Verdict.PASS, f"{which} buffer and GPU on the same NUMA node ({gpu_node})")]


def buffer_node_of(numa: Mapping[str, Any]) -> tuple[int | None, str]:
    """The node holding most sampled pages: the pinned buffer's, else the pageable one's."""
    for key, which in (("pinned_pages", "pinned"), ("pageable_pages", "pageable")):
        counts = {int(k): v for k, v in ((numa.get(key) or {}).get("nodes") or {}).items() if k.isdigit()}
        if counts:
            return max(counts, key=lambda n: counts[n]), which
    return None, "pinned"


def pageable_findings(raw: Mapping[str, Any], index: int) -> list[Finding]:
    """Pageable far slower than pinned: say so with the pinning cost and the break-even count."""
    up_pin, up_page = gbs(raw, "pinned", "h2d", index), gbs(raw, "pageable", "h2d", index)
    down_pin, down_page = gbs(raw, "pinned", "d2h", index), gbs(raw, "pageable", "d2h", index)
    ratio = min(up_page / up_pin, down_page / down_pin)
    if ratio >= PAGEABLE_HELPS_BELOW:
        return [Finding(Verdict.PASS, f"pageable copies reach {ratio:.0%} of pinned here")]
    alloc = raw["pinning_cost"]["alloc_ms_per_gib"]["median"]
    saved = (1 / up_page - 1 / up_pin) * (1 << 30) / 1e6  # ms saved per GiB copied H2D
    blocked = enqueue_ratio(raw, "pageable", "h2d", index)
    return [Finding(Verdict.PASS,
                    f"pageable copies: H2D {up_page:.1f} GB/s, D2H {down_page:.1f} GB/s against pinned "
                    f"{up_pin:.1f} / {down_pin:.1f}; a pageable async copy held the host thread for "
                    f"{blocked:.0%} of the copy",
                    f"copy through pinned buffers (cudaHostAlloc / cupyx.empty_pinned) and allocate them "
                    f"once: pinning costs {alloc:.0f} ms per GiB and saves {saved:.0f} ms per GiB copied, "
                    f"so it pays after {max(1.0, alloc / saved):.0f} copies")]


def enqueue_ratio(raw: Mapping[str, Any], mode: str, direction: str, index: int) -> float:
    """Host time inside the enqueue call over the copy's device time."""
    entry = raw[mode][direction][index]
    return entry["host_enqueue_us"]["median"] / (entry["device_ms"]["median"] * 1e3)


def throttle_findings(raw: Mapping[str, Any]) -> list[Finding]:
    """Thermal or power slowdown while measuring makes every figure low: warn."""
    for when in ("state_under_load", "state_after"):
        reasons = (raw.get(when) or {}).get("clock_event_reasons")
        if reasons and int(reasons) & THROTTLE_MASK:
            return [Finding(Verdict.WARN, f"GPU clocks were slowed ({when}: reasons 0x{int(reasons):x})",
                            "check cooling and power; figures measured now are low")]
    return []


def judge(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Assessment:
    index = largest_index(raw)
    links = link_readings(raw, host)
    rate = _rate(links["load"] or links["max"])
    findings = (link_findings(links) + bandwidth_findings(raw, rate, index) + numa_findings(raw, host)
                + pageable_findings(raw, index) + throttle_findings(raw) + _budget_findings(raw))
    h2d, d2h = gbs(raw, "pinned", "h2d", index), gbs(raw, "pinned", "d2h", index)
    share = f" ({min(h2d, d2h) / rate.gbs_per_direction:.0%} of {rate.label})" if rate else ""
    summary = (f"pinned {format_bytes(raw['sizes_bytes'][index])}: H2D {h2d:.1f}, D2H {d2h:.1f}, both "
               f"{gbs(raw, 'pinned', 'bidir', index):.1f} GB/s{share}; pageable "
               f"{gbs(raw, 'pageable', 'h2d', index):.1f} / {gbs(raw, 'pageable', 'd2h', index):.1f} GB/s")
    return Assessment(summary=summary, metrics=metrics(raw, rate, index), findings=tuple(findings),
                      tables=tables(raw, links, index), curves=(_curve(raw, "pinned"), _curve(raw, "pageable")),
                      facts=_facts(raw, links, rate), key_figure=f"{h2d:.1f}/{d2h:.1f} GB/s{share}")


def metrics(raw: Mapping[str, Any], rate: LinkRate | None, index: int) -> dict[str, Metric]:
    out = {f"{mode}.{d}_gbs": Metric(round(gbs(raw, mode, d, index), 2), "GB/s")
           for mode in ("pinned", "pageable") for d in ("h2d", "d2h")}
    out["pinned.bidir_gbs"] = Metric(round(gbs(raw, "pinned", "bidir", index), 2), "GB/s")
    out["copy_bytes"] = Metric(raw["sizes_bytes"][index], "bytes")
    if rate:
        out["link.rate_gbs"] = Metric(round(rate.gbs_per_direction, 2), "GB/s")
        for d in ("h2d", "d2h"):
            out[f"link.fraction_{d}"] = Metric(round(gbs(raw, "pinned", d, index) / rate.gbs_per_direction, 3), "ratio")
    for key in ("alloc_ms_per_gib", "register_ms_per_gib"):
        out[f"pinning.{key}"] = Metric(round(raw["pinning_cost"][key]["median"], 1), "ms/GiB")
    for mode in ("pageable", "pinned"):
        out[f"enqueue.{mode}_h2d_host_over_device"] = Metric(round(enqueue_ratio(raw, mode, "h2d", index), 3), "ratio")
    return out


def _budget_findings(raw: Mapping[str, Any]) -> list[Finding]:
    budget = raw.get("budget") or {}
    if not budget.get("capped_by"):
        return []
    return [Finding(Verdict.PASS, f"largest copy capped at {format_bytes(budget['top_bytes'])} (asked "
                                  f"{format_bytes(budget['requested_bytes'])}) by {budget['capped_by']}")]


def _curve(raw: Mapping[str, Any], mode: str) -> Curve:
    points = tuple((float(s), float(e["gbs"]["median"])) for s, e in zip(raw["sizes_bytes"], raw[mode]["h2d"]))
    return Curve(title=f"{mode} H2D bandwidth by copy size", x_label="bytes", y_label="GB/s", points=points)


def _facts(raw: Mapping[str, Any], links: Mapping[str, Any], rate: LinkRate | None) -> dict[str, Any]:
    device = raw.get("device") or {}
    return {"gpu": device.get("name"), "pci_bus_id": device.get("pci_bus_id"),
            "driver_version": device.get("driver_version"),
            "link": {k: (f"Gen{v[0]} x{v[1]}" if v else None) for k, v in links.items()},
            "link_rate_gbs": rate.gbs_per_direction if rate else None,
            "numa": raw.get("numa"), "bind": raw.get("bind")}
