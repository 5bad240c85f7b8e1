"""Judgement of `perfprobe gpumem`: pure rules from recorded numbers to findings.

Only DRAM bandwidth (and wrong results) can make a GPU unhealthy: a GPU whose HBM delivers a
fraction of its peak passes functional diagnostics and is still slow. Coalescing, bank conflicts,
occupancy, tiling and divergence are true of every GPU of its kind, so they are passes whose advice
carries this GPU's numbers. RULES is in the order of docs/probes/gpumem.md's table.
"""

from __future__ import annotations

from typing import Callable

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts
from perfprobe.probes.gpumem import figures as fig
from perfprobe.probes.gpumem.figures import Raw
from perfprobe.probes.gpumem.plan import SATURATED
from perfprobe.pure.gpu_activity import held_back, shared_gpu
from perfprobe.pure.units import format_bytes
from perfprobe.system.budget import capped_note

DRAM_FRACTION_MIN = 0.70   # best DRAM figure under this share of the NVML peak: a slow GPU
MEM_CLOCK_LOW = 0.95       # memory clock under load below this share of its maximum: held down


def rule_dram_bandwidth(raw: Raw, host: Facts) -> list[Finding]:
    """The best of read, write, copy and cudaMemcpy under 70% of the NVML peak: warn (slow GPU)."""
    kind, best = fig.best_dram(raw)
    peak = fig.peak(raw)
    if peak is None:
        return [Finding(Verdict.PASS, f"DRAM {kind} {best:.0f} GB/s; the memory clock and bus width are "
                                      "unknown (no NVML, no CUDA attribute): not judged against a peak")]
    share = best / peak["gbs"]
    text = (f"DRAM delivers {best:.0f} GB/s ({kind.replace('_', ' ')}) — {share:.0%} of the "
            f"{peak['gbs']:.0f} GB/s peak ({peak['mem_clock_mhz']:.0f} MHz x 2 x {peak['bus_width_bits']} bits)")
    if share >= DRAM_FRACTION_MIN:
        return [Finding(Verdict.PASS, text)]
    slow = Finding(Verdict.WARN, f"slow GPU memory: {text}, under {DRAM_FRACTION_MIN:.0%}{_why(raw, peak)}",
                   "check `nvidia-smi -q -d PERFORMANCE,CLOCK` for held-down memory clocks and thermal or "
                   "power capping, and other processes on the GPU; a GPU this slow passes functional "
                   "diagnostics, so compare it with its peers (perfprobe fleet) and raise it with the vendor")
    # another process on the GPU takes memory bandwidth too: the figure is this GPU's under that load,
    # so the warn is held back as a note, as pinned's and streams' timing warns are (a hardware
    # slowdown still warns through rule_throttle)
    shared = _shared(raw)
    return [held_back(slow, shared) if shared else slow]


def _shared(raw: Raw) -> str:
    """Why the GPU counts as shared, from the activity read before the probe started ("" if not)."""
    return shared_gpu({"gpu_activity": fig.activity(raw)})


def _why(raw: Raw, peak: fig.Peak) -> str:
    parts = []
    clock = fig.mem_clock_under_load(raw)
    if clock is not None and clock < MEM_CLOCK_LOW * peak["mem_clock_mhz"]:
        parts.append(f"memory clock {clock:.0f} MHz under load, {peak['mem_clock_mhz']:.0f} MHz possible")
    slowed = fig.slowing_reasons(raw)
    if slowed:
        parts.append(f"clock-event reasons 0x{slowed[1]:x} ({fig.reason_words(slowed[1])})")
    return f" ({'; '.join(parts)})" if parts else ""


def rule_throttle(raw: Raw, host: Facts) -> list[Finding]:
    """Clocks slowed by power or thermal limits while measuring: warn (every figure is low)."""
    slowed = fig.slowing_reasons(raw)
    if slowed is None:
        return []
    when, reasons = slowed
    return [Finding(Verdict.WARN, f"GPU clocks were slowed while measuring ({when.replace('_', ' ')}: "
                                  f"0x{reasons:x}, {fig.reason_words(reasons)})",
                    "check cooling, power delivery and power limits (nvidia-smi -q -d PERFORMANCE)")]


def rule_results(raw: Raw, host: Facts) -> list[Finding]:
    """A kernel whose result did not check out: warn (the GPU computed or moved data wrongly)."""
    failed = fig.failed_checks(raw)
    if not failed:
        return []
    return [Finding(Verdict.WARN, f"wrong results from: {', '.join(failed)}",
                    "run the vendor's memory diagnostics (dcgmi diag -r 3) and check for ECC errors "
                    "(nvidia-smi -q -d ECC)")]


def rule_coalescing(raw: Raw, host: Facts) -> list[Finding]:
    half = fig.coalesce_slowdown(raw, 2)
    worst = fig.coalesce_slowdown(raw, 32)
    return [Finding(Verdict.PASS,
                    f"coalescing: a stride of 2 floats between neighbouring threads makes reads {half:.1f}x "
                    f"slower per element, a stride of 32 {worst:.1f}x; a base shifted by 4 bytes costs "
                    f"{fig.misaligned_slowdown(raw):.2f}x",
                    f"on this GPU a stride of 2 already cuts useful bandwidth to {1 / half:.0%}: make "
                    "consecutive threads read consecutive addresses (structure of arrays, not array of "
                    "structures; transpose through shared memory when the access must be strided)")]


def rule_banks(raw: Raw, host: Facts) -> list[Finding]:
    ways32 = fig.bank_slowdown(raw, 32)
    return [Finding(Verdict.PASS,
                    f"shared memory: 2-way bank conflicts cost {fig.bank_slowdown(raw, 2):.1f}x, 32-way "
                    f"(a column of a [32][32] tile) {ways32:.1f}x; the padded [32][33] tile reads its "
                    f"columns {fig.padded_speedup(raw):.1f}x faster",
                    "pad shared tiles to 33 columns (float tile[32][33]) when threads of a warp walk "
                    "down a column; keep word strides between lanes odd")]


def rule_occupancy(raw: Raw, host: Facts) -> list[Finding]:
    warps, gbs, best = fig.warps_to_saturate(raw, "serial")
    ilp_warps, _g, ilp_best = fig.warps_to_saturate(raw, "unrolled4")
    return [Finding(Verdict.PASS,
                    f"latency hiding: with one 16-byte load in flight per thread, {warps} warps per SM "
                    f"(of {fig.max_warps(raw)}) reach {gbs:.0f} GB/s, {SATURATED:.0%} of the best "
                    f"{best:.0f}; with four loads in flight {ilp_warps} warps reach {ilp_best:.0f} GB/s",
                    f"keep at least {warps} warps per SM resident (watch registers and shared memory "
                    f"per block), or give each thread several independent loads: then {ilp_warps} suffice")]


def rule_tiling(raw: Raw, host: Facts) -> list[Finding]:
    speed = fig.transpose_speedup(raw, "padded")
    n = int(raw["transpose"]["n"])
    return [Finding(Verdict.PASS,
                    f"tiling: the shared-memory tiled transpose of a {n}x{n} float matrix is {speed:.1f}x "
                    f"faster than the naive one ({fig.transpose_speedup(raw, 'tiled'):.1f}x with an "
                    "unpadded [32][32] tile)",
                    f"tile: stage through shared memory so both the reads and the writes are coalesced — "
                    f"the tiled transpose is {speed:.1f}x faster here")]


def rule_divergence(raw: Raw, host: Facts) -> list[Finding]:
    slow = fig.divergence_slowdown(raw)
    return [Finding(Verdict.PASS,
                    f"warp divergence: two equal paths chosen by lane take {slow:.1f}x the time of the same "
                    "work chosen by warp",
                    "branch on values that are the same across a warp (threadIdx.x / 32, not threadIdx.x "
                    f"% 2): threads of one warp that disagree run both paths, {slow:.1f}x here")]


def rule_budget(raw: Raw, host: Facts) -> list[Finding]:
    """A buffer smaller than asked, or not far larger than L2, is said."""
    out = capped_note(raw.get("budget"), "buffers", "size_bytes")
    l2 = (raw.get("device") or {}).get("l2_bytes")
    size = int(raw["dram"]["buffer_bytes"])
    if l2 and size < 8 * int(l2):
        out.append(Finding(Verdict.PASS, f"the {format_bytes(size)} buffer is under 8x the "
                                         f"{format_bytes(int(l2))} L2: DRAM figures include cache hits"))
    return out


Rule = Callable[[Raw, Facts], list[Finding]]
RULES: tuple[Rule, ...] = (rule_dram_bandwidth, rule_throttle, rule_results, rule_coalescing, rule_banks,
                           rule_occupancy, rule_tiling, rule_divergence, rule_budget)


def findings(raw: Raw, host: Facts) -> list[Finding]:
    """Every rule's findings, in RULES order."""
    return [finding for rule in RULES for finding in rule(raw, host)]
