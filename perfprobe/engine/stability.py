"""Which figures are unstable: repeats that disagree, or a figure that breaks a physical relation.

Pure. The runner asks `unstable(metrics, relations, bound)` after judging a probe; a probe with
unstable figures is measured once more, and whatever is still unstable then is marked (`marked`):
the metric carries `unstable` (the reason) and nobody judges it — timing-based warns of that probe
are held back as notes, and compare, fleet and the health check leave the figure out. pyperf's
"the benchmark result may be unstable" is the model; unlike pyperf, perfprobe re-measures first.

A probe declares its relations in `Probe.relations` with the builders below; each probe's
docs page lists them under "Relations".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Mapping, Sequence, Union

from perfprobe.engine.confirm import HELD_BACK, NOT_CONFIRMED, held_back
from perfprobe.engine.model import MOVED, Assessment, Finding, Metric, Verdict

SPREAD_BOUND = 0.10
"""A figure whose repeats' MAD exceeds this fraction of their median is re-measured (pyperf warns
past a standard deviation of 10% of the mean); a probe whose repeats are single messages rather
than runs (ipc) states a wider bound."""
MIN_REPEATS = 5
"""Fewer repeats than this have no spread to judge: the MAD of three is the middle one's distance
to its nearer neighbour, and on a quiet 2-vCPU guest half the quick runs had a 3-repeat figure past
the bound with nothing wrong (cache, 8 of 16). The key figures keep at least five repeats; the
relations still check every figure."""
UNSTABLE_FIGURES = "unstable figures"
"""The reason of a warn held back because a figure it rests on is unstable (not load: disturbance
leaves these out)."""
LOAD_SEEN = "load seen: "
"""How the reason of a figure a load witness marked begins (StandsWhile with `shows_load`): the
probe's own threads saw their CPUs shared while timing, so the whole run is disturbed."""
SECOND_RAW = "instability_raw"
"""Where the runner keeps the second measurement's raw numbers (replay judges them again)."""


@dataclass(frozen=True)
class NotBelow:
    """`subject` is at least `factor` × `reference` (all threads not slower than one: factor 0.9).
    `{}` in both names is filled with each of `each` (levels, sizes)."""

    subject: str
    reference: str
    factor: float
    why: str
    each: tuple[str, ...] = ("",)

    def broken(self, metrics: Mapping[str, Metric]) -> list[tuple[str, str]]:
        out = []
        for part in self.each:
            subject, reference = self.subject.format(part), self.reference.format(part)
            a, b = _number(metrics.get(subject)), _number(metrics.get(reference))
            if a is not None and b is not None and b > 0 and a < self.factor * b:
                out.append((subject, f"{self.why}: {a:.4g} against {reference} {b:.4g}"))
        return out


@dataclass(frozen=True)
class NoFasterThanThreads:
    """`subject` is at most `factor` × N × `single`, N the threads that timed it: the metric
    `threads` where given, else the count in the subject's name, where `subject` holds `{n}` (every
    `dram_read_gbs.t{n}` present). Memory does not read faster than that many single threads; a
    figure that does had its threads' shares sitting in caches one thread's set did not reach (a
    guest's vCPUs on last-level caches it does not report). The subject is named."""

    subject: str
    single: str
    factor: float
    why: str
    threads: str | None = None

    def broken(self, metrics: Mapping[str, Metric]) -> list[tuple[str, str]]:
        one = _number(metrics.get(self.single))
        if one is None or one <= 0:
            return []
        out = []
        for name, count in self._subjects(metrics):
            value = _number(metrics.get(name))
            if value is not None and count > 0 and value > self.factor * count * one:
                out.append((name, f"{self.why}: {value:.4g} against {count} x {self.single} {one:.4g}"))
        return out

    def _subjects(self, metrics: Mapping[str, Metric]) -> list[tuple[str, int]]:
        if "{n}" not in self.subject:
            count = _number(metrics.get(self.threads)) if self.threads else None
            return [(self.subject, int(count))] if count is not None else []
        return _counted(metrics, *self.subject.split("{n}"))


@dataclass(frozen=True)
class AgreesWithTopCount:
    """`subject` agrees with the metric `prefix<N>` of the largest N present within `factor`, both
    ways (factor <= subject / reference <= 1 / factor): the same work timed twice in one run cannot
    differ by more than noise (all threads reading DRAM, and the thread sweep at its largest count,
    each over arrays of its own). Under other work that competes all along both read
    low, and agree. `why` holds `{}` for "slower" or "faster". The subject is named. Where both
    record where their threads sat (Spread.placement) and it differs, or either moved, they timed
    two placements, not the same work, and the relation does not apply.

    Where the reference breaks `plausible` (the sweep's threads read faster than that many single
    threads: their shares sat in caches), the subject is named too, with `cached_why`: the run's
    threads sat where a set of that size fits in caches (a guest's vCPUs on last-level caches it
    does not report), so the subject was timed on a placement other runs may not get, whatever it
    read. On the 2-vCPU EPYC guest (12-06 20:49 UTC) two of ten runs' sweeps read 83 and 87 GB/s on
    two threads (26-28 on one) while their trials read 29 and 60, and compare called the pairs
    with them -21% to -52%; a third run's trials read 63 beside its sweep's 30."""

    subject: str
    prefix: str
    factor: float
    why: str
    plausible: NoFasterThanThreads | None = None
    cached_why: str = "the reference read from caches"

    def broken(self, metrics: Mapping[str, Metric]) -> list[tuple[str, str]]:
        counts = _counted(metrics, self.prefix)
        subject = _number(metrics.get(self.subject))
        if not counts or subject is None:
            return []
        top = f"{self.prefix}{max(count for _, count in counts)}"
        if _placed_otherwise(metrics.get(self.subject), metrics.get(top)):
            return []  # the two timed two placements of their threads: not the same work
        implausible = dict(self.plausible.broken(metrics)) if self.plausible else {}
        if top in implausible:
            return [(self.subject, f"{self.cached_why}: {implausible[top]}")]
        reference = _number(metrics.get(top))
        if reference is None or reference <= 0:
            return []
        if subject < self.factor * reference:
            return [(self.subject, f"{self.why.format('slower')}: {subject:.4g} against {top} {reference:.4g}")]
        if self.factor * subject > reference:
            return [(self.subject, f"{self.why.format('faster')}: {subject:.4g} against {top} {reference:.4g}")]
        return []


@dataclass(frozen=True)
class Ordered:
    """`names` in order, each at most `factor` × the next (latency per level rises: L1 ≤ L2 ≤ …;
    factor 1.1 allows 10% of noise). Where a pair is broken, the one that should be smaller is named."""

    names: tuple[str, ...]
    factor: float
    why: str

    def broken(self, metrics: Mapping[str, Metric]) -> list[tuple[str, str]]:
        present = [(n, v) for n in self.names if (v := _number(metrics.get(n))) is not None]
        out = []
        for (low, a), (high, b) in zip(present, present[1:]):
            if b > 0 and a > self.factor * b:
                out.append((low, f"{self.why}: {a:.4g} against {high} {b:.4g}"))
        return out


@dataclass(frozen=True)
class AtMost:
    """Every metric matching `pattern` is at most `ceiling` (an efficiency above 1, a fraction of a
    link above its rate)."""

    pattern: str
    ceiling: float
    why: str

    def broken(self, metrics: Mapping[str, Metric]) -> list[tuple[str, str]]:
        return [(name, f"{self.why}: {value:.4g} above {self.ceiling:g}")
                for name, metric in metrics.items()
                if fnmatchcase(name, self.pattern) and (value := _number(metric)) is not None
                and value > self.ceiling]


@dataclass(frozen=True)
class StandsWhile:
    """Every metric matching one of `patterns` stands only while `witness` is at least `floor`: a
    figure timed while a condition it assumes did not hold (threads that each keep a core's speed)
    times that condition, not the effect, and the witness is the figure that shows it. Where
    `unless` is above 0 the host breaks the condition by design (threads placed on SMT siblings),
    the witness's low value is the host's own and steady, and the relation does not apply.

    `shows_load`: the witness measures whether the probe's threads kept their CPUs (false sharing's
    padded counters: each thread its own line, so nothing but a shared CPU slows them). Broken,
    it marks its figures with a reason that begins LOAD_SEEN and the run is disturbed
    (`disturbance`): the other figures were timed on the same shared CPUs minutes apart at most.
    On the 16-vCPU Xeon guest of an H100 machine (2026-12-06 07:20) five quiet-looking runs (steal
    0, other processes under 0.5%) kept 0.36-0.87 of one thread's speed, and the same runs' L1
    latency read 1.69-2.29 ns: compare called L1, L2, L3 and DRAM regressions of 12-40%."""

    patterns: tuple[str, ...]
    witness: str
    floor: float
    why: str
    unless: str | None = None
    shows_load: bool = False

    def broken(self, metrics: Mapping[str, Metric]) -> list[tuple[str, str]]:
        excused = _number(metrics.get(self.unless)) if self.unless else None
        seen = _number(metrics.get(self.witness))
        if (excused is not None and excused > 0) or seen is None or seen >= self.floor:
            return []
        said = f"{LOAD_SEEN if self.shows_load else ''}{self.why}: {self.witness} {seen:.3g} below {self.floor:g}"
        return [(name, said)
                for name, metric in metrics.items()
                if any(fnmatchcase(name, p) for p in self.patterns) and _number(metric) is not None]


@dataclass(frozen=True)
class StayedPut:
    """Every metric matching one of `patterns` whose threads moved between placements while it was
    timed (Spread.placement MOVED: a handoff before it and one after it on either side of a shared
    last-level cache) timed two hosts' worth of bandwidth, part of each, and stands for neither."""

    patterns: tuple[str, ...]
    why: str

    def broken(self, metrics: Mapping[str, Metric]) -> list[tuple[str, str]]:
        return [(name, self.why) for name, metric in metrics.items()
                if any(fnmatchcase(name, p) for p in self.patterns)
                and metric.spread is not None and metric.spread.placement == MOVED]


Relation = Union[NotBelow, NoFasterThanThreads, AgreesWithTopCount, Ordered, AtMost, StandsWhile, StayedPut]


def unstable(metrics: Mapping[str, Metric], relations: Sequence[Relation] = (),
             bound: float = SPREAD_BOUND) -> dict[str, str]:
    """{metric: why} for every figure whose repeats disagree beyond `bound` or that breaks a relation."""
    out: dict[str, str] = {}
    for name, metric in metrics.items():
        spread = metric.spread
        relative = spread.relative_mad if spread is not None else None
        if spread is not None and spread.n >= MIN_REPEATS and relative is not None and relative > bound:
            out[name] = f"repeats disagree: MAD {relative:.0%} of the median over {spread.n} repeats (bound {bound:.0%})"
    for relation in relations:
        for name, why in relation.broken(metrics):
            out.setdefault(name, why)
    return out


def marked(assessment: Assessment, found: Mapping[str, str], remeasured: bool,
           rests_on: Mapping[str, tuple[str, ...]] | None = None) -> Assessment:
    """`assessment` with each figure of `found` marked unstable, the timing-based warns that may
    rest on one of them held back, and a note listing what was left out of judgement.

    `rests_on` maps a confirm key to the metric patterns a warn with that key rests on
    (`Probe.rests_on`): such a warn is held back only when one of those figures is unstable. A key
    the probe does not map, or a probe that maps none, holds back every timing warn (it cannot
    say which figure a warn rests on, so none is trusted)."""
    if not found:
        return assessment
    metrics = {name: dataclasses.replace(m, unstable=found[name]) if name in found else m
               for name, m in assessment.metrics.items()}
    findings = tuple(_held_if_unstable(f, found, rests_on or {}) for f in assessment.findings)
    after = "after a re-measurement" if remeasured else "(not re-measured)"
    note = Finding(Verdict.PASS, f"unstable {after}, judged by nobody: "
                   + "; ".join(f"{name} ({why})" for name, why in sorted(found.items())),
                   "the host was busy or its clocks moved while measuring: rerun on a quiet host "
                   "(perfprobe all --quick twice) before reading these figures")
    return dataclasses.replace(assessment, metrics=metrics, findings=findings + (note,))


def _held_if_unstable(finding: Finding, found: Mapping[str, str],
                      rests_on: Mapping[str, tuple[str, ...]]) -> Finding:
    if not finding.confirm:
        return finding
    patterns = [p for key in finding.confirm for p in rests_on.get(key, ("*",))] if rests_on else ["*"]
    under = sorted(name for name in found if any(fnmatchcase(name, p) for p in patterns))
    return held_back(finding, f"{UNSTABLE_FIGURES}: {', '.join(under)}") if under else finding


def _placed_otherwise(a: Metric | None, b: Metric | None) -> bool:
    """Whether two figures recorded where their threads sat and it differs (or either moved)."""
    where = [m.spread.placement if m is not None and m.spread is not None else None for m in (a, b)]
    return None not in where and (where[0] != where[1] or MOVED in where)


def _counted(metrics: Mapping[str, Metric], head: str, tail: str = "") -> list[tuple[str, int]]:
    """(name, N) for every metric named `head` N `tail` (dram_read_gbs.t4: N = 4)."""
    out = []
    for name in metrics:
        middle = name[len(head):len(name) - len(tail)]
        if name.startswith(head) and name.endswith(tail) and middle.isdigit():
            out.append((name, int(middle)))
    return out


def _number(metric: Metric | None) -> float | None:
    if metric is None or metric.unstable or isinstance(metric.value, bool):
        return None
    return float(metric.value) if isinstance(metric.value, (int, float)) else None


STEAL_LIMIT = 0.05
"""A run that lost more than 5% of its CPU time to the hypervisor is disturbed."""
OTHERS_LIMIT = 0.25
"""A run during which other processes used more than a quarter of the host's CPU time is disturbed."""


def busy_because(steal: float | None, others: float | None) -> list[str]:
    """Why the host was too busy for its timings to be judged ([] when it was not): the
    hypervisor's steal and other processes' CPU use (host/load.py), each against its limit."""
    why = []
    if steal is not None and steal > STEAL_LIMIT:
        why.append(f"the hypervisor took {steal:.0%} of the CPU time (over {STEAL_LIMIT:.0%})")
    if others is not None and others > OTHERS_LIMIT:
        why.append(f"other processes used {others:.0%} of the host's CPU time (over {OTHERS_LIMIT:.0%})")
    return why


def disturbance(results: Sequence[tuple[str, Sequence[Finding], Mapping[str, Metric]]],
                measured: Mapping[str, float | int | None]) -> dict[str, object]:
    """How disturbed a run was, and whether compare and the health check may call a regression
    from it. `results`: (probe key, findings, metrics) of each result; `measured`: the run's
    `steal_fraction`, `others_fraction` (host/load.py) and `usable_cpus`. A busy-host or shared-GPU
    hold-back says the probe itself saw the load, and so does a figure a load witness marked
    (LOAD_SEEN); any other unstable figure is left out on its own and does not disturb the rest; a
    warn not confirmed on a re-measurement was a transient, counted."""
    held = [key for key, findings, _ in results for f in findings
            if f.message.startswith(HELD_BACK) and not f.message.startswith(HELD_BACK + UNSTABLE_FIGURES)]
    unconfirmed = sum(f.message.startswith(NOT_CONFIRMED) for _, findings, _ in results for f in findings)
    unstable_count = sum(bool(m.unstable) for _, _, metrics in results for m in metrics.values())
    why = busy_because(measured.get("steal_fraction"), measured.get("others_fraction"))
    if held:
        why.append(f"load held back findings of {', '.join(sorted(set(held)))}")
    why += sorted({f"{key}: {m.unstable[len(LOAD_SEEN):]}" for key, _, metrics in results
                   for m in metrics.values() if m.unstable and m.unstable.startswith(LOAD_SEEN)})
    return {**measured, "held_back": len(held), "not_confirmed": unconfirmed, "unstable": unstable_count,
            "disturbed": bool(why), "why": why}
