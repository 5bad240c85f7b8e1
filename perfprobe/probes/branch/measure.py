"""Measure `perfprobe branch`: the core clock, the branchy and branch-free loops, the period sweep.

Only this module (with the kernels) imports numba. It returns plain numbers; figures.py reads them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from perfprobe.engine.probe import ProbeContext
from perfprobe.probes.branch import figures
from perfprobe.probes.branch.plan import (
    PRESETS,
    STOP_AFTER_FAILED,
    THRESHOLD,
    VALUE_RANGE,
    Settings,
    clock_iterations,
    passes,
    periods,
)
from perfprobe.pure.stats import summarize

METHOD = ("numba nopython kernels timed inside compiled code (clock_gettime CLOCK_MONOTONIC) after "
          "one untimed pass; medians of interleaved repeats; cycles = ns x the measured core clock")


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Clock first (the check and the data need no timing), then every case and period."""
    from perfprobe.kernels import branch_kernels as kernels

    settings: Settings = ctx.config.preset(PRESETS)
    check = kernels.branch_check()
    clock = _clock(kernels, settings)
    rng = np.random.default_rng(15)
    data = case_data(rng, settings.elements)
    cases = _cases(ctx, kernels, data, settings)
    sweep = _periods(ctx, kernels, rng, settings, cases)
    return {"method": METHOD, "elements": settings.elements, "threshold": THRESHOLD,
            "value_range": VALUE_RANGE, "taken_fraction": float(np.mean(data["shuffled"] >= THRESHOLD)),
            "clock": clock, "reported_clock": reported_clock(), "loadavg": list(os.getloadavg()),
            "check": check, "cases": cases, "periods": sweep, "quick": ctx.quick,
            "repeats": settings.repeats}


def case_data(rng: np.random.Generator, elements: int) -> dict[str, np.ndarray]:
    """The main cases' values, uniform in 0..VALUE_RANGE - 1: shuffled, and the same sorted
    (bench/bench_branch.py writes these for the C reference)."""
    shuffled = rng.integers(0, VALUE_RANGE, elements).astype(np.int32)
    return {"sorted": np.sort(shuffled), "shuffled": shuffled}


def _clock(kernels: Any, settings: Settings) -> dict[str, Any]:
    """GHz = dependent adds per ns (one add per cycle), median of repeats."""
    ns, _ = kernels.add_chain(1000, 1)
    iters = clock_iterations(ns / 1000, settings.run_ms)
    samples = []
    for _ in range(settings.clock_repeats):
        ns, _ = kernels.add_chain(iters, 1)
        samples.append(iters * kernels.CHAIN / ns)
    return {"ghz": summarize(samples), "adds_per_run": iters * kernels.CHAIN,
            "how": f"a dependent chain of {iters * kernels.CHAIN} register adds (add reg, reg: one "
                   "per core cycle), timed inside compiled code; GHz = adds / ns"}


def _timed(kernel: Callable[..., tuple], values: np.ndarray, reps: int) -> float:
    ns, _ = kernel(values, THRESHOLD, reps)
    return float(ns) / (reps * values.size)


def _cases(ctx: ProbeContext, kernels: Any, data: dict[str, np.ndarray], settings: Settings) -> dict[str, Any]:
    """The four main cases, sized on one probe run each, repeats round-robin."""
    plan = [("sorted", kernels.branchy, data["sorted"]), ("shuffled", kernels.branchy, data["shuffled"]),
            ("branch_free_sorted", kernels.branch_free, data["sorted"]),
            ("branch_free_shuffled", kernels.branch_free, data["shuffled"])]
    reps = {name: passes(_timed(k, v, 1), v.size, settings.run_ms) for name, k, v in plan}
    samples: dict[str, list[float]] = {name: [] for name, _, _ in plan}
    with ctx.progress("branch: cases", settings.repeats * len(plan)) as task:
        for _ in range(settings.repeats):
            for name, kernel, values in plan:
                samples[name].append(_timed(kernel, values, reps[name]))
                task.advance()
    return {name: {"ns_per_element": summarize(s), "passes": reps[name]} for name, s in samples.items()}


def pattern(period: int, elements: int, rng: np.random.Generator) -> np.ndarray:
    """Values repeating with `period`: half of each period at or above the threshold, in random order."""
    taken = np.array([1] * (period // 2) + [0] * (period - period // 2), dtype=bool)
    rng.shuffle(taken)
    low = rng.integers(0, THRESHOLD, period)
    high = rng.integers(THRESHOLD, VALUE_RANGE, period)
    one = np.where(taken, high, low).astype(np.int32)
    return np.tile(one, -(-elements // period))[:elements]


def _periods(ctx: ProbeContext, kernels: Any, rng: np.random.Generator, settings: Settings,
             cases: dict[str, Any]) -> list[dict[str, Any]]:
    """ns per element for each period until STOP_AFTER_FAILED periods in a row are mispredicted."""
    low = cases["sorted"]["ns_per_element"]["median"]
    high = cases["shuffled"]["ns_per_element"]["median"]
    out: list[dict[str, Any]] = []
    failed = 0
    todo = periods(settings.max_period)
    with ctx.progress("branch: periods", len(todo)) as task:
        for period in todo:
            values = pattern(period, settings.elements, rng)
            reps = passes(max(low, _timed(kernels.branchy, values, 1)), values.size, settings.run_ms)
            samples = [_timed(kernels.branchy, values, reps) for _ in range(settings.period_repeats)]
            out.append({"period": period, "ns_per_element": summarize(samples), "passes": reps})
            task.advance()
            failed = failed + 1 if not figures.predicted(out[-1]["ns_per_element"]["median"], low, high) else 0
            if failed >= STOP_AFTER_FAILED:
                break
    return out


def reported_clock(root: Path = Path("/")) -> dict[str, Any]:
    """The clock the host reports: /proc/cpuinfo's `cpu MHz` (median over CPUs) and cpufreq's
    cpuinfo_max_freq for CPU 0 (absent in most VMs)."""
    mhz: list[float] = []
    try:
        for line in (root / "proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("cpu mhz"):
                mhz.append(float(line.split(":")[1]))
    except (OSError, ValueError, IndexError):
        pass
    try:
        max_khz: float | None = float((root / "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text())
    except (OSError, ValueError):
        max_khz = None
    return {"cpuinfo_mhz": float(np.median(mhz)) if mhz else None,
            "max_mhz": max_khz / 1000 if max_khz else None}
