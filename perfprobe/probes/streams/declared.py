"""What `perfprobe streams` declares (read without importing the probe): --size, headline figures, no
key figures."""

from perfprobe.engine.declaration import Declared, ProbeOption

SIZE = ProbeOption("--size", "bytes", "Buffer size, at least {minimum}, e.g. 256M or 1G.", minimum=4 << 20)
"""4 MiB: below it the chunks are too small to time."""

DECLARED = Declared(
    name="streams", help="Copy/compute overlap across CUDA streams: chunks x streams against the ideal.",
    options=(SIZE,), gpu=True,
    headline=("best.speedup", "best.efficiency", "both_directions_gbs"),
    key_figures=(),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # per GPU; H200 machine's guest, warm: 4.0-4.8 s (docs/benchmarks.md), 5.1 s at most in
    # tests/data/compare_runs_h200_quick.json
    quick_budget_s=7.0,
)
