"""`perfprobe warmup [PROBE...]`: compile the probes' kernels into numba's cache now, not at the
first run people wait for (issue 28 item 2).

`make run`, the install docs and CI images call it once after installing; a run afterwards finds
every recorded kernel cached for this CPU. What it compiles is kernels/kernel_signatures.json's
record (kernels/warmup.py), in parallel children, one per usable CPU as memory allows; it measures
nothing and changes no system setting. Exit 0: every kernel is cached (compiled now or before);
3: some did not compile (named; a run compiles them at their first call); 2: bad usage.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, List, Optional, Sequence

import typer

from perfprobe.errors import UsageError
from perfprobe.pure.units import parse_count


def warmup(probes: Annotated[Optional[List[str]], typer.Argument(
               metavar="[PROBE]...", show_default=False,
               help="Probes whose kernels to compile (default: every probe with recorded kernels).")] = None,
           jobs: Annotated[Optional[int], typer.Option(
               "--jobs", metavar="N", show_default=False,
               help="Compiling processes, 1 to 256 (default: one per usable CPU, as free memory allows).")] = None,
           json_out: Annotated[bool, typer.Option("--json", help="Print what was done as JSON on stdout, nothing else.")] = False,
           ) -> None:
    """Compile the probes' kernels into numba's cache ahead of the first run (for images, CI caches)."""
    raise typer.Exit(warmup_command(probes or [], parse_count(jobs, "--jobs", 1, 256), json_out))


def warmup_command(probes: Sequence[str], jobs: int | None, json_out: bool) -> int:
    """Check the names before anything compiles, compile what the cache lacks, say what was done."""
    from perfprobe.engine.registry import all_probe_names

    names = _probe_names(probes, all_probe_names())
    from perfprobe.kernels import warmup as kernels_warmup

    if not kernels_warmup.recorded():
        raise UsageError(f"warmup: {kernels_warmup.SIGNATURES}: no recorded kernel signatures to compile from")
    names = names or sorted(kernels_warmup.recorded())
    kernels = kernels_warmup.needed(names)
    lacking = kernels_warmup.missing(kernels)
    done = kernels_warmup.compile_ahead(lacking, jobs)
    summary: dict[str, Any] = {
        "probes": names, "kernels": len(kernels), "cached_before": len(kernels) - len(lacking),
        "compiled": done.compiled, "failed": done.failed, "processes": done.jobs,
        "seconds": round(done.seconds, 2), "cache": done.cache,
        "not_recorded": [n for n in names if n not in kernels_warmup.recorded()]}
    sys.stdout.write(json.dumps(summary, indent=2) + "\n" if json_out else _text(summary))
    return 3 if done.failed else 0


def _probe_names(asked: Sequence[str], registered: Sequence[str]) -> list[str]:
    """The probes asked for, each once and in order ([] for every recorded one); a name that is no
    probe is exit 2, naming those that are."""
    unknown = [name for name in asked if name not in registered]
    if unknown:
        raise UsageError(f"warmup: not a probe: {', '.join(unknown)} (probes: {', '.join(registered)})")
    return list(dict.fromkeys(asked))


def _text(summary: dict[str, Any]) -> str:
    """What was compiled and where it lives; the probes with nothing recorded; each kernel that failed."""
    lines = [f"perfprobe warmup: {summary['kernels']} kernels of {', '.join(summary['probes'])}: "
             f"{summary['cached_before']} already cached, {summary['compiled']} compiled "
             f"in {summary['seconds']} s ({summary['processes']} processes)",
             f"numba's cache: {summary['cache']} (keyed to this CPU and to the sources' mtimes)"]
    if summary["not_recorded"]:
        lines.append(f"no kernels recorded for {', '.join(summary['not_recorded'])} "
                     "(GPU kernels compile at their first call; cupy caches them itself)")
    lines += [f"not compiled: {name} (compiles at its first call)" for name in summary["failed"]]
    return "\n".join(lines) + "\n"
