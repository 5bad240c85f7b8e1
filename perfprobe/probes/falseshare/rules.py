"""Judgement for `perfprobe falseshare`: pure rules from recorded numbers + host facts to findings.

Rules (documented in docs/probes/falseshare.md), in the order of RULES:
- placement: where the threads ran (pass, information).
- destructive distance: the smallest spacing from which every wider spacing costs within 15% of
  the widest (atomic updates). Beyond the reported line size: warn (pad to the distance, not the line).
- no contention: the 8-byte spacing and true sharing both cost under 1.5x the widest: warn (the
  threads did not contend, so the distance says nothing).
- scaling: padded counters with T threads must each run at >= 80% of one thread's speed (atomic
  updates), else warn.
- the plain loop must be shown to touch memory on every iteration, else warn.
- busy host: more than 20% of the kept runs had a thread preempted (after retries): a note naming
  the load, and the timing warns above (distance, contention, scaling) are held back as notes.
- CPU quota: a cgroup quota granting fewer CPUs than the many-thread cases' threads (a note).
Timing warns carry confirm=("atomic",): the runner re-measures the atomic sweep before issuing them.
Distance and scaling read the fastest repeat of each case (figures.fastest).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from perfprobe.engine.confirm import held_back
from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts, quota_bound_note
from perfprobe.probes.falseshare.figures import (
    FalseshareRaw,
    atomic_costs,
    case,
    distance_and_padding,
    disturbed_fraction,
    efficiency,
    median,
    slowdowns,
    typed,
)
from perfprobe.pure import vm

NO_CONTENTION = 1.5      # slowdown below this at 8 B and for true sharing: no interference seen
MIN_EFFICIENCY = 0.80    # padded counters: per-thread speed with T threads vs one thread alone
MAX_DISTURBED = 0.20     # share of kept runs in which a thread was preempted, above which: busy
CONFIRM = ("atomic",)    # what measure.remeasure re-times: the atomic sweep and the one-thread case
LOAD_SENSITIVE = ("rule_distance", "rule_contention", "rule_scaling")  # what other work can produce

Rule = Callable[[FalseshareRaw, Facts], list[Finding]]


def rule_placement(raw: FalseshareRaw, host: Facts) -> list[Finding]:
    """Where the threads ran: distinct physical cores, or SMT siblings when T exceeds the cores."""
    parts = []
    for t in raw["thread_counts"]:
        place = raw["placement"][str(t)]
        where = (f"SMT siblings share a core: {place['smt_shared']}" if place["smt_shared"]
                 else "distinct physical cores")
        parts.append(f"{t} threads on CPUs {cpu_list(place['cpus'])} ({where})")
    return [Finding(Verdict.PASS, "placement: " + "; ".join(parts))]


def cpu_list(cpus: Sequence[int]) -> str:
    return ", ".join(map(str, cpus)) if len(cpus) <= 8 else f"{cpus[0]}, {cpus[1]}, ... {cpus[-1]} ({len(cpus)})"


def rule_distance(raw: FalseshareRaw, host: Facts) -> list[Finding]:
    """Where interference ends against the reported line, and what to pad to."""
    distance, line, pad = distance_and_padding(raw, host)
    widest = max(atomic_costs(raw))
    code = (f"C++: struct alignas({pad}) Counter {{ std::atomic<long> n; }}; numpy: one int64 every "
            f"{pad // 8} elements, or np.dtype([('n', 'i8'), ('pad', 'V{pad - 8}')])")
    reach = (f" and may reach further: rerun with --max-spacing {2 * widest}" if distance == widest else "")
    if line is None:
        return [Finding(Verdict.PASS, f"counters {distance} B or more apart do not interfere{reach} "
                        "(the line size is not reported)", f"pad per-thread data to {pad} B. {code}")]
    if distance > line:
        return [Finding(Verdict.WARN, f"false sharing reaches {distance} B, beyond the {line}-byte line{reach}: "
                        "padding to the line is not enough here (adjacent-line prefetch pairs lines)",
                        f"pad per-thread data to {pad} B, not {line}. {code}", confirm=CONFIRM + ("distance",),
                        figure=distance)]
    return [Finding(Verdict.PASS, f"counters {distance} B or more apart do not interfere; "
                    f"the {line}-byte line is the padding to use", f"pad per-thread data to {pad} B. {code}",
                    confirm=CONFIRM + ("distance",), figure=distance)]


def rule_contention(raw: FalseshareRaw, host: Facts) -> list[Finding]:
    """No slowdown at 8 B nor for one shared counter: the threads did not contend."""
    atomic = atomic_costs(raw)
    narrow = slowdowns(atomic)[min(atomic)]
    shared = case(raw, "atomic", raw["threads"], 0)
    true = median(shared) / atomic[max(atomic)] if shared else narrow
    if narrow >= NO_CONTENTION or true >= NO_CONTENTION:
        return [Finding(Verdict.PASS, f"the threads contended: {min(atomic)} B costs {narrow:.2f}x the widest "
                        "spacing", confirm=CONFIRM + ("contention",), figure=narrow)]
    return [Finding(Verdict.WARN, f"no false sharing measured: {min(atomic)} B costs {narrow:.2f}x and "
                    f"one shared counter {true:.2f}x the widest spacing, so the threads hardly contended",
                    "the distance is not meaningful here: the CPUs may be SMT siblings or time-shared "
                    "by a hypervisor; rerun on dedicated cores", confirm=CONFIRM + ("contention",), figure=narrow)]


def virtual_machine(raw: FalseshareRaw, host: Facts) -> str:
    """How this host shows it is a VM (perfprobe/pure/vm.py), "" on bare metal or when nothing says so."""
    return vm.virtual_machine(raw.get("hypervisor"), host)


def rule_scaling(raw: FalseshareRaw, host: Facts) -> list[Finding]:
    """Judged on atomic updates only: a plain increment's speed alone swings several-fold with
    code alignment and store-forwarding fast paths, so its efficiency is reported, not judged.
    Threads on SMT siblings, or on a VM's vCPUs (which the hypervisor time-shares or places on
    siblings it does not show: 45-90% run to run on the H200's 16-vCPU guest), do not scale on any
    host of that kind: a pass with the figure and the advice. A warn is for distinct cores of a
    bare-metal host, where each thread should keep its own core's speed."""
    threads, smt = raw["threads"], raw["placement"][str(raw["threads"])]["smt_shared"]
    eff = efficiency(raw, "atomic")
    if eff is None:
        return []
    keys = ("scaling",)  # rests on the efficiency alone: the figures it witnesses (RELATIONS) may not hold it back
    if eff >= MIN_EFFICIENCY:
        return [Finding(Verdict.PASS, f"padded counters scale: {threads} threads each keep {eff:.0%} "
                        "of one thread's speed (atomic updates, fastest repeats)", confirm=keys, figure=eff)]
    text = (f"padded counters do not scale: with {threads} threads each atomic update runs at {eff:.0%} "
            "of one thread's speed (fastest repeats)")
    vm = virtual_machine(raw, host)
    if smt or vm:
        why = (f"SMT siblings share a core here ({smt})" if smt else
               f"this is a VM ({vm}): its vCPUs are time-shared or SMT siblings the guest does not see")
        return [Finding(Verdict.PASS, f"{text}: {why}, true of every host of this kind",
                        "expect parallel per-thread work to scale no better here; for scaling, one thread "
                        "per physical core (or a VM with dedicated, pinned vCPUs)", confirm=keys, figure=eff)]
    return [Finding(Verdict.WARN, text, "the cores are distinct and not virtual, so each thread should keep its "
                    "speed: other work is running on these CPUs, or power/thermal limits lower the clock "
                    "with every core busy; expect parallel per-thread counters to scale no better",
                    confirm=keys, figure=eff)]


def rule_plain_check(raw: FalseshareRaw, host: Facts) -> list[Finding]:
    """The plain loop must load and store memory every iteration, or its figures mean nothing."""
    check = raw.get("plain_check") or {}
    if check.get("touches_memory", True):
        return []
    return [Finding(Verdict.WARN, f"plain-update figures are unreliable: {check.get('how', '')}",
                    "report this with `perfprobe falseshare --json` output")]


def busy(raw: FalseshareRaw) -> bool:
    return disturbed_fraction(raw) > MAX_DISTURBED


def rule_busy(raw: FalseshareRaw, host: Facts) -> list[Finding]:
    """Other work preempting the threads in too many kept runs: named, with the load, as a note (a
    busy host is not a fault of the host); `findings` holds back what that load can produce."""
    if not busy(raw):
        return []
    return [Finding(Verdict.PASS, f"other work took these CPUs during {disturbed_fraction(raw):.0%} of the "
                    "timed runs (even after retries): figures are this host's under that load, and "
                    "the timing warns it can produce are held back",
                    "rerun on an idle host (stop other jobs; in a VM, ask for dedicated vCPUs)")]


def rule_cpu_quota(raw: FalseshareRaw, host: Facts) -> list[Finding]:
    """A note when a cgroup CPU quota grants fewer CPUs than the many-thread cases ran threads."""
    note = quota_bound_note(host, raw["threads"], "the many-thread cases")
    return [Finding(Verdict.PASS, *note)] if note is not None else []


RULES: tuple[Rule, ...] = (rule_placement, rule_distance, rule_contention, rule_scaling, rule_plain_check,
                           rule_busy, rule_cpu_quota)


def findings(raw: Mapping[str, Any], host: Facts) -> tuple[Finding, ...]:
    """Every rule's findings, in rule order; on a busy host the load-sensitive warns held back."""
    numbers = typed(raw)
    loaded, share = busy(numbers), disturbed_fraction(numbers)
    why = f"other work took these CPUs during {share:.0%} of the timed runs"
    return tuple(held_back(f, why) if loaded and rule.__name__ in LOAD_SENSITIVE else f
                 for rule in RULES for f in rule(numbers, host))
