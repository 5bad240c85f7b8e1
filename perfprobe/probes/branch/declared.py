"""What `perfprobe branch` declares (read without importing the probe): headline figures, no key figures."""

from perfprobe.engine.declaration import Declared

DECLARED = Declared(
    name="branch", help="Branches: mispredict cost in cycles, predictor reach, what branch-free code saves.",
    headline=("mispredict_cycles", "mispredict_ns", "branch_free_speedup", "predictor_reach_period"),
    key_figures=(),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # 0.1-0.2 s warm on both the 2-vCPU and the H200 machine's guest (docs/benchmarks.md)
    quick_budget_s=0.5,
)
