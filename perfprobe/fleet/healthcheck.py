"""The Slurm health check's judgement: a fresh report against its hardware group's baseline.

The default drain policy (a site changes it with `healthcheck --policy FILE`, a JSON object with any
of the `Policy` fields):
- a probe that ended in `error` drains;
- a probe the baseline's hosts measured that is skipped here drains (a GPU gone, CPUs taken away);
- a host fact that differs from the baseline drains for the facts in `facts` (usable and online
  CPUs, the cgroup CPU quota and memory limit, GPU count and links, NUMA nodes, the locked-memory
  limit, huge pages): "CPU quota 0.2 CPUs vs baseline unlimited";
- a key metric worse than the baseline's median by more than max(`regression`, 3 of the baseline
  hosts' spreads), with a Mann–Whitney test of its repeats against the baseline hosts' pooled
  repeats significant (compare.judge), drains if a re-measurement of that probe shows it again (a timing is
  confirmed before it drains; this costs time only when something looks wrong), its one-thread
  figures timed on another core than the first time (one_thread_cpus): one core's neighbour, another
  tenant on its other hardware thread, does not drain the node; a figure the run
  marked unstable never drains, and a run that marked itself disturbed drains on no metric;
- a timing regression so confirmed drains at the first check that shows it (`regression_checks: 1`);
  a site whose hosts share their memory with other tenants (VMs) asks for more: it then drains only
  when that many consecutive checks, each no more than `regression_gap_s` after the last, showed
  the same metric (streaks; the count is kept in the check's --state folder, health_streak.py);
- a `warn` does not drain (`drain_on_warn: false`): warnings are what perfprobe says of a host's
  set-up, and many of them are true of every healthy host of a kind. So, unless it does, only the
  policy's metrics are measured (judged_figures, RunConfig.judged).
Only nodes whose drain reason starts with REASON_PREFIX are ever resumed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Iterable, Mapping

from perfprobe.errors import UsageError
from perfprobe.fleet import metrics as m
from perfprobe.fleet.baseline import reference
from perfprobe.fleet.compare import disturbed, judge
from perfprobe.fleet.compare import report_reference as measured
from perfprobe.fleet.facts import flat_facts
from perfprobe.fleet.reports import result_key

REASON_PREFIX = "perfprobe:"
MAX_REASON = 200
MEASURED = ("pass", "warn")
KIND_WORDS = {bool: "true or false", int: "a whole number", float: "a number"}
SINCE_CGROUP = ("CPU quota", "memory limit")
"""Facts that reports of older versions do not have: judged only where the baseline recorded them."""


@dataclass(frozen=True)
class Policy:
    drain_on_error: bool = True
    drain_on_warn: bool = False
    drain_on_skip: bool = True
    regression: float = 0.10
    facts: tuple[str, ...] = ("usable CPUs", "online CPUs", "CPU quota", "memory limit", "GPUs", "GPU * link",
                              "NUMA nodes", "memlock", "huge pages")
    metrics: tuple[str, ...] = m.KEY_METRICS
    ignore: tuple[str, ...] = ()
    regression_checks: int = 1
    """Consecutive checks that must each show a (confirmed) timing regression of one metric before it
    drains. 1: the first drains. On the 2-vCPU EPYC guest (12-07 19:12 UTC) 3 of 20 checks drained
    on DRAM latency or read, confirmed on the other vCPU: the memory its host's other tenants share
    was loaded, and no check in a row showed it twice; 2 would have drained none of them, at the cost
    of draining a real fault one check interval later."""
    regression_gap_s: float = 3600.0
    """The longest time between two checks that still counts as consecutive: a streak from before the
    node was down or the checks stopped does not carry on. Set it well above the check interval
    (Slurm's HealthCheckInterval, 300 s in README's example): checks an interval apart whose gap
    jitters past it would never count two in a row."""


DEFAULT_POLICY = Policy()


def load_policy(path: Path | None) -> Policy:
    """The default policy with a site's JSON overrides; an unknown key or bad value is exit 2."""
    if path is None:
        return DEFAULT_POLICY
    from perfprobe.system import untrusted

    try:
        data = untrusted.load(path, "policy")  # bounded, typed, schema/policy.schema.json
    except untrusted.InputError as exc:
        raise UsageError(f"--policy {path}: {exc}") from exc
    known = {f.name: f for f in fields(Policy)}
    if not isinstance(data, dict) or set(data) - set(known):
        raise UsageError(f"--policy {path}: keys must be among {', '.join(known)}")
    values: dict[str, Any] = {}
    for key, value in data.items():
        default = getattr(DEFAULT_POLICY, key)
        if isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise UsageError(f"--policy {path}: {key} must be a list of strings")
            value = tuple(value)
        elif not isinstance(value, type(default)) and not (isinstance(default, float) and isinstance(value, int)):
            raise UsageError(f"--policy {path}: {key} must be {KIND_WORDS[type(default)]}")
        values[key] = value
    return replace(DEFAULT_POLICY, **values)


def judged_figures(policy: Policy) -> tuple[str, ...] | None:
    """The figures a check under `policy` judges, for RunConfig.judged: its metrics, less those it
    ignores (an ignored pattern that is itself a metric pattern); None when it drains on warns,
    since any rule's warn then counts and every figure a rule reads must be measured."""
    if policy.drain_on_warn:
        return None
    return tuple(p for p in policy.metrics if p not in policy.ignore)


def problems(report: Mapping[str, Any], group: Mapping[str, Any], policy: Policy = DEFAULT_POLICY) -> list[str]:
    """What is wrong with this host by `policy`, each as 'what: value vs baseline'; [] when healthy."""
    found = _verdict_problems(report, group, policy) + _fact_problems(report, group, policy)
    return found + ([] if disturbed(report, "run") else _metric_problems(report, group, policy))


def reason(found: list[str]) -> str:
    """The drain reason: 'perfprobe: <first problem>; <second> (+N more)', kept short for sinfo."""
    text = f"{REASON_PREFIX} {found[0]}"
    shown = 1
    for item in found[1:]:
        if len(text) + len(item) + 2 > MAX_REASON - 12:
            break
        text += f"; {item}"
        shown += 1
    return text + (f" (+{len(found) - shown} more)" if shown < len(found) else "")


def regressed_metrics(found: list[str]) -> dict[str, str]:
    """{metric key: problem} of the metric regressions among `found` (their first word is probe:metric)."""
    return {item.split()[0]: item for item in found if ":" in item.split()[0]}


def confirmed(first: list[str], second: list[str]) -> list[str]:
    """`first` with each metric regression kept only if the re-measurement (`second`) shows it too;
    facts and verdicts are not timings and stand as they are."""
    again = regressed_metrics(second)
    return [item for item in first if ":" not in item.split()[0] or item.split()[0] in again]


def streaks(previous: Mapping[str, int], regressed: Iterable[str]) -> dict[str, int]:
    """{metric: consecutive checks that showed it, this one included} for the metrics regressed now;
    a metric this check did not show drops out (its streak is broken)."""
    return {key: int(previous.get(key, 0)) + 1 for key in sorted(set(regressed))}


def held_for_streak(found: list[str], counts: Mapping[str, int], policy: Policy) -> tuple[list[str], list[str]]:
    """(what drains, what waits): a metric regression waits while fewer than policy.regression_checks
    consecutive checks showed it, named with its count; facts, errors and skips never wait."""
    needed = policy.regression_checks
    seen = {item: counts.get(key, 1) for key, item in regressed_metrics(found).items()}  # not counted yet: 1
    waits = [item for item in found if seen.get(item, needed) < needed]
    return ([item for item in found if item not in waits],
            [f"{item} [{seen[item]} of {needed} consecutive checks]" for item in waits])


def one_thread_cpus(report: Mapping[str, Any]) -> tuple[int, ...]:
    """The CPUs `report`'s probes timed their one-thread figures on (facts.placement.one_thread,
    the cache probe's), for the confirmation to avoid (RunConfig.avoid_cpus): a regression the
    first core showed is confirmed on another. Why: on the H100 machine's 16-vCPU guest (12-07
    16:14 UTC) 5 of 11 checks drained on L1 or L2 latency +10..25%, each confirmed on the CPU that
    first showed it and none marked disturbed; one read L1 at the baseline's 1.69 ns beside L2 +11%,
    another tenant on that core's other hardware thread, which the guest cannot see."""
    found = set()
    for result in report.get("results") or ():
        place = ((result.get("facts") if isinstance(result, Mapping) else None) or {}).get("placement")
        cpu = place.get("one_thread") if isinstance(place, Mapping) else None
        if isinstance(cpu, int) and not isinstance(cpu, bool) and cpu >= 0:
            found.add(cpu)
    return tuple(sorted(found))


def ours(drain_reason: str | None) -> bool:
    """Whether a node's drain reason is one perfprobe set (the only kind it may resume)."""
    return bool(drain_reason) and str(drain_reason).startswith(REASON_PREFIX)


def _ignored(what: str, policy: Policy) -> bool:
    return any(fnmatchcase(what, pattern) for pattern in policy.ignore)


def _verdict_problems(report: Mapping[str, Any], group: Mapping[str, Any], policy: Policy) -> list[str]:
    baseline = group.get("verdicts") or {}
    out = []
    for result in report.get("results") or []:
        key, verdict = result_key(result), result.get("verdict")
        summary = " ".join(str(result.get("summary", "")).split())[:80]
        if _ignored(key, policy):
            continue
        if verdict == "error" and policy.drain_on_error:
            out.append(f"{key} error: {summary}")
        elif verdict == "warn" and policy.drain_on_warn:
            out.append(f"{key} warn: {summary}")
        elif verdict == "skip" and policy.drain_on_skip and baseline.get(key) in MEASURED:
            out.append(f"{key} skipped ({summary}) vs baseline {baseline[key]}")
    return out


def _fact_problems(report: Mapping[str, Any], group: Mapping[str, Any], policy: Policy) -> list[str]:
    here, there = flat_facts(report.get("host") or {}), group.get("facts") or {}
    out = []
    for name in sorted(set(here) | set(there)):
        if name in SINCE_CGROUP and name not in there:
            continue  # a baseline of reports that read no cgroup limits: nothing to judge them against
        if any(fnmatchcase(name, p) for p in policy.facts) and not _ignored(name, policy):
            if here.get(name, "absent") != there.get(name, "absent"):
                out.append(f"{name} {here.get(name, 'absent')} vs baseline {there.get(name, 'absent')}")
    return out


def _metric_problems(report: Mapping[str, Any], group: Mapping[str, Any], policy: Policy) -> list[str]:
    base, new = reference(group), measured(report)
    out = []
    for key in sorted(set(base) & set(new)):
        if not m.is_key(key, base[key].unit, policy.metrics) or _ignored(key, policy):
            continue
        change = judge(key, base[key], new[key], policy.regression)
        if change.kind == "regression":
            pct = f"{(change.ratio - 1) * 100:+.0f}%" if change.ratio is not None else "from 0"
            out.append(f"{key} {_num(change.new)} {change.unit} vs baseline {_num(change.base)} ({pct})")
    return out


def _num(value: float) -> str:
    return f"{value:.4g}"
