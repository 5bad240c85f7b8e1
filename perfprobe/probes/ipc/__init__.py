"""`perfprobe ipc`: what a message between a scheduler and its worker costs, per transport.

measure.py starts a worker process (worker.py, through session.py, which cleans up on every path)
and times ping-pong round trips and one-way streams over Unix sockets (stream, seqpacket), a pipe,
loopback TCP and a shared-memory ring (spinning, futex, eventfd), on every CPU placement possible
here, then the same ping-pong through a Python event loop. rules.py and tables.py judge (pure).
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Probe, PythonModule
from perfprobe.engine.stability import AtMost, NotBelow, Ordered, Relation
from perfprobe.host.facts import Facts
from perfprobe.probes.ipc import rules, tables
from perfprobe.probes.ipc.declared import DECLARED
from perfprobe.probes.ipc.plan import LOOPS_KEY, ROUND_TRIPS_KEY, TRANSPORTS


def judge(raw: Mapping[str, Any], host: Facts) -> Assessment:
    """Findings, metrics, tables and curves from the recorded numbers."""
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=rules.findings(raw, host), tables=tables.tables(raw),
                      curves=tables.curves(raw), facts=tables.facts(raw), key_figure=tables.key_figure(raw, host))


SIZE_NOISE = 1.1
"""A round trip of 256 KiB or more is not faster than one of 4-64 KiB (nor 1 MiB than 256 KiB); 10%
covers the medians' noise. Below 4 KiB a round trip is its system calls, the same for every size.
Why not 4 KiB against 64 KiB: on a VM a blocking round trip of up to 64 KiB is mostly the wake-up of
an idle vCPU, which the copies cannot outweigh. On the 2-vCPU EPYC guest (100 quick runs of 12-06
and 12-07) uds read 30-37 µs at 64 B, 4 KiB above 64 KiB in 17 of them (up to 1.54x: 37.3 against
24.2 µs, the 64 KiB trip's vCPU not idle long enough to sleep), each re-measured for it; from 256
KiB every trip copies at least 1 MiB, about 70 µs at 15 GB/s, more than twice a wake-up."""
LIMIT_ALLOWANCE = 1.2
"""A round trip moves a line each way, so it cannot beat twice the one-way handoff: the fraction of
the limit stays under 1. The 20% allows for the two being timed apart, moments from each other and
in different ways (the handoff as a span of many, the ring 16 round trips a sample); above 1.2 they
were measured in different states of the host (a VM's vCPUs moved)."""
LOOP_FLOOR = 0.5
"""An event loop's round trip is at least half the compiled one's over the same Unix socket. Not
1.0: on a VM where a blocking round trip is mostly the wake-up of an idle vCPU, the loop's Python
work after each send can outlast the echo, so its epoll finds the reply waiting and no vCPU
sleeps. On the 2-vCPU EPYC guest (40 quick runs of 12-06; compiled 15-46 µs) asyncio read
0.73-2.25x the compiled round trip, under 1.0 in 14 runs, each re-measured for it (1.7 s) and 8
still marked unstable after; on the H100 guest's CPU-bound 8.5-10 µs it read 2.4-2.7x."""
RELATIONS: tuple[Relation, ...] = (
    *(Ordered(tuple(f"rtt_us.{t}.{size}" for size in (smaller, "256K", "1M")), SIZE_NOISE,
              f"a {t} round trip of a message of 256 KiB or more faster than of a smaller one (every byte "
              "is copied both ways)") for t in TRANSPORTS for smaller in ("4K", "16K", "64K")),
    *(NotBelow(f"rtt_us.{loop}.64B", "rtt_us.uds.64B", LOOP_FLOOR, f"a round trip through {loop} under half "
               "the compiled one's over the same Unix socket") for loop in ("asyncio", "uvloop")),
    AtMost("ring_limit_fraction.*", LIMIT_ALLOWANCE, "a ring round trip faster than two core-to-core handoffs "
           "of one line (the physical limit)"),
)
SPREAD_BOUND = 0.30
"""Round trips are summarized one sample a message (hundreds of them), not over repeated runs, so
their MAD is the messages' own jitter: up to 18% of the median in quiet --quick runs on the H200
guest (same-CPU round trips); a whole run hit by other work spreads far wider."""

RE_MEASURES: dict[str, tuple[str, ...]] = {
    **{ROUND_TRIPS_KEY + t: (f"rtt_us.{t}.*", f"rtt_p99_us.{t}.*") for t in TRANSPORTS},
    LOOPS_KEY: ("rtt_us.asyncio.*", "rtt_us.uvloop.*"),
}
"""What measure.remeasure times again per key, for the stability re-measurement (Probe.remeasures):
one transport's round trips at every size on the main placement (its streams kept), or the event
loops' 64 B round trips. Why: on the 2-vCPU EPYC guest (12-07 04:33-05:07 UTC) 5 of 30 quick runs
re-measured the whole probe, 1.4 s each, for one figure: tcp's 1 MiB round trip (samples at 230
and at 340-580 µs in one run) or asyncio's 64 B (0.3-2.4 ms in one run)."""

PROBE = Probe(name=DECLARED.name, title="IPC: sockets, pipes and a shared-memory ring between two processes",
              judge=judge, measure_module="perfprobe.probes.ipc.measure",
              requires=(PythonModule("numba", "pip install numba"),), relations=RELATIONS,
              spread_bound=SPREAD_BOUND, remeasures=RE_MEASURES)
