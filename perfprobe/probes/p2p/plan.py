"""What `perfprobe p2p` measures: which GPU pairs, copy sizes, repeats and the largest copy.

Pure: from the selected GPUs, the knobs, the preset and the memory budgets (read by measure). Work
grows with the square of the GPU count (8 GPUs: 28 pairs, 56 directions), so `--quick` measures a
sample that still touches every GPU twice: the ring 0-1, 1-2, ..., (n-1)-0, and says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from perfprobe.engine.config import Presets, RunConfig
from perfprobe.host.facts import Facts
from perfprobe.probes.p2p.declared import SIZE
from perfprobe.system.budget import MemoryBudget

MIN_SIZE = SIZE.minimum
DEFAULT_MAX = 1 << 30
QUICK_MAX = 256 << 20
LATENCY_BYTES = 4
LARGE = 64 << 20  # copies of this size and up use fewer repeats
BUFFERS_PER_DEVICE = 2  # a source and a destination on each GPU (both directions at once)

Pair = tuple[int, int]


@dataclass(frozen=True)
class Preset:
    largest_bytes: int | None   # ceiling on the largest copy (None: as asked)
    first_bytes: int            # the sweep's first size
    size_factor: int            # each size this many times the previous one
    warmup: int
    repeats: int                # timed repeats under LARGE
    repeats_large: int          # ... and from LARGE up
    latency_repeats: int
    max_pairs: int | None       # most unordered pairs measured (None: all)


PRESETS = Presets(
    full=Preset(largest_bytes=None, first_bytes=MIN_SIZE, size_factor=4, warmup=2, repeats=10,
                repeats_large=5, latency_repeats=50, max_pairs=None),
    quick=Preset(largest_bytes=QUICK_MAX, first_bytes=4 * MIN_SIZE, size_factor=8, warmup=1, repeats=5,
                 repeats_large=3, latency_repeats=20, max_pairs=6),
)


def check_knobs(config: RunConfig, host: Facts) -> None:
    """--size under 1 MiB measures launch overhead, not a link: exit 2 before anything runs."""
    SIZE.check(config.options.size)  # the range the CLI checks too, declared once (declared.py)


def requested_bytes(config: RunConfig) -> int:
    return DEFAULT_MAX if config.options.size is None else config.options.size


def plan_top(requested: int, preset: Preset, budgets: list[MemoryBudget]) -> tuple[int, str | None]:
    """The largest copy: the request under the preset's ceiling and every GPU's budget (two
    buffers on each). Returns (top, the basis of the budget that capped it, else None)."""
    top = requested if preset.largest_bytes is None else min(requested, preset.largest_bytes)
    capped: str | None = None
    for budget in budgets:
        top, why = MemoryBudget(budget.bytes // BUFFERS_PER_DEVICE, budget.basis).cap(top)
        capped = why or capped
    return top // MIN_SIZE * MIN_SIZE, capped


def sweep_sizes(top: int, preset: Preset) -> list[int]:
    """first_bytes, then x size_factor up to `top`, and `top` itself last."""
    sizes, size = [], min(preset.first_bytes, top)
    while size <= top:
        sizes.append(size)
        size *= preset.size_factor
    if sizes[-1] != top:
        sizes.append(top)
    return sizes


def repeats_for(size: int, preset: Preset) -> tuple[int, int]:
    return preset.warmup, (preset.repeats_large if size >= LARGE else preset.repeats)


def all_pairs(devices: list[int]) -> list[Pair]:
    """Every unordered pair (i < j) of the selected GPUs."""
    return [(a, b) for a, b in combinations(sorted(devices), 2)]


def sample_pairs(devices: list[int], max_pairs: int | None) -> tuple[list[Pair], bool]:
    """(the unordered pairs to measure, whether that is a sample). Under the limit: all of them.
    Over it: the ring of neighbours in index order (every GPU in two pairs, NVLink neighbours on
    boards wired in a ring), then the pairs half-way round (the far side of a board), in order,
    up to the limit but never fewer than the ring."""
    every = all_pairs(devices)
    if max_pairs is None or len(every) <= max_pairs:
        return every, False
    order = sorted(devices)
    n = len(order)
    ring = [_pair(order[k], order[(k + 1) % n]) for k in range(n)]
    across = [_pair(order[k], order[(k + n // 2) % n]) for k in range(n // 2)]
    chosen: list[Pair] = []
    for pair in ring + across:
        if pair not in chosen and (len(chosen) < max(max_pairs, n)):
            chosen.append(pair)
    return chosen, True


def _pair(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


def directions(pairs: list[Pair]) -> list[Pair]:
    """Each unordered pair as its two ordered copies, (i, j) then (j, i)."""
    return [d for a, b in pairs for d in ((a, b), (b, a))]


def sampling_words(pairs: list[Pair], total: int) -> str:
    """'6 of 28 pairs (--quick): 0-1, 1-2, ...': what a sampled run measured."""
    return f"{len(pairs)} of {total} pairs (--quick): " + ", ".join(f"{a}-{b}" for a, b in pairs)
