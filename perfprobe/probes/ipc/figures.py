"""Pure readers of ipc's raw numbers: what rules and tables both read.

The raw dict is measure()'s (or one recorded on another host); the TypedDicts name its shape.
Recordings made before issue 29 have no `handoff` and no `ring` (the ring's protocol): the figures
that read them are then None, and everything else reads the same.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict, cast

from perfprobe.probes.ipc.plan import RING_MODES, SMALL, TRANSPORTS, PlacementRecord, size_label
from perfprobe.pure.stats import Stat, rate_stat

MEET_RATIO = 1.1   # the ring and the socket "meet" where the ring is no longer 10% faster


class RoundTrips(Stat, total=False):
    """One ping-pong's round trips (µs; a sample is `batch` round trips' mean) and the samples'
    99th percentile."""

    p99: float


class PingPongRecord(TypedDict, total=False):
    messages: int
    batch: int                       # round trips per timed sample (absent before issue 29: 1)
    rtt_us: RoundTrips
    cpu_s_per_msg: float
    cpu_utilisation: float | None
    cpu_s: dict[str, float]          # {"scheduler": s, "worker": s}


class StreamRecord(TypedDict, total=False):
    messages: int
    msgs_per_s: Stat
    gbs: Stat
    cpu_s_per_msg: float


class CaseRecord(TypedDict, total=False):
    """One transport at one size: its ping-pong, and on the main placement its one-way stream."""

    size: int
    pingpong: PingPongRecord
    stream: StreamRecord


class EventLoopRecord(TypedDict, total=False):
    rtt_us: RoundTrips
    messages: int
    size: int
    skipped: str                     # why it was not measured (uvloop not installed)


class HandoffRecord(TypedDict, total=False):
    """The one-way core-to-core handoff of one line on the main placement's CPUs, timed with
    falseshare's kernel (falseshare_kernels.run_pingpong) in the same run (absent before issue 29)."""

    cpus: list[int]
    rounds: int
    disturbed_runs: int
    one_way_ns: Stat


class RingRecord(TypedDict, total=False):
    """The ring's protocol and layout, as measured (absent before issue 29: the naive ring, shared
    head and tail words on every message)."""

    protocol: str
    slot_bytes: dict[str, int]       # size label -> slot stride
    slots: dict[str, int]


class IpcRaw(TypedDict, total=False):
    """measure()'s dict."""

    method: str
    quick: bool
    sizes: list[int]
    main: str
    placements: list[PlacementRecord]
    runs: dict[str, dict[str, dict[str, CaseRecord]]]   # placement -> transport -> size label
    event_loop: dict[str, EventLoopRecord]
    context: dict[str, Any]
    ring_bytes: int
    ring: RingRecord
    handoff: HandoffRecord | None


Raw = Mapping[str, Any]
"""What the readers take: an IpcRaw, or a recording's dict of the same shape."""


def main(raw: Raw) -> str:
    return str(raw["main"])


def runs(raw: Raw, placement: Optional[str] = None) -> Mapping[str, Any]:
    out: Mapping[str, Any] = (raw.get("runs") or {}).get(placement or main(raw)) or {}
    return out


def entry(raw: Raw, transport: str, size: int = SMALL, placement: Optional[str] = None) -> Optional[Mapping[str, Any]]:
    found: Optional[Mapping[str, Any]] = (runs(raw, placement).get(transport) or {}).get(size_label(size))
    return found


def rtt_stat(raw: Raw, transport: str, size: int = SMALL, placement: Optional[str] = None) -> Optional[Stat]:
    """The round trips of one ping-pong (one sample a message, µs); None when not measured."""
    e = entry(raw, transport, size, placement)
    return cast(Stat, e["pingpong"]["rtt_us"]) if e else None


def rtt_us(raw: Raw, transport: str, size: int = SMALL, placement: Optional[str] = None, stat: str = "median") -> Optional[float]:
    """Median (or p99, min, max) round trip in µs; None when not measured."""
    e = entry(raw, transport, size, placement)
    return float(e["pingpong"]["rtt_us"][stat]) if e else None


def rtt_p99_us(raw: Raw, transport: str, size: int = SMALL, placement: Optional[str] = None) -> Optional[float]:
    """The 99th percentile of single round trips in µs; None where not measured, or where a sample
    was the mean of several round trips (the spinning ring, timed 16 at a time): a tail of means is
    no round trip's tail."""
    e = entry(raw, transport, size, placement)
    if not e or int(e["pingpong"].get("batch", 1)) > 1:
        return None
    return float(e["pingpong"]["rtt_us"]["p99"])


def stream_stat(raw: Raw, transport: str, size: int, what: str) -> Optional[Stat]:
    """The repeats of the one-way stream's msgs_per_s or gbs on the main placement."""
    e = entry(raw, transport, size)
    return cast(Stat, e["stream"][what]) if e and "stream" in e else None


def stream(raw: Raw, transport: str, size: int, what: str) -> Optional[float]:
    """Median msgs_per_s or gbs of the one-way stream on the main placement."""
    found = stream_stat(raw, transport, size, what)
    return None if found is None else float(found["median"])


def cpu_s_per_msg(raw: Raw, transport: str, size: int = SMALL) -> Optional[float]:
    """CPU seconds of both processes per one-way message of the 64-byte ping-pong."""
    e = entry(raw, transport, size)
    return float(e["pingpong"]["cpu_s_per_msg"]) if e else None


def cpu_utilisation(raw: Raw, transport: str, size: int = SMALL) -> Optional[float]:
    """CPU seconds of both processes per second of ping-pong (2.0: two cores busy throughout)."""
    e = entry(raw, transport, size)
    value = e["pingpong"].get("cpu_utilisation") if e else None
    return float(value) if value is not None else None


def sizes(raw: Raw) -> list[int]:
    return [int(s) for s in raw.get("sizes") or []]


def transports(raw: Raw) -> list[str]:
    return [t for t in TRANSPORTS if t in runs(raw)]


def ring(raw: Raw) -> Optional[str]:
    """The ring mode the ring-against-socket figures use: spinning where measured, else the futex."""
    return next((t for t in ("shm_spin", "shm_futex") if t in runs(raw)), None)


def ring_speedup(raw: Raw, size: int = SMALL) -> Optional[float]:
    """Unix-socket round trip over the ring's at one size."""
    r = ring(raw)
    uds, shm = rtt_us(raw, "uds", size), rtt_us(raw, r, size) if r else None
    return uds / shm if uds and shm else None


def crossover_bytes(raw: Raw) -> Optional[int]:
    """The smallest size at which the ring is no longer MEET_RATIO faster than the Unix socket."""
    for size in sizes(raw):
        speedup = ring_speedup(raw, size)
        if speedup is not None and speedup < MEET_RATIO:
            return size
    return None


def handoff_stat(raw: Raw) -> Optional[Stat]:
    """The one-way core-to-core handoff (ns) measured beside the ring; None in older recordings
    and where the main placement is one CPU."""
    found = raw.get("handoff") or {}
    return cast(Stat, found["one_way_ns"]) if "one_way_ns" in found else None


def handoff_ns(raw: Raw) -> Optional[float]:
    found = handoff_stat(raw)
    return None if found is None else float(found["median"])


def limit_us(raw: Raw) -> Optional[float]:
    """The physical limit of a round trip: twice the one-way handoff, in µs."""
    ns = handoff_ns(raw)
    return 2 * ns / 1000.0 if ns else None


def limit_fraction_stat(raw: Raw, size: int = SMALL) -> Optional[Stat]:
    """The spinning ring's round trip as a fraction of the physical limit: (2 × handoff) ÷ each
    round trip, so 1.0 is the hardware's floor and 0.5 a ring twice as slow; its spread is the
    round trips' (the handoff's median fixed)."""
    limit, stat = limit_us(raw), rtt_stat(raw, "shm_spin", size)
    if limit is None or stat is None or not stat.get("median"):
        return None
    return rate_stat(stat, lambda t: limit / t if t else 0.0, limit / float(stat["median"]))


def limit_fraction(raw: Raw, size: int = SMALL) -> Optional[float]:
    found = limit_fraction_stat(raw, size)
    return None if found is None else float(found["median"])


def over_limit(raw: Raw, size: int = SMALL) -> Optional[float]:
    """The spinning ring's round trip ÷ (2 × handoff): how many times the physical limit."""
    limit, rtt = limit_us(raw), rtt_us(raw, "shm_spin", size)
    return rtt / limit if limit and rtt else None


def ring_protocol(raw: Raw) -> str:
    """The ring measured: "slot-polled" (issue 29) or, in older recordings, "naive"."""
    return str((raw.get("ring") or {}).get("protocol") or "naive")


def event_loop_rtt_stat(raw: Raw, loop: str) -> Optional[Stat]:
    """The round trips through a Python event loop (one sample a message, µs)."""
    e = (raw.get("event_loop") or {}).get(loop) or {}
    return cast(Stat, e["rtt_us"]) if "rtt_us" in e else None


def event_loop_rtt_us(raw: Raw, loop: str) -> Optional[float]:
    found = event_loop_rtt_stat(raw, loop)
    return None if found is None else float(found["median"])


def event_loop_overhead_us(raw: Raw, loop: str) -> Optional[float]:
    """What the Python event loop adds to a 64-byte Unix-socket round trip: a difference of two
    medians, at or below 0 where the loop's came out no slower (the 2-vCPU Xeon guest, 2026-12-02:
    asyncio 62.6 µs against a compiled 74.6, both spread 30-300 µs); the metric is then left out."""
    through, compiled = event_loop_rtt_us(raw, loop), rtt_us(raw, "uds")
    return through - compiled if through is not None and compiled is not None else None


def event_loop_adds_us(raw: Raw, loop: str) -> Optional[float]:
    """event_loop_overhead_us where the loop added time (above 0), else None: what metrics, tables
    and the summary show (a time at or below 0 is none a measurement can be)."""
    extra = event_loop_overhead_us(raw, loop)
    return extra if extra is not None and extra > 0 else None


def placement(raw: Raw, name: str) -> Mapping[str, Any]:
    found: Mapping[str, Any] = next((p for p in raw.get("placements") or [] if p["name"] == name), {})
    return found


def measured_placements(raw: Raw) -> list[str]:
    return [p["name"] for p in raw.get("placements") or [] if p.get("cpus") and p["name"] in (raw.get("runs") or {})]


def penalty(raw: Raw, other: str, transport: str) -> Optional[float]:
    """64-byte round trip on another placement over the main placement's."""
    there, here = rtt_us(raw, transport, placement=other), rtt_us(raw, transport)
    return there / here if there and here else None


def is_ring(transport: str) -> bool:
    return transport in RING_MODES


def likely_causes(raw: Raw, usable_cpus: int) -> list[str]:
    """What the recorded context says can slow IPC that is not the transport."""
    ctx = raw.get("context") or {}
    out = []
    load = ctx.get("loadavg") or []
    if load and usable_cpus and float(load[0]) > 0.75 * usable_cpus:
        out.append(f"a host under load (load average {float(load[0]):.1f} on {usable_cpus} CPUs)")
    if ctx.get("steal_s"):
        out.append(f"CPU time stolen by the hypervisor ({float(ctx['steal_s']):.2f} s during the run)")
    quota = ctx.get("cpu_max")
    if quota and not str(quota).startswith("max"):
        out.append(f"a CPU quota (cgroup cpu.max {quota})")
    if ctx.get("seccomp") == 2:
        out.append("a seccomp filter on every system call (Seccomp: 2)")
    return out
