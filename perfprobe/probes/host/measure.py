"""host measures nothing: its figures are the runner's host facts (ctx.host), recorded beside the
raw numbers, so replaying a recording judges the same facts."""

from __future__ import annotations

from typing import Any

from perfprobe.probe import ProbeContext


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Nothing to measure: an empty raw dict (judge reads the host facts)."""
    return {}
