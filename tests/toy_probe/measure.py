"""measure(ctx) -> raw numbers. A toy: 10 ns per counter, the repeats a little apart, no kernel."""

from __future__ import annotations

from typing import Any

from perfprobe.engine.probe import ProbeContext
from perfprobe.pure.stats import summarize
from toy_probe import plan


def measure(ctx: ProbeContext) -> dict[str, Any]:
    counters, repeats = plan.width(ctx.config), ctx.config.preset(plan.PRESETS).repeats
    samples = [10.0 * counters + 0.01 * i for i in range(repeats)]
    return {"width": counters, "ns_per_update": summarize(samples), "method": "made up from --width"}
