"""`perfprobe healthcheck`: Slurm's HealthCheckProgram (drains and resumes) or Prolog (exit status only).

Measures a quick subset (default: host facts and `cache --quick`), judges it against the baseline
group of this hardware (healthcheck.py holds the policy), then acts:
- unhealthy: drain with 'perfprobe: <what, value vs baseline>' (a node someone else drained keeps
  its reason); exit 1;
- healthy: resume the node only if perfprobe drained it (reason prefix 'perfprobe:'); exit 0.
In Prolog mode nothing is called: the reason is printed and the exit status is Slurm's signal.
`--detached` judges the last finished background run and starts the next one (detached.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, NamedTuple, Optional

import typer

from perfprobe.engine.config import RunConfig
from perfprobe.errors import UsageError
from perfprobe.pure.units import parse_ratio

DEFAULT_PROBES = "host,cache"
DEFAULT_STATE = Path("/var/tmp/perfprobe-healthcheck")
DEFAULT_DEADLINE_S = 40.0
"""--deadline's default: well under Slurm's 60 s HealthCheckProgram limit, confirmation included:
a healthy 2-CPU guest answers in about 5 s, the 16-CPU H200 guest in about 8 s (README: healthcheck).
Here, not in health_run.py, so that `perfprobe --help` imports no subprocess machinery."""
MODES = ("health", "prolog")


def healthcheck(
        baseline: Annotated[Optional[Path], typer.Option("--baseline", metavar="FILE", help=(
            "A baseline (fleet --baseline-out) or a report of a healthy peer (required)."))] = None,
        mode: Annotated[str, typer.Option("--mode", metavar="health|prolog", show_default=False, help=(
            "health (default): drain or resume through scontrol (HealthCheckProgram); prolog: exit status only."))] = "health",
        node: Annotated[Optional[str], typer.Option("--node", metavar="NAME", help="Slurm node name (default: $SLURMD_NODENAME).")] = None,
        probes: Annotated[str, typer.Option("--probes", metavar="LIST", show_default=False, help=(
            "Probes to run, quick (default host,cache).") )] = DEFAULT_PROBES,
        policy: Annotated[Optional[Path], typer.Option("--policy", metavar="FILE", help=(
            "JSON overrides of the drain policy (README: healthcheck)."))] = None,
        detached: Annotated[bool, typer.Option("--detached", help=(
            "Judge the last finished background run; start the next one (all --quick) in the background."))] = False,
        state: Annotated[Path, typer.Option("--state", metavar="DIR", show_default=False, help=(
            f"Where --detached keeps its runs, and the policy's regression_checks their count "
            f"(default {DEFAULT_STATE})."))] = DEFAULT_STATE,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the scontrol command instead of running it.")] = False,
        json_out: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON on stdout.")] = False,
        prom: Annotated[Optional[Path], typer.Option("--prom", metavar="FILE", help="Also write node_exporter's textfile.")] = None,
        junit: Annotated[Optional[Path], typer.Option("--junit", metavar="FILE", help="Also write JUnit XML.")] = None,
        output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help=(
            "Also write the run's JSON report."))] = None,
        deadline: Annotated[float, typer.Option("--deadline", metavar="SECONDS", show_default=False, help=(
            f"Answer within this many seconds, confirmation included, 5 to 3600 (default {DEFAULT_DEADLINE_S:g}; "
            "Slurm kills a health check at 60 s): a measurement still running then is stopped and the node "
            "drained as slow."))] = DEFAULT_DEADLINE_S) -> None:
    """Slurm health check: measure quickly, judge against a baseline, drain or resume this node."""
    from perfprobe.fleet import health_run
    from perfprobe.fleet import healthcheck as hc
    from perfprobe.render import outputs

    if baseline is None:
        raise UsageError("healthcheck: give --baseline FILE (fleet --baseline-out, or a healthy peer's report)")
    if mode not in MODES:
        raise UsageError(f"--mode {mode}: choose health or prolog")
    names = _probe_names(probes)
    node_name = node or os.environ.get("SLURMD_NODENAME") or os.environ.get("SLURM_NODENAME")
    if mode == "health" and not node_name and not dry_run:
        raise UsageError("no node name: run under slurmd (SLURMD_NODENAME) or give --node")
    rules = hc.load_policy(policy)
    clock = health_run.Deadline(parse_ratio(deadline, "--deadline", 5, 3600))
    base = _baseline(baseline, names)  # exit 2 unless it holds figures of the probes asked
    config = RunConfig(quick=True, json=True, output=output, prom=prom, junit=junit)
    outputs.check_writable(outputs.targets(config))
    not_confirmed: tuple[str, ...] = ()
    confirmed_where = ""
    timed = True
    if detached:
        report = _last_background(state)
        if report is None:
            _say(json_out, {"node": node_name, "healthy": None, "action": "none",
                            "message": f"no finished background run in {state} yet; started one"})
            raise typer.Exit(0)
        group = _group(base, report["host"], baseline)
        found = hc.problems(report, group, rules)
    else:
        report, found, busy, not_confirmed, confirmed_where, timed = _checked_within(names, config, base, baseline,
                                                                                    rules, clock)
        if busy and not found:  # nothing to drain on, nothing shown healthy: leave the node as it is
            _say(json_out, {"node": node_name, "healthy": None, "action": "none", "message": busy, "problems": []})
            raise typer.Exit(0)
    held = hc.disturbed(report, "this run") if report else []
    waiting: list[str] = []
    uncounted = ""
    if rules.regression_checks == 1:
        _forget_streaks(state)  # a later policy of more checks starts counting afresh
    elif report is not None and timed and not held:  # timings judged to the end move the streaks
        found, waiting, uncounted = _streaks(found, state, rules, str((report.get("host") or {}).get("time_utc") or ""))
    # a regression waiting for its next check leaves the node as it is: not drained yet, not resumed
    action = "none" if waiting and not found else _act(mode, node_name, found, dry_run)
    message = hc.reason(found) if found else "healthy against the baseline"
    if held:  # facts and verdicts were judged; figures were not
        message += f" (no figure judged, the run was disturbed: {'; '.join(held)})"
    if not_confirmed:
        message += f" (not confirmed {confirmed_where}: {'; '.join(not_confirmed)})"
    if waiting:
        message += f" (waiting for {rules.regression_checks} consecutive checks to drain: {'; '.join(waiting)})"
    if uncounted:
        message += f" (drained at the first check: {uncounted})"
    _say(json_out, {"node": node_name, "healthy": not found, "action": action, "message": message,
                    "problems": found, "not_confirmed": list(not_confirmed), "waiting": waiting})
    raise typer.Exit(1 if found else 0)


class Checked(NamedTuple):
    """What a check within its deadline found: the run's report (None when none finished), the
    problems, and why the timings went unjudged when the host was too busy to finish them."""

    report: dict[str, Any] | None
    found: list[str]
    busy: str | None = None
    not_confirmed: tuple[str, ...] = ()
    """Regressions the first measurement showed and the re-measurement did not."""
    confirmed_where: str = ""
    """Where the re-measurement ran: "on another core" where its one-thread figures moved off the
    first measurement's CPU, else "on a re-measurement" (no other core, or no probe that says)."""
    timed: bool = True
    """Whether the node's timings were judged to the end: False where a differing fact left them
    unmeasured, or the confirming re-measurement was cut off, failed or disturbed. Such a check
    neither extends nor breaks a streak of consecutive regressions (Policy.regression_checks)."""


def _checked_within(names: list[str], config: RunConfig, base: dict[str, Any], path: Path, rules: Any,
                    clock: Any) -> Checked:
    """The run's report, its problems and any busy note, all before the deadline. A measurement
    cut off by the deadline while other processes kept the host busy drains nothing for its
    slowness (a node running a job is not a slow node); the facts judged first still drain.
    The host facts are judged first, in this process: a fact that differs from the baseline (a CPU
    quota, CPUs taken away) drains without timing the node, so a node made slow by it answers at
    once with the reason; the timings run in a child that the deadline stops (health_run.py), and a
    timing is confirmed by a re-measurement before it drains, if the deadline leaves time for one,
    with its one-thread figures on another core (healthcheck.one_thread_cpus)."""
    from perfprobe.fleet import compare, health_run, reports
    from perfprobe.fleet import healthcheck as hc
    from perfprobe.host import read_host_facts

    host = read_host_facts()
    group = _group(base, host, path)
    ahead = hc.problems({"host": host, "results": []}, group, rules)
    asked = _outputs(config)
    # a warn drains only under drain_on_warn: else re-measuring one would cost time and change nothing,
    # and only the policy's metrics are judged, so only they are measured (RunConfig.judged)
    judged = hc.judged_figures(rules)
    first = health_run.measure(["host"] if ahead else names, clock, asked, confirm_warns=rules.drain_on_warn,
                               judged=judged, meanwhile=compare.load_significance_test)
    if first.report is None:
        return Checked(None, ahead, first.busy) if first.busy else Checked(None, ahead + [str(first.problem)])
    found = hc.problems(first.report, group, rules)
    if ahead:  # the timings were not measured: the facts drain
        return Checked(first.report, found, timed=False)
    slow = sorted({reports.probe_of(key) for key in hc.regressed_metrics(found)})
    if slow:  # confirm a timing before draining on it: re-measure those probes once, on another core
        avoided = hc.one_thread_cpus(first.report)
        again = health_run.measure(["host", *[n for n in slow if n != "host"]], clock,
                                   confirm_warns=rules.drain_on_warn, judged=judged, avoid_cpus=avoided)
        if again.busy:  # the timings stay unconfirmed: facts and verdicts stand
            return Checked(first.report, hc.confirmed(found, []), again.busy, timed=False)
        if again.report is None:
            return Checked(first.report, [str(again.problem), *found], timed=False)
        kept = hc.confirmed(found, hc.problems(again.report, group, rules))
        moved = bool(avoided) and not set(hc.one_thread_cpus(again.report)) & set(avoided)
        return Checked(first.report, kept, not_confirmed=tuple(item for item in found if item not in kept),
                       confirmed_where="on another core" if moved else "on a re-measurement",
                       timed=not hc.disturbed(again.report, "run"))
    return Checked(first.report, found)


def _streaks(found: list[str], state: Path, rules: Any, run: str) -> tuple[list[str], list[str], str]:
    """(what drains, what waits for more consecutive checks, why the checks could not be counted):
    this check's confirmed regressions added to the streaks kept in `state` (health_streak.py); a
    run (`run`: its host.time_utc) already counted is not counted again.
    Where the streaks cannot be read, every regression drains now and the count starts again from
    this check; where they cannot be written, every regression drains now."""
    import time

    from perfprobe.fleet import health_streak
    from perfprobe.fleet import healthcheck as hc

    now, regressed, why = time.time(), hc.regressed_metrics(found), ""
    try:
        with health_streak.locked(state):  # a Prolog and a HealthCheckProgram may share the folder
            try:
                before = health_streak.previous(state, now, rules.regression_gap_s)
            except health_streak.StreakError as exc:
                before, why = health_streak.Streaks({}), f"the count of consecutive checks could not be read: {exc}"
            if run and before.run == health_streak.run_name(run):  # --detached, the run it judged last time
                return (*hc.held_for_streak(found, before.counts, rules), "")
            counts = hc.streaks(before.counts, regressed)
            health_streak.save(state, health_streak.Streaks(counts, run), now)
    except health_streak.StreakError as exc:
        why = f"the count of consecutive checks could not be kept: {exc}"
    if why:  # every regression drains now (the count starts again from this check where it was saved)
        return found, [], why if regressed else ""
    return (*hc.held_for_streak(found, counts, rules), "")


def _forget_streaks(state: Path) -> None:
    """Remove counts an earlier policy of more consecutive checks left (best effort: a folder this
    check cannot write holds nothing it would count)."""
    from perfprobe.fleet import health_streak

    with contextlib.suppress(OSError):
        (state / health_streak.STREAK_FILE).unlink()


def _outputs(config: RunConfig) -> dict[str, str | None]:
    return {name: str(getattr(config, name)) if getattr(config, name) else None for name in ("output", "prom", "junit")}


def _probe_names(text: str) -> list[str]:
    from perfprobe.engine.registry import all_probe_names

    known = all_probe_names()
    names = [n.strip() for n in text.split(",") if n.strip()]
    wrong = [n for n in names if n not in known]
    if wrong or not names:
        raise UsageError(f"--probes {text}: choose among {', '.join(known)}")
    return names if names[0] == "host" else ["host", *[n for n in names if n != "host"]]


def _baseline(path: Path, names: list[str]) -> dict[str, Any]:
    from perfprobe.fleet import baseline as bl
    from perfprobe.fleet import reports

    base = dict(reports.load_one(path, "--baseline").data)
    bl.require_figures(base, names, f"--baseline {path}")
    return base


def _group(base: dict[str, Any], host: dict[str, Any], path: Path) -> dict[str, Any]:
    """The baseline group of this hardware; a report as baseline is a group of one host."""
    from perfprobe.fleet import baseline as bl
    from perfprobe.fleet.peers import judge
    from perfprobe.fleet.reports import Loaded

    if bl.is_baseline(base):
        return bl.group_for(base, host, f"--baseline {path}")
    built = bl.build(judge([Loaded(str(path), base)]))
    return bl.group_for(built, host, f"--baseline {path}")


def _last_background(state: Path) -> dict[str, Any] | None:
    """The last finished background run (None: none yet), and the next one started (all --quick)."""
    from perfprobe.fleet import detached

    last = detached.last_result(state)
    detached.start(state)
    return last


def _act(mode: str, node: str | None, found: list[str], dry_run: bool) -> str:
    """Drain, resume or nothing; in prolog mode, nothing is ever called."""
    from perfprobe.fleet import healthcheck as hc
    from perfprobe.fleet import slurm

    if mode == "prolog" or node is None:
        return "exit 1" if found else "none"
    if dry_run:
        command = slurm.drain_command(node, hc.reason(found)) if found else slurm.resume_command(node)
        sys.stderr.write(f"perfprobe: would run (dry run, {'unhealthy' if found else 'if drained by perfprobe'}): "
                         f"{' '.join(command)}\n")
        return "dry-run"
    current = slurm.node_state(node)
    if found:
        if current.drained and not hc.ours(current.reason):
            return f"left drained by another reason: {current.reason}"
        slurm.drain(node, hc.reason(found))
        return "drained"
    if current.drained and hc.ours(current.reason):
        slurm.resume(node)
        return "resumed"
    return "none"


def _say(json_out: bool, verdict: dict[str, Any]) -> None:
    """The verdict, one line of text or of JSON; every JSON verdict has `not_confirmed` and `waiting`
    ([]: none)."""
    if json_out:
        sys.stdout.write(json.dumps({**verdict, "not_confirmed": verdict.get("not_confirmed", []),
                                     "waiting": verdict.get("waiting", [])}) + "\n")
        return
    state = {True: "healthy", False: "UNHEALTHY", None: "no result"}[verdict["healthy"]]
    sys.stdout.write(f"perfprobe healthcheck: node {verdict['node'] or '(none)'}: {state}; "
                     f"action: {verdict['action']}; {verdict['message']}\n")
