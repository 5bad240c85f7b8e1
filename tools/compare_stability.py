"""`make bench-compare`: run `perfprobe all --quick` N times and compare the runs pair by pair.

On an unchanged host every comparison should find nothing: each regression `perfprobe compare`
reports between two such runs is a false alarm, the kind that makes a CI gate fail every time. This
runs `perfprobe all --quick -o DIR/runNN.json --record DIR/runNN.rec.json` N times (extra perfprobe
arguments after `--`, e.g. `-- --require-gpu`; `--reports DIR` reuses saved runs instead), then
`perfprobe compare --json` on every unordered pair of runs (`--ordered`: every ordered pair, BASE
and NEW both ways), and prints per pair the regressions and which figures, then

    pairs with 0 regressions: K of P

It exits 0 only when K is at least `--need` (default: all pairs but one, issue 25's bar: 44 of 45
unordered pairs of 10 runs, 19 of 20 ordered pairs of 5). A pair compare would not judge because a
run was disturbed (compare exits 0 with a note) is counted in K, as compare found 0 regressions,
and said beside it, but not toward `--need`: it shows nothing about noise; a pair compare could
not read (exit 2) is a failed pair. The recordings
(`*.rec.json`) feed tools/planted_changes.py. `--md FILE` also writes the result as this host's
section of FILE (docs/results/compare-stability.md).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict_stability import host_label, host_section, machine_load, write_section  # noqa: E402

REC_SUFFIX = ".rec.json"
RUN_FILE = re.compile(r"run\d+(\.rec)?\.json")


@dataclass
class PairResult:
    """One `perfprobe compare --json BASE NEW`: its exit code, the figures it called regressions
    (with their change, new/base), whether it refused to judge a disturbed run, or why it failed."""

    base: str
    new: str
    code: int
    regressions: list[tuple[str, float | None]] = field(default_factory=list)
    disturbed: list[str] = field(default_factory=list)
    error: str | None = None
    kinds: dict[str, str] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """A pair with 0 regressions (compare judged it, or declined to on a disturbed run)."""
        return self.error is None and not self.regressions


def parse_comparison(code: int, stdout: str, stderr: str = "") -> dict[str, Any]:
    """What one compare said, from its exit code and JSON: `regressions` as (metric, ratio new/base),
    `kinds` (each judged figure's kind), `disturbed` (why it judged no regression), `error`.

    Written against the JSON's `changes` entries (`kind` "regression"); exit 1 with no regression
    in the JSON, or exit 0 with one, is reported as an error rather than guessed at."""
    out: dict[str, Any] = {"regressions": [], "kinds": {}, "disturbed": [], "error": None}
    if code not in (0, 1):
        out["error"] = f"exit {code}: {(stderr.strip().splitlines() or ['no message'])[-1][:300]}"
        return out
    try:
        data = json.loads(stdout)
    except ValueError:
        out["error"] = f"exit {code} without JSON on stdout: {stderr.strip()[-300:]}"
        return out
    changes = [c for c in data.get("changes") or [] if isinstance(c, dict)]
    out["kinds"] = {str(c.get("metric")): str(c.get("kind")) for c in changes}
    out["regressions"] = [(str(c.get("metric")), c.get("ratio")) for c in changes if c.get("kind") == "regression"]
    disturbed = data.get("disturbed") or []
    out["disturbed"] = [str(d) for d in disturbed] if isinstance(disturbed, list) else ["a run was disturbed"]
    if (code == 1) != bool(out["regressions"]):
        out["error"] = f"exit {code} but {len(out['regressions'])} regression(s) in the JSON"
    return out


def compare_pair(base: Path, new: Path, extra: Sequence[str] = ()) -> PairResult:
    """`perfprobe compare --json [EXTRA] BASE NEW`, through the CLI."""
    proc = subprocess.run([sys.executable, "-m", "perfprobe", "compare", "--json", *extra, str(base), str(new)],
                          capture_output=True, text=True, timeout=300)
    said = parse_comparison(proc.returncode, proc.stdout, proc.stderr)
    return PairResult(base.name, new.name, proc.returncode, said["regressions"], said["disturbed"],
                      said["error"], said["kinds"])


def compare_to_the_others(reports: Sequence[Path], index: int, scratch: Path,
                          extra: Sequence[str] = ()) -> PairResult:
    """Run `index` against a baseline of every other run (`perfprobe fleet OTHERS --baseline-out`):
    the CI gate a user should build, whose band includes the spread between runs, which no single
    run's repeats can show."""
    folder = scratch / f"others-{index:02d}"
    folder.mkdir(parents=True, exist_ok=True)
    for j, report in enumerate(reports):
        if j != index:
            (folder / report.name).write_bytes(report.read_bytes())
    baseline = scratch / f"baseline-without-{index:02d}.json"
    proc = subprocess.run([sys.executable, "-m", "perfprobe", "fleet", str(folder), "--baseline-out", str(baseline),
                           "--json"], capture_output=True, text=True, timeout=300)
    if not baseline.exists():
        return PairResult(f"baseline of {len(reports) - 1} runs", reports[index].name, proc.returncode,
                          error=f"fleet exited {proc.returncode}: {proc.stderr.strip()[-200:]}")
    result = compare_pair(baseline, reports[index], extra)
    result.base = f"baseline of the other {len(reports) - 1} runs"
    return result


def pairs(count: int, ordered: bool) -> list[tuple[int, int]]:
    """Index pairs (base, new): every unordered pair i < j, or every ordered pair i != j."""
    runs = range(count)
    return list(itertools.permutations(runs, 2) if ordered else itertools.combinations(runs, 2))


def default_need(pair_count: int) -> int:
    """All pairs but one: issue 25's bar (44 of 45, 19 of 20)."""
    return max(pair_count - 1, 0) if pair_count > 1 else pair_count


def pair_line(result: PairResult) -> str:
    where = f"{result.base} -> {result.new}"
    if result.error:
        return f"{where}: not compared ({result.error})"
    if result.regressions:
        names = ", ".join(metric + (f" ({(ratio - 1) * 100:+.0f}%)" if isinstance(ratio, (int, float)) else "")
                          for metric, ratio in result.regressions)
        return f"{where}: {len(result.regressions)} regression(s): {names}"
    if result.disturbed:
        return f"{where}: 0 regressions (not judged: {'; '.join(result.disturbed)})"
    return f"{where}: 0 regressions"


def summarise(results: Sequence[PairResult], need: int | None = None) -> dict[str, Any]:
    """Counts over all pairs: pairs with 0 regressions (`clean`), those of them compare did not judge
    because a run was disturbed, pairs not compared, how often each figure regressed. The need is
    met by judged pairs only: a pair compare declined to judge shows nothing about noise."""
    clean = sum(r.clean for r in results)
    disturbed = sum(bool(r.disturbed) and r.clean for r in results)
    need = default_need(len(results)) if need is None else need
    figures = collections.Counter(metric for r in results for metric, _ in r.regressions)
    return {"pairs": len(results), "clean": clean, "need": need, "ok": clean - disturbed >= need,
            "disturbed": disturbed, "failed": sum(r.error is not None for r in results),
            "regressions": sum(len(r.regressions) for r in results), "figures": figures}


def summary_line(summary: dict[str, Any]) -> str:
    return f"pairs with 0 regressions: {summary['clean']} of {summary['pairs']}"


def parse_summary_line(text: str) -> tuple[int, int] | None:
    """(K, P) from the summary line in a tool's output, None when absent."""
    for line in text.splitlines():
        if line.startswith("pairs with 0 regressions: "):
            k, _, p = line.split(": ", 1)[1].partition(" of ")
            return int(k), int(p.split()[0])
    return None


def summary_lines(summary: dict[str, Any]) -> list[str]:
    lines = [summary_line(summary)]
    extra = [f"{summary['disturbed']} of them not judged: a run was disturbed"] if summary["disturbed"] else []
    extra += [f"{summary['failed']} pair(s) not compared"] if summary["failed"] else []
    if extra:
        lines.append("  (" + "; ".join(extra) + ")")
    if summary["figures"]:
        lines.append("figures called regressions: " + ", ".join(
            f"{metric} in {n}" for metric, n in summary["figures"].most_common()))
    judged = summary["clean"] - summary["disturbed"]
    verdict = "met" if summary["ok"] else "NOT met"
    lines.append(f"need: {summary['need']} of {summary['pairs']} judged with 0 regressions; {judged} were: {verdict}")
    return lines


def run_reports(folder: Path) -> list[Path]:
    """The saved run reports in `folder`: its *.json files that are not recordings, by name."""
    found = sorted(p for p in folder.iterdir() if p.suffix == ".json" and not p.name.endswith(REC_SUFFIX))
    return [p for p in found if _is_report(p)]


def recording_of(report: Path) -> Path:
    """runNN.json -> runNN.rec.json (the run's --record file, written beside its report)."""
    return report.with_name(report.name[: -len(".json")] + REC_SUFFIX)


def _is_report(path: Path) -> bool:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("results"), list) and "host" in data


def measure_runs(count: int, folder: Path, extra: Sequence[str]) -> tuple[list[Path], list[float]]:
    """`perfprobe all --quick` `count` times, each run's report and recording in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    stale = [p for p in folder.iterdir() if RUN_FILE.fullmatch(p.name)]
    for path in stale:  # an earlier bench's runs would be compared (and planted in) with these
        path.unlink()
    if stale:
        print(f"removed {len(stale)} earlier run file(s) from {folder}", file=sys.stderr)
    paths, seconds = [], []
    for index in range(count):
        report = folder / f"run{index + 1:02d}.json"
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "perfprobe", "all", "--quick", "--json", "-o", str(report),
                               "--record", str(recording_of(report)), *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=1800)
        seconds.append(time.perf_counter() - started)
        if not report.exists():
            raise SystemExit(f"run {index + 1} exited {proc.returncode} without a report: {proc.stderr.strip()[-400:]}")
        print(f"run {index + 1}/{count}: exit {proc.returncode}, {seconds[-1]:.1f} s", file=sys.stderr)
        paths.append(report)
    return paths, seconds


def markdown(label: str, command: str, results: Sequence[PairResult], summary: dict[str, Any],
             runs: str) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"`{command}` on {when}; {runs}", "",
             f"- **{summary_line(summary)}**", *[f"- {line.strip()}" for line in summary_lines(summary)[1:]], "",
             "| pair | regressions |", "| --- | --- |"]
    for r in results:
        text = pair_line(r).split(": ", 1)[1]
        lines.append(f"| {r.base} → {r.new} | {text} |")
    return host_section(f"compare pairs: {label}", lines)


DOC_HEADER = ("# Compare stability and planted changes\n\nWritten by `make bench-compare` "
              "(tools/compare_stability.py) and `make bench-planted` (tools/planted_changes.py).\n\n")


def ensure_doc(path: Path) -> None:
    """Create `path` with this bench's header when it does not exist (write_section then adds sections)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(DOC_HEADER)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="how many `all --quick` runs (default 10)")
    parser.add_argument("--reports", type=Path, help="reuse the saved runs in DIR (runNN.json) instead of measuring")
    parser.add_argument("--out", type=Path, help="keep the runs' reports and recordings in DIR (default: a "
                        "temporary folder, removed)")
    parser.add_argument("--ordered", action="store_true", help="every ordered pair (BASE, NEW both ways)")
    parser.add_argument("--need", type=int, help="pairs with 0 regressions needed for exit 0 (default: all but one)")
    parser.add_argument("--compare-arg", action="append", default=[], metavar="ARG",
                        help="pass ARG to `perfprobe compare` (repeatable), e.g. --compare-arg=--all")
    parser.add_argument("--md", type=Path, help="also write the result as this host's section of FILE")
    parser.add_argument("--against-baseline", action="store_true", help=(
        "also compare each run against a baseline of the other runs (fleet --baseline-out)"))
    parser.add_argument("extra", nargs="*", help="more `perfprobe all` arguments (after --)")
    args = parser.parse_args(argv)
    if args.runs < 2 and args.reports is None:
        parser.error("--runs must be at least 2")
    load_before = machine_load()
    with tempfile.TemporaryDirectory(prefix="perfprobe-bench-compare-") as scratch:
        if args.reports is not None:
            reports, seconds = run_reports(args.reports), []
            if len(reports) < 2:
                parser.error(f"--reports {args.reports}: {len(reports)} report(s); need at least 2")
        else:
            reports, seconds = measure_runs(args.runs, args.out or Path(scratch), args.extra)
        results = []
        for i, j in pairs(len(reports), args.ordered):
            results.append(compare_pair(reports[i], reports[j], args.compare_arg))
            print(pair_line(results[-1]), flush=True)
        summary = summarise(results, args.need)
        for line in summary_lines(summary):
            print(line)
        if args.against_baseline:
            against = [compare_to_the_others(reports, i, Path(scratch), args.compare_arg) for i in range(len(reports))]
            for result in against:
                print(pair_line(result), flush=True)
            for line in summary_lines(summarise(against, len(against))):
                print(f"against a baseline of the others: {line}")
        if args.md:
            first = json.loads(reports[0].read_text())
            shown = "--ordered " if args.ordered else ""
            command = (f"python tools/compare_stability.py {shown}--reports {args.reports}" if args.reports else
                       f"python tools/compare_stability.py --runs {args.runs} {shown}-- {' '.join(args.extra)}").strip()
            runs = (f"{len(reports)} runs, {min(seconds):.0f}–{max(seconds):.0f} s each; load average "
                    f"{load_before} before, {machine_load()} after." if seconds else f"{len(reports)} saved runs.")
            ensure_doc(args.md)
            write_section(args.md, f"compare pairs: {host_label(first)}",
                          markdown(host_label(first), command, results, summary, runs))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
