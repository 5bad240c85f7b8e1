"""What falseshare runs: thread placement, spacings, thread counts, cases and presets. Pure.

Every function here is a function of the host facts (usable CPUs, cores) and the knobs, so the plan
is tested without kernels, and the knob checks run before anything is measured (`check_plan`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from perfprobe.engine.config import Knobs, Presets
from perfprobe.errors import UsageError
from perfprobe.pure.cpu_order import cpu_cores as cpu_cores  # the one placement (perfprobe/pure/cpu_order.py)
from perfprobe.pure.cpu_order import placement_order as placement_order
from perfprobe.pure.cpu_order import shared_cores as shared_cores
from perfprobe.system.budget import MemoryBudget

KINDS = ("atomic", "plain")
MIN_SPACING, DEFAULT_MAX_SPACING = 8, 256
TRUE_SHARING = 0  # spacing 0: every thread on one counter
RETRIES = 2  # a run where a thread was preempted is retried this many times
PAGE_BYTES = 4096


WARMUP_ROUNDS = 1  # untimed round-robin passes over every case before the timed repeats
WITNESSED = "witnessed"
"""The stability re-measurement's key (PROBE.remeasures): the atomic figures the load witness stands
over, re-timed witness first. No warn confirms with it, so confirmation always re-times them all."""


@dataclass(frozen=True)
class Settings:
    """How hard to measure: timed repeats per case (after WARMUP_ROUNDS discarded passes) and the
    target length of one timed run."""

    repeats: int
    run_ms: float
    pingpong_repeats: int
    pingpong_ms: float
    max_pair_cpus: int  # the core-to-core matrix covers at most this many CPUs


# --quick keeps five timed repeats of every case (the key figure ns_per_update.atomic.64B among
# them) after a discarded pass: the first pass was the slowest repeat of 9-11 of 28 cases in quick
# runs on the H200 guest. Runs of 5 ms instead of 6 keep the timed phase as long as before (6 x 5 ms).
QUICK = Settings(repeats=5, run_ms=5.0, pingpong_repeats=3, pingpong_ms=3.0, max_pair_cpus=8)
FULL = Settings(repeats=11, run_ms=14.0, pingpong_repeats=5, pingpong_ms=5.0, max_pair_cpus=16)
PRESETS = Presets(full=FULL, quick=QUICK)


@dataclass(frozen=True)
class Case:
    """One timed configuration: update kind, the CPUs (one thread each) and the counter spacing."""

    kind: str
    cpus: tuple[int, ...]
    spacing_bytes: int


def spacings(max_spacing: int) -> list[int]:
    """8, 16, ... up to max_spacing bytes (powers of two); the sweep always reaches 256 B, since a
    narrower one cannot see interference end beyond a 64-byte line."""
    if max_spacing < DEFAULT_MAX_SPACING:
        raise UsageError(f"--max-spacing {max_spacing}: the sweep always covers 8 to {DEFAULT_MAX_SPACING} B; "
                         f"give {DEFAULT_MAX_SPACING} or more (a power of two)")
    out, s = [], MIN_SPACING
    while s <= max_spacing:
        out.append(s)
        s *= 2
    return out


def thread_counts(usable: int, requested: int | None) -> list[int]:
    """T = 2 and T = all usable CPUs (or --threads), without repeating 2."""
    many = usable if requested is None else int(requested)
    if many < 2 or many > usable:
        choice = "give 2" if usable == 2 else f"give 2 to {usable}"
        raise UsageError(f"--threads {many}: this process can use {usable} CPUs; {choice}")
    return sorted({2, many})


def counter_bytes(threads: int, widest: int) -> int:
    """The counter buffer: one counter per thread at the widest spacing, plus a page each side."""
    return threads * widest + 2 * PAGE_BYTES


def check_plan(knobs: Knobs, usable: int, budget: MemoryBudget) -> None:
    """Raise UsageError for knobs this host cannot honour (run before anything is measured).

    With fewer than 2 usable CPUs the probe is skipped (its declared requirement), so only the
    spacing is checked then."""
    widest = spacings(knobs.max_spacing or DEFAULT_MAX_SPACING)[-1]
    if usable < 2:
        return
    threads = max(thread_counts(usable, knobs.threads))
    need = counter_bytes(threads, widest)
    if need > budget.bytes:
        raise UsageError(f"--max-spacing {widest} with {threads} threads needs {need} bytes of counters; "
                         f"only {budget.bytes} may be used here ({budget.basis})")


def pair_cpus(order: Sequence[int], limit: int) -> tuple[list[int], bool]:
    """CPUs for the core-to-core matrix: all of them, or `limit` spread evenly (sampled=True)."""
    if len(order) <= limit:
        return sorted(order), False
    step = len(order) / limit
    return sorted({order[int(i * step)] for i in range(limit)}), True


def plan_cases(order: Sequence[int], counts: Sequence[int], widths: Sequence[int]) -> list[Case]:
    """Every timed case: spacing sweeps per T and kind, true sharing and one padded thread."""
    cases = [Case(k, tuple(order[:t]), s) for t in counts for k in KINDS for s in widths]
    many = tuple(order[:max(counts)])
    cases += [Case(k, many, TRUE_SHARING) for k in KINDS]
    cases += [Case(k, tuple(order[:1]), widths[-1]) for k in KINDS]
    return cases
