"""Reading the latency curve: working-set sizes to measure, and plateaus found in what was measured.

Pure functions of numbers. A cache level shows as a plateau (latency flat while the working set
fits), then a ramp up to the next plateau. Adjacent hierarchy levels differ by well over 1.6x in
latency on every CPU we know of (L1 ~4-5 cycles, L2 ~12-16, L3 ~40-70, DRAM 200+), while noise and
partial effects within a level (TLB reach, a neighbour's share) move it by less: that is the rule
that groups points into levels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from perfprobe.pure.stats import Stat

MIN_SIZE = 4096
STEP_TOLERANCE = 1.25   # a point joins the running plateau while within 25% of its first point
LEVEL_RATIO = 1.6       # adjacent plateaus closer than this are one level
END_FRACTION = 0.2      # a level ends where latency has risen 20% of the way to the next level


@dataclass(frozen=True)
class Plateau:
    """A run of points at one level: their median latency and the sizes they span."""

    latency_ns: float
    first_size: int
    last_size: int
    points: int
    indices: tuple[int, ...] = ()


@dataclass(frozen=True)
class Level:
    """A level read off the curve: its name, latency, and measured end (None for DRAM); `points`,
    the indices of the curve points its latency was read from, and `stat`, their repeats as one
    figure (figures.level_stat fills it in; None straight off `read_levels`)."""

    name: str
    latency_ns: float
    end_bytes: int | None
    points: tuple[int, ...] = ()
    stat: Optional[Stat] = None


def curve_sizes(max_bytes: int, per_doubling: int, line: int = 64,
                anchors: Sequence[int] = ()) -> list[int]:
    """Working-set sizes from 4 KiB to `max_bytes`, `per_doubling` geometric points per doubling,
    rounded down to whole lines; `max_bytes` itself is always the last point. Each of `anchors`
    (a set a figure is read at: DRAM latency at 2x the LLC) is a point too: it takes the place of
    the nearest point within half a step, so the curve costs no extra point."""
    count = int(math.floor(math.log2(max_bytes / MIN_SIZE) * per_doubling + 1e-9))
    sizes = [int(MIN_SIZE * 2 ** (k / per_doubling)) // line * line for k in range(count + 1)]
    last = max_bytes // line * line
    if sizes[-1] * 2 ** (0.5 / per_doubling) < last:
        sizes.append(last)
    else:
        sizes[-1] = last
    half_step = 2 ** (0.5 / per_doubling)
    for anchor in (a // line * line for a in anchors):
        if not MIN_SIZE <= anchor <= last or anchor in sizes:
            continue
        nearest = min(range(len(sizes) - 1), key=lambda i: abs(math.log(sizes[i] / anchor)), default=None)
        if nearest is not None and max(sizes[nearest], anchor) / min(sizes[nearest], anchor) < half_step:
            sizes[nearest] = anchor  # never the last point: max_bytes stays measured
        else:
            sizes.append(anchor)
    return sorted(set(sizes))


def point_at(sizes: Sequence[int], at_bytes: int) -> int:
    """The index of the curve point a figure read at `at_bytes` comes from: the first size at or
    above it (within a line's rounding), else the largest."""
    for i, size in enumerate(sizes):
        if size >= at_bytes * (1 - 1 / 1024):
            return i
    return len(sizes) - 1


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _runs(ns: Sequence[float]) -> list[list[int]]:
    """Indices grouped into runs: a point joins the run while within STEP_TOLERANCE of its first."""
    runs: list[list[int]] = [[0]]
    for i in range(1, len(ns)):
        if ns[i] <= ns[runs[-1][0]] * STEP_TOLERANCE and ns[i] >= ns[runs[-1][0]] / STEP_TOLERANCE:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def _merge_close(runs: list[list[int]], ns: Sequence[float]) -> list[list[int]]:
    """Join adjacent runs whose medians are within LEVEL_RATIO of each other."""
    merged: list[list[int]] = []
    for run in runs:
        if merged:
            a, b = _median([ns[i] for i in merged[-1]]), _median([ns[i] for i in run])
            if max(a, b) / min(a, b) < LEVEL_RATIO:
                merged[-1] = merged[-1] + run
                continue
        merged.append(run)
    return merged


def _merge_down(runs: list[list[int]], ns: Sequence[float], most: int) -> list[list[int]]:
    """Merge the two adjacent runs closest in latency until at most `most` remain."""
    runs = list(runs)
    while len(runs) > max(most, 1):
        medians = [_median([ns[i] for i in r]) for r in runs]
        ratios = [medians[i + 1] / medians[i] for i in range(len(runs) - 1)]
        i = ratios.index(min(ratios))
        runs[i:i + 2] = [runs[i] + runs[i + 1]]
    return runs


def find_plateaus(sizes: Sequence[int], ns: Sequence[float], min_points: int,
                  most: int | None = None) -> list[Plateau]:
    """Plateaus of a latency curve (sizes ascending): runs of flat points, close runs merged, runs
    shorter than `min_points` (the ramps between levels) dropped, and neighbours merged again —
    down to `most` plateaus when given (the host's levels: noise must not invent one)."""
    if not ns:
        return []
    runs = _merge_close(_runs(ns), ns)
    kept = [r for r in runs if len(r) >= min_points] or [max(runs, key=len)]
    kept = _merge_close(kept, ns)
    if most is not None:
        kept = _merge_down(kept, ns, most)
    return [Plateau(_median([ns[i] for i in r]), sizes[r[0]], sizes[r[-1]], len(r), tuple(r)) for r in kept]


def crossing_size(sizes: Sequence[int], ns: Sequence[float], after: int, threshold: float) -> int:
    """The size, log-interpolated, where the curve rises past `threshold` for good (this point and
    the next above it, so one noisy point does not end a level), searching from size `after`."""
    for i in range(1, len(sizes)):
        stays = i == len(sizes) - 1 or ns[i + 1] > threshold
        if sizes[i] <= after or ns[i] <= threshold or not stays:
            continue
        lo, hi = sizes[i - 1], sizes[i]
        frac = (threshold - ns[i - 1]) / (ns[i] - ns[i - 1]) if ns[i] > ns[i - 1] else 1.0
        frac = min(max(frac, 0.0), 1.0)
        return int(round(lo * (hi / lo) ** frac))
    return sizes[-1]


def _tail(sizes: Sequence[int], plateau_start: int) -> tuple[int, ...]:
    """Indices of the curve's last doubling (from the last plateau's start at the earliest)."""
    tail = tuple(i for i, x in enumerate(sizes) if x >= max(sizes[-1] / 2, plateau_start))
    return tail or (len(sizes) - 1,)


def dram_latency(sizes: Sequence[int], ns: Sequence[float], plateau_start: int) -> float:
    """DRAM latency without a set to read it at (recordings of old callers): the median over the
    last doubling of the curve, not over the whole last plateau, whose first points may still hit
    in a cache."""
    return _median([ns[i] for i in _tail(sizes, plateau_start)])


def read_levels(sizes: Sequence[int], ns: Sequence[float], min_points: int,
                reaches_dram: bool, reported_levels: int | None = None,
                dram_bytes: int | None = None, fixed: Mapping[str, int] | None = None) -> list[Level]:
    """Cache levels L1, L2, … (and DRAM, when the curve goes far enough past the last-level cache)
    with their latency, the size where each ends and the points it was read from; never more cache
    levels than reported. DRAM latency is the point at `dram_bytes` when given (the same set in
    both presets), else the median over the curve's last doubling. A cache level named in `fixed`
    ({"L3": bytes}) takes its latency from the point at that set, not from its plateau (its end
    still comes from the plateaus)."""
    most = None if not reported_levels else reported_levels + (1 if reaches_dram else 0)
    plateaus = find_plateaus(sizes, ns, min_points, most)
    levels = []
    for i, plateau in enumerate(plateaus):
        last = i == len(plateaus) - 1
        if last and reaches_dram and i > 0:
            if dram_bytes is not None:
                at = point_at(sizes, dram_bytes)
                levels.append(Level("DRAM", float(ns[at]), None, (at,)))
            else:
                tail = _tail(sizes, plateau.first_size)
                levels.append(Level("DRAM", dram_latency(sizes, ns, plateau.first_size), None, tail))
            break
        if last:
            end = None  # still on this level at the largest size: its end was not seen
        else:
            nxt = plateaus[i + 1].latency_ns
            threshold = plateau.latency_ns + END_FRACTION * (nxt - plateau.latency_ns)
            end = crossing_size(sizes, ns, plateau.first_size, threshold)
        name = f"L{i + 1}"
        if fixed and name in fixed:
            at = point_at(sizes, fixed[name])
            levels.append(Level(name, float(ns[at]), end, (at,)))
        else:
            levels.append(Level(name, plateau.latency_ns, end, plateau.indices))
    return levels


LINE_RISE = 1.25        # a second load this much dearer than a same-line one missed (DRAM fetch unit)
LINE_STEP = 1.15        # in the L1-miss set: a second load 15% dearer than a same-line one left the line
LINE_NOISE = 3.0        # ... or 3x the spread of the two same-line costs, where that is larger
PAIR_RISE = 0.5         # ... and one halfway to a full second miss fetched a line not yet prefetched


def _first_lasting(offsets: Sequence[int], ns: Sequence[float], threshold: float) -> int | None:
    """The smallest offset from which every cost stays above `threshold`."""
    found = None
    for offset, cost in zip(offsets, ns):
        if cost > threshold:
            found = offset if found is None else found
        else:
            found = None
    return found


def read_line(offsets: Sequence[int], ns: Sequence[float]) -> int | None:
    """Line size from pair costs in a working set that misses L1 only: the smallest offset from
    which every second load costs clearly more than a same-line one (offsets 8 and 16 share a
    line). "Clearly": LINE_STEP above it, or LINE_NOISE times the two same-line costs' spread,
    where that is larger. On Zen 4 an L2 hit adds only ~25% to the pair, so the old 1.25x step
    sat on the noise and read 128 or 512 B (recorded: tests/data/cache_zen4_quick_busy_512.json).
    A rise at the last offset alone is no reading (None): one point cannot show that it lasts. On
    the 2-vCPU EPYC guest (12-07 00:54 UTC) one of ten `all --quick` runs read 512 B that way twice,
    on its measurement and its re-measurement, and warned; ten `cache --quick` runs minutes later
    read 64 B in nine and 512 B in one, not confirmed."""
    if len(ns) < 3:
        return None
    same_line = min(ns[:2])
    margin = max((LINE_STEP - 1) * same_line, LINE_NOISE * (max(ns[:2]) - same_line))
    found = _first_lasting(offsets, ns, same_line + margin)
    return None if found is not None and found == offsets[-1] else found


def read_fetch_unit(offsets: Sequence[int], ns: Sequence[float]) -> int | None:
    """What one DRAM miss really brings in: the smallest offset from which the second load costs
    at least PAIR_RISE of a full second miss. Twice the line when adjacent-line prefetch pairs."""
    if len(ns) < 3:
        return None
    same_line, far = min(ns[:2]), ns[-1]
    if far <= same_line * LINE_RISE:
        return None
    return _first_lasting(offsets, ns, same_line + PAIR_RISE * (far - same_line))
