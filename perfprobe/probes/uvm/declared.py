"""What `perfprobe uvm` declares (read without importing the probe): --size, headline figures, no key
figures."""

from perfprobe.engine.declaration import Declared, ProbeOption

SIZE = ProbeOption("--size", "bytes", "Buffer size, at least {minimum}, e.g. 256M or 1G.", minimum=1 << 20)

DECLARED = Declared(
    name="uvm", help="Unified memory: on-demand migration, prefetch, advice, zero-copy.",
    options=(SIZE,), gpu=True,
    headline=("ratio.managed_on_demand", "ratio.managed_prefetch", "gbs.explicit_copy", "gbs.zero_copy"),
    key_figures=(),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # per GPU; H200 machine's guest, warm: 5.4-5.8 s (docs/benchmarks.md), 4.4-5.9 s in
    # tests/data/compare_runs_h200_*.json (9.3 s once)
    quick_budget_s=8.5,
)
