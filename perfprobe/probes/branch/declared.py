"""What `perfprobe branch` declares (read without importing the probe): headline figures, no key figures."""

from perfprobe.engine.declaration import Declared

DECLARED = Declared(
    name="branch", help="Branches: mispredict cost in cycles, predictor reach, what branch-free code saves.",
    headline=("mispredict_cycles", "mispredict_ns", "branch_free_speedup", "predictor_reach_period"),
    key_figures=(),
)
