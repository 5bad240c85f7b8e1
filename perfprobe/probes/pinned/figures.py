"""Pure readers of `perfprobe pinned`'s raw numbers: what the rules and the tables both read.

The link is read from NVML first, then sysfs, then the host facts; idle, under load and maximum.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Optional, TypedDict, cast

from perfprobe.host.facts import Facts
from perfprobe.probes.gpu_raw import Budget, Device, GpuActivity, GpuState, Link, StateKey
from perfprobe.pure.pcie_rate import LinkRate, link_rate_or_none
from perfprobe.pure.stats import Stat

Mode = Literal["pageable", "pinned"]


class Copy(TypedDict):
    """One copy size in one direction: GB/s, the device time and the host time inside the call."""

    gbs: Stat
    device_ms: Stat
    host_enqueue_us: Stat


class PageNodes(TypedDict, total=False):
    nodes: dict[str, int]
    source: str
    pages_sampled: int


class Numa(TypedDict, total=False):
    gpu_node: Optional[int]
    pinned_pages: PageNodes
    pageable_pages: PageNodes


class PinnedRaw(TypedDict, total=False):
    """What measure() returns (docs/probes/pinned.md): per mode, direction -> one Copy per size."""

    device: Device
    quick: bool
    bind: Optional[int]
    state_before: GpuState
    state_under_load: GpuState
    state_after: GpuState
    gpu_activity: GpuActivity
    sysfs_link: Link
    sysfs_link_under_load: Link
    sizes_bytes: list[int]
    pageable: dict[str, list[Copy]]
    pinned: dict[str, list[Copy]]
    load_copies: int
    pinning_cost: dict[str, Any]
    """bytes, and a Stat per call: alloc_ms_per_gib, free_ms_per_gib, register_ms_per_gib, unregister_ms_per_gib."""
    numa: Numa
    budget: Budget


Raw = PinnedRaw
Pair = Optional[tuple[int, int]]
"""A link as (generation, width), None when unknown."""


class Links(TypedDict):
    idle: Pair
    load: Pair
    max: Pair


def typed(raw: Mapping[str, Any]) -> PinnedRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(PinnedRaw, raw)


def state(raw: Raw, key: StateKey) -> GpuState:
    """One reading of the GPU's state ({} when NVML gave none)."""
    return raw.get(key) or GpuState()


def largest_index(raw: Raw) -> int:
    """Index of the largest copy size measured (the one judged against the link)."""
    sizes = raw["sizes_bytes"]
    return max(range(len(sizes)), key=lambda i: int(sizes[i]))


def largest_bytes(raw: Raw) -> int:
    return int(raw["sizes_bytes"][largest_index(raw)])


def gbs(raw: Raw, mode: Mode, direction: str, index: int) -> float:
    """Median GB/s of one copy kind ("pinned"/"pageable", "h2d"/"d2h"/"bidir") at size `index`."""
    return float(gbs_stat(raw, mode, direction, index)["median"])


def gbs_stat(raw: Raw, mode: Mode, direction: str, index: int) -> Stat:
    """The repeats' summary behind `gbs`."""
    return raw[mode][direction][index]["gbs"]


def enqueue_ratio(raw: Raw, mode: Mode, direction: str, index: int) -> float:
    """Host time inside the enqueue call over the copy's device time."""
    entry = raw[mode][direction][index]
    return float(entry["host_enqueue_us"]["median"]) / (float(entry["device_ms"]["median"]) * 1e3)


def link_readings(raw: Raw, host: Facts) -> Links:
    """Idle, under-load and maximum (gen, width), NVML first, then sysfs, then the host facts."""
    before = (raw.get("state_before") or {}).get("link")
    under = (raw.get("state_under_load") or {}).get("link")
    host_link = _host_gpu(raw, host).get("pcie")
    idle = _pick(before, raw.get("sysfs_link"), host_link)
    load = _pick(under, raw.get("sysfs_link_under_load"))
    maximum = _pick(*(_as_current_of_max(s) for s in (before, raw.get("sysfs_link"), host_link)))
    return {"idle": _pair(idle), "load": _pair(load), "max": _pair(maximum)}


def judged_rate(links: Links) -> LinkRate | None:
    """The rate bandwidth is judged against: the link under load, else its maximum."""
    return rate_of(links["load"] or links["max"])


def rate_of(pair: Pair) -> LinkRate | None:
    return link_rate_or_none(*pair) if pair else None


def gpu_node_of(raw: Raw, host: Facts) -> int | None:
    """The GPU's NUMA node: as measured (sysfs), else from the host facts."""
    node = (raw.get("numa") or {}).get("gpu_node")
    if node is None:
        node = _host_gpu(raw, host).get("numa_node")
    return None if node is None else int(node)


def buffer_node_of(numa: Mapping[str, Any]) -> tuple[int | None, str]:
    """The node holding most sampled pages: the pinned buffer's, else the pageable one's."""
    for key, which in (("pinned_pages", "pinned"), ("pageable_pages", "pageable")):
        counts = {int(k): int(v) for k, v in ((numa.get(key) or {}).get("nodes") or {}).items() if k.isdigit()}
        if counts:
            return max(counts, key=lambda n: counts[n]), which
    return None, "pinned"


def _host_gpu(raw: Raw, host: Facts) -> Mapping[str, Any]:
    """The host facts' entry for the measured GPU (matched by PCI bus id), {} when none."""
    bus = str((raw.get("device") or {}).get("pci_bus_id") or "").lower()[-7:]
    for gpu in host.get("gpus") or []:
        if bus and str(gpu.get("pci_bus_id") or "").lower().endswith(bus):
            found: Mapping[str, Any] = gpu
            return found
    return {}


def _pick(*sources: Mapping[str, Any] | None) -> Mapping[str, Any]:
    for source in sources:
        if source and source.get("gen_current") and source.get("width_current"):
            return source
    return {}


def _as_current_of_max(source: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not source:
        return None
    return {"gen_current": source.get("gen_max"), "width_current": source.get("width_max")}


def _pair(source: Mapping[str, Any]) -> Pair:
    return (int(source["gen_current"]), int(source["width_current"])) if source else None
