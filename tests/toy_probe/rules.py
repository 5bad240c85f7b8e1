"""Pure: thresholds, one rule, RULES, findings()."""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts
from toy_probe import figures

SLOW_NS = 100.0


def rule_slow(raw: Mapping[str, Any], host: Facts) -> list[Finding]:
    ns = figures.ns_per_update(raw)
    if ns > SLOW_NS:
        return [Finding(Verdict.WARN, f"updates take {ns:.0f} ns, over {SLOW_NS:.0f} ns",
                        "update fewer counters (--width)")]
    return [Finding(Verdict.PASS, f"updates take {ns:.0f} ns")]


RULES = [rule_slow]


def findings(raw: Mapping[str, Any], host: Facts) -> tuple[Finding, ...]:
    return tuple(f for rule in RULES for f in rule(raw, host))
