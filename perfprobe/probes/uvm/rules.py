"""Judgement of the uvm probe: pure rules from recorded numbers to findings with advice.

Thresholds are in THRESHOLDS and in the rule table of docs/probes/uvm.md; RULES lists the rules in
that table's order. The figures (GB/s, ratios, break-even) come from figures.py, as the tables' do.
"""

from __future__ import annotations

from typing import Callable

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts
from perfprobe.probes.uvm.figures import Raw, attribute, break_even_passes, gbs, move_s, ratio_to_reference, slowdown

HEALTHY = {
    # (lowest, highest) ratio recorded on healthy hosts, and where: on-demand migration slower than a
    # prefetch and a prefetch to the host slower than an explicit copy are true of every CUDA host
    # (fault handling and the driver's migration path), so they are passes unless far outside these.
    "on_demand": (3.1, 5.4, "10 quick and full runs on 3 healthy H200 hosts (tests/data/uvm_h200_*.json, "
                  "all_quick_h200x2.rec.json)"),
    "host_prefetch_vs_copy": (3.0, 6.1, "the same 10 runs"),
}
FAR_OUTSIDE = 2.0  # a ratio above twice the highest healthy one is a fault of this host: warn

THRESHOLDS = {
    "host_on_demand_slowdown": 2.0,  # CPU reading GPU-written data on demand ÷ after a prefetch (healthy: 0.56-1.03)
    "prefetch_vs_copy": 1.5,         # prefetch + kernel ÷ explicit copy + kernel at or above: warn (healthy: 1.09-1.18)
    "zero_copy_match": 0.9,          # zero-copy ÷ copy-then-read GB/s at or above: "about matches"
    "advice_gain": 1.5,              # advised ÷ plain on-demand GB/s below this: advice did not help
}


def _gb(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g} GB/s"


def rule_managed_support(raw: Raw, host: Facts) -> list[Finding]:
    if attribute(raw, "managedMemory") == 0:
        return [Finding(Verdict.WARN, "this GPU cannot allocate managed (unified) memory",
                        "move data with explicit copies from pinned memory (cudaMemcpyAsync)")]
    if attribute(raw, "concurrentManagedAccess") == 0:
        return [Finding(
            Verdict.WARN, "no concurrent managed access: managed memory is all-or-nothing here — "
            "each launch migrates managed data wholesale, the CPU must not touch it while any kernel "
            "runs, and prefetch and advice are unavailable",
            "use explicit copies for data both sides use; synchronise before every CPU access")]
    return []


def rule_on_demand(raw: Raw, host: Facts) -> list[Finding]:
    ratio = slowdown(raw, "managed_on_demand", "managed_prefetch")
    if ratio is None:
        return []
    figures = (f"on demand {_gb(gbs(raw, 'managed_on_demand'))} against "
               f"{_gb(gbs(raw, 'managed_prefetch'))} after a prefetch")
    advice = ("call cudaMemPrefetchAsync(ptr, bytes, device, stream) before the kernel that reads "
              "host-written managed data" + _preferred_location_also(raw))
    text = (f"GPU reads of host-written managed memory are {ratio:.1f}× slower on demand (page faults) "
            f"than after a prefetch: {figures}")
    return [_against_healthy("on_demand", ratio, text, advice, ("managed_on_demand", "managed_prefetch"))]


def _against_healthy(name: str, ratio: float, text: str, advice: str, paths: tuple[str, ...]) -> Finding:
    """True of every CUDA host: a pass with the healthy range, a warn only far beyond its top."""
    low, high, where = HEALTHY[name]
    if ratio > FAR_OUTSIDE * high:
        return Finding(Verdict.WARN, f"{text}; {ratio / high:.1f}× the highest seen on healthy hosts "
                       f"({low:g}–{high:g}×, {where})", advice + "; and check the driver, the IOMMU and "
                       "other work on the GPU: healthy hosts migrate far faster", confirm=paths, figure=ratio)
    return Finding(Verdict.PASS, f"{text} (healthy hosts: {low:g}–{high:g}×, true of every CUDA host)", advice,
                   confirm=paths, figure=ratio)


def _preferred_location_also(raw: Raw) -> str:
    """Suggest a preferred location too, but only where it measurably helped on this host."""
    on_demand, preferred = gbs(raw, "managed_on_demand"), gbs(raw, "managed_advise_preferred_gpu")
    if on_demand and preferred and preferred / on_demand >= THRESHOLDS["advice_gain"]:
        return (f", or advise cudaMemAdviseSetPreferredLocation = the GPU (it reached "
                f"{_gb(preferred)} here)")
    return ""


def rule_prefetch_vs_copy(raw: Raw, host: Facts) -> list[Finding]:
    ratio = slowdown(raw, "managed_prefetch", "explicit_copy")
    if ratio is None:
        return []
    figures = (f"prefetch + kernel {_gb(gbs(raw, 'managed_prefetch'))}, pinned copy + kernel "
               f"{_gb(gbs(raw, 'explicit_copy'))}")
    keys = ("managed_prefetch", "explicit_copy")
    if ratio >= THRESHOLDS["prefetch_vs_copy"]:
        return [Finding(Verdict.WARN, f"a prefetch of managed memory to the GPU is {ratio:.1f}× slower "
                        f"than an explicit copy from pinned memory: {figures}",
                        "for bulk transfers, copy explicitly from pinned memory (cudaMallocHost + "
                        "cudaMemcpyAsync)", confirm=keys, figure=ratio)]
    return [Finding(Verdict.PASS, f"prefetching managed memory to the GPU takes {ratio:.2f}× the time "
                    f"of an explicit pinned copy: {figures}", confirm=keys, figure=ratio)]


def rule_advice(raw: Raw, host: Facts) -> list[Finding]:
    """What cudaMemAdvise alone (no prefetch) did, with advice that follows from the numbers."""
    on_demand, copy = gbs(raw, "managed_on_demand"), gbs(raw, "explicit_copy")
    preferred, accessed = gbs(raw, "managed_advise_preferred_gpu"), gbs(raw, "managed_advise_accessed_by")
    seen, advice = [], []
    if preferred is not None and on_demand:
        gain = preferred / on_demand
        seen.append(f"preferred location GPU {_gb(preferred)} ({gain:.2f}× plain on-demand)")
        if gain < THRESHOLDS["advice_gain"]:
            advice.append("a preferred location alone still migrates on page faults: prefetch as well")
    if accessed is not None and copy:
        share = accessed / copy
        seen.append(f"preferred location host + accessed-by GPU (read in place over the link) "
                    f"{_gb(accessed)} ({share:.2f}× an explicit copy)")
        if share >= THRESHOLDS["zero_copy_match"]:
            advice.append("accessed-by with the host as preferred location suits data the GPU reads "
                          "once; data it reads again belongs in GPU memory")
    if not seen:
        return []
    return [Finding(Verdict.PASS, "cudaMemAdvise without a prefetch: " + "; ".join(seen),
                    "; ".join(advice))]


def rule_host_on_demand(raw: Raw, host: Facts) -> list[Finding]:
    ratio = slowdown(raw, "host_on_demand", "host_prefetch")
    if ratio is None:
        return []
    figures = (f"on demand {_gb(gbs(raw, 'host_on_demand'))} against "
               f"{_gb(gbs(raw, 'host_prefetch'))} after a prefetch to the host"
               + (f", {raw['host_threads']} reading threads" if raw.get("host_threads") else ""))
    keys = ("host_on_demand", "host_prefetch")
    if ratio >= THRESHOLDS["host_on_demand_slowdown"]:
        return [Finding(
            Verdict.WARN, f"the CPU reading GPU-written managed memory is {ratio:.1f}× slower on "
            f"demand than after a prefetch: {figures}", _HOST_PREFETCH_ADVICE, confirm=keys, figure=ratio)]
    if ratio < 1.0:
        return [Finding(Verdict.PASS, f"the CPU reads GPU-written managed memory {1 / ratio:.2f}× faster "
                        f"on demand than after a prefetch to the host: {figures}",
                        "reading threads fault pages back in parallel here, so a prefetch to the host "
                        "does not pay" + _copy_is_faster(raw), confirm=keys, figure=ratio)]
    return [Finding(Verdict.PASS, f"the CPU reading GPU-written managed memory on demand takes "
                    f"{ratio:.2f}× the time it takes after a prefetch to the host: {figures}",
                    confirm=keys, figure=ratio)]


def _copy_is_faster(raw: Raw) -> str:
    copy, on_demand = gbs(raw, "host_explicit_copy"), gbs(raw, "host_on_demand")
    if copy and on_demand and copy > on_demand:
        return (f"; an explicit device-to-host copy into pinned memory, then the read, is faster "
                f"still ({_gb(copy)})")
    return ""


_HOST_PREFETCH_ADVICE = ("prefetch to the host before the CPU reads: cudaMemPrefetchAsync(ptr, bytes, "
                         "cudaCpuDeviceId, stream) on CUDA 12, a cudaMemLocation of type "
                         "cudaMemLocationTypeHost on CUDA 13")


def rule_host_prefetch_vs_copy(raw: Raw, host: Facts) -> list[Finding]:
    prefetch, copy = move_s(raw, "host_prefetch"), move_s(raw, "host_explicit_copy")
    if not (prefetch and copy):
        return []
    ratio, size = prefetch / copy, float(raw.get("size_bytes") or 0)
    figures = (f"prefetch to host {_gb(size / prefetch / 1e9)}, explicit device-to-host copy into "
               f"pinned memory {_gb(size / copy / 1e9)}")
    return [_against_healthy("host_prefetch_vs_copy", ratio, f"moving GPU results to the host by prefetch "
                             f"is {ratio:.1f}× slower than an explicit copy: {figures}",
                             "for bulk results, cudaMemcpyAsync from device memory into pinned host memory",
                             ("host_prefetch", "host_explicit_copy"))]


def rule_zero_copy(raw: Raw, host: Facts) -> list[Finding]:
    one, many = ratio_to_reference(raw, "zero_copy"), ratio_to_reference(raw, "zero_copy_passes")
    passes = raw.get("passes")
    if one is None or many is None:
        return []
    figures = (f"1 pass: zero-copy {_gb(gbs(raw, 'zero_copy'))} vs copy-then-read "
               f"{_gb(gbs(raw, 'explicit_copy'))} ({one:.2f}×); {passes} passes: "
               f"{_gb(gbs(raw, 'zero_copy_passes'))} vs {_gb(gbs(raw, 'explicit_copy_passes'))} "
               f"({many:.2f}×)")
    single_pass_only = ("read mapped pinned memory in place only for data a kernel streams through "
                        "once (it saves the device buffer and the separate copy); copy data that is "
                        "read again")
    if one >= 1.0 > many:
        even = break_even_passes(raw)
        where = f" (copying wins from about {even:.1f} passes)" if even else ""
        return [Finding(Verdict.PASS, f"zero-copy wins a single pass and loses repeated ones{where}: "
                        f"{figures}", single_pass_only)]
    if many >= 1.0:
        return [Finding(Verdict.PASS, f"zero-copy keeps up with copy-then-read even at {passes} "
                        f"passes: {figures}", "mapped pinned memory is a fair choice here")]
    if one >= THRESHOLDS["zero_copy_match"]:
        return [Finding(Verdict.PASS, f"zero-copy about matches copy-then-read for one pass and falls "
                        f"far behind on repeated passes: {figures}", single_pass_only)]
    return [Finding(Verdict.PASS, f"zero-copy is slower than copy-then-read even for one pass: {figures}",
                    "copy to device memory explicitly, even for single-pass data")]


def rule_pageable(raw: Raw, host: Facts) -> list[Finding]:
    if attribute(raw, "pageableMemoryAccess") == 0:
        return [Finding(Verdict.PASS, "kernels cannot read plain malloc'd memory on this system "
                        "(pageableMemoryAccess 0)",
                        "pin host buffers (cudaHostRegister / cudaMallocHost) or copy them")]
    speed, ratio = gbs(raw, "pageable_direct"), ratio_to_reference(raw, "pageable_direct")
    if speed is None or ratio is None:
        return []
    how = ("through the host's page tables" if attribute(raw, "pageableMemoryAccessUsesHostPageTables")
           else "through the driver's migration (HMM)")
    return [Finding(Verdict.PASS, f"kernels read plain malloc'd memory {how} at {_gb(speed)}, "
                    f"{ratio:.2f}× an explicit pinned copy")]


def rule_unavailable_paths(raw: Raw, host: Facts) -> list[Finding]:
    paths = raw.get("paths") or {}
    return [Finding(Verdict.WARN, f"{name} could not be measured: {entry['skipped']}",
                    "install cuda-bindings matching the CUDA driver (pip install cuda-bindings)"
                    if "not installed" in entry["skipped"] else "")
            for name, entry in paths.items() if entry.get("unavailable")]


def rule_size_note(raw: Raw, host: Facts) -> list[Finding]:
    note = raw.get("size_note")
    if not note:
        return []
    return [Finding(Verdict.PASS, f"measured with {raw.get('size_bytes', 0) / (1 << 20):.0f} MiB "
                    f"buffers ({note})", "free memory or pass a smaller --size for other sizes")]


Rule = Callable[[Raw, Facts], list[Finding]]
RULES: tuple[Rule, ...] = (rule_managed_support, rule_on_demand, rule_prefetch_vs_copy, rule_advice,
                           rule_host_on_demand, rule_host_prefetch_vs_copy, rule_zero_copy, rule_pageable,
                           rule_unavailable_paths, rule_size_note)


def findings(raw: Raw, host: Facts) -> list[Finding]:
    """Every rule's findings, in RULES order (the order of the rule table in docs/probes/uvm.md)."""
    return [finding for rule in RULES for finding in rule(raw, host)]
