"""What `perfprobe gpumem` declares (read without importing the probe): --size (at least 16 MiB, more
than any GPU's L2), headline and key figures."""

from perfprobe.engine.declaration import Declared, ProbeOption

SIZE = ProbeOption("--size", "bytes", "Buffer size, at least {minimum}, e.g. 256M or 1G.", minimum=16 << 20)
"""16 MiB: a smaller buffer is smaller than any GPU's L2 (plan.check_knobs)."""

DECLARED = Declared(
    name="gpumem", help="Inside the GPU: DRAM bandwidth against its peak, coalescing, banks, occupancy, tiling.",
    options=(SIZE,), gpu=True,
    headline=("dram_gbs.read", "dram_fraction_of_peak", "coalesce_slowdown.stride32", "bank_conflict_slowdown.32way"),
    key_figures=("dram_gbs.read",),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # per GPU; H200 machine's guest, warm: 0.4 s (docs/benchmarks.md), 0.6 s with compiles
    quick_budget_s=1.0,
)
