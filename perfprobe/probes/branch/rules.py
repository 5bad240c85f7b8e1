"""Judgement for `perfprobe branch`: pure rules from recorded numbers to findings (docs/probes/branch.md).

A mispredict costs what the core's pipeline depth says, on every host: that is a pass with the
figure and the advice. Warnings are for figures no modern core produces (a clock far from the
reported one, a mispredict cost outside 5..60 cycles) or a host too busy to measure.
"""

from __future__ import annotations

from typing import Callable

from perfprobe.engine.confirm import held_back
from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts
from perfprobe.probes.branch import figures as f
from perfprobe.probes.branch.figures import Raw

# Over CLOCK_HIGH x the reported clock, whichever figure it is: cpufreq's cpuinfo_max_freq under
# acpi-cpufreq is the highest non-boost P-state (base clock), which a boosting core exceeds by up to
# ~1.9x (a 2.0 GHz Xeon turbo at 3.8): a tighter bound on it warned of a broken measurement on
# healthy hosts. 2.2 was already the bound for /proc/cpuinfo's figure, the base clock in most VMs.
CLOCK_LOW, CLOCK_HIGH = 0.6, 2.2
MISPREDICT_MIN, MISPREDICT_MAX = 5.0, 60.0   # cycles; current cores: about 10..25
MAX_SPREAD = 0.30                             # (max - min) / median of a case above this: busy host
ADVICE = ("sort or partition the data before a hot loop; write the decision as branch-free arithmetic "
          "(a mask, a conditional move, a select); move decisions known at build time to compile "
          "time (`if constexpr`, templates); use `[[likely]]`/`__builtin_expect` only where a profile "
          "says which way the branch goes")

Rule = Callable[[Raw, Facts], list[Finding]]


def rule_branch_in_code(raw: Raw, host: Facts) -> list[Finding]:
    """No conditional jump in the branchy loop: every branch figure would measure nothing."""
    if f.branch_in_code(raw):
        return []
    how = (raw.get("check") or {}).get("how", "the compiled code")
    return [Finding(Verdict.ERROR,
                    "the branchy kernel was compiled without a conditional jump in its loop "
                    f"({how}): the compiler turned the branch into a conditional move, a select or "
                    "vector code, so sorted and shuffled data would cost the same and no mispredict "
                    "can be measured",
                    "report this with the JSON output (--json) and the numba and llvmlite versions")]


def rule_clock(raw: Raw, host: Facts) -> list[Finding]:
    """The measured core clock against the one the host reports."""
    measured = f.ghz(raw)
    reported, source = f.reported_ghz(raw)
    text = (f"core clock {measured:.2f} GHz, measured: {raw['clock']['how']}"
            + (f"; the host reports {reported:.2f} GHz ({source})" if reported else "; the host reports none"))
    if reported is None:
        return [Finding(Verdict.PASS, text)]
    if measured < CLOCK_LOW * reported:
        return [Finding(Verdict.WARN, text + f": under {CLOCK_LOW:.0%} of it",
                        "the core ran slower than reported: thermal or power throttling, a power-saving "
                        "governor, or a vCPU time-shared with other guests; cycle figures use the "
                        "measured clock")]
    if measured > CLOCK_HIGH * reported:
        return [Finding(Verdict.WARN, text + f": over {CLOCK_HIGH:.2f}x it",
                        "no core adds faster than one dependent add per cycle: the clock measurement "
                        "is wrong here (an add fused or eliminated?); cycle figures are suspect")]
    return [Finding(Verdict.PASS, text)]


def rule_mispredict(raw: Raw, host: Facts) -> list[Finding]:
    """Cost per mispredicted branch in cycles, against what a modern core does."""
    cyc, per_ns = f.mispredict_cycles(raw), f.mispredict_ns(raw)
    text = (f"a mispredicted branch costs {cyc:.1f} cycles ({per_ns:.2f} ns): shuffled "
            f"{f.ns(raw, 'shuffled'):.2f} ns/element against sorted {f.ns(raw, 'sorted'):.2f}, "
            f"at a {f.MISS_RATE:.0%} miss rate")
    if MISPREDICT_MIN <= cyc <= MISPREDICT_MAX:
        return [Finding(Verdict.PASS, text, ADVICE)]
    return [Finding(Verdict.WARN, text + f", outside the {MISPREDICT_MIN:.0f}..{MISPREDICT_MAX:.0f} "
                    "cycles of any current core",
                    "the measurement was disturbed (a busy host, a vCPU sharing its core, a clock far "
                    "from the real one): rerun on an idle host; " + ADVICE)]


def rule_branch_free(raw: Raw, host: Facts) -> list[Finding]:
    """What the branch-free loop saves on random data and costs on sorted data."""
    check = raw.get("check") or {}
    if check.get("branch_free_has_branch"):
        return [Finding(Verdict.WARN, "the branch-free kernel was compiled with a conditional jump in "
                        "its loop: its figures are not branch-free", "report this with the JSON output")]
    return [Finding(Verdict.PASS,
                    f"branch-free code is {f.branch_free_speedup(raw):.1f}x faster on shuffled data "
                    f"({f.ns(raw, 'branch_free_shuffled'):.2f} ns/element) and costs "
                    f"{f.branch_free_cost_sorted(raw):.2f}x the branchy loop on sorted data",
                    "use it where the data is unpredictable; a predictable branch is cheaper still")]


def rule_period(raw: Raw, host: Facts) -> list[Finding]:
    """How long a repeating pattern the predictor learns."""
    best, first_failed = f.reach(raw)
    points = f.period_points(raw)
    if not points:
        return []
    if first_failed is None:
        text = f"the predictor learned every pattern period tried, up to {points[-1][0]} branches"
    elif best is None:
        text = f"the predictor did not learn even a period-{first_failed} pattern"
    else:
        text = f"the predictor learns a repeating pattern up to a period of {best} branches; at {first_failed} it fails"
    return [Finding(Verdict.PASS, text, "a branch whose directions repeat within that period costs "
                    "about nothing; beyond it, treat it as random")]


def busy(raw: Raw) -> bool:
    return f.worst_case_spread(raw) > MAX_SPREAD


def rule_busy(raw: Raw, host: Facts) -> list[Finding]:
    """Repeats that disagree: another job shared the core. Named, with the figures, as a note (a
    busy host is not a fault of it); `findings` holds back the timing warns that load can produce."""
    if not busy(raw):
        return []
    load = raw.get("loadavg") or []
    return [Finding(Verdict.PASS, f"repeats disagree by up to {f.worst_case_spread(raw):.0%} of their median"
                    + (f" (load average {load[0]:.1f})" if load else "") + ": the host was busy, and the "
                    "timing warns that can produce (clock, mispredict cost) are held back",
                    "rerun on an idle host (or pin with taskset to an idle core)")]


RULES: list[Rule] = [rule_branch_in_code, rule_clock, rule_mispredict, rule_branch_free, rule_period, rule_busy]
LOAD_SENSITIVE = ("rule_clock", "rule_mispredict")


def findings(raw: Raw, host: Facts) -> tuple[Finding, ...]:
    """Every rule in order; with no branch in the compiled loop, only that error; on a busy host
    the clock and mispredict warns held back as notes."""
    missing = rule_branch_in_code(raw, host)
    if missing:
        return tuple(missing)
    loaded = busy(raw)
    return tuple(held_back(item, "the host was busy") if loaded and rule.__name__ in LOAD_SENSITIVE else item
                 for rule in RULES for item in rule(raw, host))
