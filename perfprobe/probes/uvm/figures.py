"""Pure readers of the uvm probe's raw times: what the rules and the tables both read.

Every figure is computed here from the raw times (GB/s = bytes / median time), so numbers recorded
on any host give the same findings and the same tables.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Optional, TypedDict, cast

from perfprobe.probes.gpu_raw import Device
from perfprobe.pure.stats import Stat, rate_stat

Part = Literal["time_s", "prefetch_s", "copy_s", "move_s", "kernel_s", "read_s"]
"""A path's timed parts: end to end (time_s), and the steps some paths time apart."""


class Path(TypedDict, total=False):
    """One access path (paths.py): the bytes its reader consumed over its passes and each timed
    part's repeats; or, when it did not run, why (unavailable: the API it needs is missing)."""

    bytes: int
    passes: int
    time_s: Stat
    prefetch_s: Stat
    copy_s: Stat
    move_s: Stat
    kernel_s: Stat
    read_s: Stat
    skipped: str
    unavailable: bool


class UvmRaw(TypedDict, total=False):
    """What measure() returns (docs/probes/uvm.md): the device's unified-memory attributes and every path."""

    device: Device
    attributes: dict[str, int]
    size_bytes: int
    size_note: Optional[str]
    repeats: int
    passes: int
    host_threads: int
    api_used: dict[str, str]
    """What each call went through (cupy's runtime or cuda.bindings), by what it did."""
    api_notes: list[str]
    paths: dict[str, Path]


Raw = UvmRaw


def typed(raw: Mapping[str, Any]) -> UvmRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(UvmRaw, raw)

TO_GPU = ("managed_on_demand", "managed_prefetch", "managed_advise_preferred_gpu",
          "managed_advise_accessed_by", "pageable_direct", "zero_copy", "explicit_copy",
          "device_memory")
TO_HOST = ("host_on_demand", "host_prefetch", "host_explicit_copy", "host_local")
PASSES = ("zero_copy_passes", "explicit_copy_passes")
REFERENCE = {**{p: "explicit_copy" for p in TO_GPU}, **{p: "host_explicit_copy" for p in TO_HOST},
             **{p: "explicit_copy_passes" for p in PASSES}}

MOVE_PARTS: tuple[Part, ...] = ("prefetch_s", "copy_s", "move_s")
"""The timed part of a path that moves the data (a prefetch or a copy), whichever it recorded."""


def path_entry(raw: Raw, path: str) -> Path:
    """One path's recorded entry ({} when absent)."""
    return (raw.get("paths") or {}).get(path) or Path()


def median_s(raw: Raw, path: str, part: Part = "time_s") -> float | None:
    """The median of `path`'s end-to-end time (or of one timed `part`, e.g. "move_s"), or None
    when the path was skipped or the part not recorded."""
    value = (path_entry(raw, path).get(part) or Stat()).get("median")
    return float(value) if value else None


def move_s(raw: Raw, path: str) -> float | None:
    """The median time a path spent moving data (prefetch or copy), None when it has no such part."""
    return next((t for t in (median_s(raw, path, part) for part in MOVE_PARTS) if t), None)


def gbs(raw: Raw, path: str) -> float | None:
    """Effective GB/s of `path`: bytes its reader consumed ÷ median end-to-end time."""
    seconds = median_s(raw, path)
    nbytes = path_entry(raw, path).get("bytes")
    return float(nbytes) / seconds / 1e9 if seconds and nbytes else None


def gbs_stat(raw: Raw, path: str) -> Stat | None:
    """`gbs` with the rate each repeat reached (bytes over each repeat's end-to-end time): the
    repeats' spread of the figure, its median exactly `gbs`. None where `gbs` is."""
    speed = gbs(raw, path)
    time = path_entry(raw, path).get("time_s")
    if speed is None or not time:
        return None
    nbytes = float(path_entry(raw, path)["bytes"])
    return rate_stat(time, lambda seconds: nbytes / seconds / 1e9, speed)


def ratio_to_reference(raw: Raw, path: str) -> float | None:
    """GB/s of `path` ÷ GB/s of its reference (explicit copy): above 1 is faster than copying."""
    mine, ref = gbs(raw, path), gbs(raw, REFERENCE[path])
    return mine / ref if mine and ref else None


def slowdown(raw: Raw, slow: str, fast: str) -> float | None:
    """Median time of `slow` ÷ median time of `fast` (None when either is missing)."""
    a, b = median_s(raw, slow), median_s(raw, fast)
    return a / b if a and b else None


def break_even_passes(raw: Raw) -> float | None:
    """Passes at which copy-then-read catches up with zero-copy, from the 1- and N-pass times.

    zero-copy costs z per pass; copy-then-read costs c once plus k per pass (k from the difference
    between its N-pass and 1-pass times): n* = c / (z - k). None when zero-copy never loses.
    """
    passes = int(raw.get("passes") or 0)
    one, many = median_s(raw, "explicit_copy"), median_s(raw, "explicit_copy_passes")
    zero_many = median_s(raw, "zero_copy_passes")
    if passes < 2 or not (one and many and zero_many):
        return None
    per_pass_device = (many - one) / (passes - 1)
    copy_once = max(one - per_pass_device, 0.0)
    per_pass_zero = zero_many / passes
    if per_pass_zero <= per_pass_device:
        return None
    return copy_once / (per_pass_zero - per_pass_device)


def attribute(raw: Raw, name: str) -> int | None:
    """One unified-memory device attribute as recorded (None when not recorded)."""
    value = (raw.get("attributes") or {}).get(name)
    return None if value is None else int(value)
