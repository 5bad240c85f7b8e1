"""Confirm before warning: a timing-based `warn` is issued only when a re-measurement agrees.

A rule marks a finding with the measurement keys it rests on (`Finding.confirm`, e.g. ("line",)) and
the number it rests on (`Finding.figure`). When the first judgement holds a warn with keys, the
runner asks the probe's measure module for `remeasure(ctx, raw, keys) -> raw` (that point or sweep
only), judges the new raw numbers again, and `combine` decides, purely:
- the second judgement warns for the same keys too: the warn stands, with both figures;
- it does not: a `pass` note "not confirmed on a re-measurement: FIRST then SECOND", both figures
  in `confirmation`.
Findings without keys (facts: a link width, a governor) are never re-measured. Replaying a
recording, the recorded re-measurement (raw[SECOND_RAW]) is judged instead of measuring.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from perfprobe.engine.model import Finding, Verdict

SECOND_RAW = "confirmation_raw"
"""Where the runner keeps the re-measured raw numbers inside the recorded raw (replay judges them)."""
NOT_CONFIRMED = "not confirmed on a re-measurement"
HELD_BACK = "held back ("
"""How the two kinds of note begin: stability.disturbance counts them by these prefixes."""
NOT_CONFIRMED_ADVICE = ("seen once, not on a second measurement: a transient (other work, one noisy "
                        "sweep), not a fault of this host; rerun if it matters")


def keys_to_confirm(findings: Sequence[Finding]) -> tuple[str, ...]:
    """Every measurement key a warn rests on, in first-seen order (empty: nothing to re-measure)."""
    keys: list[str] = []
    for finding in findings:
        if finding.verdict is Verdict.WARN:
            keys += [key for key in finding.confirm if key not in keys]
    return tuple(keys)


def combine(first: Sequence[Finding], second: Sequence[Finding]) -> tuple[Finding, ...]:
    """The findings to issue: each first warn with keys, confirmed by the second judgement's finding
    for the same keys (a warn too) or turned into a pass note; every other finding as it was."""
    return tuple(_judged_again(finding, second) if finding.verdict is Verdict.WARN and finding.confirm
                 else finding for finding in first)


def _judged_again(finding: Finding, second: Sequence[Finding]) -> Finding:
    again = next((f for f in second if f.confirm == finding.confirm), None)
    agreed = again is not None and again.verdict is Verdict.WARN
    record: dict[str, Any] = {
        "keys": list(finding.confirm), "confirmed": agreed,
        "first": {"message": finding.message, "figure": finding.figure, "verdict": finding.verdict.value},
        "second": ({"message": again.message, "figure": again.figure, "verdict": again.verdict.value}
                   if again is not None else {"message": None, "figure": None, "verdict": None}),
    }
    if agreed:
        return replace(finding, confirmation=record)
    then = again.message if again is not None else "no such finding"
    return Finding(Verdict.PASS, f"{NOT_CONFIRMED}: {finding.message.rstrip('.')} then {then}",
                   NOT_CONFIRMED_ADVICE, confirm=finding.confirm, figure=finding.figure,
                   confirmation=record)


NOT_REMEASURED = "the health check drains on no warn, so it re-measures none"


def not_remeasured(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """Each warn with keys issued as a pass note "not confirmed on a re-measurement (WHY): MESSAGE"
    without measuring again (RunConfig.confirm_warns False); counted as not confirmed, which
    disturbs no run. Every other finding as it was."""
    return tuple(Finding(Verdict.PASS, f"{NOT_CONFIRMED} ({NOT_REMEASURED}): {f.message}", f.advice,
                         confirm=f.confirm, figure=f.figure)
                 if f.verdict is Verdict.WARN and f.confirm else f for f in findings)


def held_back(finding: Finding, why: str) -> Finding:
    """A warn that load (busy CPUs, a shared GPU) can produce, issued as a pass note
    "held back (WHY): MESSAGE" with its advice and figure; other verdicts unchanged. The probes'
    busy-host and shared-GPU rules say WHY."""
    if finding.verdict is not Verdict.WARN:
        return finding
    return Finding(Verdict.PASS, f"{HELD_BACK}{why}): {finding.message}", finding.advice, figure=finding.figure)
