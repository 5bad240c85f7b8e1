"""The run configuration: one frozen object built by the CLI and read by every probe.

Two things live here so that every probe does them the same way:
- `Knobs`: the typed per-command options (validated by the CLI before anything runs);
- `Presets`: a probe's full and `--quick` parameter sets, chosen in one place.
Memory budgets live beside this in perfprobe/budget.py; `UsageError` (bad input, one line, exit 2)
in perfprobe/errors.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

P = TypeVar("P")


@dataclass(frozen=True)
class Knobs:
    """Per-command options. None means "the probe's preset decides".

    The CLI validates every user-facing knob before anything runs; the last group are test hooks
    (smaller runs in `make test`), set only from Python, never from the command line.
    """

    max_size: int | None = None      # cache: largest working set (bytes)
    repeats: int | None = None       # cache, uvm: timed repeats per point
    max_spacing: int | None = None   # falseshare: widest counter spacing (bytes, power of two)
    threads: int | None = None       # falseshare: threads for the many-thread runs
    size: int | None = None          # numa, pinned, streams, uvm, and newer probes: buffer size (bytes)
    allocators: tuple[str, ...] | None = None  # alloc: more allocator libraries (paths) to measure
    # test hooks
    iterations: int | None = None    # falseshare: updates per thread per run
    passes: int | None = None        # uvm: kernel passes over the buffer
    host_threads: int | None = None  # uvm: host threads writing managed memory
    steps: int | None = None         # numa: pointer-chase steps per latency point
    max_pairs: int | None = None     # numa: most (CPU node, memory node) pairs measured


@dataclass(frozen=True)
class Presets(Generic[P]):
    """A probe's two parameter sets: `full` (the default) and `quick` (--quick, CI smoke runs)."""

    full: P
    quick: P

    def pick(self, quick: bool) -> P:
        return self.quick if quick else self.full


@dataclass(frozen=True)
class RunConfig:
    """What the user asked for.

    `device` is None (the default GPU, 0), an index, a tuple of indices (--device 0,1), or "all";
    `options` holds one command's knobs.
    """

    quick: bool = False
    json: bool = False
    output: Path | None = None
    device: int | str | tuple[int, ...] | None = None
    require_gpu: bool = False
    bind: int | None = None
    fsroot: Path | None = None
    options: Knobs = field(default_factory=Knobs)
    record: Path | None = None
    prom: Path | None = None       # --prom: node_exporter textfile
    junit: Path | None = None      # --junit: JUnit XML
    html: Path | None = None       # --html: perfprobe.render.html
    replay: Path | None = None

    def preset(self, presets: Presets[P]) -> P:
        """The parameter set this run uses (quick or full)."""
        return presets.pick(self.quick)
