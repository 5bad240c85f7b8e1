"""The run configuration: one frozen object built by the CLI and read by every probe.

Two things live here so that every probe does them the same way:
- `Knobs`: one command's option values (each probe declares its options in its declared.py; the
  CLI parses and range-checks them there before anything runs);
- `Presets`: a probe's full and `--quick` parameter sets, chosen in one place.
Memory budgets live beside this in perfprobe/system/budget.py; `UsageError` (bad input, one line, exit 2)
in perfprobe/errors.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Generic, Mapping, TypeVar

P = TypeVar("P")


@dataclass(frozen=True)
class Knobs:
    """One command's option values. None means "the probe's preset decides".

    What a command takes, its ranges and help, is each probe's declaration (declared.py); the CLI
    builds Knobs from those with `Knobs.of`. The typed fields are the view mypy checks where the
    pure plans read a value (`knobs.max_size`); a declared option with no field here lands in
    `extra`, read with `knobs.get(name)`, so a new probe's options need no edit of this file
    (tests/test_declarations.py keeps the fields and the declarations in step). The last group are
    test hooks (smaller runs in `make test`), set only from Python, never from the command line.
    """

    max_size: int | None = None      # cache: largest working set (bytes)
    repeats: int | None = None       # cache (and uvm, a test hook): timed repeats per point
    max_spacing: int | None = None   # falseshare: widest counter spacing (bytes, power of two)
    threads: int | None = None       # falseshare: threads for the many-thread runs
    size: int | None = None          # numa, alloc, pinned, streams, uvm, gpumem, p2p: buffer size (bytes)
    allocators: tuple[str, ...] | None = None  # alloc: more allocator libraries (paths) to measure
    # test hooks
    iterations: int | None = None    # falseshare, alloc: updates or pairs per thread per run
    passes: int | None = None        # uvm: kernel passes over the buffer
    host_threads: int | None = None  # uvm: host threads writing managed memory
    steps: int | None = None         # numa: pointer-chase steps per latency point
    max_pairs: int | None = None     # numa: most (CPU node, memory node) pairs measured
    extra: Mapping[str, object] = field(default_factory=dict, hash=False)
    """Declared options with no typed field above, by name."""

    @classmethod
    def of(cls, values: Mapping[str, object]) -> Knobs:
        """Knobs from option values by name: typed fields where one exists, the rest in `extra`."""
        typed = {f.name for f in fields(cls)} - {"extra"}
        return cls(**{k: v for k, v in values.items() if k in typed},  # type: ignore[arg-type]
                   extra={k: v for k, v in values.items() if k not in typed})

    def get(self, name: str) -> object:
        """The value of option `name`, typed field or extra; None when not given."""
        if name != "extra" and name in {f.name for f in fields(self)}:
            return getattr(self, name)
        return self.extra.get(name)


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
    confirm_warns: bool = True
    """False: a timing-based warn is not re-measured but issued as a "not confirmed" pass note
    (confirm.not_remeasured). The health check asks this when its policy drains on no warn: a
    re-measurement it would not act on cost a 2-vCPU guest's check 12 s of its 40 s deadline."""
    judged: tuple[str, ...] | None = None
    """The figures the caller judges, "probe:pattern" (fnmatch); None: every figure. The health check
    passes its policy's metrics when it drains on no warn: a probe then leaves out the parts of its
    measurement no judged figure comes from (ProbeContext.judges), and says what it left out."""
    avoid_cpus: tuple[int, ...] = ()
    """CPUs a probe does not time its one-thread figures on, where it has another to use. The health
    check's confirmation passes the first measurement's (healthcheck.one_thread_cpus): a core-private
    figure that regressed on one core drains only if another core shows it too."""

    def preset(self, presets: Presets[P]) -> P:
        """The parameter set this run uses (quick or full)."""
        return presets.pick(self.quick)
