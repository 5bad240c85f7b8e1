"""What `perfprobe pinned` declares (read without importing the probe): --size (its minimum is the
sweep's first copy, plan.MIN_SIZE), headline and key figures."""

from perfprobe.engine.declaration import Declared, ProbeOption

SIZE = ProbeOption("--size", "bytes", "Buffer size, at least {minimum}, e.g. 256M or 1G.", minimum=64 << 10)
"""64 KiB: the sweep's first copy (plan.sweep_sizes starts there)."""

DECLARED = Declared(
    name="pinned", help="Host-GPU copies: pageable against pinned, link rate, blocking, pinning cost.",
    options=(SIZE,), gpu=True,
    headline=("pinned.h2d_gbs", "pinned.d2h_gbs", "pageable.h2d_gbs", "link.fraction_h2d"),
    key_figures=("pinned.h2d_gbs", "pinned.d2h_gbs", "link.rate_gbs"),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # per GPU; H200 machine's guest, warm: 1.2-1.6 s (docs/benchmarks.md, tests/data/compare_runs_h200_*)
    quick_budget_s=2.5,
)
