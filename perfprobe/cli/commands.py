"""The command line: typer commands, one per registered probe, generated from the probes' declarations
(declared.py: their own options, ranges and help), with the options every command shares declared
once here (COMMON); each builds one RunConfig and hands it to the runner.

Kept light on purpose — `perfprobe --help` must answer in well under half a second — so nothing
here imports numba, cupy or NVML; probes import their kernels when they run.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from perfprobe import __version__
from perfprobe.cli.help import PlainArgsCommand
from perfprobe.cli.report_command import report as report_command
from perfprobe.cli.warmup_command import warmup as warmup_command
from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.engine.declaration import Declared, ProbeOption
from perfprobe.errors import UsageError
from perfprobe.pure.units import parse_count, parse_device


class _Group(typer.core.TyperGroup):
    """perfprobe's command group: a command per registered probe (read off the registry each time
    the group is built, so a probe registered later has its command), then the others; plain help
    (no panels, no `<bool>` type column), and each command's first sentence in full."""

    def __init__(self, *args: Any, commands: Optional[dict[str, Any]] = None, **kwargs: Any) -> None:
        super().__init__(*args, commands={**_probe_commands(), **(commands or {})}, **kwargs)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = [(name, " ".join((command.help or "").split("\n\n")[0].split()))
                for name in self.list_commands(ctx)
                if (command := self.get_command(ctx, name)) is not None and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    cls=_Group,
    rich_markup_mode=None,  # click's plain layout reads like a hand-written --help, with no escapes
    name="perfprobe",
    help="Measure what makes programs fast on this host — caches, false sharing, NUMA locality, "
    "host-GPU transfers — judge it against the host's own facts, and say what to do.",
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the JSON report on stdout, nothing else.")]
OutputOpt = Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE",
                                                   help="Also write the JSON report to FILE.")]
QuickOpt = Annotated[bool, typer.Option("--quick", help="Smaller sizes, fewer repeats (CI smoke runs).")]


def _node_number(value: Optional[int]) -> Optional[int]:
    return parse_count(value, "--bind", 0, 1 << 20)  # a node number; which exist is checked later


BindOpt = Annotated[Optional[int], typer.Option("--bind", metavar="NODE", callback=_node_number,
                                                help="Bind CPUs and memory to NUMA node NODE first.")]
DeviceOpt = Annotated[Optional[str], typer.Option("--device", metavar="N|all",
                                                  help="GPU index, a list (0,1), or 'all' for each GPU in turn.")]
RequireGpuOpt = Annotated[bool, typer.Option("--require-gpu",
                                             help="No usable GPU is an error (exit 3), not a skip.")]
RecordOpt = Annotated[Optional[Path], typer.Option("--record", hidden=True,
                                                   help="Write host facts and raw numbers to FILE.")]
ReplayOpt = Annotated[Optional[Path], typer.Option("--replay", hidden=True,
                                                   help="Judge recorded raw numbers, measure nothing.")]
PromOpt = Annotated[Optional[Path], typer.Option("--prom", metavar="FILE",
                                                 help="Also write node_exporter's textfile format to FILE.")]
JunitOpt = Annotated[Optional[Path], typer.Option("--junit", metavar="FILE",
                                                  help="Also write JUnit XML to FILE (one test case per probe).")]
HtmlOpt = Annotated[Optional[Path], typer.Option("--html", metavar="FILE", help="Also write an HTML report to FILE.")]

Shared = tuple[str, Any, Any, str]
"""A common option: (RunConfig field, typer annotation, default, which commands take it: "every",
"timed" ones (not host: --quick, --bind) or "gpu" ones (--device, --require-gpu))."""
BEFORE_OWN: tuple[Shared, ...] = (
    ("json", JsonOpt, False, "every"), ("output", OutputOpt, None, "every"),
    ("quick", QuickOpt, False, "timed"), ("bind", BindOpt, None, "timed"),
    ("device", DeviceOpt, None, "gpu"), ("require_gpu", RequireGpuOpt, False, "gpu"),
)
AFTER_OWN: tuple[Shared, ...] = (
    ("record", RecordOpt, None, "every"), ("prom", PromOpt, None, "every"), ("junit", JunitOpt, None, "every"),
    ("html", HtmlOpt, None, "every"), ("replay", ReplayOpt, None, "every"),
)
"""The options every measuring command shares, declared once, in --help order around the probe's own."""
ALL = Declared(name="all", help="Host facts, then every probe, then one summary table.", gpu=True)
"""`perfprobe all`: every common option, no probe's own."""
OWN_TYPES: dict[str, Any] = {"bytes": Optional[str], "count": Optional[int], "files": Optional[list[Path]],
                             "dir": Optional[Path]}
"""What typer hands over for each option kind (declaration.Kind); ProbeOption.parse checks the range."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"perfprobe {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """perfprobe: performance is transport; measure it here."""


def _parameters(declared: Declared) -> list[inspect.Parameter]:
    """The command's parameters: the common options it takes, its own between them."""
    takes = {"every": True, "timed": declared.timed, "gpu": declared.gpu}
    before, after = ([inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
                      for name, annotation, default, which in shared if takes[which]]
                     for shared in (BEFORE_OWN, AFTER_OWN))
    clash = {o.name for o in declared.options} & {name for name, *_ in (*BEFORE_OWN, *AFTER_OWN)}
    if clash:
        raise ValueError(f"{declared.name}: options {sorted(clash)} are common options already")
    own = [inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_own_option(option))
           for option in declared.options]
    return before + own + after


def _own_option(option: ProbeOption) -> Any:
    return Annotated[OWN_TYPES[option.kind], typer.Option(option.flag, metavar=option.metavar,
                                                          help=option.help_text)]


def _config(declared: Declared, values: dict[str, Any]) -> RunConfig:
    """One RunConfig from a command's parsed values; each own option parsed and range-checked by
    its declaration (UsageError: one line, exit 2), in declared order, then --device."""
    knobs: dict[str, object] = {}
    run: dict[str, object] = {}
    for option in declared.options:
        (run if option.into == "run" else knobs)[option.name] = option.parse(values.pop(option.name))
    device = parse_device(values.pop("device", None))
    return RunConfig(**values, **run, device=device, options=Knobs.of(knobs))  # type: ignore[arg-type]


def probe_command(declared: Declared, names: Callable[[], list[str]] | None = None) -> Callable[..., None]:
    """The typer command function of a declared probe (`names`: the probes it runs; default its own)."""

    def command(**values: Any) -> None:
        _run(names() if names else [declared.name], _config(declared, values))

    params = _parameters(declared)
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = declared.help
    command.__name__ = declared.name
    return command


def _probe_commands() -> dict[str, Any]:
    """The click command of every registered probe, in the registry's order, then `all`'s."""
    from perfprobe.engine.registry import all_probe_names, declarations

    commands = [(declared.name, probe_command(declared)) for declared in declarations()]
    commands.append(("all", probe_command(ALL, all_probe_names)))
    return {name: _click_command(name, function) for name, function in commands}


def _click_command(name: str, function: Callable[..., None]) -> Any:
    """typer's click command for one function (an app of one command is that command)."""
    single = typer.Typer(rich_markup_mode=None, add_completion=False, pretty_exceptions_enable=False)
    single.command(name)(function)
    return typer.main.get_command(single)


from perfprobe.fleet.commands import register as _register_fleet  # noqa: E402 - compare, fleet, healthcheck

_register_fleet(app)
app.command("report", cls=PlainArgsCommand)(report_command)  # saved runs drawn as HTML (perfprobe/cli/report_command.py)
app.command("warmup", cls=PlainArgsCommand)(warmup_command)  # kernels compiled ahead (perfprobe/cli/warmup_command.py)


def _run(names: list[str], config: RunConfig) -> None:
    """Run, render, write --output, and exit with the code of the worst verdict."""
    from perfprobe.engine import runner
    from perfprobe.render import outputs
    from perfprobe.render.json import report_to_json

    outputs.check_writable(outputs.targets(config))  # before anything runs (exit 2, one line)
    report = runner.run(names, config, _progress_factory(config))
    text = report_to_json(report) if config.output is not None or config.json else ""
    failed = outputs.write_all(report, config, text or None)  # the report is printed even if these fail
    if config.json:
        sys.stdout.write(text + "\n")
    else:
        from perfprobe.render.table import render_report

        render_report(report, _stdout_console())
    if report.quick_budget is not None:  # past its budget: where the time went, on stderr (exit unchanged)
        from perfprobe.engine.quick_budget import overrun_text

        sys.stderr.write(overrun_text(report.quick_budget))
    for line in failed:
        sys.stderr.write(f"perfprobe: error: {line}\n")
    raise typer.Exit(2 if failed else runner.exit_code(report))


def _stdout_console() -> Any:
    from rich.console import Console

    interactive = sys.stdout.isatty()
    # NO_COLOR: no escape at all (rich's no_color keeps bold and italic); color_system=None emits none
    return Console(color_system=None if _no_color() else "auto", width=None if interactive else 120,
                   highlight=False)


def _progress_factory(config: RunConfig) -> Any:
    from perfprobe.engine.progress import null_progress, rich_progress

    if config.json or _no_color() or not sys.stderr.isatty():
        return null_progress
    from rich.console import Console

    return rich_progress(Console(stderr=True))


def _no_color() -> bool:
    return bool(os.environ.get("NO_COLOR"))


def main(argv: list[str] | None = None) -> None:
    """Entry point: click's own errors and ours become one line on stderr and exit 2."""
    command = typer.main.get_command(app)
    click_error, click_abort = _click_exceptions()
    try:
        code = command.main(args=argv, prog_name="perfprobe", standalone_mode=False)
    except click_error as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            context = getattr(exc, "ctx", None)
            sys.stdout.write((context.get_help() if context else _message(exc)) + "\n")
            code = 0
        else:
            code = _usage_line(_message(exc))
    except UsageError as exc:
        code = _usage_line(str(exc))
    except (KeyboardInterrupt, click_abort):
        code = 130
    if code == 130:  # typer turns Ctrl-C into Exit(130) itself, silently: nothing else exits 130
        sys.stderr.write("perfprobe: interrupted\n")
    sys.exit(code if isinstance(code, int) else 0)


def _click_exceptions() -> tuple[type[Exception], type[BaseException]]:
    """click's error classes: newer typer vendors click and raises typer.TyperException subclasses,
    older typer raises click's own. typer is asked first: click may be installed beside a new typer."""
    vendored: type[Exception] | None = getattr(typer, "TyperException", None)
    if vendored is not None:
        return vendored, typer.Abort
    from click.exceptions import ClickException

    return ClickException, typer.Abort


def _message(exc: Exception) -> str:
    """click's errors (and typer's vendored ones) word themselves through format_message()."""
    format_message: Any = getattr(exc, "format_message", exc.__str__)
    return str(format_message())


def _usage_line(message: str) -> int:
    """One line naming what is wrong (and what is valid), exit code 2."""
    line = " ".join(message.split())
    sys.stderr.write(f"perfprobe: error: {line}\n")
    return 2
