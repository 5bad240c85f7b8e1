"""What a metric means for comparison: which way is better, and whether it is a key figure.

Pure tables keyed by metric name patterns (fnmatch on "probe:metric"; a GPU probe's "[N]" is taken
off first); the key figures come from the probes' declarations. Directions are read by unit, so a
probe added later needs no entry here. No noise band is kept here: the noise of a figure comes
from its own samples (compare.py) and from a baseline's spread across hosts.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache

from perfprobe.engine.registry import PROBE_MODULES, declarations

HIGHER_UNITS = {"GB/s", "GiB/s", "MB/s", "Gops/s", "ops/s", "msg/s"}
LOWER_UNITS = {"ns", "us", "µs", "ms", "s", "ms/GiB", "ns/op"}
RATIO_HIGHER = ("*efficiency*", "*fraction*", "*speedup*")
RATIO_LOWER = ("*slowdown*", "*remote_over_local*", "*host_over_device*")


def key_metrics() -> tuple[str, ...]:
    """Key figures, "probe:pattern": what `compare` judges by default, `fleet` looks for outliers in
    and the health check drains on (the rest is judged by `compare --all`), as each registered
    probe declares them (Declared.key_figures in its declared.py). Each keeps at least five repeats
    in --quick (their docs pages say so), enough for a Mann-Whitney test to reach significance."""
    return _declared(tuple(PROBE_MODULES.items()))[0]


def known_probes() -> set[str]:
    """Probes that declare their key figures (none, for some): a probe that declares none
    (key_figures=None), or one no registry here knows, has its every rate and timing taken for a
    key figure."""
    return set(_declared(tuple(PROBE_MODULES.items()))[1])


@lru_cache(maxsize=4)
def _declared(registered: tuple[tuple[str, str], ...]) -> tuple[tuple[str, ...], frozenset[str]]:
    """(key_metrics, known_probes) of one state of the registry: read once per state, not at every
    is_key (a fleet asks it for every figure of every host)."""
    found = declarations()
    return (tuple(f"{d.name}:{pattern}" for d in found for pattern in d.key_figures or ()),
            frozenset(d.name for d in found if d.key_figures is not None))


KEY_METRICS = key_metrics()
"""The registered probes' key figures when this module was imported (the health check's default
policy); is_key reads the registry as it is, so a probe registered later counts too."""
_DEVICE = re.compile(r"\[\d+\]:")


def generic(key: str) -> str:
    """'pinned[0]:pinned.h2d_gbs' -> 'pinned:pinned.h2d_gbs'."""
    return _DEVICE.sub(":", key, count=1)


def better(key: str, unit: str) -> str | None:
    """'higher', 'lower', or None where the number is a fact rather than a speed (counts, bytes)."""
    if unit in HIGHER_UNITS:
        return "higher"
    if unit in LOWER_UNITS:
        return "lower"
    if unit == "ratio":
        name = generic(key)
        if any(fnmatchcase(name, p) for p in RATIO_HIGHER):
            return "higher"
        if any(fnmatchcase(name, p) for p in RATIO_LOWER):
            return "lower"
    return None


def is_key(key: str, unit: str, patterns: tuple[str, ...] | None = None) -> bool:
    """A key figure: one of `patterns` when given; else one a probe declares (key_metrics), or any
    rate or timing of a probe that declares none (known_probes)."""
    name = generic(key)
    declared, known = _declared(tuple(PROBE_MODULES.items()))
    if any(fnmatchcase(name, p) for p in (patterns or declared)):
        return True
    return patterns is None and name.split(":")[0] not in known and better(key, unit) is not None
