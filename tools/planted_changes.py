"""`make bench-planted`: plant a slowdown of each key figure in a recorded run; does compare find it?

For each key figure (cache latency per level, DRAM read on one and on all threads, false sharing's
atomic update at 64 B, pinned H2D, the GPU's DRAM read) and each factor (1.05 … 1.30) this scales
the raw repeats behind the figure in one run's recording, in the slower direction: a latency or a
time times the factor, a rate divided by it (`--rates value`: times 2 - factor, so 1.15 is -15%).
Each scaled Stat has its median, min, max, MAD, IQR and samples scaled, in the raw numbers and in
the recorded re-measurements (confirm's and stability's second raw). The planted recording is
replayed (`perfprobe PROBE --quick --replay`) and judged two ways:

- compare: `perfprobe compare --json` of run i's report (BASE) against run j's planted replay
  (NEW), i != j, so the real noise between two runs is in every trial;
- healthcheck: fleet/healthcheck.py's `problems` of run j's planted replay against the baseline
  `perfprobe fleet --baseline-out` builds from the other runs' reports, confirmed (as the health
  check re-measures before it drains) on run k's planted replay, k != j. A trial counts as found
  when the drain names the planted figure.

Before that, the planting is checked: the replayed figure must move by the factor (and the other
planted figures of that probe must not move), or the trial would test nothing. It prints, per
figure, the smallest factor found in every trial by compare and by the health check, and "k of
n" at `--require` (1.15); exit 0 only when, there, every figure's planting landed and compare and
the health check found it in every trial. A miss is named by what the judgement called the figure
("no significant change", "untested", "unstable", "disturbed run", …). A trial on a run that marked
the figure unstable itself (before any planting) is left out and counted as such: nobody judges it.

Input: `--runs DIR` (the runNN.json + runNN.rec.json that `make bench-compare` keeps), or
`--recording FILE` (one recording, e.g. in tests/data: BASE is then its own unplanted replay, so no
run-to-run noise is in the test: it checks the planting and the judgement's minimum effect only).
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_stability import compare_pair, ensure_doc, recording_of, run_reports  # noqa: E402
from verdict_stability import host_label, host_section, write_section  # noqa: E402

FACTORS = (1.05, 1.10, 1.15, 1.20, 1.30)
REQUIRE = 1.15
SECOND_KEYS = ("confirmation_raw", "instability_raw")
"""Where a raw dict keeps its re-measurements (confirm.SECOND_RAW, stability.SECOND_RAW): a replay
judges those too, so they are planted alike."""
SCALED = ("median", "min", "max", "mad", "iqr")
Stat = dict[str, Any]


@dataclass(frozen=True)
class Figure:
    """One key figure: its name, the recording's raw key ("cache", "pinned[0]"), the metric, and
    which raw numbers it is computed from (`part`, a key of SELECTORS)."""

    name: str
    record: str
    metric: str
    part: str

    @property
    def key(self) -> str:
        """The figure as compare and the health check name it: 'pinned[0]:pinned.h2d_gbs'."""
        return f"{self.record}:{self.metric}"

    @property
    def probe(self) -> str:
        return self.record.split("[")[0]

    @property
    def device(self) -> int | None:
        return int(self.record.split("[")[1].rstrip("]")) if "[" in self.record else None

    @property
    def rate(self) -> bool:
        return self.part in ("dram_read_1t", "dram_read_all", "pinned_h2d", "gpumem_read")


# Which raw numbers each key figure is computed from, and what each is multiplied by.
Scaled = list[tuple[Stat, float]]


def _level_ranges(raw: Mapping[str, Any], host: Mapping[str, Any]) -> tuple[list[Any], list[tuple[int, int]]]:
    """The cache levels read off the curve and, for each, the curve's index range of its plateau
    (first to last point; the last level's to the curve's end), found as figures.levels_of finds
    them. ValueError when the two readings disagree (the probe reads levels some other way now)."""
    from perfprobe.probes.cache.curve import find_plateaus
    from perfprobe.probes.cache.figures import medians, read_figures
    from perfprobe.probes.cache.plan import reaches_dram

    fig = read_figures(raw, host)
    sizes, ns = list(raw["curve"]["sizes_bytes"]), medians(raw["curve"]["latency_ns"])
    reported = len(fig.reported)
    most = None if not reported else reported + (1 if reaches_dram(int(raw["plan"]["max_bytes"]), fig.llc_bytes) else 0)
    plateaus = find_plateaus(sizes, ns, int(raw["plan"]["min_points"]), most)
    if len(plateaus) != len(fig.levels):
        raise ValueError(f"{len(plateaus)} plateaus for {len(fig.levels)} levels")
    ranges = [(sizes.index(p.first_size), sizes.index(p.last_size)) for p in plateaus]
    ranges[-1] = (ranges[-1][0], len(sizes) - 1)
    return list(fig.levels), ranges


def _latency_level(raw: Mapping[str, Any], host: Mapping[str, Any], level: str, factor: float) -> Scaled:
    """One cache level `factor` times slower, on the latency curve: its plateau's points (and the
    points its latency is read from, `Level.points` where the probe keeps them) times `factor`; each
    point on the ramps beside it, a mix of this level and its neighbour, slowed by the share of
    this level in it ((next - v) / (next - this) on the way up to the next level, (v - previous) /
    (this - previous) on the way up from the previous one), so the ramps stay between the levels and
    the levels read off the curve stay where they were (no point slower by more than `factor`).
    Points other levels are read from stay."""
    try:
        levels, ranges = _level_ranges(raw, host)
        curve = raw["curve"]["latency_ns"]
    except (KeyError, TypeError, ValueError, IndexError):
        return []
    names = [lv.name for lv in levels]
    if level not in names:
        return []
    k = names.index(level)
    ns = [float(p["median"]) for p in curve]
    lat = [float(lv.latency_ns) for lv in levels]
    own = set(range(ranges[k][0], ranges[k][1] + 1)) | set(getattr(levels[k], "points", ()) or ())
    others = {i for j, lv in enumerate(levels) if j != k for i in (getattr(lv, "points", ()) or ())}
    out: Scaled = []
    for i, point in enumerate(curve):
        share = None
        if i in own:
            share = 1.0
        elif i in others:
            continue
        elif k + 1 < len(levels) and ranges[k][1] < i < ranges[k + 1][0] and lat[k + 1] > lat[k]:
            share = (lat[k + 1] - ns[i]) / (lat[k + 1] - lat[k])
        elif k > 0 and ranges[k - 1][1] < i < ranges[k][0] and lat[k] > lat[k - 1]:
            share = (ns[i] - lat[k - 1]) / (lat[k] - lat[k - 1])
        if share is not None and ns[i] > 0:
            share = min(max(share, 0.0), 1.0)
            out.append((point, min(factor, (ns[i] + share * (factor - 1) * lat[k]) / ns[i])))
    return out


def _dram_read(raw: Mapping[str, Any], threads: str) -> list[Stat]:
    """cache raw["bandwidth"]["DRAM"]["read_gbs"]["1t"|"all"] (and the all-thread run it replaced);
    for "all" also the thread sweep's read at every count above one: a slower memory system slows
    both, and the relation that keeps the two in step (cache's AgreesWithTopCount) must not take a
    planted change for an unstable figure."""
    rates = ((raw.get("bandwidth") or {}).get("DRAM") or {}).get("read_gbs") or {}
    names = ("1t",) if threads == "1t" else ("all", "first_all")
    found = [rates[n] for n in names if isinstance(rates.get(n), dict)]
    sweep = raw.get("sweep") or {}
    if threads == "all" and found and isinstance(sweep.get("read_gbs"), list):
        found += [stat for count, stat in zip(sweep.get("threads") or [], sweep["read_gbs"])
                  if isinstance(stat, dict) and count > 1]
    return found


def _falseshare_atomic_64(raw: Mapping[str, Any]) -> list[Stat]:
    """The atomic case at 64 B spacing with the many-thread count (what ns_per_update.atomic.64B reads)."""
    threads = raw.get("threads")
    return [c["ns_per_update"] for c in raw.get("cases") or []
            if c.get("kind") == "atomic" and c.get("threads") == threads and c.get("spacing_bytes") == 64
            and isinstance(c.get("ns_per_update"), dict)]


def _timed(entry: Mapping[str, Any], rate: str, time_key: str) -> list[tuple[Stat, bool]]:
    """A copy's rate and its time, (Stat, is a rate)."""
    return [(entry[k], is_rate) for k, is_rate in ((rate, True), (time_key, False)) if isinstance(entry.get(k), dict)]


def _pinned_h2d(raw: Mapping[str, Any]) -> list[tuple[Stat, bool]]:
    """Every pinned H2D copy size (GB/s and its device time); the metric is the largest size's."""
    return [s for entry in ((raw.get("pinned") or {}).get("h2d") or []) for s in _timed(entry, "gbs", "device_ms")]


def _gpumem_read(raw: Mapping[str, Any]) -> list[tuple[Stat, bool]]:
    """The DRAM read kernel's GB/s and its time."""
    return _timed(((raw.get("dram") or {}).get("read") or {}), "gbs", "ms")


def _each(found: Sequence[tuple[Stat, bool]], factor: float, rates: str) -> Scaled:
    return [(stat, scale_by(factor, is_rate, rates)) for stat, is_rate in found]


Selector = Callable[[Mapping[str, Any], Mapping[str, Any], "Figure", float, str], Scaled]
SELECTORS: dict[str, Selector] = {
    "latency": lambda raw, host, fig, f, rates: _latency_level(raw, host, fig.metric.split(".", 1)[1], f),
    "dram_read_1t": lambda raw, host, fig, f, rates: _each([(s, True) for s in _dram_read(raw, "1t")], f, rates),
    "dram_read_all": lambda raw, host, fig, f, rates: _each([(s, True) for s in _dram_read(raw, "all")], f, rates),
    "falseshare_atomic_64": lambda raw, host, fig, f, rates: _each(
        [(s, False) for s in _falseshare_atomic_64(raw)], f, rates),
    "pinned_h2d": lambda raw, host, fig, f, rates: _each(_pinned_h2d(raw), f, rates),
    "gpumem_read": lambda raw, host, fig, f, rates: _each(_gpumem_read(raw), f, rates),
}


def figures_in(recording: Mapping[str, Any]) -> list[Figure]:
    """The key figures this recording holds the raw numbers of, in the order they are printed."""
    from perfprobe.probes.cache.figures import read_figures

    host, raws = recording["host"], recording["raw"]
    out: list[Figure] = []
    if isinstance(raws.get("cache"), dict):
        for level in read_figures(raws["cache"], host).levels:
            out.append(Figure(f"cache latency {level.name}", "cache", f"latency_ns.{level.name}", "latency"))
        for threads in ("1t", "all"):
            if _dram_read(raws["cache"], threads):
                out.append(Figure(f"DRAM read {threads}", "cache", f"read_gbs.DRAM.{threads}", f"dram_read_{threads}"))
    if isinstance(raws.get("falseshare"), dict) and _falseshare_atomic_64(raws["falseshare"]):
        out.append(Figure("falseshare atomic 64 B", "falseshare", "ns_per_update.atomic.64B", "falseshare_atomic_64"))
    for key in sorted(raws):
        if key.startswith("pinned[") and _pinned_h2d(raws[key]):
            out.append(Figure(f"{key} H2D", key, "pinned.h2d_gbs", "pinned_h2d"))
    for key in sorted(raws):
        if key.startswith("gpumem[") and _gpumem_read(raws[key]):
            out.append(Figure(f"{key} DRAM read", key, "dram_gbs.read", "gpumem_read"))
    return out


def scale_by(factor: float, is_rate: bool, rates: str = "time") -> float:
    """What a Stat is multiplied by: a time by the factor; a rate divided by it ("time": the same
    work takes `factor` times as long) or, `rates="value"`, by 2 - factor (1.15: 15% lower)."""
    if not is_rate:
        return factor
    return 1.0 / factor if rates == "time" else 2.0 - factor


def scale_stat(stat: Stat, by: float) -> None:
    """Scale one recorded Stat in place: the median, extremes, spreads and samples (counts stay)."""
    for name in SCALED:
        value = stat.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            stat[name] = value * by
    if isinstance(stat.get("samples"), list):
        stat["samples"] = [s * by if isinstance(s, (int, float)) and not isinstance(s, bool) else s
                           for s in stat["samples"]]


def _plant_raw(raw: dict[str, Any], host: Mapping[str, Any], figure: Figure, factor: float, rates: str) -> int:
    """Scale the figure's Stats in `raw` and its re-measurements; how many Stats were scaled. The
    Stats to scale are all found before any is scaled (the cache levels are read off the curve)."""
    found = SELECTORS[figure.part](raw, host, figure, factor, rates)
    seen: set[int] = set()
    for stat, by in found:
        if id(stat) not in seen:
            seen.add(id(stat))
            scale_stat(stat, by)
    touched = len(seen)
    for key in SECOND_KEYS:
        if isinstance(raw.get(key), dict):
            touched += _plant_raw(raw[key], host, figure, factor, rates)
    return touched


def plant(recording: Mapping[str, Any], figure: Figure, factor: float, rates: str = "time") -> dict[str, Any]:
    """A copy of `recording` with `figure` slowed down by `factor`; ValueError when nothing behind
    the figure was found to scale."""
    planted = copy.deepcopy(dict(recording))
    raw = planted["raw"].get(figure.record)
    if not isinstance(raw, dict) or not _plant_raw(raw, planted["host"], figure, factor, rates):
        raise ValueError(f"{figure.name}: no raw numbers behind {figure.key} in this recording")
    return planted


def expected_ratio(figure: Figure, factor: float, rates: str = "time") -> float:
    """new / base the planted figure should show."""
    return scale_by(factor, figure.rate, rates)


# Running perfprobe

def perfprobe_json(args: Sequence[str]) -> tuple[int, dict[str, Any] | None, str]:
    proc = subprocess.run([sys.executable, "-m", "perfprobe", *args], capture_output=True, text=True, timeout=600)
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except ValueError:
        return proc.returncode, None, proc.stderr


def replay(recording: Path, probe: str, device: int | None, out: Path) -> dict[str, Any]:
    """`perfprobe PROBE --quick --replay RECORDING --json` (`--device N` for a GPU probe; PROBE
    `all` replays every device), its report also written to `out` for compare."""
    args = [probe, "--quick", "--json", "--replay", str(recording)]
    if device is not None:
        args += ["--device", str(device)]
    elif probe == "all":
        args += ["--device", "all"]
    code, report, stderr = perfprobe_json(args)
    if report is None:
        raise RuntimeError(f"perfprobe {' '.join(args)} exited {code} without a report: {stderr.strip()[-300:]}")
    out.write_text(json.dumps(report))
    return report


def metric_of(report: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """The metric dict ({"value", "unit", "stats", "unstable"}) of 'record:metric' in a report."""
    from perfprobe.fleet.reports import result_key

    record, _, name = key.partition(":")
    for result in report.get("results") or []:
        if result_key(result) == record:
            found = (result.get("metrics") or {}).get(name)
            return found if isinstance(found, dict) else None
    return None


def build_baseline(reports: Sequence[Path], out: Path) -> dict[str, Any]:
    """`perfprobe fleet --baseline-out OUT REPORT...` (exit 1 on an outlier is fine: it still writes)."""
    code, _, stderr = perfprobe_json(["fleet", "--json", "--baseline-out", str(out), *map(str, reports)])
    if not out.exists():
        raise RuntimeError(f"perfprobe fleet exited {code} without writing {out}: {stderr.strip()[-300:]}")
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def health_drains(report: Mapping[str, Any], again: Mapping[str, Any], baseline: Mapping[str, Any],
                  key: str, policy: Any = None) -> tuple[bool, list[str]]:
    """(whether the health check drains on `key`, everything it would drain on): fleet/healthcheck.py's
    problems against the baseline group of this hardware, each metric problem kept only if the
    re-measurement (`again`) shows it too, as `perfprobe healthcheck` confirms before draining."""
    from perfprobe.fleet import baseline as bl
    from perfprobe.fleet import healthcheck as hc

    rules = hc.DEFAULT_POLICY if policy is None else policy
    group = bl.group_for(baseline, report["host"], "baseline")
    found = hc.problems(report, group, rules)
    if hc.regressed_metrics(found):
        found = hc.confirmed(found, hc.problems(again, group, rules))
    return key in hc.regressed_metrics(found), found


def health_kind(report: Mapping[str, Any], baseline: Mapping[str, Any], key: str, policy: Any = None) -> str:
    """What the health check's judgement of one figure called it when it did not drain (compare.judge
    against the baseline group, as healthcheck.py judges): "untested", "no significant change", …"""
    from perfprobe.fleet import baseline as bl
    from perfprobe.fleet import compare as cmp
    from perfprobe.fleet import healthcheck as hc

    rules = hc.DEFAULT_POLICY if policy is None else policy
    try:
        base = bl.reference(bl.group_for(baseline, report["host"], "baseline"))
        new = cmp.report_reference(report)
        if key not in base or key not in new:
            return "not in the baseline" if key not in base else "not in the report"
        kind = str(cmp.judge(key, base[key], new[key], rules.regression).kind)
        return "regression, not confirmed on the re-measurement" if kind == "regression" else kind
    except (AttributeError, TypeError, KeyError, ValueError) as exc:  # the judgement's internals moved
        return f"not drained ({type(exc).__name__})"


def health_judges(key: str, unit: str, policy: Any = None) -> bool:
    """Whether the health check's policy judges this figure at all (its `metrics` patterns)."""
    from perfprobe.fleet import healthcheck as hc
    from perfprobe.fleet import metrics as m

    rules = hc.DEFAULT_POLICY if policy is None else policy
    return m.is_key(key, unit, tuple(rules.metrics))


# Planning and tallying

@dataclass
class Run:
    name: str
    report: Path          # the live run's report (single-recording mode: the recording's own replay)
    recording: Path
    data: dict[str, Any]

    @property
    def disturbed(self) -> list[str]:
        return disturbed(self.data)


def disturbed(report: Mapping[str, Any]) -> list[str]:
    """Why a report's run marked itself disturbed ([] when it did not)."""
    record = report.get("disturbance")
    if not isinstance(record, dict) or record.get("disturbed") is not True:
        return []
    return [str(w) for w in record.get("why") or []] or ["marked disturbed"]


def unstable_in(report: Mapping[str, Any], key: str) -> bool:
    """Whether the run itself marked figure `key` unstable: nobody judges it, so a slowdown planted
    in it (or a BASE holding it) tests nothing; such a trial is left out, and the tally says so."""
    return bool((metric_of(report, key) or {}).get("unstable"))


def compare_trials(runs: int, trials: int) -> list[tuple[int, int]]:
    """(base i, new j) for each compare trial: j runs through every run, i a different run each time
    round (offsets 1, 2, …); with one run, (0, 0)."""
    if runs == 1:
        return [(0, 0)] * trials
    out = []
    for t in range(trials):
        j = t % runs
        offset = 1 + (t // runs) % (runs - 1)
        out.append(((j + offset) % runs, j))
    return out


def health_trials(runs: int, trials: int) -> list[tuple[int, int]]:
    """(judged j, confirmed on k) for each health trial; the baseline is every run but j."""
    return [(t % runs, (t % runs + 1) % runs) for t in range(trials)]


@dataclass
class Tally:
    """One figure at one factor: trials, how many found it, and what the others were judged."""

    trials: int = 0
    found: int = 0
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    others: int = 0     # trials that also called (or drained on) another figure
    left_out: int = 0   # trials on a run whose own (unplanted) figure was unstable: nothing to find

    def add(self, found: bool, outcome: str, others: bool) -> None:
        self.trials += 1
        self.found += found
        self.outcomes[outcome] += 1
        self.others += others

    def leave_out(self) -> None:
        self.left_out += 1

    def cell(self) -> str:
        """"k of n", with the trials left out named."""
        return f"{self.found} of {self.trials}" + (f" ({self.left_out} left out)" if self.left_out else "")

    @property
    def all_found(self) -> bool:
        return self.trials > 0 and self.found == self.trials

    def text(self) -> str:
        missed = ", ".join(f"{kind} {n}" for kind, n in self.outcomes.most_common() if kind != "found")
        left = f"{self.left_out} left out: the figure unstable in the run itself" if self.left_out else ""
        said = ", ".join(x for x in (missed, left) if x)
        return f"{self.found} of {self.trials}" + (f" ({said})" if said else "")


def smallest_found(tallies: Mapping[float, Tally]) -> float | None:
    """The smallest factor found in every trial (and at every larger factor tried)."""
    best = None
    for factor in sorted(tallies, reverse=True):
        if not tallies[factor].all_found:
            break
        best = factor
    return best


TOLERANCE = 0.01
"""How far the replayed figure may land from the planted factor (relative), beside rounding."""


def planting_check(figure: Figure, factor: float, before: Mapping[str, Any], after: Mapping[str, Any],
                   others: Iterable[Figure], rates: str = "time") -> list[str]:
    """What is wrong with one planting ([] when right): the replayed figure must move by the
    factor (within TOLERANCE and the report's rounding) and the probe's other planted figures must
    not move. (A figure the planting makes unstable has moved right: compare's "unstable" says it.)"""
    problems = []
    old, new = metric_of(before, figure.key), metric_of(after, figure.key)
    if not old or not new or not isinstance(old.get("value"), (int, float)) or not isinstance(new.get("value"), (int, float)):
        return [f"{figure.key} missing from the replay"]
    want = expected_ratio(figure, factor, rates)
    got = new["value"] / old["value"] if old["value"] else math.nan
    if not abs(got - want) <= (TOLERANCE + 0.006 / abs(old["value"] or 1)) * want:  # metrics keep 2 decimals
        problems.append(f"{figure.key} moved x{got:.4f}, planted x{want:.4f}")
    for other in others:
        if other.record != figure.record or other == figure:
            continue
        a, b = ((metric_of(report, other.key) or {}).get("value") for report in (before, after))
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a != b and (
                not a or abs(b / a - 1) > TOLERANCE + 0.006 / abs(a)):
            problems.append(f"{other.key} moved too ({a} -> {b})")
    return problems


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


# The bench

class Bench:
    """Plans the replays, runs them (in parallel) and tallies compare's and the health check's findings."""

    def __init__(self, runs: list[Run], figures: list[Figure], factors: Sequence[float], work: Path,
                 args: argparse.Namespace) -> None:
        self.runs, self.figures, self.factors, self.work, self.args = runs, figures, factors, work, args
        self.recordings = [json.loads(r.recording.read_text()) for r in runs]
        self.pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
        self.replays: dict[tuple[str, float, int], Path] = {}
        from perfprobe.fleet import healthcheck as hc

        self.policy = hc.load_policy(args.policy)   # the site's --policy FILE, as healthcheck reads it

    def replay_path(self, figure: Figure, factor: float, j: int) -> Path:
        return self.work / f"{slug(figure.name)}_{factor:.2f}_{self.runs[j].name}.json"

    def _replay(self, figure: Figure, factor: float, j: int) -> Path:
        out = self.replay_path(figure, factor, j)
        recording = self.work / (out.stem + ".rec.json")
        planted = self.recordings[j] if factor == 1.0 else plant(self.recordings[j], figure, factor, self.args.rates)
        recording.write_text(json.dumps(planted))
        replay(recording, figure.probe, figure.device, out)
        return out

    def run_replays(self, wanted: set[tuple[Figure, float, int]]) -> None:
        jobs = {key: self.pool.submit(self._replay, *key) for key in sorted(wanted, key=str)}
        for (figure, factor, j), job in jobs.items():
            self.replays[(figure.name, factor, j)] = job.result()

    def report(self, figure: Figure, factor: float, j: int) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.replays[(figure.name, factor, j)].read_text())
        return data

    def left_out(self, key: str, *runs: int) -> bool:
        """Whether any of these runs marked figure `key` unstable itself (the trial tests nothing)."""
        return any(unstable_in(self.runs[r].data, key) for r in runs)

    def compare(self, pairs: list[tuple[int, int]]) -> dict[tuple[str, float], Tally]:
        tallies: dict[tuple[str, float], Tally] = collections.defaultdict(Tally)
        jobs = {}
        for f in self.figures:
            for factor in self.factors:
                for t, (i, j) in enumerate(pairs):
                    if self.left_out(f.key, i, j):
                        tallies[(f.name, factor)].leave_out()
                    else:
                        jobs[(f.name, factor, t)] = self.pool.submit(
                            compare_pair, self.runs[i].report, self.replays[(f.name, factor, j)], self.args.compare_arg)
        keys = {f.name: f.key for f in self.figures}
        for (name, factor, _), job in jobs.items():
            result = job.result()
            called = {metric for metric, _ in result.regressions}
            if result.error:
                outcome = f"error: {result.error[:80]}"
            elif keys[name] in called:
                outcome = "found"
            elif result.disturbed:
                outcome = "disturbed run"
            else:
                outcome = result.kinds.get(keys[name], "not judged")
            tallies[(name, factor)].add(outcome == "found", outcome, bool(called - {keys[name]}))
        return tallies

    def health(self, trials: list[tuple[int, int]]) -> dict[tuple[str, float], Tally]:
        baselines: dict[int, dict[str, Any]] = {}
        for j in sorted({j for j, _ in trials}):
            others = [r.report for i, r in enumerate(self.runs) if i != j] or [self.runs[j].report]
            baselines[j] = build_baseline(others, self.work / f"baseline_without_{self.runs[j].name}.json")
        tallies: dict[tuple[str, float], Tally] = collections.defaultdict(Tally)
        for figure in self.figures:
            for factor in self.factors:
                for j, k in trials:
                    if self.left_out(figure.key, j, k):
                        tallies[(figure.name, factor)].leave_out()
                        continue
                    report, again = self.report(figure, factor, j), self.report(figure, factor, k)
                    if disturbed(report):
                        tallies[(figure.name, factor)].add(False, "disturbed run", False)
                        continue
                    drained, found = health_drains(report, again, baselines[j], figure.key, self.policy)
                    metric = metric_of(report, figure.key) or {}
                    outcome = "found" if drained else (
                        "not a health-check figure" if not health_judges(figure.key, str(metric.get("unit", "")), self.policy)
                        else health_kind(report, baselines[j], figure.key, self.policy))
                    tallies[(figure.name, factor)].add(drained, outcome, any(not p.startswith(figure.key + " ") for p in found))
        return tallies


def load_runs(args: argparse.Namespace, work: Path) -> tuple[list[Run], list[str]]:
    """The runs to plant in (disturbed runs left out unless --keep-disturbed), and notes."""
    notes: list[str] = []
    if args.recording is not None:
        base = work / "unplanted_all.json"
        data = replay(args.recording, "all", None, base)
        notes.append(f"one recording ({args.recording}): BASE is its own unplanted replay; no run-to-run noise is in the test")
        return [Run(args.recording.name.split(".")[0], base, args.recording, data)], notes
    runs = []
    for report in run_reports(args.runs):
        recording = recording_of(report)
        if not recording.exists():
            notes.append(f"{report.name}: no recording beside it ({recording.name}); left out")
            continue
        runs.append(Run(report.stem, report, recording, json.loads(report.read_text())))
    kept = [r for r in runs if args.keep_disturbed or not r.disturbed]
    notes += [f"{r.name}: left out, the run was disturbed ({'; '.join(r.disturbed)})" for r in runs if r not in kept]
    return kept, notes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--runs", type=Path, metavar="DIR", help="runNN.json + runNN.rec.json (bench-compare --out DIR)")
    source.add_argument("--recording", type=Path, metavar="FILE", help="one recording (e.g. tests/data/…)")
    parser.add_argument("--factors", default=",".join(f"{f:.2f}" for f in FACTORS), help="slowdown factors, comma-separated")
    parser.add_argument("--trials", type=int, default=10, help="compare trials per figure and factor (default 10)")
    parser.add_argument("--health-trials", type=int, default=5, help="health-check trials per figure and factor (default 5)")
    parser.add_argument("--require", type=float, default=REQUIRE, help="factor every figure must be found at in "
                        "every trial for exit 0 (default 1.15; 0: no requirement)")
    parser.add_argument("--figures", help="only figures whose name contains one of these words (comma-separated)")
    parser.add_argument("--rates", choices=("time", "value"), default="time", help="a rate slowed by FACTOR: divided "
                        "by it (time, default) or multiplied by 2 - FACTOR (value)")
    parser.add_argument("--compare-arg", action="append", default=[], metavar="ARG", help="pass ARG to perfprobe compare")
    parser.add_argument("--policy", type=Path, metavar="FILE", help="the health check's drain policy (healthcheck --policy)")
    parser.add_argument("--keep-disturbed", action="store_true", help="plant in runs that marked themselves disturbed too")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the planted recordings and replays in DIR")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="replays and compares at once")
    parser.add_argument("--md", type=Path, help="also write the result as this host's section of FILE")
    args = parser.parse_args(argv)
    factors = sorted({float(f) for f in args.factors.split(",") if f.strip()})
    if args.require and args.require not in factors:
        parser.error(f"--require {args.require} is not among --factors {args.factors}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="perfprobe-planted-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        runs, notes = load_runs(args, work)
        if not runs or (args.runs is not None and len(runs) < 2):
            print("\n".join(notes), file=sys.stderr)
            raise SystemExit(f"{len(runs)} usable run(s); need at least 2 (or --recording FILE)")
        lines, ok = run_bench(args, runs, factors, work, notes)
    print("\n".join(lines))
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    if args.md:
        ensure_doc(args.md)
        label = f"planted changes: {host_label(runs[0].data)}"
        source = f"--recording {args.recording}" if args.recording else f"--runs {args.runs}"
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        body = [f"`python tools/planted_changes.py {source}` on {when}", "", "```text", *lines, "```"]
        write_section(args.md, label, host_section(label, body))
    return 0 if ok else 1


def run_bench(args: argparse.Namespace, runs: list[Run], factors: Sequence[float], work: Path,
              notes: Sequence[str]) -> tuple[list[str], bool]:
    """Plant, replay, check the planting, compare, judge the health; the printed lines and whether
    every figure's planting landed and it was found in every trial at --require."""
    each = [figures_in(json.loads(r.recording.read_text())) for r in runs]
    figures = [f for f in each[0] if all(f in found for found in each[1:])]
    missing = dict.fromkeys(f.name for found in each for f in found if f not in figures)
    notes = [*notes, *(f"{name}: not in every run's recording; left out" for name in missing)]
    if args.figures:
        words = [w.strip().lower() for w in args.figures.split(",") if w.strip()]
        figures = [f for f in figures if any(w in f.name.lower() for w in words)]
    pairs = compare_trials(len(runs), args.trials)
    checks = health_trials(len(runs), args.health_trials)
    used = sorted({j for _, j in pairs} | {j for j, _ in checks} | {k for _, k in checks})
    bench = Bench(runs, figures, factors, work, args)
    wanted = {(f, factor, j) for f in figures for factor in (1.0, *factors) for j in used}
    print(f"planting {len(figures)} figure(s) x {len(factors)} factor(s) in {len(used)} run(s): "
          f"{len(wanted)} replays", file=sys.stderr)
    bench.run_replays(wanted)
    problems = {(f.name, factor): [f"{runs[j].name}: {p}" for j in used for p in planting_check(
        f, factor, bench.report(f, 1.0, j), bench.report(f, factor, j), figures, args.rates)]
        for f in figures for factor in factors}
    compared = bench.compare(pairs)
    health = bench.health(checks)
    bench.pool.shutdown()
    lines = result_lines(figures, factors, compared, health, problems, args, len(runs), notes)
    at = args.require
    ok = all(not problems[(f.name, at)] and compared[(f.name, at)].all_found and health[(f.name, at)].all_found
             for f in figures) if at else True
    return lines, ok


def result_lines(figures: Sequence[Figure], factors: Sequence[float], compared: Mapping[tuple[str, float], Tally],
                 health: Mapping[tuple[str, float], Tally], problems: Mapping[tuple[str, float], list[str]],
                 args: argparse.Namespace, runs: int, notes: Sequence[str]) -> list[str]:
    """The printed result: one row per figure, then each figure's trials per factor."""
    at = args.require or max(factors)
    rates = "rates divided by the factor" if args.rates == "time" else "rates times 2 - factor"
    lines = [f"planted slowdowns ({', '.join(f'{f:g}' for f in factors)}; times up, {rates}) in {runs} run(s); "
             f"compare: {args.trials} trials (BASE run i, NEW run j planted, i != j); healthcheck: "
             f"{args.health_trials} trials (baseline of the other runs)", *[f"note: {n}" for n in notes], ""]
    head = ("figure", "metric", "planting landed", "compare finds from", f"compare at {at:g}", "healthcheck drains from",
            f"healthcheck at {at:g}")
    rows = [head]
    for f in figures:
        mine_c = {x: compared[(f.name, x)] for x in factors}
        mine_h = {x: health[(f.name, x)] for x in factors}
        small_c, small_h = smallest_found(mine_c), smallest_found(mine_h)
        off = [x for x in factors if problems[(f.name, x)]]
        rows.append((f.name, f.key, "off at " + ", ".join(f"{x:g}" for x in off) if off else "ok",
                     f"{small_c:g}" if small_c else "none", mine_c[at].cell(),
                     f"{small_h:g}" if small_h else "none", mine_h[at].cell()))
    widths = [max(len(str(r[c])) for r in rows) for c in range(len(head))]
    lines += ["  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.append("")
    for f in figures:
        lines.append(f"{f.name} ({f.key}):")
        for x in factors:
            said = problems[(f.name, x)]
            lines += [f"  planting {x:g}: {p}" for p in said[:3]] + ([f"  planting {x:g}: (+{len(said) - 3} more)"]
                                                                      if len(said) > 3 else [])
        for which, tallies in (("compare", compared), ("healthcheck", health)):
            cells = []
            for x in factors:
                t = tallies[(f.name, x)]
                cells.append(f"{x:g}: {t.text()}" + (f", other figures in {t.others}" if t.others else ""))
            lines.append(f"  {which}: " + "; ".join(cells))
    found_c = sum(compared[(f.name, at)].all_found for f in figures)
    found_h = sum(health[(f.name, at)].all_found for f in figures)
    lines += ["", f"found in every trial at {at:g}: compare {found_c} of {len(figures)} figures, "
              f"healthcheck {found_h} of {len(figures)} figures"]
    return lines


if __name__ == "__main__":
    sys.exit(main())
