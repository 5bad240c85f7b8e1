"""What `perfprobe layout` declares (read without importing the probe): headline figures, no key figures."""

from perfprobe.engine.declaration import Declared

DECLARED = Declared(
    name="layout", help="Data layout: split loads (line, page) against aligned, AoS against SoA per cache level.",
    headline=("split_penalty.line.8B", "split_penalty.page.8B", "load_ns.aligned.8B", "soa_speedup.k8.dram"),
    key_figures=(),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # H200 machine's 16-CPU guest, warm: 0.7-1.0 s; 2-vCPU guest 0.7-1.1 s (docs/benchmarks.md,
    # tests/data/compare_runs_*)
    quick_budget_s=2.0,
)
