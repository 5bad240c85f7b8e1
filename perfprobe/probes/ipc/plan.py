"""What `perfprobe ipc` runs: transports, message sizes, message counts, placements, presets. Pure.

Placements are pairs of CPUs for the scheduler (this process) and the worker:
- `two_cores`: two CPUs of different cores on one node: what a scheduler and its worker usually get;
- `smt_siblings`: the two hardware threads of one core, where the host has SMT;
- `same_cpu`: both on one CPU, taking turns: always possible, even with one usable CPU (so the probe
  does not require two CPUs; it says what it could not measure). Spinning is not measured there:
  a spinning receiver holds the only CPU until its time slice ends;
- `cross_node`: CPUs on two NUMA nodes, on hosts with several (under --bind, the scheduler stays on
  the bound node and the worker goes to another).
The first possible of two_cores, smt_siblings, same_cpu is the main placement: every transport and
size is measured there; the others measure the small-message round trip only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence, TypedDict

from perfprobe.engine.config import Presets
from perfprobe.host.facts import Facts, numa_nodes

FD_TRANSPORTS = ("uds", "uds_seqpacket", "pipe", "tcp")
RING_MODES = {"shm_spin": 0, "shm_futex": 1, "shm_eventfd": 2}   # kernels' SPIN, FUTEX, EVENTFD
TRANSPORTS = FD_TRANSPORTS + tuple(RING_MODES)
PLACEMENTS = ("two_cores", "smt_siblings", "same_cpu", "cross_node")
MAIN_ORDER = ("two_cores", "smt_siblings", "same_cpu")
RING_BYTES = 4 << 20          # each direction's ring: 3 slots of the largest message and its sequence line
SMALL = 64                    # the message size of the placement and event-loop comparisons
ROUND_TRIPS_KEY, LOOPS_KEY = "rtt.", "event loops"
"""Re-measure keys (ipc RE_MEASURES, measure.remeasure): ROUND_TRIPS_KEY + a transport times that
transport's round trips again at every size; LOOPS_KEY the event loops'."""
CALIBRATION_MESSAGES = 8      # round trips that size (and warm) each timed run


@dataclass(frozen=True)
class Settings:
    """How hard to measure."""

    sizes: tuple[int, ...]
    run_ms: float             # target length of one timed run
    min_messages: int
    max_messages: int
    stream_repeats: int       # repeats of each one-way stream (median, min-max)
    async_messages: int       # round trips through the event loop
    warmup_fraction: float    # leading round trips left out of the statistics
    warm_ms: float            # untimed ping-pong before each timed run (both ends busy first)
    handoff_repeats: int = 5  # runs of falseshare's one-line ping-pong (the physical limit)
    handoff_ms: float = 3.0   # length of each


FULL = Settings(sizes=(64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20), run_ms=40.0,
                min_messages=50, max_messages=50_000, stream_repeats=3, async_messages=5000,
                warmup_fraction=0.1, warm_ms=20.0)
QUICK = Settings(sizes=(64, 4 << 10, 64 << 10, 1 << 20), run_ms=3.0, min_messages=16, max_messages=4000,
                 stream_repeats=1, async_messages=600, warmup_fraction=0.1, warm_ms=4.0, handoff_ms=2.0)
PRESETS = Presets(full=FULL, quick=QUICK)


class PlacementRecord(TypedDict):
    """A placement as the raw numbers record it."""

    name: str
    cpus: list[int] | None           # (scheduler, worker); None when not possible here
    why: str


@dataclass(frozen=True)
class Placement:
    name: str
    cpus: tuple[int, int] | None   # (scheduler, worker); None when not possible here
    why: str                       # how the CPUs were chosen, or why it is not possible


def size_label(size: int) -> str:
    """64B, 4K, 1M: the size in metric names."""
    for shift, unit in ((20, "M"), (10, "K")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return f"{size}B"


def messages(size: int, settings: Settings, each_us: float | None = None) -> int:
    """Messages for a timed run of about run_ms: from a calibrating run's time per message, or
    without one from a rough cost model (5 us + 1 GB/s)."""
    estimate_us = each_us if each_us and each_us > 0 else 5.0 + size / 1000.0
    count = int(settings.run_ms * 1000.0 / estimate_us)
    return max(settings.min_messages, min(settings.max_messages, count))


def slot_stride(size: int) -> int:
    """Bytes per ring slot for `size`-byte messages: the message, then its 8-byte sequence word, in
    whole 64-byte lines (up to 56 B one line; 64 B two; 4 KiB 65), as bench/ipc_ref.c lays it out."""
    return _round_up(_round_up(size, 8) + 8, 64)


def _round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def ring_layout(size: int) -> tuple[int, int]:
    """(slots, stride) of one direction's ring for `size`-byte messages: as many slots as fit in
    RING_BYTES, 2 to 1024, side by side."""
    stride = slot_stride(size)
    slots = max(2, min(1024, RING_BYTES // stride))
    if slots * stride > RING_BYTES:
        raise ValueError(f"{size}-byte messages do not fit two slots in a {RING_BYTES}-byte ring")
    return slots, stride


SPIN_BATCH = 16              # spinning round trips per timed sample, up to 4 KiB


def timing_batch(transport: str, size: int) -> int:
    """Round trips per timed sample: SPIN_BATCH for the spinning ring up to 4 KiB, whose round trip
    (0.1-1 µs) is no longer than a clock_gettime or two on a KVM guest (50-60 ns each); one a sample
    elsewhere, where a round trip is µs and each message's own time (and its p99) is kept."""
    return SPIN_BATCH if transport == "shm_spin" and size <= 4 << 10 else 1


def seqpacket_sizes(sizes: Sequence[int], sndbuf_bytes: int) -> list[int]:
    """The sizes a SOCK_SEQPACKET message can take with this send buffer (half of it, for headroom)."""
    return [s for s in sizes if s <= sndbuf_bytes // 2]


def placements(host: Facts, usable: Sequence[int], bound_node: int | None = None) -> list[Placement]:
    """Every placement, with its CPU pair or the reason it is not possible here."""
    usable_set = set(usable)
    cores = [sorted(set(c) & usable_set) for c in (host.get("cpus") or {}).get("cores") or [[u] for u in usable]]
    cores = [c for c in cores if c]
    out = [_two_cores(cores, host, usable_set), _smt(cores)]
    out.append(Placement("same_cpu", (usable[0], usable[0]), f"both on CPU {usable[0]}, taking turns")
               if usable else Placement("same_cpu", None, "no usable CPU"))
    out.append(_cross_node(host, usable_set, bound_node))
    return out


def _node_of(host: Facts, cpu: int) -> int | None:
    return next((int(n["id"]) for n in numa_nodes(host) if cpu in (n.get("cpus") or [])), None)


def _two_cores(cores: list[list[int]], host: Facts, usable: set[int]) -> Placement:
    for i, first in enumerate(cores):
        for second in cores[i + 1:]:
            if _node_of(host, first[0]) == _node_of(host, second[0]):
                return Placement("two_cores", (first[0], second[0]),
                                 f"CPUs {first[0]} and {second[0]}: two cores of one node")
    why = "one usable CPU" if len(usable) < 2 else "no two usable cores share a node"
    return Placement("two_cores", None, why)


def _smt(cores: list[list[int]]) -> Placement:
    for core in cores:
        if len(core) >= 2:
            return Placement("smt_siblings", (core[0], core[1]), f"CPUs {core[0]} and {core[1]}: one core's hardware threads")
    return Placement("smt_siblings", None, "no core with two usable hardware threads (no SMT here)")


def _cross_node(host: Facts, usable: set[int], bound_node: int | None) -> Placement:
    nodes = [(int(n["id"]), sorted(set(n.get("cpus") or []) & usable)) for n in numa_nodes(host)]
    nodes = [(nid, cpus) for nid, cpus in nodes if cpus]
    if bound_node is not None:
        nodes.sort(key=lambda item: item[0] != bound_node)
    if len(nodes) < 2:
        return Placement("cross_node", None, f"{len(nodes)} NUMA node(s) with usable CPUs")
    (a, cpus_a), (b, cpus_b) = nodes[0], nodes[1]
    return Placement("cross_node", (cpus_a[0], cpus_b[0]), f"CPU {cpus_a[0]} (node {a}) and CPU {cpus_b[0]} (node {b})")


def main_placement(found: Sequence[Placement]) -> Placement | None:
    """The placement every transport and size is measured on."""
    by_name = {p.name: p for p in found}
    return next((by_name[n] for n in MAIN_ORDER if n in by_name and by_name[n].cpus is not None), None)


def transports_for(placement: str) -> tuple[str, ...]:
    """What a placement measures: no spinning when both take turns on one CPU."""
    return tuple(t for t in TRANSPORTS if not (placement == "same_cpu" and t == "shm_spin"))


def as_dict(p: Placement) -> PlacementRecord:
    return {"name": p.name, "cpus": list(p.cpus) if p.cpus else None, "why": p.why}


def from_dict(d: Mapping[str, Any]) -> Placement:
    cpus = d.get("cpus")
    return Placement(str(d["name"]), (int(cpus[0]), int(cpus[1])) if cpus else None, str(d.get("why", "")))
