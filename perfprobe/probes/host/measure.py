"""host measures nothing: its figures are the runner's host facts (ctx.host), recorded beside the
raw numbers, so replaying a recording judges the same facts. One exception, live under a CPU quota:
the cgroup's throttling counters are read again at the end (`cgroup_after`), after a short window
of one busy thread (`window_s`), so the rules can say whether the quota throttled during the run,
with the counts before (the facts) and after."""

from __future__ import annotations

import time
from typing import Any

from perfprobe.engine.probe import ProbeContext
from perfprobe.host.facts import cpu_quota

WINDOW_S = 0.3
"""Three periods of the default 100 ms: long enough for a quota to throttle, short in a health check."""


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Nothing to measure without a quota (an empty raw dict); under one, the throttling counters
    after a short busy window."""
    if ctx.config.fsroot is not None or ctx.host.get("source") != "live" or cpu_quota(ctx.host) is None:
        return {}
    from perfprobe.host.cgroup import throttling_now

    started, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - started < WINDOW_S:
        pass
    return {"cgroup_after": throttling_now(), "window_s": WINDOW_S,
            "window_cpu_s": round(time.process_time() - cpu, 4)}
