"""What `perfprobe streams` measures: the buffer size the budgets allow and the chunks x streams grid.

Pure: from the knobs, the preset and the memory budgets (read by measure), no GPU call.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfprobe.engine.config import Presets, RunConfig
from perfprobe.host.facts import Facts
from perfprobe.probes.streams.declared import SIZE
from perfprobe.system.budget import MemoryBudget

DEFAULT_SIZE, QUICK_SIZE, MIN_SIZE = 1 << 30, 256 << 20, SIZE.minimum
CHUNKS, STREAMS = (2, 4, 8, 16, 32, 64), (1, 2, 4, 8)
QUICK_CHUNKS, QUICK_STREAMS = (4, 16, 32), (1, 2, 4)
MAX_STREAMS = max(STREAMS)  # streams created on the device, whichever preset runs
MIB = 1 << 20


@dataclass(frozen=True)
class Preset:
    size_bytes: int                # the buffer when --size is not given
    chunks: tuple[int, ...]        # chunk counts of the grid
    streams: tuple[int, ...]       # stream counts of the grid


PRESETS = Presets(full=Preset(DEFAULT_SIZE, CHUNKS, STREAMS), quick=Preset(QUICK_SIZE, QUICK_CHUNKS, QUICK_STREAMS))


def check_knobs(config: RunConfig, host: Facts) -> None:
    """--size under 4 MiB leaves chunks too small to time: exit 2 before anything runs."""
    SIZE.check(config.options.size)  # the range the CLI checks too, declared once (declared.py)


def requested_bytes(config: RunConfig, preset: Preset) -> int:
    """The buffer asked for: --size, else the preset's."""
    return preset.size_bytes if config.options.size is None else config.options.size


def configurations(preset: Preset) -> list[tuple[int, int]]:
    """(chunks, streams) pairs to time; never more streams than chunks."""
    return [(n, k) for n in preset.chunks for k in preset.streams if k <= n]


def plan_size(requested: int, device: MemoryBudget, host: MemoryBudget) -> tuple[int, str | None]:
    """Buffer bytes: the request capped so that 2 device buffers and 5 host buffers fit the budgets;
    (size in whole MiB, the budget's basis when it capped)."""
    size, capped = requested, None
    for budget, buffers in ((device, 2), (host, 5)):
        size, why = MemoryBudget(budget.bytes // buffers, budget.basis).cap(size)
        capped = why or capped
    return size // MIB * MIB, capped
