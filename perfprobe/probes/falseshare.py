"""`perfprobe falseshare`: what false sharing costs on this host, and how far apart to pad counters.

measure() runs pinned threads on counters 8..max_spacing bytes apart (atomic and plain updates),
a true-sharing and a one-thread case for scale, and a core-to-core ping-pong per CPU pair; it
returns plain numbers. Judgement lives in falseshare_rules (pure, tested on recorded numbers).
Thread placement and case planning here are pure functions of the host facts, tested without kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from perfprobe.bind import usable_cpus
from perfprobe.config import UsageError
from perfprobe.probe import Probe, ProbeContext, ProbeSkipped
from perfprobe.probes.falseshare_rules import judge
from perfprobe.stats import summarize

KINDS = ("atomic", "plain")
MIN_SPACING, DEFAULT_MAX_SPACING = 8, 256
TRUE_SHARING = 0  # spacing 0: every thread on one counter
RETRIES = 2  # a run where a thread was preempted is retried this many times


@dataclass(frozen=True)
class Settings:
    """How hard to measure: repeats per case and the target length of one timed run."""

    repeats: int
    run_ms: float
    pingpong_repeats: int
    pingpong_ms: float
    max_pair_cpus: int  # the core-to-core matrix covers at most this many CPUs


QUICK = Settings(repeats=5, run_ms=6.0, pingpong_repeats=3, pingpong_ms=3.0, max_pair_cpus=8)
FULL = Settings(repeats=11, run_ms=15.0, pingpong_repeats=5, pingpong_ms=5.0, max_pair_cpus=16)


@dataclass(frozen=True)
class Case:
    """One timed configuration: update kind, the CPUs (one thread each) and the counter spacing."""

    kind: str
    cpus: tuple[int, ...]
    spacing_bytes: int


def placement_order(usable: Sequence[int], cores: Sequence[Sequence[int]]) -> list[int]:
    """Usable CPUs in the order threads get them: one per physical core first, SMT siblings last."""
    allowed = set(usable)
    groups = [[c for c in core if c in allowed] for core in cores]
    groups = [g for g in groups if g]
    known = {c for g in groups for c in g}
    groups += [[c] for c in usable if c not in known]
    depth = max((len(g) for g in groups), default=0)
    return [g[i] for i in range(depth) for g in groups if i < len(g)]


def shared_cores(cpus: Sequence[int], cores: Sequence[Sequence[int]]) -> list[list[int]]:
    """The groups of `cpus` that are SMT siblings of one physical core (empty: all distinct)."""
    chosen = set(cpus)
    return [sorted(chosen & set(core)) for core in cores if len(chosen & set(core)) > 1]


def spacings(max_spacing: int) -> list[int]:
    """8, 16, ... up to max_spacing bytes (powers of two); the sweep always reaches 256 B, since a
    narrower one cannot see interference end beyond a 64-byte line."""
    if max_spacing < DEFAULT_MAX_SPACING:
        raise UsageError(f"--max-spacing {max_spacing}: the sweep always covers 8 to {DEFAULT_MAX_SPACING} B; "
                         f"give {DEFAULT_MAX_SPACING} or more (a power of two)")
    out, s = [], MIN_SPACING
    while s <= max_spacing:
        out.append(s)
        s *= 2
    return out


def thread_counts(usable: int, requested: int | None) -> list[int]:
    """T = 2 and T = all usable CPUs (or --threads), without repeating 2."""
    many = usable if requested is None else int(requested)
    if many < 2 or many > usable:
        choice = "give 2" if usable == 2 else f"give 2 to {usable}"
        raise UsageError(f"--threads {many}: this process can use {usable} CPUs; {choice}")
    return sorted({2, many})


def pair_cpus(order: Sequence[int], limit: int) -> tuple[list[int], bool]:
    """CPUs for the core-to-core matrix: all of them, or `limit` spread evenly (sampled=True)."""
    if len(order) <= limit:
        return sorted(order), False
    step = len(order) / limit
    return sorted({order[int(i * step)] for i in range(limit)}), True


def plan_cases(order: Sequence[int], counts: Sequence[int], widths: Sequence[int]) -> list[Case]:
    """Every timed case: spacing sweeps per T and kind, true sharing and one padded thread."""
    cases = [Case(k, tuple(order[:t]), s) for t in counts for k in KINDS for s in widths]
    many = tuple(order[:max(counts)])
    cases += [Case(k, many, TRUE_SHARING) for k in KINDS]
    cases += [Case(k, tuple(order[:1]), widths[-1]) for k in KINDS]
    return cases


def measure(ctx: ProbeContext) -> dict[str, Any]:
    """Time every case (interleaved repeats, medians) and the core-to-core pairs."""
    widths = spacings(int(ctx.config.option("max_spacing", DEFAULT_MAX_SPACING)))
    usable = usable_cpus(ctx.host)
    if len(usable) < 2:
        raise ProbeSkipped(f"false sharing needs 2 usable CPUs; this process may use {len(usable)} "
                           f"({', '.join(map(str, usable)) or 'none'})",
                           "run without taskset/cpuset limits, or on a host with 2 or more CPUs")
    from perfprobe.kernels import falseshare_kernels as kernels

    settings = QUICK if ctx.quick else FULL
    cores = (ctx.host.get("cpus") or {}).get("cores") or []
    order = placement_order(usable, cores)
    counts = thread_counts(len(usable), ctx.config.option("threads", None))
    _check_memory(ctx.host, max(counts), widths[-1])
    iterations = ctx.config.option("iterations", None)
    cases = plan_cases(order, counts, widths)
    results = _time_cases(ctx, kernels, cases, settings, iterations)
    ok, how = kernels.plain_loop_touches_memory()
    return {
        "method": "pinned threads, spin barrier, clock_gettime(CLOCK_MONOTONIC) in the kernel; "
                  "ns/update = (last thread end - first thread start) / iterations per thread; "
                  f"a run where a thread had < 90% of its wall time on the CPU is retried {RETRIES}x",
        "threads": max(counts), "thread_counts": counts, "usable_cpus": usable,
        "placement": {str(t): {"cpus": list(order[:t]), "smt_shared": shared_cores(order[:t], cores)}
                      for t in counts},
        "spacings_bytes": widths, "cases": results,
        "plain_check": {"touches_memory": ok, "how": how},
        "pingpong": _pingpong(ctx, kernels, order, settings),
        "repeats": settings.repeats, "quick": ctx.quick,
    }


def _check_memory(host: Mapping[str, Any], threads: int, widest: int) -> None:
    """The counter buffer (threads x widest spacing) must fit a quarter of the available memory."""
    from perfprobe.budget import host_memory_budget

    need, budget = threads * widest + 2 * 4096, host_memory_budget(host).bytes
    if need > budget:
        raise UsageError(f"--max-spacing {widest} with {threads} threads needs {need} bytes of counters; "
                         f"only {budget} may be used here (a quarter of available memory)")


def _time_cases(ctx: ProbeContext, kernels: Any, cases: Sequence[Case], settings: Settings,
                iterations: int | None) -> list[dict[str, Any]]:
    """Warm up and size each case, then run the repeats round-robin so drift hits all alike."""
    with ctx.progress("false sharing: warm-up", len(cases)) as task:
        iters = [iterations or _size_run(kernels, c, settings.run_ms, task.advance) for c in cases]
    samples: list[list[float]] = [[] for _ in cases]
    disturbed = [0] * len(cases)
    with ctx.progress("false sharing", settings.repeats * len(cases)) as task:
        for _ in range(settings.repeats):
            for i, c in enumerate(cases):
                run = _undisturbed(lambda: kernels.run_counters(c.cpus, c.spacing_bytes, iters[i], c.kind))
                samples[i].append(run.span_ns / iters[i])
                disturbed[i] += run.preempted
                task.advance()
    return [{"kind": c.kind, "threads": len(c.cpus), "cpus": list(c.cpus), "spacing_bytes": c.spacing_bytes,
             "iterations": n, "ns_per_update": summarize(s), "disturbed_runs": d}
            for c, n, s, d in zip(cases, iters, samples, disturbed)]


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
            runs = [_undisturbed(lambda: kernels.run_pingpong(a, b, rounds))
                    for _ in range(settings.pingpong_repeats)]
            out.append({"a": a, "b": b, "rounds": rounds, "disturbed_runs": sum(r.preempted for r in runs),
                        "one_way_ns": summarize([r.span_ns / rounds / 2 for r in runs])})
            task.advance()
    return {"cpus": cpus, "sampled": sampled, "usable": len(order), "pairs": out}


PROBE = Probe(name="falseshare", title="False sharing and core-to-core latency",
              measure_module=measure, judge=judge)
