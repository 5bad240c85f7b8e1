"""What `perfprobe uvm` measures: the access paths (and the device attributes each needs), the
buffer size the budgets allow, repeats and passes. Pure: no GPU call."""

from __future__ import annotations

from dataclasses import dataclass

from perfprobe.engine.config import Knobs, Presets, RunConfig
from perfprobe.errors import ProbeSkipped
from perfprobe.host.facts import Facts
from perfprobe.probes.uvm.declared import SIZE
from perfprobe.system.budget import MemoryBudget

DEFAULT_SIZE = 4 << 30
QUICK_SIZE = 256 << 20
REPEATS = 5
"""Timed runs per path after one warm-up (--quick saves time through the size instead): 5, not 3,
so that compare's Mann-Whitney test can call a change (3 against 3 never reaches p < 0.05) and the
MAD is more than the nearer of two distances; at 256 MiB the two more repeats of every path take
about 0.3 s of timed work on an H200 (0.16 s a round, all_quick_h200x2.rec.json), plus their fills."""
DEFAULT_PASSES = 8
UNIT = 1 << 20  # sizes are whole MiB: a multiple of the kernels' data pattern
DEVICE_FRACTION = HOST_FRACTION = 0.25  # the managed buffer may land on either side

PLAN: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (path function in probes/uvm/paths.py, device attributes it needs)
    ("managed_on_demand", ("managedMemory",)),
    ("managed_prefetch", ("managedMemory", "concurrentManagedAccess")),
    ("managed_advise_preferred_gpu", ("managedMemory", "concurrentManagedAccess")),
    ("managed_advise_accessed_by", ("managedMemory", "concurrentManagedAccess")),
    ("pinned_paths", ("canMapHostMemory", "unifiedAddressing")),
    ("pageable_direct", ("pageableMemoryAccess",)),
    ("host_on_demand", ("managedMemory",)),
    ("host_prefetch", ("managedMemory", "concurrentManagedAccess")),
    ("host_reference_reads", ("canMapHostMemory", "unifiedAddressing")),
)
GROUPS: dict[str, tuple[str, ...]] = {
    "pinned_paths": ("explicit_copy", "device_memory", "zero_copy", "explicit_copy_passes", "zero_copy_passes"),
    "host_reference_reads": ("host_explicit_copy", "host_local"),
}
"""Path functions that time several paths at once, and the paths they return."""


@dataclass(frozen=True)
class Preset:
    size_bytes: int   # the buffer when --size is not given
    repeats: int      # timed runs per path (Knobs.repeats overrides)
    passes: int       # kernel passes of the *_passes paths (Knobs.passes overrides)


PRESETS = Presets(full=Preset(DEFAULT_SIZE, REPEATS, DEFAULT_PASSES),
                  quick=Preset(QUICK_SIZE, REPEATS, DEFAULT_PASSES))


@dataclass(frozen=True)
class Counts:
    repeats: int
    passes: int


def counts(knobs: Knobs, preset: Preset) -> Counts:
    """Repeats and passes: the knobs (test hooks) where set, else the preset's."""
    return Counts(repeats=preset.repeats if knobs.repeats is None else knobs.repeats,
                  passes=preset.passes if knobs.passes is None else knobs.passes)


def path_names(function: str) -> tuple[str, ...]:
    """The paths one path function times (itself, or its group's)."""
    return GROUPS.get(function, (function,))


def check_knobs(config: RunConfig, host: Facts) -> None:
    """--size under 1 MiB is exit 2 before anything runs, as the CLI says it, not a skip for want of
    memory at measure time (choose_size)."""
    SIZE.check(config.options.size)  # the range the CLI checks too, declared once (declared.py)


def choose_size(requested: int | None, preset: Preset, device: MemoryBudget,
                host: MemoryBudget) -> tuple[int, str | None]:
    """Bytes per buffer and, when it was capped, why ("capped at <the budget's basis>").

    Never more than the device budget (the managed buffer may land there) nor the host budget
    (managed pages start on the host), rounded down to whole MiB."""
    wanted = preset.size_bytes if requested is None else requested
    tightest = min((device, host), key=lambda budget: budget.bytes)
    size = min(wanted, tightest.bytes) // UNIT * UNIT
    if size < UNIT:
        raise ProbeSkipped(f"too little free memory for a 1 MiB buffer ({tightest.basis}: {tightest.bytes} bytes)",
                           "free GPU or host memory and run again")
    note = f"capped at {tightest.basis}" if size < wanted // UNIT * UNIT else None
    return size, note
