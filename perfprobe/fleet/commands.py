"""The typer commands `compare`, `fleet` (with `fleet run`) and `healthcheck`; cli/commands.py adds them.

Thin: parse, load, call the pure judgement (compare.py, peers.py, baseline.py, healthcheck.py),
render (show.py), pick the exit code. 0: nothing found; 1: a regression, an outlier, an unhealthy
node; 2: bad usage or bad input (one line).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

from perfprobe.cli.help import PlainArgsCommand
from perfprobe.errors import UsageError
from perfprobe.pure.units import parse_count, parse_ratio

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout, nothing else.")]
BaselineOutOpt = Annotated[Optional[Path], typer.Option(
    "--baseline-out", metavar="FILE", help="Write a baseline (per hardware group: median and MAD per metric).")]
ThresholdOpt = Annotated[float, typer.Option("--threshold", metavar="RATIO", show_default=False, help=(
    "Smallest change that counts, 0 to 10 (default 0.10 = 10%), if significant on the samples."))]


def register(app: typer.Typer) -> None:
    """Add compare, fleet and healthcheck to perfprobe's app."""
    app.command("compare", cls=PlainArgsCommand)(compare)
    app.add_typer(fleet_app, name="fleet")
    from perfprobe.fleet.health_command import healthcheck

    app.command("healthcheck")(healthcheck)


def compare(base: Annotated[Path, typer.Argument(metavar="BASE", help="A report (--output/--json) or a baseline.")],
            new: Annotated[Path, typer.Argument(metavar="NEW", help="A report of the run to judge.")],
            json_out: JsonOpt = False, threshold: ThresholdOpt = 0.10,
            mixed: Annotated[bool, typer.Option("--mixed", help="Compare reports of different hardware anyway.")] = False,
            show_all: Annotated[bool, typer.Option("--all", help=(
                "Judge every figure, not only the key figures, and list those with no significant change too."))] = False) -> None:
    """Two runs figure by figure: regressions a Mann-Whitney test on both runs' samples calls
    significant and beyond --threshold, and the host facts that differ."""
    from perfprobe.fleet import baseline as bl
    from perfprobe.fleet import compare as cmp
    from perfprobe.fleet import reports, show
    from perfprobe.fleet.facts import flat_facts
    from perfprobe.fleet.signature import differences, signature

    threshold = parse_ratio(threshold, "--threshold")
    base_in, new_in = reports.load_one(base, "BASE"), reports.load_one(new, "NEW")
    if bl.is_baseline(new_in.data):
        raise UsageError(f"NEW {new}: a baseline; NEW must be a report of one run")
    new_host = new_in.data["host"]
    notes: list[str] = []
    if bl.is_baseline(base_in.data):
        group = bl.group_for(base_in.data, new_host, f"BASE {base}")
        ref, facts = bl.reference(group), dict(group.get("facts") or {})
        base_name = f"baseline ({len(group.get('hosts') or [])} hosts)"
        why = cmp.disturbed(new_in.data, "NEW")
    else:
        differ = differences(signature(base_in.data["host"]), signature(new_host))
        if differ and not mixed:
            raise UsageError(f"BASE and NEW are different hardware ({'; '.join(differ)}): compare runs of one kind "
                             "of host, or pass --mixed")
        notes += [f"different hardware, compared anyway (--mixed): {'; '.join(differ)}"] if differ else []
        ref, facts = cmp.report_reference(base_in.data), flat_facts(base_in.data["host"])
        base_name = base_in.name
        why = cmp.disturbed(base_in.data, "BASE") + cmp.disturbed(new_in.data, "NEW")
        notes.append(cmp.ONE_RUN_NOTE)
    new_ref = cmp.report_reference(new_in.data)
    usable = [{k for k, f in side.items() if not f.unstable} for side in (ref, new_ref)]
    if not usable[0] & usable[1]:  # nothing to compare is bad input, never "no regression"
        raise UsageError(f"BASE {base} and NEW {new}: no usable figure in both ({len(usable[0])} in BASE, "
                         f"{len(usable[1])} in NEW); compare runs of the same probes")
    result = cmp.compare(ref, new_ref, facts, flat_facts(new_host),
                         cmp.probe_advice(new_in.data), threshold, judge_all=show_all, disturbed_because=why)
    result.notes += notes
    if json_out:
        sys.stdout.write(json.dumps(show.comparison_json(result), indent=2) + "\n")
    else:
        _print(show.comparison_lines(result, base_name, new_in.name, show_all))
    raise typer.Exit(1 if result.regressions else 0)


class _DefaultToShow(typer.core.TyperGroup):
    """`perfprobe fleet REPORT...` means `perfprobe fleet show REPORT...`; `fleet run` is the fan-out."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["show", *args]
        return super().parse_args(ctx, args)


fleet_app = typer.Typer(cls=_DefaultToShow, help="Judge many hosts' reports against each other; `fleet run` gathers them "
                        "through Slurm; `fleet` with report files or folders means `fleet show`.", no_args_is_help=False)


@fleet_app.command("show", cls=PlainArgsCommand)
def fleet_show(paths: Annotated[Optional[List[Path]], typer.Argument(
                   metavar="REPORT...", help="Report files, folders of them, or '-' (JSON lines on stdin).")] = None,
               expect: Annotated[Optional[str], typer.Option("--expect", metavar="HOSTS", help=(
                   "Hosts that should have a report: a,b,c or a Slurm hostlist like n[1-3].")) ] = None,
               baseline_out: BaselineOutOpt = None, json_out: JsonOpt = False,
               metrics: Annotated[Optional[str], typer.Option("--metrics", metavar="PATTERNS", help=(
                   "Comma-separated probe:metric patterns to judge (default: each probe's key figures)."))] = None,
               min_change: Annotated[float, typer.Option("--min-change", metavar="RATIO", show_default=False, help=(
                   "Smallest deviation from the median that counts, 0 to 10 (default 0.10)."))] = 0.10) -> None:
    """Group hosts by hardware, name outliers (median and MAD), and hosts missing, errored or skipped."""
    from perfprobe.fleet import reports

    min_change = parse_ratio(min_change, "--min-change")
    stdin_text = None
    files = [p for p in paths or [] if str(p) != "-"]
    if not paths or len(files) < len(paths):
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("give report files or folders, or pipe JSON lines on stdin ('-')")
        stdin_text = reports.read_stdin()  # bounded as a file is (perfprobe/system/untrusted.py)
    inputs = reports.load_many(files, stdin_text)
    _judge_and_print(inputs, _hostlist(expect), baseline_out, json_out, metrics, min_change)


@fleet_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def fleet_run(ctx: typer.Context,
              nodes: Annotated[Optional[int], typer.Option("--nodes", "-N", metavar="N", help=(
                  "Nodes to run on, 1 to 100000 (required)."))] = None,
              partition: Annotated[Optional[str], typer.Option("--partition", "-p", metavar="P",
                                                               help="Slurm partition.")] = None,
              out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help=(
                  "Folder for one report per node, DIR/<node>.json (on a file system the nodes share)."))] = None,
              baseline_out: BaselineOutOpt = None, json_out: JsonOpt = False) -> None:
    """Run perfprobe on N nodes through srun (`fleet run --nodes 3 -- all --quick`), then judge them."""
    from perfprobe.fleet import reports, slurm
    from perfprobe.host.identity import run_time_utc
    from perfprobe.render.outputs import check_writable

    if nodes is None:
        raise UsageError("fleet run: give --nodes N, how many nodes to run on")
    nodes = parse_count(nodes, "--nodes", 1, 100000) or 1
    args = list(ctx.args) or ["all", "--quick"]
    folder = out or Path(f"perfprobe-fleet-{run_time_utc().replace(':', '')}")
    folder.mkdir(parents=True, exist_ok=True)
    check_writable({"--out": folder / ".check", **({"--baseline-out": baseline_out} if baseline_out else {})})
    command = slurm.srun_command(nodes, folder.resolve(), args, partition)
    sys.stderr.write(f"perfprobe: {' '.join(command)}\n")
    code = slurm.run_srun(command)
    nodes_seen = sorted({p.name.split(".")[0] for p in folder.iterdir() if p.suffix in (".json", ".err", ".part")})
    if not nodes_seen:
        raise UsageError(f"srun exited {code} and no node wrote a report into {folder}")
    sys.stderr.write(f"perfprobe: srun exited {code}; reports in {folder}/\n")
    allocated = os.environ.get("SLURM_JOB_NODELIST")  # inside an allocation: every node should answer
    expected = sorted(set(nodes_seen) | set(_hostlist(allocated) if allocated and nodes >= len(_hostlist(allocated)) else []))
    inputs = reports.load_many([folder])
    _judge_and_print(inputs, expected, baseline_out, json_out, None, 0.10)


def _judge_and_print(inputs: Any, expected: list[str], baseline_out: Path | None, json_out: bool,
                     metrics: str | None, min_change: float) -> None:
    from perfprobe.fleet import baseline as bl
    from perfprobe.fleet import peers, show
    from perfprobe.render.outputs import check_writable

    if baseline_out is not None:
        check_writable({"--baseline-out": baseline_out})
    if not inputs.reports:
        unusable = [f"{r.source}: {r.reason}" for r in inputs.rejected] + [
            f"{b.source}: a baseline, not a report" for b in inputs.baselines]
        why = "; ".join(unusable[:3]) or "no reports given"
        raise UsageError(f"no usable report ({why})")
    patterns = tuple(p.strip() for p in metrics.split(",") if p.strip()) if metrics else None
    fleet = peers.judge(inputs.reports, inputs.rejected, expected, patterns, min_change=min_change)
    fleet.notes += [f"{b.source}: a baseline, not a report; left out of the fleet" for b in inputs.baselines]
    if baseline_out is not None:
        baseline_out.write_text(json.dumps(bl.build(fleet), indent=1) + "\n")
        fleet.notes.append(f"baseline of {len(fleet.groups)} group(s) written to {baseline_out}")
    if json_out:
        sys.stdout.write(json.dumps(show.fleet_json(fleet), indent=2) + "\n")
    else:
        _print(show.fleet_lines(fleet))
    raise typer.Exit(1 if fleet.problems else 0)


def _hostlist(text: str | None) -> list[str]:
    from perfprobe.fleet.hostlist import expand

    return expand(text) if text else []


def _print(items: list[Any]) -> None:
    from rich.console import Console

    # NO_COLOR: no escape at all, as cli/commands.py's console (rich's no_color alone still draws bold)
    console = Console(color_system=None if os.environ.get("NO_COLOR") else "auto", highlight=False,
                      width=None if sys.stdout.isatty() else 160)
    for item in items:
        console.print(item)
