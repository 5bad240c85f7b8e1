"""Metrics, tables, curves and the summary of `perfprobe ipc`. Pure."""

from __future__ import annotations

from typing import Any

from perfprobe.engine.model import Curve, Metric, Table
from perfprobe.host.facts import Facts
from perfprobe.probes.ipc import figures as f
from perfprobe.probes.ipc.figures import Raw
from perfprobe.probes.ipc.plan import SMALL, size_label
from perfprobe.pure import stats


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def metrics(raw: Raw, host: Facts) -> dict[str, Metric]:
    """Round trips and streams carry their statistics; a p99 is a tail of the same round trips and
    stays bare, so it is judged once, through its median. Where a sample is the mean of several
    round trips (the spinning ring) there is no per-round-trip tail, and no p99."""
    out: dict[str, Metric] = {}
    for t in f.transports(raw):
        for size in f.sizes(raw):
            label = size_label(size)
            if f.entry(raw, t, size) is None:
                continue
            out[f"rtt_us.{t}.{label}"] = stats.metric(f.rtt_stat(raw, t, size), "µs", 3)
            if (p99 := f.rtt_p99_us(raw, t, size)) is not None:
                out[f"rtt_p99_us.{t}.{label}"] = Metric(_r(p99), "µs")
            if f.stream(raw, t, size, "msgs_per_s") is not None:
                out[f"msgs_per_s.{t}.{label}"] = stats.metric(f.stream_stat(raw, t, size, "msgs_per_s"), "msgs/s", 0)
                out[f"gbs.{t}.{label}"] = stats.metric(f.stream_stat(raw, t, size, "gbs"), "GB/s", 4)
        out[f"cpu_s_per_msg.{t}"] = Metric(_r(f.cpu_s_per_msg(raw, t), 9), "s")
        out[f"cpu_utilisation.{t}"] = Metric(_r(f.cpu_utilisation(raw, t)), "CPU-s/s")
    for placement in f.measured_placements(raw):
        if placement != f.main(raw):
            for t in f.transports(raw):
                if (stat := f.rtt_stat(raw, t, placement=placement)) is not None:
                    out[f"rtt_us.{placement}.{t}.64B"] = stats.metric(stat, "µs", 3)
    for loop in ("asyncio", "uvloop"):
        if f.event_loop_rtt_us(raw, loop) is not None:
            out[f"rtt_us.{loop}.64B"] = stats.metric(f.event_loop_rtt_stat(raw, loop), "µs", 3)
            if (extra := f.event_loop_adds_us(raw, loop)) is not None:
                out[f"{loop}_overhead_us"] = Metric(_r(extra), "µs")
    if f.handoff_stat(raw) is not None:
        out["handoff_ns"] = stats.metric(f.handoff_stat(raw), "ns", 1)
        out["ring_limit_fraction.64B"] = stats.metric(f.limit_fraction_stat(raw), "fraction", 3)
    out["crossover_bytes"] = Metric(f.crossover_bytes(raw), "B")
    out["ring_speedup.64B"] = Metric(_r(f.ring_speedup(raw)), "ratio")
    for t in ("uds", "shm_spin", "shm_futex"):
        if (p := f.penalty(raw, "cross_node", t)) is not None:
            out[f"cross_node_penalty.{t}"] = Metric(_r(p), "ratio")
    return out


def _cell(raw: Raw, t: str, size: int) -> str:
    median, p99 = f.rtt_us(raw, t, size), f.rtt_p99_us(raw, t, size)
    if median is None:
        return "-"
    return f"{median:.2f}" if p99 is None else f"{median:.2f} ({p99:.0f})"


def tables(raw: Raw) -> tuple[Table, ...]:
    sizes = f.sizes(raw)
    labels = tuple(size_label(s) for s in sizes)
    rtt = Table(f"round trip, µs: median (p99 of single round trips), on {f.main(raw)}", ("transport",) + labels,
                tuple((t,) + tuple(_cell(raw, t, s) for s in sizes) for t in f.transports(raw)))
    gbs = Table(f"one-way stream on {f.main(raw)}: GB/s (messages/s at 64 B)", ("transport",) + labels,
                tuple((t,) + tuple(_stream_cell(raw, t, s) for s in sizes) for t in f.transports(raw)))
    places = f.measured_placements(raw)
    by_place = Table("64 B round trip per placement, µs (CPUs: scheduler, worker)",
                     ("transport",) + tuple(f"{p} {tuple(f.placement(raw, p)['cpus'])}" for p in places),
                     tuple((t,) + tuple(_r(f.rtt_us(raw, t, placement=p), 2) for p in places) for t in f.transports(raw)))
    waits = Table("ring wait modes at 64 B", ("mode", "round trip µs", "CPU-s per s", "CPU µs per message"),
                  tuple((t, _r(f.rtt_us(raw, t), 2), _r(f.cpu_utilisation(raw, t), 2),
                         _r((f.cpu_s_per_msg(raw, t) or 0) * 1e6, 2)) for t in f.transports(raw) if f.is_ring(t)))
    limit = f.limit_us(raw)
    hw = Table("the spinning ring against the physical limit (twice the one-way handoff of a line)",
               ("size", "round trip µs", "limit µs", "fraction of the limit"),
               tuple((size_label(s), _r(f.rtt_us(raw, "shm_spin", s), 3), _r(limit, 3), _r(f.limit_fraction(raw, s)))
                     for s in f.sizes(raw)[:1] if limit is not None and f.rtt_us(raw, "shm_spin", s) is not None))
    loops = Table("64 B round trip through a Python event loop (worker: compiled echo)",
                  ("loop", "round trip µs", "added µs"),
                  tuple((loop, _r(f.event_loop_rtt_us(raw, loop), 2), _r(f.event_loop_adds_us(raw, loop), 2))
                        for loop in ("asyncio", "uvloop") if f.event_loop_rtt_us(raw, loop) is not None))
    return tuple(t for t in (rtt, gbs, by_place, waits, hw, loops) if t.rows)


def _stream_cell(raw: Raw, t: str, size: int) -> str:
    gbs, rate = f.stream(raw, t, size, "gbs"), f.stream(raw, t, size, "msgs_per_s")
    if gbs is None or rate is None:
        return "-"
    return f"{gbs:.3f} ({rate / 1e6:.2f}M/s)" if size == SMALL else f"{gbs:.3f}"


def curves(raw: Raw) -> tuple[Curve, ...]:
    out = []
    for t in ("uds", f.ring(raw)):
        points = tuple((float(s), v) for s in f.sizes(raw) if t and (v := f.rtt_us(raw, t, s)) is not None)
        if t and points:
            out.append(Curve(f"{t} round trip against message size", "message size (B)", "µs", points, log_y=True))
    return tuple(out)


def summary(raw: Raw, host: Facts) -> str:
    ring, speedup = f.ring(raw), f.ring_speedup(raw)
    text = f"64 B round trip: uds {f.rtt_us(raw, 'uds') or 0:.1f} µs"
    if ring and speedup:
        text += f", {ring} {f.rtt_us(raw, ring) or 0:.2f} µs ({speedup:.1f}x " + ("faster)" if speedup >= 1 else "the socket's time)")
    fraction = f.limit_fraction(raw)
    if fraction is not None:
        text += f", {fraction:.2f} of the hardware's limit"
    extra = f.event_loop_adds_us(raw, "asyncio")
    if extra is not None:
        text += f"; asyncio adds {extra:.0f} µs per message"
    return text + f" ({f.main(raw)})"


def key_figure(raw: Raw, host: Facts) -> str:
    ring = f.ring(raw)
    value = f.rtt_us(raw, ring) if ring else f.rtt_us(raw, "uds")
    return f"{ring or 'uds'} rtt {value or 0:.2f} µs"


def facts(raw: Raw) -> dict[str, Any]:
    return {"method": raw.get("method"), "placements": raw.get("placements"), "context": raw.get("context"),
            "ring_bytes": raw.get("ring_bytes"), "quick": raw.get("quick"), "ring": raw.get("ring"),
            "handoff": raw.get("handoff")}
