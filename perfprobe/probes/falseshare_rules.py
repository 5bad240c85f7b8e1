"""Judgement for `perfprobe falseshare`: pure functions from recorded numbers + host facts to findings.

Rules (documented in docs/probes/falseshare.md):
- destructive distance: the smallest spacing from which every wider spacing costs within 15% of
  the widest (atomic updates). Beyond the reported line size: warn (pad to the distance, not the line).
- no contention: the 8-byte spacing and true sharing both cost under 1.5x the widest: warn (the
  threads did not contend, so the distance says nothing).
- scaling: padded counters with T threads must each run at >= 80% of one thread's speed (atomic
  updates), else warn.
- the plain loop must be shown to touch memory on every iteration, else warn.
- busy host: more than 20% of the kept runs had a thread preempted (after retries): warn.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from perfprobe.model import Assessment, Finding, Metric, Table, Verdict

WITHIN = 0.15            # a spacing "does not interfere" when within 15% of the widest
NO_CONTENTION = 1.5      # slowdown below this at 8 B and for true sharing: no interference seen
MIN_EFFICIENCY = 0.80    # padded counters: per-thread speed with T threads vs one thread alone
MAX_DISTURBED = 0.20     # share of kept runs in which a thread was preempted, above which: warn
KINDS = ("atomic", "plain")


def cost_by_spacing(raw: Mapping[str, Any], kind: str, threads: int) -> dict[int, float]:
    """Median ns/update per spacing (spacing > 0) for one kind and thread count."""
    return {c["spacing_bytes"]: c["ns_per_update"]["median"] for c in raw["cases"]
            if c["kind"] == kind and c["threads"] == threads and c["spacing_bytes"] > 0}


def case(raw: Mapping[str, Any], kind: str, threads: int, spacing: int) -> Mapping[str, Any] | None:
    """The recorded case with these parameters, if any."""
    for c in raw["cases"]:
        if (c["kind"], c["threads"], c["spacing_bytes"]) == (kind, threads, spacing):
            return c
    return None


def slowdowns(costs: Mapping[int, float]) -> dict[int, float]:
    """Each spacing's cost relative to the widest spacing's."""
    widest = costs[max(costs)]
    return {s: v / widest for s, v in sorted(costs.items())}


def destructive_distance(costs: Mapping[int, float], within: float = WITHIN) -> int:
    """Smallest spacing from which every wider spacing costs within `within` of the widest."""
    slow = slowdowns(costs)
    distance = max(slow)
    for spacing in sorted(slow, reverse=True):
        if slow[spacing] > 1 + within:
            break
        distance = spacing
    return distance


def line_bytes(host: Mapping[str, Any]) -> int | None:
    """The coherency line size the host reports (L1 data cache first), None when unknown."""
    caches = host.get("caches") or []
    ranked = sorted(caches, key=lambda c: (c.get("level") or 9, c.get("type") != "Data"))
    return next((c["line_bytes"] for c in ranked if c.get("line_bytes")), None)


def padding(distance: int, line: int | None) -> int:
    """Bytes to keep between counters: the distance or the line, whichever is larger, as a power of 2."""
    need = max(distance, line or 0, 8)
    return 1 << (need - 1).bit_length()


def efficiency(raw: Mapping[str, Any], kind: str) -> float | None:
    """One thread's ns/update over each of T threads' on padded counters (1.0 = perfect scaling)."""
    widest = max(raw["spacings_bytes"])
    alone, many = case(raw, kind, 1, widest), case(raw, kind, raw["threads"], widest)
    if not alone or not many:
        return None
    return alone["ns_per_update"]["median"] / many["ns_per_update"]["median"]


def judge(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Assessment:
    """Findings, metrics and tables from the recorded cases."""
    threads = raw["threads"]
    atomic = cost_by_spacing(raw, "atomic", threads)
    distance, line = destructive_distance(atomic), line_bytes(host)
    pad = padding(distance, line)
    findings = [_placement_finding(raw), _distance_finding(distance, line, pad, max(atomic)),
                *_contention_findings(raw, atomic),
                *_scaling_findings(raw), *_plain_check_findings(raw), *_busy_findings(raw)]
    worst = slowdowns(atomic)[min(atomic)]
    summary = (f"{threads} threads: counters {min(atomic)} B apart cost {worst:.1f}x the {max(atomic)} B "
               f"spacing (atomic); interference ends at {distance} B; pad to {pad} B"
               + (f" (line {line} B)" if line else ""))
    return Assessment(summary=summary, metrics=_metrics(raw, distance, pad, line),
                      findings=tuple(findings), tables=_tables(raw), facts=_facts(raw),
                      key_figure=f"pad {pad} B ({worst:.1f}x at {min(atomic)} B)")


def _placement_finding(raw: Mapping[str, Any]) -> Finding:
    """Where the threads ran: distinct physical cores, or SMT siblings when T exceeds the cores."""
    parts = []
    for t in raw["thread_counts"]:
        place = raw["placement"][str(t)]
        where = (f"SMT siblings share a core: {place['smt_shared']}" if place["smt_shared"]
                 else "distinct physical cores")
        parts.append(f"{t} threads on CPUs {_cpu_list(place['cpus'])} ({where})")
    return Finding(Verdict.PASS, "placement: " + "; ".join(parts))


def _cpu_list(cpus: Sequence[int]) -> str:
    return ", ".join(map(str, cpus)) if len(cpus) <= 8 else f"{cpus[0]}, {cpus[1]}, ... {cpus[-1]} ({len(cpus)})"


def _distance_finding(distance: int, line: int | None, pad: int, widest: int) -> Finding:
    code = (f"C++: struct alignas({pad}) Counter {{ std::atomic<long> n; }}; numpy: one int64 every "
            f"{pad // 8} elements, or np.dtype([('n', 'i8'), ('pad', 'V{pad - 8}')])")
    reach = (f" and may reach further: rerun with --max-spacing {2 * widest}" if distance == widest else "")
    if line is None:
        return Finding(Verdict.PASS, f"counters {distance} B or more apart do not interfere{reach} "
                       "(the line size is not reported)", f"pad per-thread data to {pad} B. {code}")
    if distance > line:
        return Finding(Verdict.WARN, f"false sharing reaches {distance} B, beyond the {line}-byte line{reach}: "
                       "padding to the line is not enough here (adjacent-line prefetch pairs lines)",
                       f"pad per-thread data to {pad} B, not {line}. {code}")
    return Finding(Verdict.PASS, f"counters {distance} B or more apart do not interfere; "
                   f"the {line}-byte line is the padding to use", f"pad per-thread data to {pad} B. {code}")


def _contention_findings(raw: Mapping[str, Any], atomic: Mapping[int, float]) -> list[Finding]:
    narrow = slowdowns(atomic)[min(atomic)]
    shared = case(raw, "atomic", raw["threads"], 0)
    true = shared["ns_per_update"]["median"] / atomic[max(atomic)] if shared else narrow
    if narrow >= NO_CONTENTION or true >= NO_CONTENTION:
        return []
    return [Finding(Verdict.WARN, f"no false sharing measured: {min(atomic)} B costs {narrow:.2f}x and "
                    f"one shared counter {true:.2f}x the widest spacing, so the threads hardly contended",
                    "the distance is not meaningful here: the CPUs may be SMT siblings or time-shared "
                    "by a hypervisor; rerun on dedicated cores")]


def _scaling_findings(raw: Mapping[str, Any]) -> list[Finding]:
    """Judged on atomic updates only: a plain increment's speed alone swings several-fold with
    code alignment and store-forwarding fast paths, so its efficiency is reported, not judged."""
    threads, smt = raw["threads"], raw["placement"][str(raw["threads"])]["smt_shared"]
    eff = efficiency(raw, "atomic")
    if eff is None:
        return []
    if eff >= MIN_EFFICIENCY:
        return [Finding(Verdict.PASS, f"padded counters scale: {threads} threads each keep {eff:.0%} "
                        "of one thread's speed (atomic updates)")]
    why = (f"SMT siblings share a core here ({smt})" if smt else
           "the CPUs may be hyperthreads or time-shared in a VM, or other work is running")
    return [Finding(Verdict.WARN, f"padded counters do not scale: with {threads} threads each atomic update "
                    f"runs at {eff:.0%} of one thread's speed",
                    f"{why}; expect parallel per-thread counters to scale no better")]


def _plain_check_findings(raw: Mapping[str, Any]) -> list[Finding]:
    check = raw.get("plain_check") or {}
    if check.get("touches_memory", True):
        return []
    return [Finding(Verdict.WARN, f"plain-update figures are unreliable: {check.get('how', '')}",
                    "report this with `perfprobe falseshare --json` output")]


def disturbed_fraction(raw: Mapping[str, Any]) -> float:
    """Share of the kept timed runs in which some thread was preempted by other work."""
    cases = raw["cases"]
    runs = sum(c["ns_per_update"]["repeats"] for c in cases)
    return sum(c.get("disturbed_runs", 0) for c in cases) / runs if runs else 0.0


def _busy_findings(raw: Mapping[str, Any]) -> list[Finding]:
    share = disturbed_fraction(raw)
    if share <= MAX_DISTURBED:
        return []
    return [Finding(Verdict.WARN, f"other work took these CPUs during {share:.0%} of the timed runs "
                    "(even after retries): the figures are unreliable",
                    "rerun on an idle host (stop other jobs; in a VM, ask for dedicated vCPUs)")]


def _metrics(raw: Mapping[str, Any], distance: int, pad: int, line: int | None) -> dict[str, Metric]:
    threads = raw["threads"]
    metrics: dict[str, Metric] = {}
    for kind in KINDS:
        costs = cost_by_spacing(raw, kind, threads)
        for s, slow in slowdowns(costs).items():
            metrics[f"ns_per_update.{kind}.{s}B"] = Metric(round(costs[s], 3), "ns")
            metrics[f"slowdown.{kind}.{s}B"] = Metric(round(slow, 3), "ratio")
    for kind in KINDS:
        shared = case(raw, kind, threads, 0)
        if shared:
            metrics[f"true_sharing_ns_per_update.{kind}"] = Metric(round(shared["ns_per_update"]["median"], 3), "ns")
        eff = efficiency(raw, kind)
        if eff is not None:
            metrics[f"scaling_efficiency.{kind}"] = Metric(round(eff, 3), "ratio")
    metrics["plain_distance_bytes"] = Metric(destructive_distance(cost_by_spacing(raw, "plain", threads)), "bytes")
    metrics.update({"destructive_distance_bytes": Metric(distance, "bytes"),
                    "recommended_padding_bytes": Metric(pad, "bytes"),
                    "coherency_line_bytes": Metric(line, "bytes"), "threads": Metric(threads, "count"),
                    "disturbed_runs_fraction": Metric(round(disturbed_fraction(raw), 3), "ratio")})
    for p in raw["pingpong"]["pairs"]:
        metrics[f"core_to_core_ns.{p['a']}.{p['b']}"] = Metric(round(p["one_way_ns"]["median"], 1), "ns")
    return metrics


def _tables(raw: Mapping[str, Any]) -> tuple[Table, ...]:
    return (*(_kind_table(raw, kind) for kind in KINDS), _core_table(raw["pingpong"]))


def _kind_table(raw: Mapping[str, Any], kind: str) -> Table:
    counts: Sequence[int] = raw["thread_counts"]
    columns = ["spacing"] + [f"{h} ({t} thr)" for t in counts for h in ("ns/update", "min-max", "slowdown")]
    rows = []
    for s in raw["spacings_bytes"]:
        cells: list[Any] = [f"{s} B"]
        for t in counts:
            c, slow = case(raw, kind, t, s), slowdowns(cost_by_spacing(raw, kind, t))
            cells += [*_stat_cells(c), round(slow[s], 2)]
        rows.append(tuple(cells))
    rows.append(_extra_row(raw, kind, "one shared counter", counts, 0, raw["threads"]))
    rows.append(_extra_row(raw, kind, f"1 thread, {max(raw['spacings_bytes'])} B", counts,
                           max(raw["spacings_bytes"]), 1))
    return Table(f"{kind} updates: ns per update and slowdown against the widest spacing",
                 tuple(columns), tuple(rows))


def _extra_row(raw: Mapping[str, Any], kind: str, label: str, counts: Sequence[int], spacing: int,
               threads: int) -> tuple[Any, ...]:
    c, widest = case(raw, kind, threads, spacing), case(raw, kind, raw["threads"], max(raw["spacings_bytes"]))
    slow = round(c["ns_per_update"]["median"] / widest["ns_per_update"]["median"], 2) if c and widest else None
    cells: list[Any] = [label]
    for t in counts:
        cells += [*_stat_cells(c), slow] if t == raw["threads"] else [None, None, None]
    return tuple(cells)


def _stat_cells(c: Mapping[str, Any] | None) -> list[Any]:
    if not c:
        return [None, None]
    s = c["ns_per_update"]
    return [round(s["median"], 2), f"{s['min']:.2f}-{s['max']:.2f}"]


def _core_table(pingpong: Mapping[str, Any]) -> Table:
    cpus = pingpong["cpus"]
    ns = {(p["a"], p["b"]): round(p["one_way_ns"]["median"], 1) for p in pingpong["pairs"]}
    rows = tuple((f"CPU {a}", *(ns.get((a, b)) or ns.get((b, a)) for b in cpus)) for a in cpus)
    note = f", {len(cpus)} of {pingpong['usable']} CPUs sampled" if pingpong["sampled"] else ""
    return Table(f"core to core: one-way ns to hand over one cache line{note}",
                 ("from \\ to", *(str(c) for c in cpus)), rows, heat="row")


def _facts(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {"method": raw["method"], "placement": raw["placement"], "plain_check": raw["plain_check"],
            "pingpong_sampled": raw["pingpong"]["sampled"], "repeats": raw["repeats"]}
