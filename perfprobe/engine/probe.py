"""What a probe is: a name, declared requirements, `measure` (imported lazily) and a pure `judge`.

Every probe is a package `perfprobe/probes/<name>/` of the same shape (docs/DEVELOPING.md):
`__init__.py` holds `PROBE`; `measure.py` drives kernels and returns raw numbers; `plan.py`,
`figures.py`, `rules.py` and `tables.py` are pure. `measure(ctx)` returns a JSON-serialisable dict
of raw numbers; `judge(raw, host)` turns raw numbers and host facts into an Assessment. Because both
ends are plain data, numbers recorded on a real host (`--record`) go back through `judge` in tests
and through the real CLI (`--replay`) without running a kernel.

Requirements are checked by the runner before `measure` is imported, so a host that cannot run a
probe gets the same `skip` (or `error` under --require-gpu) with its reason and hint every time.
"""

from __future__ import annotations

import importlib
import importlib.util
from contextlib import AbstractContextManager
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Callable, Iterable, Mapping, Protocol

from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Assessment
from perfprobe.engine.stability import SPREAD_BOUND, Relation
from perfprobe.errors import GpuUnavailable, ProbeSkipped
from perfprobe.host.facts import Facts, numa_nodes


class ProgressTask(Protocol):
    def advance(self, steps: float = 1) -> None: ...


ProgressFactory = Callable[[str, float], AbstractContextManager[ProgressTask]]
"""`ctx.progress("latency curve", total_steps)` opens a progress bar on stderr (or nothing when
piped / NO_COLOR / --json); use it as `with ctx.progress(...) as task: ... task.advance()`."""


@dataclass(frozen=True)
class ProbeContext:
    """What `measure` gets: the run configuration, the host facts, a progress factory and, for GPU
    probes, the device index to measure (the runner expands `--device all`)."""

    config: RunConfig
    host: Facts
    progress: ProgressFactory
    device: int | None = None
    devices: tuple[int, ...] = ()
    """Every selected GPU, for a probe that measures them together (`per_device=False`, e.g. p2p)."""
    probe: str = ""
    """The probe measuring (the runner sets it): what RunConfig.judged's "probe:" prefixes match."""

    @property
    def quick(self) -> bool:
        return self.config.quick

    def judges(self, *metrics: str) -> bool:
        """Whether the caller judges any of `metrics` (names without "probe:") of this probe: True
        unless RunConfig.judged names the figures judged and none of these is among them."""
        judged = self.config.judged
        if judged is None:
            return True
        return any(fnmatchcase(f"{self.probe}:{name}", pattern) for name in metrics for pattern in judged)


class Requirement(Protocol):
    """Something a probe needs from the host. `unmet` returns None, or the skip to report."""

    def unmet(self, ctx: ProbeContext) -> ProbeSkipped | None: ...


@dataclass(frozen=True)
class UsableCpus:
    """At least `count` CPUs this process may run on (after taskset, cpusets and --bind)."""

    count: int
    why: str = ""

    def unmet(self, ctx: ProbeContext) -> ProbeSkipped | None:
        from perfprobe.system.bind import usable_cpus

        have = len(usable_cpus(ctx.host))
        if have >= self.count:
            return None
        need = f"{self.count} usable CPUs" + (f" ({self.why})" if self.why else "")
        return ProbeSkipped(f"needs {need}; this process may use {have}",
                            "run without taskset/cpuset limits, or on a host with more CPUs")


@dataclass(frozen=True)
class NumaNodes:
    """At least `count` NUMA nodes in the host facts."""

    count: int

    def unmet(self, ctx: ProbeContext) -> ProbeSkipped | None:
        have = len(numa_nodes(ctx.host))
        if have >= self.count:
            return None
        return ProbeSkipped(f"needs {self.count} NUMA nodes; this host has {have}", "")


@dataclass(frozen=True)
class PythonModule:
    """An importable Python module (found, not imported: finding it costs no start-up time)."""

    name: str
    hint: str = ""

    def unmet(self, ctx: ProbeContext) -> ProbeSkipped | None:
        try:
            found = importlib.util.find_spec(self.name) is not None
        except (ImportError, ValueError):
            found = False
        return None if found else ProbeSkipped(f"Python module {self.name} is not installed", self.hint)


@dataclass(frozen=True)
class Gpu:
    """A usable CUDA GPU (cupy, a driver, a device): unmet is GpuUnavailable (error under --require-gpu)."""

    def unmet(self, ctx: ProbeContext) -> ProbeSkipped | None:
        from perfprobe.kernels import cuda_runtime

        try:
            cuda_runtime.load_cupy()
        except GpuUnavailable as exc:
            return exc
        return None


@dataclass(frozen=True)
class Probe:
    """One probe. `measure_module` names the module whose `measure(ctx)` runs the kernels; it is
    imported only when the probe runs. GPU probes (a `Gpu()` requirement) run once per device,
    unless `per_device` is False."""

    name: str
    title: str
    judge: Callable[[Mapping[str, Any], Facts], Assessment]
    measure_module: str
    """Where `measure(ctx)` lives: "package.module" (its `measure`) or "package.module:function"."""
    requires: tuple[Requirement, ...] = ()
    check_knobs: Callable[[RunConfig, Facts], None] | None = None
    """Raises UsageError for a knob this host cannot honour (e.g. a spacing whose counters do not
    fit in memory). The runner calls it for every probe before anything is measured or bound."""
    per_device: bool = True
    """False: a GPU probe measured once over all selected GPUs together (ctx.devices; `--device`
    absent means all of them), not once per device — p2p measures pairs of GPUs."""
    relations: tuple[Relation, ...] = ()
    """The physical relations its figures must keep (stability.py); a figure that breaks one, or
    whose repeats disagree beyond `spread_bound`, is re-measured and then marked unstable."""
    spread_bound: float = SPREAD_BOUND
    rests_on: Mapping[str, tuple[str, ...]] | None = None
    """Confirm key -> the metric patterns a warn with that key rests on: an unstable figure holds
    back only the warns that rest on it (stability.marked); None holds back every timing warn."""
    remeasures: Mapping[str, tuple[str, ...]] | None = None
    """Re-measure key -> the metric patterns its `remeasure(ctx, raw, (key,))` times again (and the
    witnesses they stand on): where every unstable figure of a run is among them, the runner
    re-measures those keys only, not the whole probe (runner._stable). None: the whole probe."""

    def remeasure_keys(self, figures: Iterable[str]) -> tuple[str, ...] | None:
        """The fewest `remeasures` keys, in their order, that time every one of `figures` again;
        None where one of them is in none (then the whole probe is measured again)."""
        if not self.remeasures:
            return None
        keys: list[str] = []
        for figure in figures:
            covering = [key for key, patterns in self.remeasures.items()
                        if any(fnmatchcase(figure, p) for p in patterns)]
            if not covering:
                return None
            if not set(covering) & set(keys):
                keys.append(covering[0])
        return tuple(key for key in self.remeasures if key in keys)

    @property
    def needs_gpu(self) -> bool:
        return any(isinstance(r, Gpu) for r in self.requires)

    def measure(self, ctx: ProbeContext) -> dict[str, Any]:
        module_name, _, function = self.measure_module.partition(":")
        module = importlib.import_module(module_name)
        raw: dict[str, Any] = getattr(module, function or "measure")(ctx)
        return raw

    def unmet(self, ctx: ProbeContext) -> ProbeSkipped | None:
        """The first requirement this host does not meet, as the skip to report (None: all met)."""
        for requirement in self.requires:
            missing = requirement.unmet(ctx)
            if missing is not None:
                return missing
        return None
