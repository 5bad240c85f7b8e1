"""A `--quick` run against its time budget, and the words for one that ran past it.

Each probe declares its budget once (`Declared.quick_budget_s`, from warm runs measured on real
hosts); a run's budget is their sum, over the probes it measured (`assess`), so `all --quick`'s
budget is never a second number written by hand. It is held against the probes' time and compiling ahead,
not perfprobe's start-up (QuickBudget.spent_s). Speed must not buy noise: the budget changes no plan and
no repeats, and a run past it fails nothing; it says where its time went (engine/stages.py), so a
slow probe, a cold numba cache or a re-measurement is named rather than guessed at. Pure: the
runner hands in the results and the wall time; tests hand in fixed numbers.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from perfprobe.engine.model import Overrun, ProbeResult, QuickBudget, Verdict
from perfprobe.engine.registry import declaration
from perfprobe.engine.stages import STAGES

STAGE_WORDS = {"compile": "compile", "measure": "measure", "remeasure": "re-measure", "judge": "judge"}


def declared_budgets(names: Sequence[str]) -> dict[str, float] | None:
    """{probe: its declared --quick budget in seconds}; None when one of them declares none (or is
    not registered: a test's stand-in)."""
    try:
        budgets = {name: declaration(name).quick_budget_s for name in names}
    except KeyError:
        return None
    if any(budget is None for budget in budgets.values()):
        return None
    return {name: float(budget or 0.0) for name, budget in budgets.items()}


def assess(results: Sequence[ProbeResult], budgets: Mapping[str, float], wall_s: float,
           compile_ahead_s: float = 0.0) -> QuickBudget:
    """The run against the sum of its results' budgets: each result is budgeted its probe's
    seconds (a GPU probe once per GPU it ran on), a skipped one nothing (it measured nothing; its
    time still counts in the wall time). `over`: the results past their own budget."""
    budgeted = [(r, 0.0 if _skipped(r) else budgets.get(r.probe, 0.0)) for r in results]
    over = tuple(Overrun(r.probe, r.device, b, r.duration_s, dict(r.stages_s))
                 for r, b in budgeted if not _skipped(r) and r.duration_s > b)
    outside = max(0.0, wall_s - sum(r.duration_s for r in results))
    return QuickBudget(budget_s=sum(b for _, b in budgeted), wall_s=wall_s, outside_s=outside,
                       compile_ahead_s=compile_ahead_s, over=over)


def overrun_text(budget: QuickBudget) -> str:
    """The block a run past its budget prints on stderr: the time held against the budget, the
    budget, the wall time, compiling ahead and, per probe over its own budget, its stages. '' when
    the run fits."""
    if not budget.exceeded:
        return ""
    lines = [f"perfprobe: --quick ran past its budget: {budget.spent_s:.1f} s of {budget.budget_s:.1f} s "
             f"(its probes' budgets summed), {budget.wall_s:.1f} s wall; a slow run fails nothing"]
    if budget.compile_ahead_s >= 0.05:
        lines.append(f"  compiling kernels ahead {budget.compile_ahead_s:.1f} s (numba's cache was cold: "
                     "`perfprobe warmup` fills it once)")
    lines += [f"  {_label(o)} {o.wall_s:.1f} s of {o.budget_s:.1f}: {stage_words(o.stages_s)}" for o in budget.over]
    return "\n".join(lines) + "\n"


def stage_words(stages_s: Mapping[str, float]) -> str:
    """'compile 0.0, measure 9.1, re-measure 4.8, judge 0.2' (every stage, in order)."""
    return ", ".join(f"{STAGE_WORDS[s]} {stages_s.get(s, 0.0):.1f}" for s in STAGES)


def _skipped(result: ProbeResult) -> bool:
    """Skipped before measuring (no GPU, too few CPUs): a skip with no figure."""
    return result.verdict is Verdict.SKIP and not result.metrics


def _label(overrun: Overrun) -> str:
    return overrun.probe if overrun.device is None else f"{overrun.probe}[{overrun.device}]"
