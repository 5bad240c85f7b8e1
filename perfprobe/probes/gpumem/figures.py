"""Pure readers of `perfprobe gpumem`'s raw numbers: what the rules and the tables both read.

The theoretical DRAM peak is NVML's maximum memory clock x the bus width x 2 transfers per clock
(HBM and GDDR are both double data rate as NVML reports their clock): an H200 reads 3201 MHz and
6016 bits (tests/data/gpumem_h200.json), 3201e6 x 2 x 6016 / 8 = 4814 GB/s (its datasheet says
4.8 TB/s). CUDA's own attributes
are the fallback when NVML cannot say.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Optional, TypedDict, cast

from perfprobe.probes.gpu_raw import ActivityReading, Budget, Device, GpuActivity, GpuState, StateKey
from perfprobe.probes.gpumem.plan import SATURATED
from perfprobe.pure.gpu_activity import FAULT_CLOCK_REASONS
from perfprobe.pure.stats import Stat

DramKind = Literal["read", "write", "copy", "d2d_memcpy"]
TransposeKind = Literal["naive", "tiled", "padded"]
DATA_RATE = 2
DRAM_KINDS: tuple[DramKind, ...] = ("read", "write", "copy", "d2d_memcpy")
REASONS = {0x1: "GPU idle", 0x2: "applications clocks setting", 0x4: "software power cap",
           0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "software thermal slowdown",
           0x40: "hardware thermal slowdown", 0x80: "hardware power brake", 0x100: "display clock setting"}
SLOWING = FAULT_CLOCK_REASONS  # the reasons that mean a fault (the software power cap does not)


class Timed(TypedDict, total=False):
    """One kernel's figure: its time and GB/s over the repeats, the bytes moved, and for a case of a
    sweep what was swept (stride, offset, warps per SM ...)."""

    ms: Stat
    gbs: Stat
    bytes: int
    verified: bool
    stride: int
    offset: int
    elements: int
    warps_per_sm: int
    block: int
    blocks_per_sm: int


class MemoryInterface(TypedDict, total=False):
    bus_width_bits: Optional[int]
    mem_clock_max_mhz: Optional[float]
    mem_clock_mhz: Optional[float]
    memory_clock_khz: Optional[float]


class Interfaces(TypedDict, total=False):
    nvml: MemoryInterface
    cuda: MemoryInterface


class Dram(TypedDict, total=False):
    buffer_bytes: int
    grid: int
    block: int
    read: Timed
    write: Timed
    copy: Timed
    d2d_memcpy: Timed
    verified: dict[str, bool]


class Sweep(TypedDict, total=False):
    """Coalescing or shared-memory banks: the launch and one Timed per case."""

    element_bytes: int
    grid: int
    block: int
    reps: int
    cases: list[Timed]


class Occupancy(TypedDict):
    bytes: int
    series: dict[str, list[Timed]]
    """"serial" and "unrolled4": one Timed per resident warps per SM."""


class Transpose(TypedDict):
    n: int
    bytes: int
    naive: Timed
    tiled: Timed
    padded: Timed


class Divergence(TypedDict, total=False):
    iters: int
    threads: int
    divergent: Timed
    split: Timed
    values: list[Any]
    verified: bool


class LoadState(GpuState, total=False):
    memory_interface: MemoryInterface
    load_launches: int


class GpumemRaw(TypedDict, total=False):
    """What measure() returns (docs/probes/gpumem.md)."""

    device: Device
    memory_interface: Interfaces
    quick: bool
    gpu_activity: GpuActivity
    activity_before: ActivityReading
    """Older recordings' name for gpu_activity.before (read through `activity`)."""
    state_before: GpuState
    state_under_load: LoadState
    state_after: GpuState
    dram: Dram
    coalescing: Sweep
    shared: Sweep
    occupancy: Occupancy
    transpose: Transpose
    divergence: Divergence
    phase_s: dict[str, float]
    budget: Budget


Raw = GpumemRaw


def typed(raw: Mapping[str, Any]) -> GpumemRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(GpumemRaw, raw)


def activity(raw: Raw) -> GpuActivity:
    """Other work on the GPU (gpu_activity.py's shape); older recordings kept only the reading
    before, as `activity_before`."""
    if "gpu_activity" in raw:
        return raw["gpu_activity"]
    return {"before": raw["activity_before"]} if raw.get("activity_before") else GpuActivity()


class Peak(TypedDict):
    gbs: float
    mem_clock_mhz: float
    bus_width_bits: int
    source: str


def peak(raw: Raw) -> Optional[Peak]:
    """The theoretical DRAM bandwidth (GB/s) and what it came from, None when nothing says."""
    interface = raw.get("memory_interface") or Interfaces()
    nv, cuda = interface.get("nvml") or MemoryInterface(), interface.get("cuda") or MemoryInterface()
    clock, width = nv.get("mem_clock_max_mhz"), nv.get("bus_width_bits")
    if clock and width:
        return _peak(float(clock), int(width), "NVML max memory clock x bus width x 2")
    clock_khz, width = cuda.get("memory_clock_khz"), cuda.get("bus_width_bits")
    if clock_khz and width:
        return _peak(float(clock_khz) / 1e3, int(width), "CUDA memory clock x bus width x 2")
    return None


def _peak(clock_mhz: float, width_bits: int, source: str) -> Peak:
    return {"gbs": clock_mhz * 1e6 * DATA_RATE * width_bits / 8 / 1e9, "mem_clock_mhz": clock_mhz,
            "bus_width_bits": width_bits, "source": source}


def dram_gbs(raw: Raw, kind: DramKind) -> float:
    """Median GB/s of one DRAM case (copies count the bytes read and the bytes written)."""
    return float(dram_stat(raw, kind)["median"])


def dram_stat(raw: Raw, kind: DramKind) -> Stat:
    """The repeats' summary behind `dram_gbs`."""
    return raw["dram"][kind]["gbs"]


def best_dram(raw: Raw) -> tuple[DramKind, float]:
    """The fastest of the read, write, copy kernels and cudaMemcpy: what this HBM delivers."""
    kind = max(DRAM_KINDS, key=lambda k: dram_gbs(raw, k))
    return kind, dram_gbs(raw, kind)


def fraction_of_peak(raw: Raw) -> Optional[float]:
    found = peak(raw)
    return best_dram(raw)[1] / found["gbs"] if found else None


def mem_clock_under_load(raw: Raw) -> Optional[float]:
    clock = state(raw, "state_under_load").get("mem_clock_mhz")
    return float(clock) if clock else None


def slowing_reasons(raw: Raw) -> tuple[str, int] | None:
    """(when, reasons) of the first reading, under load or after, whose reasons slow the clocks."""
    whens: tuple[StateKey, ...] = ("state_under_load", "state_after")
    for when in whens:
        reasons = state(raw, when).get("clock_event_reasons")
        if reasons and int(reasons) & SLOWING:
            return when, int(reasons)
    return None


def state(raw: Raw, key: StateKey) -> GpuState:
    """One reading of the GPU's state ({} when NVML gave none)."""
    return raw.get(key) or GpuState()


def reason_words(reasons: int) -> str:
    named = [text for bit, text in REASONS.items() if reasons & bit]
    return ", ".join(named) or "none"


def _case(raw: Raw, section: Literal["coalescing", "shared"], stride: int) -> Timed:
    for entry in raw[section]["cases"]:
        if int(entry["stride"]) == stride and int(entry.get("offset", 0)) == 0:
            return entry
    raise KeyError(f"{section}: no case with stride {stride}")


def stride_gbs(raw: Raw, stride: int) -> float:
    return float(_case(raw, "coalescing", stride)["gbs"]["median"])


def coalesce_slowdown(raw: Raw, stride: int) -> float:
    """Time per useful element at `stride` over the same at stride 1."""
    return stride_gbs(raw, 1) / stride_gbs(raw, stride)


def misaligned_slowdown(raw: Raw) -> float:
    shifted = next(c for c in raw["coalescing"]["cases"] if int(c["offset"]) != 0)
    return stride_gbs(raw, 1) / float(shifted["gbs"]["median"])


def smem_ms(raw: Raw, stride: int) -> float:
    return float(_case(raw, "shared", stride)["ms"]["median"])


def bank_slowdown(raw: Raw, ways: int) -> float:
    """A stride of `ways` words puts `ways` lanes on one bank (for ways a power of two up to 32)."""
    return smem_ms(raw, ways) / smem_ms(raw, 1)


def padded_speedup(raw: Raw) -> float:
    """A column of a [32][32] tile (stride 32) against a column of a [32][33] tile (stride 33)."""
    return smem_ms(raw, 32) / smem_ms(raw, 33)


def occupancy_points(raw: Raw, series: str) -> list[tuple[int, float]]:
    return [(int(p["warps_per_sm"]), float(p["gbs"]["median"])) for p in raw["occupancy"]["series"][series]]


def warps_to_saturate(raw: Raw, series: str = "serial") -> tuple[int, float, float]:
    """(fewest warps per SM reaching SATURATED of the sweep's best, their GB/s, the best GB/s)."""
    points = occupancy_points(raw, series)
    best = max(gbs for _w, gbs in points)
    warps, gbs = next((w, g) for w, g in points if g >= SATURATED * best)
    return warps, gbs, best


def max_warps(raw: Raw) -> int:
    threads = (raw.get("device") or {}).get("max_threads_per_sm") or 2048
    return int(threads) // 32


def transpose_ms(raw: Raw, kind: TransposeKind) -> float:
    return float(raw["transpose"][kind]["ms"]["median"])


def transpose_speedup(raw: Raw, kind: TransposeKind = "padded") -> float:
    return transpose_ms(raw, "naive") / transpose_ms(raw, kind)


def divergence_slowdown(raw: Raw) -> float:
    div = raw["divergence"]
    return float(div["divergent"]["ms"]["median"]) / float(div["split"]["ms"]["median"])


def failed_checks(raw: Raw) -> list[str]:
    """Every kernel whose result did not check out."""
    failed = [f"dram {name}" for name, ok in (raw["dram"].get("verified") or {}).items() if not ok]
    failed += [f"transpose {k}" for k in ("naive", "tiled", "padded") if not raw["transpose"][k].get("verified", True)]
    if not raw["divergence"].get("verified", True):
        failed.append("divergence")
    return failed
