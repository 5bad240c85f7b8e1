"""Pure readers of `perfprobe streams`' raw numbers: what the rules and the tables both read.

The ideal time of a pipeline of N chunks is what perfect overlap could reach on this GPU, the larger
of two floors, and never more than the serial sum:
- the busiest engine's total (H2D, kernel or D2H) plus one chunk's ramp (the other two stages of
  the first and last chunk, which nothing can hide): slowest + (sum - slowest) / N;
- both copies' bytes at the measured both-directions rate (the copy engines share the link, so
  two directions at once do not run at twice one direction's rate), except that the first chunk's
  H2D and the last chunk's D2H run alone, at the one-direction rate: both * (1 - 1/N) + (H2D + D2H) / N.
Efficiency = ideal / measured.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict, cast

from perfprobe.probes.gpu_raw import Budget, Device, GpuActivity
from perfprobe.pure.stats import Stat, rate_stat


class Config(TypedDict, total=False):
    """One pipeline run: chunks x streams, its time over the repeats and whether its result checked out."""

    chunks: int
    streams: int
    ms: Stat
    enqueue_ms: Stat
    gate_ms: float
    verified: bool
    mismatches: int
    max_abs_error: float
    tolerance: float


class HostOverlap(TypedDict, total=False):
    gpu_ms: float
    host_ms: float
    sync_ms: float
    async_ms: float
    host_work_repeats: int


class StreamsRaw(TypedDict, total=False):
    """What measure() returns (docs/probes/streams.md)."""

    device: Device
    size_bytes: int
    elements: int
    quick: bool
    iters: int
    coefficients: dict[str, float]
    stage_ms: dict[str, float]
    """h2d, kernel, d2h and both (both directions at once): the medians the ideal is computed from."""
    stage_stats: dict[str, Stat]
    both_gbs: float
    both_ms: dict[str, float]
    serial: Config
    configs: list[Config]
    breakers: dict[str, Config]
    host_overlap: Optional[HostOverlap]
    gpu_activity: GpuActivity
    budget: Budget


Raw = StreamsRaw


def typed(raw: Mapping[str, Any]) -> StreamsRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(StreamsRaw, raw)


def ideal_ms(stages: Mapping[str, float], chunks: int) -> float:
    """Perfect-overlap time of `chunks` chunks from the stage totals (ms)."""
    h2d, kernel, d2h = stages["h2d"], stages["kernel"], stages["d2h"]
    serial = h2d + kernel + d2h
    slowest = max(h2d, kernel, d2h)
    engines = slowest + (serial - slowest) / chunks
    both = stages.get("both")
    link = both * (1 - 1 / chunks) + (h2d + d2h) / chunks if both else 0.0
    return float(min(serial, max(engines, link)))


def median_ms(config: Config) -> float:
    return float(config["ms"]["median"])


def measured_efficiency(raw: Raw, config: Config) -> float:
    """The configuration's ideal time over its measured median, as measured (noise can pass 1)."""
    return ideal_ms(raw["stage_ms"], int(config["chunks"])) / median_ms(config)


def efficiency(raw: Raw, config: Config) -> float:
    """Ideal over measured, never above its ceiling of 1: a pipeline that beat the ideal computed
    from the stages timed alone shows that ideal was no bound (noise in the stage or both-direction
    timings), and the measured time is then the best evidence of the bound: "at the ideal"."""
    return min(1.0, measured_efficiency(raw, config))


def at_ideal_band(raw: Raw, config: Config) -> float | None:
    """When the measured median is within the noise of the ideal (or beat it): the band, as a
    fraction (how far past the ideal, or the repeats' spread, whichever is larger); else None."""
    eff = measured_efficiency(raw, config)
    times = config["ms"]
    spread = (float(times.get("max", times["median"])) - float(times.get("min", times["median"]))) / median_ms(config)
    band = max(abs(eff - 1.0), spread, 0.01)
    return band if eff >= 1.0 - spread else None


def best_config(raw: Raw) -> Config:
    """The fastest configuration whose result checked out (the fastest of all if none did)."""
    configs = [c for c in raw["configs"] if c.get("verified")] or list(raw["configs"])
    return min(configs, key=median_ms)


def speedup(raw: Raw) -> float:
    """Serial time over the best configuration's."""
    return median_ms(raw["serial"]) / median_ms(best_config(raw))


def hidden_fraction(o: HostOverlap) -> float:
    """Share of the shorter of host and GPU work that overlapping saved, within [0, 1] (the sync run
    also pays one more synchronisation, so the raw ratio can pass 1 by a hair)."""
    saved = (o["sync_ms"] - o["async_ms"]) / max(min(o["host_ms"], o["gpu_ms"]), 1e-9)
    return float(min(1.0, max(0.0, saved)))


def best_ideal_ms(raw: Raw) -> float:
    """The ideal time of the best configuration: what its measured time is bounded by."""
    return ideal_ms(raw["stage_ms"], int(best_config(raw)["chunks"]))


def stage_stat(raw: Raw, stage: str) -> Stat | None:
    """The repeats behind one stage's median (recordings before stage_stats have none), only when
    they are the repeats of the median recorded in stage_ms."""
    stat = (raw.get("stage_stats") or {}).get(stage)
    if not stat or float(stat["median"]) != float(raw["stage_ms"][stage]):
        return None
    return stat


def both_gbs_stat(raw: Raw) -> Stat | None:
    """Both directions' GB/s (raw["both_gbs"], as measured) with the rate each repeat reached."""
    stat = stage_stat(raw, "both")
    if stat is None:
        return None
    nbytes = int(raw["elements"]) * 4
    return rate_stat(stat, lambda ms: 2 * nbytes / (ms * 1e-3) / 1e9, float(raw["both_gbs"]))


def copy_engines(raw: Raw) -> int:
    return int(raw["device"].get("async_engine_count", 0))
