"""What `perfprobe pinned` measures: copy sizes, repeats and the largest copy the budgets allow.

Pure: from the knobs, the preset and the memory budgets (read by measure), no GPU call.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfprobe.engine.config import Presets, RunConfig
from perfprobe.host.facts import Facts
from perfprobe.probes.pinned.declared import SIZE
from perfprobe.system.budget import MemoryBudget

MIN_SIZE = SIZE.minimum
DEFAULT_MAX = 1 << 30
QUICK_MAX = 256 << 20
LARGE = 64 << 20  # copies of this size and up use fewer repeats (each already takes milliseconds)
PAGE = 4096


@dataclass(frozen=True)
class Preset:
    """One parameter set: the sweep's step, repeats per copy and the ceilings --quick adds."""

    largest_bytes: int | None   # ceiling on the largest copy (None: as asked)
    size_factor: int            # each copy size is this many times the previous one
    warmup: int
    repeats: int                # timed repeats of copies under LARGE
    repeats_large: int          # ... and of LARGE copies and up
    pinning_repeats: int
    pinning_bytes: int | None   # ceiling on the buffer whose page-locking is timed


PRESETS = Presets(
    full=Preset(largest_bytes=None, size_factor=4, warmup=2, repeats=20, repeats_large=7,
                pinning_repeats=3, pinning_bytes=None),
    quick=Preset(largest_bytes=QUICK_MAX, size_factor=16, warmup=1, repeats=10, repeats_large=5,
                 pinning_repeats=2, pinning_bytes=QUICK_MAX),
)


def check_knobs(config: RunConfig, host: Facts) -> None:
    """--size under 64 KiB cannot hold the sweep's first copy: exit 2 before anything runs."""
    SIZE.check(config.options.size)  # the range the CLI checks too, declared once (declared.py)


def requested_bytes(config: RunConfig) -> int:
    """The largest copy asked for: --size, else 1 GiB."""
    return DEFAULT_MAX if config.options.size is None else config.options.size


def sweep_sizes(top: int, preset: Preset) -> list[int]:
    """64 KiB, then x4 (x16 with --quick) up to `top`, and `top` itself as the last size."""
    sizes, size = [], MIN_SIZE
    while size <= top:
        sizes.append(size)
        size *= preset.size_factor
    if sizes and sizes[-1] != top:
        sizes.append(top)
    return sizes


def plan_top(requested: int, preset: Preset, device: MemoryBudget,
             host: MemoryBudget) -> tuple[int, str | None]:
    """The largest copy size: the request, capped by the preset and the memory budgets.

    Device: two buffers of `top`; host: one pageable and two pinned buffers plus one transient
    pinned allocation for the pinning cost. Returns (top, the budget's basis when it capped)."""
    top = requested if preset.largest_bytes is None else min(requested, preset.largest_bytes)
    capped: str | None = None
    for budget, buffers in ((device, 2), (host, 4)):
        top, why = MemoryBudget(budget.bytes // buffers, budget.basis).cap(top)
        capped = why or capped
    return top // PAGE * PAGE, capped


def repeats_for(size: int, preset: Preset) -> tuple[int, int]:
    """(warm-up, timed repeats) for copies of `size` bytes."""
    return preset.warmup, (preset.repeats_large if size >= LARGE else preset.repeats)


def pinning_bytes(top: int, preset: Preset) -> int:
    """The buffer whose page-locking cost is timed: the largest copy, under --quick's ceiling."""
    return top if preset.pinning_bytes is None else min(top, preset.pinning_bytes)
