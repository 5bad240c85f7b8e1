"""Pure readers of branch's raw numbers: what rules and tables both read."""

from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict, cast

from perfprobe.pure.stats import Stat, relative_spread

MISS_RATE = 0.5          # the miss rate of a branch taken at random half the time
PREDICTED_WITHIN = 0.25  # a period is "predicted" below sorted + 25% of (shuffled - sorted)



class Case(TypedDict, total=False):
    """One timed loop: ns per element over the repeats, and the passes over the array each timed."""

    ns_per_element: Stat
    passes: int
    period: int
    """Only in `periods`: the length of the repeating taken/not-taken pattern."""


class Clock(TypedDict, total=False):
    ghz: Stat
    adds_per_run: int
    how: str


class ReportedClock(TypedDict, total=False):
    cpuinfo_mhz: Optional[float]
    max_mhz: Optional[float]


class Check(TypedDict, total=False):
    """What the compiled code holds: a branch in the branchy loop, none in the branch-free one."""

    branch_in_code: bool
    branch_instructions: list[str]
    branch_free_has_branch: bool
    how: str


class BranchRaw(TypedDict, total=False):
    """What measure() returns (docs/probes/branch.md)."""

    method: str
    elements: int
    threshold: int
    value_range: int
    taken_fraction: float
    clock: Clock
    reported_clock: ReportedClock
    loadavg: list[float]
    check: Check
    cases: dict[str, Case]
    """sorted, shuffled, branch_free_sorted, branch_free_shuffled."""
    periods: list[Case]
    quick: bool
    repeats: int


Raw = BranchRaw


def typed(raw: Mapping[str, Any]) -> BranchRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(BranchRaw, raw)


def case_stat(raw: Raw, case: str) -> Stat:
    """The repeats of one case (sorted, shuffled, branch_free_sorted, branch_free_shuffled), ns per element."""
    return raw["cases"][case]["ns_per_element"]


def clock_stat(raw: Raw) -> Stat:
    """The repeats of the measured core clock, GHz."""
    return raw["clock"]["ghz"]


def ns(raw: Raw, case: str) -> float:
    """Median ns per element of one case (sorted, shuffled, branch_free_sorted, branch_free_shuffled)."""
    return float(case_stat(raw, case)["median"])


def ghz(raw: Raw) -> float:
    return float(clock_stat(raw)["median"])


def cycles(raw: Raw, case: str) -> float:
    return ns(raw, case) * ghz(raw)


def mispredict_ns(raw: Raw) -> float:
    """Extra time of the shuffled run over the sorted one, per miss (half the elements miss)."""
    return (ns(raw, "shuffled") - ns(raw, "sorted")) / MISS_RATE


def mispredict_cycles(raw: Raw) -> float:
    return mispredict_ns(raw) * ghz(raw)


def branch_free_speedup(raw: Raw) -> float:
    """Branchy over branch-free time on shuffled data (what branch-free code saves)."""
    return ns(raw, "shuffled") / ns(raw, "branch_free_shuffled")


def branch_free_cost_sorted(raw: Raw) -> float:
    """Branch-free over branchy time on sorted data (what branch-free code costs when predictable)."""
    return ns(raw, "branch_free_sorted") / ns(raw, "sorted")


def predicted(value_ns: float, sorted_ns: float, shuffled_ns: float) -> bool:
    """Whether a time per element is close to the predicted (sorted) one."""
    return value_ns <= sorted_ns + PREDICTED_WITHIN * (shuffled_ns - sorted_ns)


def period_stats(raw: Raw) -> list[tuple[int, Stat]]:
    """(period, the repeats of its ns per element) of the pattern sweep."""
    return [(int(p["period"]), cast(Stat, p["ns_per_element"])) for p in raw.get("periods") or []]


def period_points(raw: Raw) -> list[tuple[int, float]]:
    return [(period, float(stat["median"])) for period, stat in period_stats(raw)]


def reach(raw: Raw) -> tuple[Optional[int], Optional[int]]:
    """(longest period predicted with every shorter one, the first period that was not; None
    when the sweep never failed)."""
    best: Optional[int] = None
    for period, value in period_points(raw):
        if not predicted(value, ns(raw, "sorted"), ns(raw, "shuffled")):
            return best, period
        best = period
    return best, None


def reported_ghz(raw: Raw) -> tuple[Optional[float], str]:
    """(the host's reported clock in GHz, which figure it is): cpufreq's maximum, else cpuinfo."""
    rep = raw.get("reported_clock") or ReportedClock()
    max_mhz, cpuinfo_mhz = rep.get("max_mhz"), rep.get("cpuinfo_mhz")
    if max_mhz:
        return float(max_mhz) / 1000, "cpufreq cpuinfo_max_freq"
    if cpuinfo_mhz:
        return float(cpuinfo_mhz) / 1000, "/proc/cpuinfo cpu MHz"
    return None, "none reported"


def worst_case_spread(raw: Raw) -> float:
    """The widest spread of the clock and the four main cases."""
    stats = [raw["clock"]["ghz"]] + [c["ns_per_element"] for c in raw["cases"].values()]
    return max(relative_spread(s) for s in stats)


def branch_in_code(raw: Raw) -> bool:
    return bool((raw.get("check") or {}).get("branch_in_code"))
