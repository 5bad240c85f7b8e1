"""The command line: thin typer commands that build one RunConfig and hand it to the runner.

Kept light on purpose — `perfprobe --help` must answer in well under half a second — so nothing
here imports numba, cupy or NVML; probes import their kernels when they run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from perfprobe import __version__
from perfprobe.cli_help import PlainArgsCommand
from perfprobe.config import Knobs, RunConfig
from perfprobe.errors import UsageError
from perfprobe.report_command import report as report_command
from perfprobe.units import parse_count, parse_device, parse_size, size_word


class _Group(typer.core.TyperGroup):
    """Plain help (no panels, no `<bool>` type column), and each command's first sentence in full."""

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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"perfprobe {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """perfprobe: performance is transport; measure it here."""


@app.command()
def host(json_out: JsonOpt = False, output: OutputOpt = None,
         fsroot: Annotated[Optional[Path], typer.Option("--fsroot", metavar="DIR",
                           help="Read a captured tree (DIR/sys, DIR/proc) instead of this host.")] = None,
         record: RecordOpt = None, prom: PromOpt = None, junit: JunitOpt = None, html: HtmlOpt = None, replay: ReplayOpt = None) -> None:
    """What this host is and how it is set up: CPUs, caches, NUMA, THP, governor, GPUs."""
    _run(["host"], RunConfig(json=json_out, output=output, fsroot=fsroot, record=record, prom=prom, junit=junit, html=html, replay=replay))


@app.command("all")
def all_(json_out: JsonOpt = False, output: OutputOpt = None, quick: QuickOpt = False,
         bind: BindOpt = None, device: DeviceOpt = None, require_gpu: RequireGpuOpt = False,
         record: RecordOpt = None, prom: PromOpt = None, junit: JunitOpt = None, html: HtmlOpt = None, replay: ReplayOpt = None) -> None:
    """Host facts, then every probe, then one summary table."""
    from perfprobe.registry import all_probe_names

    _run(all_probe_names(), RunConfig(json=json_out, output=output, quick=quick, bind=bind,
                                      device=parse_device(device), require_gpu=require_gpu,
                                      record=record, prom=prom, junit=junit, html=html, replay=replay))


@app.command()
def cache(json_out: JsonOpt = False, output: OutputOpt = None, quick: QuickOpt = False,
          bind: BindOpt = None, record: RecordOpt = None, prom: PromOpt = None, junit: JunitOpt = None, html: HtmlOpt = None, replay: ReplayOpt = None,
          max_size: Annotated[Optional[str], typer.Option("--max-size", metavar="BYTES", help=(
              "Largest working set, 64K to 1P, e.g. 1G (default: 4x the last-level cache; never more "
              "than a quarter of the memory available, or of the bound node's free memory)."))] = None,
          repeats: Annotated[Optional[int], typer.Option("--repeats", metavar="N",
                             help="Timed repeats per point, 1 to 1000 (the median is reported).")] = None) -> None:
    """Cache hierarchy: latency curve, level sizes, bandwidth, line size, prefetch, huge pages."""
    options = Knobs(max_size=parse_size(max_size, "--max-size", minimum=64 << 10),
                    repeats=parse_count(repeats, "--repeats", 1, 1000))
    _run(["cache"], RunConfig(json=json_out, output=output, quick=quick, bind=bind, options=options,
                              record=record, prom=prom, junit=junit, html=html, replay=replay))


@app.command()
def falseshare(json_out: JsonOpt = False, output: OutputOpt = None, quick: QuickOpt = False,
               bind: BindOpt = None, record: RecordOpt = None, prom: PromOpt = None, junit: JunitOpt = None, html: HtmlOpt = None, replay: ReplayOpt = None,
               max_spacing: Annotated[Optional[str], typer.Option("--max-spacing", metavar="BYTES", help=(
                   "Widest counter spacing: a power of two from 256 to 1M (default 256)."))] = None,
               threads: Annotated[Optional[int], typer.Option("--threads", metavar="N", help=(
                   "Threads for the many-thread runs: 2 to the usable CPUs (under --bind, the node's; "
                   "default: all of them)."))] = None) -> None:
    """False sharing: cost per counter spacing, padding to use, core-to-core latency."""
    spacing = parse_size(max_spacing, "--max-spacing", minimum=256, maximum=1 << 20, power_of_two=True)
    _run(["falseshare"], RunConfig(json=json_out, output=output, quick=quick, bind=bind,
                                   options=Knobs(max_spacing=spacing,
                                                 threads=parse_count(threads, "--threads", 2, 4096)),
                                   record=record, prom=prom, junit=junit, html=html, replay=replay))


@app.command()
def numa(json_out: JsonOpt = False, output: OutputOpt = None, quick: QuickOpt = False,
         bind: BindOpt = None, record: RecordOpt = None, prom: PromOpt = None, junit: JunitOpt = None, html: HtmlOpt = None, replay: ReplayOpt = None,
         size: Annotated[Optional[str], typer.Option("--size", metavar="BYTES", help=(
             "Working set per memory node, at least 16M, e.g. 256M (default: several times the "
             "largest cache)."))] = None) -> None:
    """NUMA: topology, latency and bandwidth matrices, remote penalties, placement."""
    _run(["numa"], RunConfig(json=json_out, output=output, quick=quick, bind=bind,
                             options=Knobs(size=parse_size(size, "--size", minimum=16 << 20)),
                             record=record, prom=prom, junit=junit, html=html, replay=replay))


def _cpu_command(name: str, doc: str) -> None:
    """Register one CPU probe command with only the common options."""

    def command(json_out: JsonOpt = False, output: OutputOpt = None, quick: QuickOpt = False,
                bind: BindOpt = None, record: RecordOpt = None, prom: PromOpt = None, junit: JunitOpt = None,
                html: HtmlOpt = None, replay: ReplayOpt = None) -> None:
        _run([name], RunConfig(json=json_out, output=output, quick=quick, bind=bind, record=record,
                               prom=prom, junit=junit, html=html, replay=replay))

    command.__doc__ = doc
    app.command(name)(command)


_cpu_command("layout", "Data layout: split loads (line, page) against aligned, AoS against SoA per cache level.")
_cpu_command("branch", "Branches: mispredict cost in cycles, predictor reach, what branch-free code saves.")
_cpu_command("ipc", "IPC: round trips and streams over sockets, pipes, TCP and a shared-memory ring; event-loop cost.")


@app.command()
def alloc(json_out: JsonOpt = False, output: OutputOpt = None, quick: QuickOpt = False,
          bind: BindOpt = None, record: RecordOpt = None, prom: PromOpt = None, junit: JunitOpt = None,
          html: HtmlOpt = None, replay: ReplayOpt = None,
          size: Annotated[Optional[str], typer.Option("--size", metavar="BYTES", help=(
              "Largest buffer (first touch, DRAM memcpy), at least 4M, e.g. 256M (default: 128M first "
              "touch, 4x the last-level cache copied; within a quarter of the available memory)."))] = None,
          allocator: Annotated[Optional[list[Path]], typer.Option("--allocator", metavar="FILE", help=(
              "Also measure this allocator library (exports malloc and free); repeatable. jemalloc, "
              "tcmalloc and mimalloc are looked for anyway."))] = None) -> None:
    """Allocation: malloc/free per allocator and thread count, pools, first touch, copy against move."""
    options = Knobs(size=parse_size(size, "--size", minimum=4 << 20),
                    allocators=tuple(str(p) for p in allocator or ()) or None)
    _run(["alloc"], RunConfig(json=json_out, output=output, quick=quick, bind=bind, options=options,
                              record=record, prom=prom, junit=junit, html=html, replay=replay))


def _gpu_command(name: str, doc: str, min_size: int) -> None:
    """Register one GPU probe command; `min_size` is the smallest --size its measurement can use."""

    def command(json_out: JsonOpt = False, output: OutputOpt = None, quick: QuickOpt = False,
                bind: BindOpt = None, device: DeviceOpt = None, require_gpu: RequireGpuOpt = False,
                size: Optional[str] = typer.Option(None, "--size", metavar="BYTES", help=(
                    f"Buffer size, at least {size_word(min_size)}, e.g. 256M or 1G.")),
                record: RecordOpt = None, prom: PromOpt = None, junit: JunitOpt = None, html: HtmlOpt = None, replay: ReplayOpt = None) -> None:
        options = Knobs(size=parse_size(size, "--size", minimum=min_size))
        _run([name], RunConfig(json=json_out, output=output, quick=quick, bind=bind,
                               device=parse_device(device), require_gpu=require_gpu,
                               options=options, record=record, prom=prom, junit=junit, html=html, replay=replay))

    command.__doc__ = doc
    app.command(name)(command)


_gpu_command("pinned", "Host-GPU copies: pageable against pinned, link rate, blocking, pinning cost.", 64 << 10)
_gpu_command("streams", "Copy/compute overlap across CUDA streams: chunks x streams against the ideal.", 4 << 20)
_gpu_command("uvm", "Unified memory: on-demand migration, prefetch, advice, zero-copy.", 1 << 20)
_gpu_command("gpumem", "Inside the GPU: DRAM bandwidth against its peak, coalescing, banks, occupancy, tiling.", 16 << 20)
_gpu_command("p2p", "GPU-to-GPU copies over NVLink or PCIe: peer access, bandwidth and latency matrices "
             "against the links (all GPUs unless --device lists them).", 1 << 20)

from perfprobe.fleet.commands import register as _register_fleet  # noqa: E402 - compare, fleet, healthcheck

_register_fleet(app)
app.command("report", cls=PlainArgsCommand)(report_command)  # saved runs drawn as HTML (perfprobe/report_command.py)


def _run(names: list[str], config: RunConfig) -> None:
    """Run, render, write --output, and exit with the code of the worst verdict."""
    from perfprobe import runner
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
    from perfprobe.progress import null_progress, rich_progress

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
