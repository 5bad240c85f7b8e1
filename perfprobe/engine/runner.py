"""Run probes: host facts once, binding once, then measure → judge for each probe.

This is the only place with a broad `except`: whatever goes wrong inside one probe becomes that
probe's `error` result, and the other probes still run and report.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from perfprobe import __version__
from perfprobe.engine import confirm, quick_budget, stability
from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Assessment, Finding, ProbeResult, QuickBudget, Report, Verdict
from perfprobe.engine.probe import Probe, ProbeContext, ProgressFactory
from perfprobe.engine.progress import null_progress
from perfprobe.engine.registry import load_probe
from perfprobe.engine.stages import StageClock
from perfprobe.errors import BindError, GpuUnavailable, ProbeSkipped, UsageError
from perfprobe.host.identity import stamped
from perfprobe.system.process_state import preserved

if TYPE_CHECKING:
    from perfprobe.host.load import LoadWatch

EXIT_OK, EXIT_WARN, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 3
BIND_ADVICE = ("nothing was measured: check the cpuset and memory policy this process inherits "
               "(numactl --show) and that the kernel was built with NUMA support")
_now = time.perf_counter
"""The runner's one clock: the run's, each probe's and each stage's time (tests replace it)."""


def _compile_seconds() -> float:
    """numba's compile seconds so far in this process (kernels/compile_clock.py): what the stage
    clock moves out of measuring into compiling. 0 when it cannot be read: the split is a report."""
    try:
        from perfprobe.kernels import compile_clock

        return compile_clock.seconds()
    except Exception:  # noqa: BLE001 - no numba, or one that changed its events: nothing is moved
        return 0.0


def _listen_to_compiles(names: Sequence[str]) -> None:
    try:
        from perfprobe.kernels import compile_clock

        compile_clock.listen(names)
    except Exception:  # noqa: BLE001 - compiles then count as measuring: a report, never a failure
        pass


def _compile_ahead(names: Sequence[str]) -> int:
    """Compile the kernels of `names` that numba's cache lacks, in parallel children, and wait
    (kernels/warmup.py); a note on a terminal's stderr says what it cost. How many it compiled.
    Never fails a run: a kernel not compiled here compiles at its first call."""
    try:
        from perfprobe.kernels import warmup

        done = warmup.before_run(names)
    except Exception:  # noqa: BLE001 - compiling ahead is an optimisation only
        return 0
    if done is not None and done.compiled and sys.stderr.isatty():
        sys.stderr.write(f"perfprobe: compiled {done.compiled} kernels ahead in {done.seconds:.1f} s "
                         f"({done.jobs} processes; numba's cache: {done.cache})\n")
    return done.compiled if done is not None else 0


def exit_code(report: Report) -> int:
    """0: all pass or skip; 1: at least one warn; 3: at least one error (error beats warn)."""
    verdict = report.verdict
    if verdict is Verdict.ERROR:
        return EXIT_ERROR
    return EXIT_WARN if verdict is Verdict.WARN else EXIT_OK


def run(names: Sequence[str], config: RunConfig, progress: ProgressFactory = null_progress) -> Report:
    """Run the named probes in order and gather their results into one Report."""
    started = _now()
    if config.fsroot is not None:
        _check_fsroot(config)
    recording = _load_replay(config) if config.replay else None
    host = recording["host"] if recording else _read_host(config)
    host = stamped(host, keep_recorded=recording is not None)  # the run's time_utc, in the report
    probes = [load_probe(name) for name in names]
    for probe in probes:  # a knob this host cannot honour is exit 2 before anything runs
        if probe.check_knobs is not None and not config.replay:
            probe.check_knobs(config, host)
    ahead_s = 0.0
    if recording is None and config.fsroot is None:
        _listen_to_compiles(names)
        ahead_started = _now()
        if _compile_ahead(names):  # before the load watch and the first timing: compiles disturb neither
            ahead_s = _now() - ahead_started  # (numba's cache checked and nothing compiled: start-up)
    watch = _LoadWatch.start(config) if recording is None else None
    try:
        binding = _apply_binding(config, host)
    except BindError as exc:  # the node was valid but the host did not honour the binding
        failed = tuple(_skipped(p.name, None, str(exc), BIND_ADVICE, Verdict.ERROR) for p in probes)
        return Report(__version__, host, failed, _now() - started,
                      disturbance=_disturbance(failed, watch.stop(host) if watch else {}))
    devices = _devices_for(probes, config, recording)
    together = _devices_together(probes, config, recording, devices)
    raws: dict[str, Any] = {}
    results: list[ProbeResult] = []
    for probe in probes:
        for device in devices if probe.needs_gpu and probe.per_device else [None]:
            ctx = ProbeContext(config=config, host=host, progress=progress, device=device, devices=together,
                               probe=probe.name)
            key = _record_key(probe.name, device)
            replayed = recording["raw"].get(key) if recording else None
            if recording and replayed is None:
                results.append(_skipped(probe.name, device, f"{key} is not in the recording", ""))
                continue
            result, raw = run_one(probe, ctx, binding, replayed)
            results.append(result)
            if raw is not None:
                raws[key] = raw
    measured = watch.stop(host) if watch else dict(recording.get("run") or {}) if recording else {}
    if config.record:
        _write_recording(config.record, host, raws, measured)
    wall_s = _now() - started
    return Report(__version__, host, tuple(results), wall_s, disturbance=_disturbance(results, measured),
                  quick_budget=_quick_budget(config, names, results, wall_s, ahead_s))


def _quick_budget(config: RunConfig, names: Sequence[str], results: Sequence[ProbeResult], wall_s: float,
                  ahead_s: float) -> QuickBudget | None:
    """A live --quick run against the sum of its probes' declared budgets (quick_budget.py); None
    for a full run, a replay, or a probe that declares no budget."""
    if not config.quick or config.replay is not None or config.fsroot is not None:
        return None
    budgets = quick_budget.declared_budgets(names)
    return None if budgets is None else quick_budget.assess(results, budgets, wall_s, ahead_s)


def _disturbance(results: Sequence[ProbeResult], measured: Mapping[str, Any]) -> dict[str, object]:
    keyed = [(_record_key(r.probe, r.device), r.findings, r.metrics) for r in results]
    return stability.disturbance(keyed, measured)


@dataclasses.dataclass
class _LoadWatch:
    """The load watch of a live run (host/load.py LoadWatch); none on a captured tree, whose
    /proc/stat is not this run's."""

    watch: "LoadWatch"

    @classmethod
    def start(cls, config: RunConfig) -> "_LoadWatch | None":
        if config.fsroot is not None:
            return None
        from perfprobe.host.load import LoadWatch

        return cls(LoadWatch.start())

    def stop(self, host: Mapping[str, Any]) -> dict[str, Any]:
        steal, others = self.watch.fractions()
        usable = (host.get("cpus") or {}).get("usable")
        return {"steal_fraction": None if steal is None else round(steal, 4),
                "others_fraction": None if others is None else round(others, 4),
                "usable_cpus": len(usable) if isinstance(usable, list) else None}


def run_one(probe: Probe, ctx: ProbeContext, binding: Mapping[str, Any] | None,
            replayed: Mapping[str, Any] | None = None) -> tuple[ProbeResult, dict[str, Any] | None]:
    """Measure (or take the replayed numbers) and judge one probe; failures become results."""
    started = _now()
    stages = StageClock(_now, _compile_seconds)
    try:
        with stages.stage("measure"):
            raw = dict(replayed) if replayed is not None else _measure(probe, ctx)
    except GpuUnavailable as exc:
        verdict = Verdict.ERROR if ctx.config.require_gpu else Verdict.SKIP
        reason = exc.reason
        if isinstance(ctx.config.device, int) and ctx.config.device > 0:  # --device N with no CUDA
            reason += f"; whether GPU {ctx.config.device} exists cannot be known here (no GPU count without CUDA)"
        return _skipped(probe.name, ctx.device, reason, exc.hint, verdict, started), None
    except ProbeSkipped as exc:
        return _skipped(probe.name, ctx.device, exc.reason, exc.hint, Verdict.SKIP, started), None
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - the one place that turns any failure into a result
        return _failed(probe.name, ctx.device, "measuring", exc, started, stages.seconds), None
    try:
        with stages.stage("judge"):
            assessment = _judged(probe, ctx, raw, replayed is not None, stages)
            assessment = _stable(probe, ctx, raw, assessment, replayed is not None, stages)
    except Exception as exc:  # noqa: BLE001
        return _failed(probe.name, ctx.device, "judging", exc, started, stages.seconds), raw
    facts = dict(assessment.facts)
    if binding is not None:
        facts["binding"] = dict(binding)
    result = ProbeResult(
        probe=probe.name, verdict=assessment.verdict, summary=assessment.summary,
        metrics=dict(assessment.metrics), findings=tuple(assessment.findings), facts=facts,
        duration_s=_now() - started, tables=tuple(assessment.tables),
        curves=tuple(assessment.curves), key_figure=assessment.key_figure, device=ctx.device,
        stages_s=dict(stages.seconds))
    return result, raw


def _judged(probe: Probe, ctx: ProbeContext, raw: dict[str, Any], replaying: bool,
            stages: StageClock) -> Assessment:
    """judge, then confirm its timing-based warns."""
    return _confirmed(probe, ctx, raw, probe.judge(raw, ctx.host), replaying, stages)


def _stable(probe: Probe, ctx: ProbeContext, raw: dict[str, Any], first: Assessment,
            replaying: bool, stages: StageClock) -> Assessment:
    """Figures whose repeats disagree or that break a relation (stability.py): the probe is measured
    once more (kept in raw[stability.SECOND_RAW], so a replay judges the same) — only what times
    them where its `remeasures` cover them all, the rest of the first measurement kept, else the
    whole probe. The measurement with fewer unstable figures stands, and what is unstable in it is
    marked and judged by nobody. A second measurement that fails leaves the first, marked."""
    found = stability.unstable(first.metrics, probe.relations, probe.spread_bound)
    if not found:
        return first
    mark = functools.partial(stability.marked, rests_on=probe.rests_on)
    second_raw = raw.get(stability.SECOND_RAW)
    if second_raw is None and not replaying:
        keys = probe.remeasure_keys(found)
        try:
            with stages.stage("remeasure"):
                second_raw = (_remeasure(probe, ctx, raw, keys) if keys is not None else None) \
                    or _measure(probe, ctx)
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001 - the first measurement stands, its unstable figures marked
            second_raw = None
        if second_raw is not None:
            raw[stability.SECOND_RAW] = second_raw
    if second_raw is None:
        return mark(first, found, remeasured=False)
    try:
        second = _judged(probe, ctx, second_raw, replaying, stages)
    except Exception:  # noqa: BLE001 - numbers that cannot be judged: the first stands, marked
        return mark(first, found, remeasured=True)
    found_again = stability.unstable(second.metrics, probe.relations, probe.spread_bound)
    if len(found_again) < len(found):
        return mark(second, found_again, remeasured=True)
    return mark(first, found, remeasured=True)


def _confirmed(probe: Probe, ctx: ProbeContext, raw: dict[str, Any], first: Assessment,
               replaying: bool, stages: StageClock) -> Assessment:
    """Timing-based warns re-measured and judged again before they are issued (confirm.py). The
    re-measured numbers go into `raw` (so a recording replays the same verdicts); replaying, the
    recorded ones are judged. A re-measurement that fails leaves the first judgement standing."""
    keys = confirm.keys_to_confirm(first.findings)
    if not keys:
        return first
    second_raw = raw.get(confirm.SECOND_RAW)
    if second_raw is None and not replaying and not ctx.config.confirm_warns:
        return dataclasses.replace(first, findings=confirm.not_remeasured(first.findings))
    if second_raw is None and not replaying:
        with stages.stage("remeasure"):
            second_raw = _remeasure(probe, ctx, raw, keys)
        if second_raw is not None:
            raw[confirm.SECOND_RAW] = second_raw
    if second_raw is None:
        return first
    try:
        second = probe.judge(second_raw, ctx.host)
    except Exception:  # noqa: BLE001 - numbers that cannot be judged confirm nothing: the first stands
        return first
    return dataclasses.replace(first, findings=confirm.combine(first.findings, second.findings))


def _remeasure(probe: Probe, ctx: ProbeContext, raw: Mapping[str, Any],
               keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The probe's measure module's `remeasure(ctx, raw, keys)`, None when it has none or it fails."""
    module_name = probe.measure_module.partition(":")[0]  # "module:function" names the measure only
    remeasure = getattr(importlib.import_module(module_name), "remeasure", None)
    if remeasure is None:
        return None
    try:
        with preserved():
            second: dict[str, Any] = remeasure(ctx, {k: v for k, v in raw.items()
                                                     if k not in (confirm.SECOND_RAW, stability.SECOND_RAW)}, keys)
    except KeyboardInterrupt:
        raise
    except Exception:  # noqa: BLE001 - an unconfirmed warn stands as first judged
        return None
    return second


def _write_recording(path: Path, host: Mapping[str, Any], raws: Mapping[str, Any],
                     measured: Mapping[str, Any]) -> None:
    """Write --record (with `run`: how disturbed the run was, so a replay reports the same); the
    path was checked writable before the run, so a failure here (disk full, the folder removed) is
    said on stderr and the report is still rendered, never a traceback."""
    try:
        path.write_text(json.dumps({"host": host, "raw": raws, "run": dict(measured)}, indent=1, default=str))
    except OSError as exc:
        sys.stderr.write(f"perfprobe: --record {path}: cannot write ({exc.strerror or exc}); "
                         "the report is still printed\n")


def _measure(probe: Probe, ctx: ProbeContext) -> dict[str, Any]:
    """Check the declared requirements, then measure with the process state restored afterwards."""
    missing = probe.unmet(ctx)
    if missing is not None:
        raise missing
    with preserved():
        return probe.measure(ctx)


def _read_host(config: RunConfig) -> dict[str, Any]:
    from perfprobe.host import read_host_facts

    return read_host_facts(config.fsroot)


def _check_fsroot(config: RunConfig) -> None:
    root = config.fsroot
    assert root is not None
    if not root.is_dir():
        raise UsageError(f"--fsroot {root}: not a directory; give a captured tree holding sys/ and proc/")
    if not (root / "sys").is_dir() and not (root / "proc").is_dir():
        raise UsageError(f"--fsroot {root}: no sys/ or proc/ inside; give a captured tree holding them")


def _apply_binding(config: RunConfig, host: Mapping[str, Any]) -> dict[str, Any] | None:
    """Validate and apply --bind before anything is measured; None when not asked for."""
    if config.bind is None:
        return None
    from perfprobe.system import bind

    bind.validate_bind_node(config.bind, host)
    if config.replay or config.fsroot:
        return {"node": config.bind, "applied": False}
    return bind.bind_to_node(config.bind, host)


def _devices_together(probes: Sequence[Probe], config: RunConfig, recording: Mapping[str, Any] | None,
                      devices: list[int]) -> tuple[int, ...]:
    """The GPUs a `per_device=False` probe measures together: as selected, and every GPU when
    --device is not given (a pair probe's default); `devices` when no such probe runs."""
    if config.device is not None or not any(p.needs_gpu and not p.per_device for p in probes):
        return tuple(devices)
    return tuple(_devices_for(probes, dataclasses.replace(config, device="all"), recording))


def _devices_for(probes: Sequence[Probe], config: RunConfig,
                 recording: Mapping[str, Any] | None = None) -> list[int]:
    """The GPU indices to run GPU probes on: --device N, each of a list (0,1), every device for
    `all`, else device 0.

    Replaying, `all` means every device the recording holds."""
    if isinstance(config.device, tuple):
        return _listed_devices(probes, config.device, config.replay is not None)
    if recording is not None and config.device == "all":
        recorded = {int(key.split("[")[1].rstrip("]")) for key in recording["raw"] if "[" in key}
        return sorted(recorded) or [0]
    if not any(p.needs_gpu for p in probes) or config.replay:
        return [config.device if isinstance(config.device, int) else 0]
    if config.device is None:
        return [0]
    try:
        from perfprobe.kernels import cuda_runtime

        count = cuda_runtime.device_count()
    except GpuUnavailable:
        return [0 if config.device == "all" else int(config.device)]  # the probes will skip, with why
    if config.device == "all":
        return list(range(count))
    if not 0 <= int(config.device) < count:
        valid = "0" if count == 1 else f"0 to {count - 1}"
        raise UsageError(f"--device {config.device}: no such GPU; valid: {valid} or all")
    return [int(config.device)]


def _listed_devices(probes: Sequence[Probe], listed: tuple[int, ...], replaying: bool) -> list[int]:
    """--device 0,1: each listed GPU must exist (exit 2 naming the valid ones); without CUDA the
    probes skip, with why."""
    if replaying or not any(p.needs_gpu for p in probes):
        return list(listed)
    try:
        from perfprobe.kernels import cuda_runtime

        count = cuda_runtime.device_count()
    except GpuUnavailable:
        return list(listed)
    missing = [d for d in listed if d >= count]
    if missing:
        valid = "0" if count == 1 else f"0 to {count - 1}"
        raise UsageError(f"--device {','.join(map(str, listed))}: no GPU {missing[0]}; valid: {valid} or all")
    return list(listed)


def _load_replay(config: RunConfig) -> dict[str, Any]:
    assert config.replay is not None
    from perfprobe.system import untrusted  # bounded, typed, depth-limited, schema-checked (recording.schema.json)

    try:
        data: dict[str, Any] = untrusted.load(config.replay, "recording")
    except untrusted.InputError as exc:
        raise UsageError(f"--replay {config.replay}: {exc}") from exc
    return data


def _record_key(name: str, device: int | None) -> str:
    return name if device is None else f"{name}[{device}]"


def _skipped(name: str, device: int | None, reason: str, hint: str,
             verdict: Verdict = Verdict.SKIP, started: float | None = None) -> ProbeResult:
    finding = Finding(verdict, reason, hint)
    duration = _now() - started if started is not None else 0.0
    return ProbeResult(probe=name, verdict=verdict, summary=reason, findings=(finding,),
                       duration_s=duration, device=device)


def _failed(name: str, device: int | None, stage: str, exc: BaseException, started: float,
            stages_s: Mapping[str, float] | None = None) -> ProbeResult:
    message = f"{stage} failed: {type(exc).__name__}: {exc}".strip()
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    at = f" (at {where[0].filename.rsplit('/', 1)[-1]}:{where[0].lineno})" if where else ""
    advice = "report this with the JSON output (--json) attached"
    if isinstance(exc, MemoryError) or getattr(exc, "errno", None) == 12:  # ENOMEM: name a ulimit -v
        from perfprobe.system.budget import address_space_limit_words

        limit = address_space_limit_words()
        if limit:
            message += f"; {limit} is in force"
            advice = "raise the limit (ulimit -v unlimited) or ask for a smaller size"
    finding = Finding(Verdict.ERROR, message + at, advice)
    return ProbeResult(probe=name, verdict=Verdict.ERROR, summary=message, findings=(finding,),
                       duration_s=_now() - started, device=device, stages_s=dict(stages_s or {}))

