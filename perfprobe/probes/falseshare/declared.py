"""What `perfprobe falseshare` declares (read without importing the probe): options, headline and key
figures. --threads' upper bound here is a sanity cap; plan.check_plan holds it to the usable CPUs."""

from perfprobe.engine.declaration import Declared, ProbeOption

DECLARED = Declared(
    name="falseshare", help="False sharing: cost per counter spacing, padding to use, core-to-core latency.",
    options=(
        ProbeOption("--max-spacing", "bytes", "Widest counter spacing: a power of two from {minimum} to {maximum} "
                    "(default 256).", minimum=256, maximum=1 << 20, power_of_two=True),
        ProbeOption("--threads", "count", "Threads for the many-thread runs: {minimum} to the usable CPUs (under "
                    "--bind, the node's; default: all of them).", minimum=2, maximum=4096),
    ),
    headline=("slowdown.atomic.8B", "recommended_padding_bytes", "scaling_efficiency.atomic"),
    key_figures=("ns_per_update.atomic.64B", "recommended_padding_bytes"),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # H200 machine's 16-CPU guest, warm: 2.1-2.4 s (docs/benchmarks.md), 2.8 s at most in
    # tests/data/compare_runs_h200_quick.json; 2-vCPU guest ~1 s. More CPUs, more thread counts
    quick_budget_s=4.0,
)
