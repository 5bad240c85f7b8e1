"""Judgement of `perfprobe streams`: pure functions from recorded numbers to findings.

The ideal time of a pipeline of N chunks is what perfect overlap could reach on this GPU, the larger
of two floors, and never more than the serial sum:
- the busiest engine's total (H2D, kernel or D2H) plus one chunk's ramp (the other two stages of
  the first and last chunk, which nothing can hide): slowest + (sum - slowest) / N;
- both copies' bytes at the measured both-directions rate (the copy engines share the link, so
  two directions at once do not run at twice one direction's rate), except that the first chunk's
  H2D and the last chunk's D2H run alone, at the one-direction rate: both * (1 - 1/N) + (H2D + D2H) / N.
Efficiency = ideal / measured.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.model import Assessment, Finding, Metric, Verdict
from perfprobe.probes.streams_tables import tables
from perfprobe.units import format_bytes

EFFICIENCY_MIN = 0.8          # best configuration under this share of its ideal: warn
HOST_HIDDEN_MIN = 0.5         # host work hidden behind GPU work under this share: warn


def ideal_ms(stages: Mapping[str, float], chunks: int) -> float:
    """Perfect-overlap time of `chunks` chunks from the stage totals (ms)."""
    h2d, kernel, d2h = stages["h2d"], stages["kernel"], stages["d2h"]
    serial = h2d + kernel + d2h
    slowest = max(h2d, kernel, d2h)
    engines = slowest + (serial - slowest) / chunks
    both = stages.get("both")
    link = both * (1 - 1 / chunks) + (h2d + d2h) / chunks if both else 0.0
    return min(serial, max(engines, link))


def efficiency(raw: Mapping[str, Any], config: Mapping[str, Any]) -> float:
    return ideal_ms(raw["stage_ms"], config["chunks"]) / config["ms"]["median"]


def best_config(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """The fastest configuration whose result checked out (the fastest of all if none did)."""
    configs = [c for c in raw["configs"] if c.get("verified")] or raw["configs"]
    return min(configs, key=lambda c: c["ms"]["median"])


def correctness_findings(raw: Mapping[str, Any]) -> list[Finding]:
    """Any wrong result is an error: in-stream ordering is what makes chunked pipelines correct."""
    wrong = [("serial", raw["serial"])] + [(f"{c['chunks']} chunks x {c['streams']} streams", c)
                                           for c in raw["configs"]]
    wrong += [(f"{name} variant", v) for name, v in (raw.get("breakers") or {}).items()]
    bad = [f"{label} ({c.get('mismatches')} wrong elements)" for label, c in wrong if not c.get("verified")]
    if bad:
        return [Finding(Verdict.ERROR, "results differ from the host reference: " + "; ".join(bad),
                        "rerun; if it repeats, the GPU or driver is faulty (check dmesg for Xid errors)")]
    count = len(raw["configs"]) + 1 + len(raw.get("breakers") or {})
    return [Finding(Verdict.PASS, f"all {count} pipelines' results matched the host reference")]


def overlap_findings(raw: Mapping[str, Any]) -> list[Finding]:
    best = best_config(raw)
    eff = efficiency(raw, best)
    speedup = raw["serial"]["ms"]["median"] / best["ms"]["median"]
    text = (f"best: {best['chunks']} chunks on {best['streams']} streams, {best['ms']['median']:.1f} ms, "
            f"{speedup:.2f}x faster than serial, {eff:.0%} of the ideal {ideal_ms(raw['stage_ms'], best['chunks']):.1f} ms")
    advice = (f"pipeline transfers in about {best['chunks']} chunks over {best['streams']} streams "
              f"({format_bytes(raw['size_bytes'] // best['chunks'])} per chunk) on this GPU")
    if eff < EFFICIENCY_MIN:
        return [Finding(Verdict.WARN, text + f" (under {EFFICIENCY_MIN:.0%})",
                        advice + "; other work on the GPU or a busy host thread can also stall it")]
    return [Finding(Verdict.PASS, text, advice)]


def engine_findings(raw: Mapping[str, Any]) -> list[Finding]:
    engines = int(raw["device"].get("async_engine_count", 0))
    concurrent = int(raw["device"].get("concurrent_kernels", 0))
    kernels = "kernels of different streams can run at once" if concurrent else "kernels run one at a time"
    if engines < 2:
        return [Finding(Verdict.WARN, f"{engines} copy engine(s): H2D and D2H cannot overlap; {kernels}",
                        "overlap copies with kernels only; expect at most 2x over serial")]
    return [Finding(Verdict.PASS, f"{engines} copy engines (H2D and D2H overlap); {kernels}")]


def breaker_findings(raw: Mapping[str, Any]) -> list[Finding]:
    """What breaks overlap, with its cost measured at the best configuration."""
    best_ms = best_config(raw)["ms"]["median"]
    breakers = raw.get("breakers") or {}
    out = []
    if "pageable" in breakers:
        slow = breakers["pageable"]["ms"]["median"] / best_ms
        out.append(Finding(Verdict.PASS, f"the same pipeline from pageable host buffers: "
                                         f"{breakers['pageable']['ms']['median']:.1f} ms, {slow:.1f}x slower",
                           "stream copies only from pinned buffers (pageable ones stage and block)"))
    if "legacy_default_stream" in breakers:
        slow = breakers["legacy_default_stream"]["ms"]["median"] / best_ms
        out.append(Finding(Verdict.PASS, f"one kernel on the legacy default stream: "
                                         f"{breakers['legacy_default_stream']['ms']['median']:.1f} ms, {slow:.2f}x "
                                         f"the best", "create streams non-blocking, or build with "
                                                      "--default-stream per-thread, and keep work off stream 0"))
    return out


def host_overlap_findings(raw: Mapping[str, Any]) -> list[Finding]:
    o = raw.get("host_overlap")
    if not o:
        return []
    hidden = hidden_fraction(o)
    text = (f"host work of {o['host_ms']:.1f} ms beside {o['gpu_ms']:.1f} ms of GPU work: "
            f"{o['sync_ms']:.1f} ms one after the other, {o['async_ms']:.1f} ms overlapped ({hidden:.0%} hidden)")
    advice = "launch step N+1 before processing step N's output on the host, synchronize only when needed"
    verdict = Verdict.WARN if hidden < HOST_HIDDEN_MIN else Verdict.PASS
    return [Finding(verdict, text, advice)]


def hidden_fraction(o: Mapping[str, float]) -> float:
    """Share of the shorter of host and GPU work that overlapping saved, within [0, 1] (the sync run
    also pays one more synchronisation, so the raw ratio can pass 1 by a hair)."""
    saved = (o["sync_ms"] - o["async_ms"]) / max(min(o["host_ms"], o["gpu_ms"]), 1e-9)
    return min(1.0, max(0.0, saved))


def judge(raw: Mapping[str, Any], host: Mapping[str, Any]) -> Assessment:
    best = best_config(raw)
    speedup = raw["serial"]["ms"]["median"] / best["ms"]["median"]
    findings = (correctness_findings(raw) + overlap_findings(raw) + engine_findings(raw)
                + breaker_findings(raw) + host_overlap_findings(raw) + _budget_findings(raw))
    summary = (f"{format_bytes(raw['size_bytes'])} H2D->kernel->D2H: best {best['chunks']} chunks x {best['streams']} "
               f"streams, {speedup:.2f}x over serial, efficiency {efficiency(raw, best):.0%}")
    return Assessment(summary=summary, metrics=metrics(raw), findings=tuple(findings),
                      tables=tables(raw, ideal_ms, efficiency), facts=_facts(raw),
                      key_figure=f"{speedup:.2f}x, {efficiency(raw, best):.0%} of ideal")


def metrics(raw: Mapping[str, Any]) -> dict[str, Metric]:
    best = best_config(raw)
    stages = raw["stage_ms"]
    out = {
        "best.chunks": Metric(best["chunks"], "count"), "best.streams": Metric(best["streams"], "count"),
        "best.ms": Metric(round(best["ms"]["median"], 3), "ms"),
        "best.efficiency": Metric(round(efficiency(raw, best), 3), "ratio"),
        "best.speedup": Metric(round(raw["serial"]["ms"]["median"] / best["ms"]["median"], 3), "ratio"),
        "serial.ms": Metric(round(raw["serial"]["ms"]["median"], 3), "ms"),
        "both_directions_gbs": Metric(round(raw["both_gbs"], 2), "GB/s"),
        "copy_engines": Metric(int(raw["device"].get("async_engine_count", 0)), "count"),
        "kernel_iters": Metric(raw["iters"], "count"),
    }
    out.update({f"stage_ms.{k}": Metric(round(v, 3), "ms") for k, v in stages.items()})
    for name, variant in (raw.get("breakers") or {}).items():
        out[f"{name}.slowdown"] = Metric(round(variant["ms"]["median"] / best["ms"]["median"], 3), "ratio")
    if raw.get("host_overlap"):
        out["host_overlap.hidden_fraction"] = Metric(round(hidden_fraction(raw["host_overlap"]), 3), "ratio")
    return out


def _budget_findings(raw: Mapping[str, Any]) -> list[Finding]:
    budget = raw.get("budget") or {}
    if not budget.get("capped_by"):
        return []
    return [Finding(Verdict.PASS, f"buffer capped at {format_bytes(budget['size_bytes'])} (asked "
                                  f"{format_bytes(budget['requested_bytes'])}) by {budget['capped_by']}")]


def _facts(raw: Mapping[str, Any]) -> dict[str, Any]:
    device = raw["device"]
    return {"gpu": device.get("name"), "pci_bus_id": device.get("pci_bus_id"),
            "async_engine_count": device.get("async_engine_count"),
            "concurrent_kernels": device.get("concurrent_kernels"),
            "kernel_iters": raw["iters"], "size_bytes": raw["size_bytes"]}
