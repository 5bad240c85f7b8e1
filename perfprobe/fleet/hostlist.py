"""Slurm hostlist expressions ('n[1-3,7],gpu01'), expanded without calling scontrol."""

from __future__ import annotations

import re

from perfprobe.errors import UsageError

MAX_HOSTS = 100_000
_PART = re.compile(r"([^,\[]+)(?:\[([^\]]+)\])?([^,\[]*)")


def expand(text: str) -> list[str]:
    """'n[1-3],x' -> ['n1', 'n2', 'n3', 'x']; zero padding kept ('n[01-02]' -> n01, n02)."""
    hosts: list[str] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _PART.match(text, position)
        if not match:
            raise UsageError(f"--expect {text}: not a host list (a,b,c or n[1-3])")
        prefix, ranges, suffix = match.groups()
        hosts += [prefix + n + suffix for n in _numbers(ranges, text)] if ranges else [prefix + suffix]
        position = match.end() + 1
        if len(hosts) > MAX_HOSTS:
            raise UsageError(f"--expect: more than {MAX_HOSTS} hosts")
    return [h for h in hosts if h]


def _numbers(ranges: str, text: str) -> list[str]:
    out: list[str] = []
    for item in ranges.split(","):
        low, _, high = item.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise UsageError(f"--expect {text}: '{item}' is not a number or a range like 1-3")
        width = len(low)
        end = int(high or low)
        if end - int(low) > MAX_HOSTS:
            raise UsageError(f"--expect {text}: range {item} is too long")
        out += [str(n).zfill(width) for n in range(int(low), end + 1)]
    return out
