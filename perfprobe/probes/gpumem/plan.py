"""What `perfprobe gpumem` measures: buffer sizes, launch shapes, sweeps and repeats.

Pure: from the knobs, the preset, the device's attributes and the memory budget (read by measure).
bench/gpumem_ref.cu repeats these launch shapes; keep the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfprobe.engine.config import Presets, RunConfig
from perfprobe.host.facts import Facts
from perfprobe.probes.gpumem.declared import SIZE
from perfprobe.system.budget import MemoryBudget

MIN_SIZE = SIZE.minimum
DEFAULT_SIZE = 1 << 30
QUICK_SIZE = 512 << 20
L2_FACTOR = 8                 # the bandwidth buffer should be this many times L2 (a finding if not)
BLOCK = 256                   # threads per block of the bandwidth, stride, shared and divergence kernels
STRIDES = (1, 2, 4, 8, 16, 32)
MISALIGNED_OFFSET = 1         # elements (4 bytes): each warp's 128 bytes straddle two lines
SMEM_STRIDES = (1, 2, 3, 4, 8, 16, 32, 33)   # 33: the padded [32][33] tile's column
SMEM_REPS = 256
OCCUPANCY_BYTES = 512 << 20
WARPS_PER_SM = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)
SATURATED = 0.90              # a warp count reaching this share of the sweep's best saturates
TRANSPOSE_N = 8192
DIVERGE_ITERS = 32768


@dataclass(frozen=True)
class Preset:
    """One parameter set: warm-ups, timed repeats and the buffer ceiling --quick adds."""

    largest_bytes: int | None
    warmup: int
    repeats: int
    occupancy_repeats: int


PRESETS = Presets(
    full=Preset(largest_bytes=None, warmup=2, repeats=15, occupancy_repeats=7),
    quick=Preset(largest_bytes=QUICK_SIZE, warmup=1, repeats=7, occupancy_repeats=3),
)


def check_knobs(config: RunConfig, host: Facts) -> None:
    """--size under 16 MiB is smaller than any GPU's L2: exit 2 before anything runs."""
    SIZE.check(config.options.size)  # the range the CLI checks too, declared once (declared.py)


def requested_bytes(config: RunConfig, preset: Preset) -> int:
    """The bandwidth buffer asked for: --size, else 1 GiB (512 MiB with --quick)."""
    if config.options.size is not None:
        return config.options.size
    return DEFAULT_SIZE if preset.largest_bytes is None else preset.largest_bytes


def plan_size(requested: int, device: MemoryBudget) -> tuple[int, str | None]:
    """Bytes per buffer: two buffers (copy source and destination) within the device budget,
    a whole number of 4 KiB pages. Returns (size, the budget's basis when it capped)."""
    size, capped = MemoryBudget(device.bytes // 2, device.basis).cap(requested)
    return size // 4096 * 4096, capped


def grid_blocks(multiprocessors: int, max_threads_per_sm: int | None) -> int:
    """Blocks for the grid-stride kernels: enough BLOCK-thread blocks to fill every SM once."""
    return max(1, multiprocessors) * max(1, (max_threads_per_sm or 2048) // BLOCK)


def stride_count(elements: int, stride: int, offset: int) -> int:
    """Elements read at `stride` (and `offset`) within a buffer of `elements` floats."""
    return (elements - offset - 1) // stride + 1


def occupancy_shape(warps: int) -> tuple[int, int]:
    """(threads per block, blocks per SM) that put `warps` warps on each SM (one block up to 32
    warps, two blocks of half the warps above); the grid is SMs x blocks per SM."""
    blocks = 1 if warps <= 32 else 2
    return warps * 32 // blocks, blocks


def occupancy_warps(max_threads_per_sm: int | None) -> list[int]:
    """The warp counts swept, up to what one SM can hold."""
    top = (max_threads_per_sm or 2048) // 32
    return [w for w in WARPS_PER_SM if w <= top]


def transpose_n(size: int) -> int:
    """The transposed matrix's side: 8192 floats (256 MiB), or the largest power of two that fits."""
    n = TRANSPOSE_N
    while n > 64 and n * n * 4 > size:
        n //= 2
    return n
