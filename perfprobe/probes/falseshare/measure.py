"""falseshare measurement: pinned threads on counters 8..max_spacing bytes apart, then core to core.

Runs every planned case (atomic and plain updates, true sharing, one thread) with interleaved
repeats and the core-to-core ping-pong per CPU pair, and returns plain numbers. The knobs were
checked before anything ran (PROBE.check_knobs) and two usable CPUs are a declared requirement.
"""

from __future__ import annotations

import statistics
from functools import partial
from typing import Any, Callable, Sequence

from perfprobe.engine.probe import ProbeContext
from perfprobe.probes.falseshare.plan import (
    DEFAULT_MAX_SPACING,
    PRESETS,
    RETRIES,
    WARMUP_ROUNDS,
    WITNESSED,
    Case,
    Settings,
    cpu_cores,
    pair_cpus,
    placement_order,
    plan_cases,
    shared_cores,
    spacings,
    thread_counts,
)
from perfprobe.pure.stats import summarize
from perfprobe.system.bind import usable_cpus


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Time every case (interleaved repeats, medians) and the core-to-core pairs."""
    from perfprobe.kernels import falseshare_kernels as kernels

    knobs = ctx.config.options
    widths = spacings(knobs.max_spacing or DEFAULT_MAX_SPACING)
    usable = usable_cpus(ctx.host)
    settings = ctx.config.preset(PRESETS)
    cores = cpu_cores(ctx.host)
    order = placement_order(usable, cores)
    counts = thread_counts(len(usable), knobs.threads)
    cases = plan_cases(order, counts, widths)
    results = _time_cases(ctx, kernels, cases, settings, knobs.iterations)
    ok, how = kernels.plain_loop_touches_memory()
    return {
        "method": "pinned threads, spin barrier, clock_gettime(CLOCK_MONOTONIC) in the kernel; "
                  "ns/update = (last thread end - first thread start) / iterations per thread; "
                  f"a run where a thread had < 90% of its wall time on the CPU is retried {RETRIES}x; "
                  f"{WARMUP_ROUNDS} untimed pass over every case before the timed repeats",
        "threads": max(counts), "thread_counts": counts, "usable_cpus": usable,
        "placement": {str(t): {"cpus": list(order[:t]), "smt_shared": shared_cores(order[:t], cores)}
                      for t in counts},
        "spacings_bytes": widths, "cases": results,
        "plain_check": {"touches_memory": ok, "how": how},
        "pingpong": _pingpong(ctx, kernels, order, settings),
        "repeats": settings.repeats, "quick": ctx.quick,
    }


def _time_cases(ctx: ProbeContext, kernels: Any, cases: Sequence[Case], settings: Settings,
                iterations: int | None, sized: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Warm up and size each case (or take `sized` iteration counts), then run the repeats
    round-robin so drift hits all alike, the first WARMUP_ROUNDS passes untimed (discarded)."""
    with ctx.progress("false sharing: warm-up", len(cases)) as task:
        iters = list(sized) if sized else [iterations or _size_run(kernels, c, settings.run_ms, task.advance)
                                           for c in cases]
    samples: list[list[float]] = [[] for _ in cases]
    skews: list[list[float]] = [[] for _ in cases]
    loops: list[list[float]] = [[] for _ in cases]
    disturbed = [0] * len(cases)
    rounds = WARMUP_ROUNDS + settings.repeats
    with ctx.progress("false sharing", rounds * len(cases)) as task:
        for round_ in range(rounds):
            for i, c in enumerate(cases):
                once = partial(kernels.run_counters, c.cpus, c.spacing_bytes, iters[i], c.kind)
                if round_ < WARMUP_ROUNDS:
                    once()
                else:
                    run = _undisturbed(once)
                    samples[i].append(run.span_ns / iters[i])
                    skews[i].append(float(max(run.starts_ns) - min(run.starts_ns)))
                    loops[i].append(statistics.median(e - s for s, e in zip(run.starts_ns, run.ends_ns)) / iters[i])
                    disturbed[i] += run.preempted
                task.advance()
    return [{"kind": c.kind, "threads": len(c.cpus), "cpus": list(c.cpus), "spacing_bytes": c.spacing_bytes,
             "iterations": n, "ns_per_update": summarize(s), "disturbed_runs": d,
             "barrier_skew_ns": summarize(skew), "thread_ns_per_update": summarize(loop)}
            for c, n, s, d, skew, loop in zip(cases, iters, samples, disturbed, skews, loops)]


def _undisturbed(run: Callable[[], Any], retries: int = RETRIES) -> Any:
    """A run in which no thread was preempted, trying up to `retries` more times; else the last."""
    result = run()
    for _ in range(retries):
        if not result.preempted:
            break
        result = run()
    return result


def _size_run(kernels: Any, case: Case, run_ms: float, done: Callable[[], None]) -> int:
    """Iterations for a run of about `run_ms`, from two short warm-up runs (compile, caches)."""
    probe = 20_000
    for _ in range(2):
        span = kernels.run_counters(case.cpus, case.spacing_bytes, probe, case.kind).span_ns
    done()
    return max(10_000, int(run_ms * 1e6 / max(span / probe, 0.05)))


def _pingpong(ctx: ProbeContext, kernels: Any, order: Sequence[int], settings: Settings) -> dict[str, Any]:
    """One-way handoff time (half a round trip) of one flag's line, for each pair of CPUs."""
    cpus, sampled = pair_cpus(order, settings.max_pair_cpus)
    pairs = [(a, b) for i, a in enumerate(cpus) for b in cpus[i + 1:]]
    out = []
    with ctx.progress("core to core", len(pairs)) as task:
        for a, b in pairs:
            probe = kernels.run_pingpong(a, b, 2_000).span_ns / 2_000
            rounds = max(1_000, int(settings.pingpong_ms * 1e6 / max(probe, 1.0)))
            runs = [_undisturbed(partial(kernels.run_pingpong, a, b, rounds))
                    for _ in range(settings.pingpong_repeats)]
            out.append({"a": a, "b": b, "rounds": rounds, "disturbed_runs": sum(r.preempted for r in runs),
                        "one_way_ns": summarize([r.span_ns / rounds / 2 for r in runs])})
            task.advance()
    return {"cpus": cpus, "sampled": sampled, "usable": len(order), "pairs": out}


def remeasure(ctx: ProbeContext, raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Re-time only what the atomic figures rest on — the atomic cases at the most threads (every
    spacing and true sharing) and the one-thread padded case — and return `raw` with those cases
    replaced (same CPUs and iteration counts as the first run). Two callers:
    - a warn's confirmation (perfprobe/engine/confirm.py; keys such as "atomic", "distance"): all
      of them, always, so a confirmed warn rests on numbers timed twice;
    - the stability re-measurement (runner._stable, key WITNESSED: PROBE.remeasures), where the
      first run's threads lost their CPUs (the load witness, threads_kept_cpus): the witness's two
      cases first, the rest only if they now keep their speed. Else every figure resting on them is
      left out again and the first measurement stands (the runner keeps the one with fewer unstable
      figures), so timing the rest buys nothing: on the H100 machine's 16-vCPU guest the witness
      fired in every run, and re-measuring the whole probe took 1.6-1.7 s of a 21 s `all --quick`
      (12-07 22:23 UTC, docs/benchmarks.md)."""
    from perfprobe.kernels import falseshare_kernels as kernels

    return retimed(ctx, kernels, raw, witness_first=tuple(keys) == (WITNESSED,))


def retimed(ctx: ProbeContext, kernels: Any, raw: dict[str, Any], witness_first: bool = False) -> dict[str, Any]:
    """remeasure's work with the kernels passed in (tests drive it with a stand-in)."""
    threads, widest = int(raw["threads"]), max(int(s) for s in raw["spacings_bytes"])
    again = [c for c in raw["cases"] if c["kind"] == "atomic" and c["threads"] in (threads, 1)]
    if witness_first and not threads_kept_cpus(raw, ctx.host):
        witness = [c for c in again if int(c["spacing_bytes"]) == widest]
        first = _replaced(raw, _time_again(ctx, kernels, witness))
        if not threads_kept_cpus(first, ctx.host):
            return first
    return _replaced(raw, _time_again(ctx, kernels, again))


def threads_kept_cpus(raw: dict[str, Any], host: Any) -> bool:
    """Whether the run's threads kept their CPUs by the probe's own load witness (its StandsWhile
    relations on the padded cases: falseshare/__init__.py), judged on these raw numbers."""
    from perfprobe.engine.stability import StandsWhile
    from perfprobe.probes.falseshare import RELATIONS
    from perfprobe.probes.falseshare.figures import typed
    from perfprobe.probes.falseshare.tables import metrics

    found = metrics(typed(raw), host)
    return not any(rel.broken(found) for rel in RELATIONS if isinstance(rel, StandsWhile))


def _time_again(ctx: ProbeContext, kernels: Any, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    cases = [Case(c["kind"], tuple(c["cpus"]), int(c["spacing_bytes"])) for c in records]
    return _time_cases(ctx, kernels, cases, ctx.config.preset(PRESETS), None, [int(c["iterations"]) for c in records])


def _replaced(raw: dict[str, Any], timed: Sequence[dict[str, Any]]) -> dict[str, Any]:
    fresh = {(c["kind"], c["threads"], c["spacing_bytes"]): c for c in timed}
    out = dict(raw)
    out["cases"] = [fresh.get((c["kind"], c["threads"], c["spacing_bytes"]), c) for c in raw["cases"]]
    return out
