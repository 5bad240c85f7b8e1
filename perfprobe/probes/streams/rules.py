"""Judgement of `perfprobe streams`: pure rules from recorded numbers to findings.

Each rule is one function; RULES lists them in the order of docs/probes/streams.md's table. The
ideal and efficiency arithmetic is in figures.py, which the tables read too.
"""

from __future__ import annotations

from typing import Callable

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts
from perfprobe.probes.streams.figures import (
    Raw,
    at_ideal_band,
    best_config,
    copy_engines,
    efficiency,
    hidden_fraction,
    ideal_ms,
    median_ms,
    speedup,
)
from perfprobe.pure.gpu_activity import findings_held_back_if_shared, shared_gpu
from perfprobe.pure.units import format_bytes
from perfprobe.system.budget import capped_note

EFFICIENCY_MIN = 0.8          # best configuration under this share of its ideal: warn
HOST_HIDDEN_MIN = 0.5         # host work hidden behind GPU work under this share: warn


def rule_correctness(raw: Raw, host: Facts) -> list[Finding]:
    """Any wrong result is an error: in-stream ordering is what makes chunked pipelines correct."""
    checked = [("serial", raw["serial"])] + [(f"{c['chunks']} chunks x {c['streams']} streams", c)
                                             for c in raw["configs"]]
    checked += [(f"{name} variant", v) for name, v in (raw.get("breakers") or {}).items()]
    bad = [f"{label} ({c.get('mismatches')} wrong elements)" for label, c in checked if not c.get("verified")]
    if bad:
        return [Finding(Verdict.ERROR, "results differ from the host reference: " + "; ".join(bad),
                        "rerun; if it repeats, the GPU or driver is faulty (check dmesg for Xid errors)")]
    count = len(raw["configs"]) + 1 + len(raw.get("breakers") or {})
    return [Finding(Verdict.PASS, f"all {count} pipelines' results matched the host reference")]


def rule_overlap(raw: Raw, host: Facts) -> list[Finding]:
    """The best configuration under 80% of its ideal: warn; either way, advise its chunking."""
    best = best_config(raw)
    eff, band = efficiency(raw, best), at_ideal_band(raw, best)
    ideal = f"the ideal {ideal_ms(raw['stage_ms'], best['chunks']):.1f} ms"
    share = f"at {ideal} (±{band:.0%})" if band is not None else f"{eff:.0%} of {ideal}"
    text = (f"best: {best['chunks']} chunks on {best['streams']} streams, {median_ms(best):.1f} ms, "
            f"{speedup(raw):.2f}x faster than serial, {share}")
    advice = (f"pipeline transfers in about {best['chunks']} chunks over {best['streams']} streams "
              f"({format_bytes(raw['size_bytes'] // best['chunks'])} per chunk) on this GPU")
    if eff < EFFICIENCY_MIN:
        return [Finding(Verdict.WARN, text + f" (under {EFFICIENCY_MIN:.0%})",
                        advice + "; other work on the GPU or a busy host thread can also stall it",
                        confirm=("overlap",), figure=eff)]
    return [Finding(Verdict.PASS, text, advice, confirm=("overlap",), figure=eff)]


def rule_engines(raw: Raw, host: Facts) -> list[Finding]:
    """Fewer than two copy engines: H2D and D2H cannot overlap: warn."""
    engines = copy_engines(raw)
    concurrent = int(raw["device"].get("concurrent_kernels", 0))
    kernels = "kernels of different streams can run at once" if concurrent else "kernels run one at a time"
    if engines < 2:
        return [Finding(Verdict.WARN, f"{engines} copy engine(s): H2D and D2H cannot overlap; {kernels}",
                        "overlap copies with kernels only; expect at most 2x over serial")]
    return [Finding(Verdict.PASS, f"{engines} copy engines (H2D and D2H overlap); {kernels}")]


def rule_breakers(raw: Raw, host: Facts) -> list[Finding]:
    """What breaks overlap, with its cost measured at the best configuration."""
    best_ms = median_ms(best_config(raw))
    breakers = raw.get("breakers") or {}
    out = []
    if "pageable" in breakers:
        slow = median_ms(breakers["pageable"]) / best_ms
        out.append(Finding(Verdict.PASS, f"the same pipeline from pageable host buffers: "
                                         f"{median_ms(breakers['pageable']):.1f} ms, {slow:.1f}x slower",
                           "stream copies only from pinned buffers (pageable ones stage and block)"))
    if "legacy_default_stream" in breakers:
        slow = median_ms(breakers["legacy_default_stream"]) / best_ms
        out.append(Finding(Verdict.PASS, f"one kernel on the legacy default stream: "
                                         f"{median_ms(breakers['legacy_default_stream']):.1f} ms, {slow:.2f}x "
                                         f"the best", "create streams non-blocking, or build with "
                                                      "--default-stream per-thread, and keep work off stream 0"))
    return out


def rule_host_overlap(raw: Raw, host: Facts) -> list[Finding]:
    """Host work hidden behind GPU work under half of what it could be: warn."""
    o = raw.get("host_overlap")
    if not o:
        return []
    hidden = hidden_fraction(o)
    text = (f"host work of {o['host_ms']:.1f} ms beside {o['gpu_ms']:.1f} ms of GPU work: "
            f"{o['sync_ms']:.1f} ms one after the other, {o['async_ms']:.1f} ms overlapped ({hidden:.0%} hidden)")
    advice = "launch step N+1 before processing step N's output on the host, synchronize only when needed"
    verdict = Verdict.WARN if hidden < HOST_HIDDEN_MIN else Verdict.PASS
    return [Finding(verdict, text, advice, confirm=("host_overlap",), figure=hidden)]


def rule_budget(raw: Raw, host: Facts) -> list[Finding]:
    """A buffer smaller than asked is said, with the budget that capped it."""
    return capped_note(raw.get("budget"), "buffer", "size_bytes")


def rule_shared_gpu(raw: Raw, host: Facts) -> list[Finding]:
    """Other work on the GPU while measuring (gpu_activity.py): named, as a note; `findings` holds
    back the timing warns it can produce (overlap, host overlap)."""
    why = shared_gpu(raw)
    if not why:
        return []
    return [Finding(Verdict.PASS, f"the GPU was shared while measuring: {why}; figures are this GPU's under "
                    "that load, and the timing warns it can produce are held back",
                    "measure again with the GPU to itself (nvidia-smi lists the processes on it)")]


Rule = Callable[[Raw, Facts], list[Finding]]
RULES: tuple[Rule, ...] = (rule_correctness, rule_overlap, rule_engines, rule_breakers, rule_host_overlap,
                           rule_budget, rule_shared_gpu)
LOAD_SENSITIVE = ("rule_overlap", "rule_host_overlap")


def findings(raw: Raw, host: Facts) -> list[Finding]:
    """Every rule's findings, in RULES order; on a shared GPU the load-sensitive warns held back."""
    return findings_held_back_if_shared(RULES, LOAD_SENSITIVE, raw, host)
