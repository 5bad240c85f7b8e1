"""Judgement for `perfprobe layout`: pure rules from recorded numbers to findings (docs/probes/layout.md).

What a split load or an AoS loop costs is a property of the core and the cache level, true of every
host of its kind: a pass with the figure and the advice (and a host where splits cost nothing says
so). Warnings are kept for a host too busy to measure.
"""

from __future__ import annotations

from typing import Callable

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts
from perfprobe.probes.layout import figures as f
from perfprobe.probes.layout.figures import SOA_MATTERS, SPLIT_MATTERS, Raw

MAX_SPREAD = 0.30        # repeats disagreeing by more than this (max - min over median)...
MAX_DISTURBED = 0.25     # ...in more than this share of points: a busy host
ALIGN_ADVICE = ("align buffers to their access width, or to 64 B for SIMD (`alignas(64)`, "
                "`aligned_alloc(64, n)`, numpy's allocations are 64 B aligned; keep a structured "
                "dtype's fields at offsets that are multiples of their size, `align=True`)")
SOA_ADVICE = ("store hot fields as separate arrays (structure of arrays: one numpy array per field, "
              "not one structured array) when a loop reads a few of many fields")

# Always a pass: a page-splitting load's throughput depends on what ran before it (on the Zen 4 KVM
# guest 0.19 ns back to back, ~1 ns with the interpreter between runs, in C as in numba), so the
# figure is the best of back-to-back runs and the finding says what other code can do to it.
PAGE_CAVEAT = (" (throughput: the best of back-to-back runs, each right after plain loads in both pages; "
               "with other work between page-splitting loads they can cost several times this)")

Rule = Callable[[Raw, Facts], list[Finding]]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def rule_line_split(raw: Raw, host: Facts) -> list[Finding]:
    """Loads that straddle two cache lines, against aligned loads of the same width."""
    parts = [f"{w} B {_fmt(f.line_penalty(raw, w))} (latency {_fmt(f.line_penalty(raw, w, 'latency'))})"
             for w in f.widths(raw)]
    worst = max((f.line_penalty(raw, w) or 0.0, f.line_penalty(raw, w, "latency") or 0.0)
                for w in f.widths(raw))
    if max(worst) >= SPLIT_MATTERS:
        return [Finding(Verdict.PASS, "a load split across two cache lines costs, against an aligned "
                        "one (throughput): " + "; ".join(parts), ALIGN_ADVICE)]
    return [Finding(Verdict.PASS, "line-splitting loads cost about what aligned ones do on this core: "
                    + "; ".join(parts), "alignment within a line buys little here; keep it for portability")]


def rule_page_split(raw: Raw, host: Facts) -> list[Finding]:
    """Loads that straddle a 4 KiB page boundary."""
    parts = [f"{w} B {_fmt(f.page_penalty(raw, w))} (latency {_fmt(f.page_penalty(raw, w, 'latency'))})"
             for w in f.widths(raw)]
    worst = max(max(f.page_penalty(raw, w), f.page_penalty(raw, w, "latency")) for w in f.widths(raw))
    if worst >= SPLIT_MATTERS:
        return [Finding(Verdict.PASS, "a load split across a 4 KiB page boundary costs, against an "
                        "aligned one: " + "; ".join(parts) + PAGE_CAVEAT, ALIGN_ADVICE)]
    return [Finding(Verdict.PASS, "page-splitting loads cost about what aligned ones do on this core: "
                    + "; ".join(parts) + PAGE_CAVEAT)]


def rule_soa(raw: Raw, host: Facts) -> list[Finding]:
    """One field summed or updated: SoA against AoS per level, and the field count where it matters."""
    out = []
    for op in ("sum", "update"):
        parts = []
        for level in f.levels(raw):
            best = max(f.fields(raw))
            start = f.soa_from(raw, level, op)
            where = f"from K = {start}" if start else f"not at {SOA_MATTERS}x by K = {best}"
            parts.append(f"{level}: {_fmt(f.soa_speedup(raw, level, best, op))} at K = {best} ({where})")
        out.append(Finding(Verdict.PASS, f"one field {'summed' if op == 'sum' else 'updated'}, SoA "
                           "against AoS: " + "; ".join(parts), SOA_ADVICE))
    return out


def rule_all_fields(raw: Raw, host: Facts) -> list[Finding]:
    """Every field of every record used: AoS ties or wins."""
    parts = [f"{level}: {_fmt(f.soa_speedup(raw, level, max(f.fields(raw)), 'all'))}" for level in f.levels(raw)]
    return [Finding(Verdict.PASS, f"every field used (K = {max(f.fields(raw))}), AoS time over SoA: "
                    + "; ".join(parts), "when a loop uses whole records, keep them together (AoS)")]


def rule_vectorised(raw: Raw, host: Facts) -> list[Finding]:
    """Which record loops the compiler vectorised (from the assembly), so the ratios can be read."""
    parts = []
    for key in sorted(raw.get("vector") or {}):
        layout, op = key.split(".")
        width = f.vector_bytes(raw, layout, op)
        parts.append(f"{key} {'scalar' if not width else f'{width} B vectors'}")
    if not parts:
        return []
    return [Finding(Verdict.PASS, "compiled record loops (innermost loops' SIMD registers): " + ", ".join(parts))]


def rule_dram_capped(raw: Raw, host: Facts) -> list[Finding]:
    """The DRAM working set was capped by the memory budget."""
    capped = [lv for lv in raw["levels"] if lv.get("capped_by")]
    return [Finding(Verdict.PASS, f"the {lv['name']} working set was capped at {lv['bytes'] >> 20} MiB "
                    f"({lv['capped_by']}); part of it may still be cached") for lv in capped]


def rule_busy(raw: Raw, host: Facts) -> list[Finding]:
    """Repeats that disagree in many points: other work shared the core."""
    share = f.disturbed_fraction(raw, MAX_SPREAD)
    if share <= MAX_DISTURBED:
        return []
    return [Finding(Verdict.PASS, f"{share:.0%} of the points had repeats disagreeing by more than "
                    f"{MAX_SPREAD:.0%}: the host was busy, so these figures are noisier than usual",
                    "rerun on an idle host")]


RULES: list[Rule] = [rule_line_split, rule_page_split, rule_soa, rule_all_fields, rule_vectorised,
                     rule_dram_capped, rule_busy]


def findings(raw: Raw, host: Facts) -> tuple[Finding, ...]:
    return tuple(item for rule in RULES for item in rule(raw, host))
