"""What `perfprobe branch` runs: the data, the period sweep, the presets. Pure.

Values are uniform in 0..255 and the branch is `v >= 128`, so shuffled data takes it half the time
at random (a 50% miss rate for any predictor) and sorted data changes direction once.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfprobe.engine.config import Presets

THRESHOLD = 128
VALUE_RANGE = 256
CASES = ("sorted", "shuffled", "branch_free_sorted", "branch_free_shuffled")


@dataclass(frozen=True)
class Settings:
    """How hard to measure. `elements` stays large (128 Ki) in both presets: a predictor learns
    the directions of a few thousand shuffled values replayed pass after pass."""

    elements: int
    repeats: int           # interleaved repeats of the four main cases
    period_repeats: int    # repeats per period of the pattern sweep
    run_ms: float          # target length of one timed run
    max_period: int        # widest pattern period tried (the sweep stops earlier once prediction fails)
    clock_repeats: int


FULL = Settings(elements=1 << 17, repeats=7, period_repeats=3, run_ms=4.0, max_period=1 << 16, clock_repeats=7)
QUICK = Settings(elements=1 << 17, repeats=3, period_repeats=2, run_ms=2.0, max_period=1 << 14, clock_repeats=3)
PRESETS = Presets(full=FULL, quick=QUICK)
STOP_AFTER_FAILED = 2    # periods in a row past the predictor's reach that end the sweep


def periods(max_period: int) -> list[int]:
    """2, 4, 8, ... max_period: the pattern periods of the sweep."""
    out, p = [], 2
    while p <= max_period:
        out.append(p)
        p *= 2
    return out


def passes(ns_per_element: float, elements: int, run_ms: float) -> int:
    """Passes over the data for a timed run of about `run_ms` (at least one)."""
    return max(1, int(run_ms * 1e6 / max(ns_per_element * elements, 1.0)))


def clock_iterations(ns_per_iteration: float, run_ms: float) -> int:
    """Iterations of the add chain for a timed run of about `run_ms`."""
    return max(1000, int(run_ms * 1e6 / max(ns_per_iteration, 0.01)))
