"""Judgement for `perfprobe ipc`: pure rules from recorded numbers to findings (docs/probes/ipc.md).

What every host of its kind does — a ring beating a socket for small messages, spinning trading a
core for latency, a remote node costing more, a Python event loop adding tens of µs — is a pass
with the figure and advice. Warnings are for figures no healthy host produces: loopback TCP far
slower than a Unix socket, a spinning ring slower than a pipe. They rest on timings, so they carry
confirm keys: the runner re-measures them before issuing them.
"""

from __future__ import annotations

from typing import Callable

from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts, quota_bound_note, usable_cpu_list
from perfprobe.probes.ipc import figures as f
from perfprobe.probes.ipc.figures import Raw

TCP_MAX_RATIO = 4.0        # loopback TCP over a Unix socket, 64 B round trip; healthy: about 1.2..2
RING_OVER_PIPE_MAX = 1.0   # a spinning ring slower than a pipe at 64 B: something is wrong
FUTEX_OVER_PIPE_MAX = 1.5  # a futex ring (no spinning measured) this much slower than a pipe
DOMINATES = 1.0            # event-loop overhead above the compiled round trip itself

Rule = Callable[[Raw, Facts], list[Finding]]


def _us(value: float | None) -> str:
    return "unknown" if value is None else (f"{value:.2f} µs" if value < 10 else f"{value:.1f} µs")


def rule_placements(raw: Raw, host: Facts) -> list[Finding]:
    """Which placements were measured here and which were not possible, with why."""
    done = f.measured_placements(raw)
    missing = [f"{p['name']} ({p['why']})" for p in raw.get("placements") or [] if not p.get("cpus")]
    text = f"measured on {', '.join(done)} (every transport and size on {f.main(raw)})"
    if missing:
        text += "; not possible here: " + "; ".join(missing)
    advice = "" if "two_cores" in done else "give the probe two usable CPUs to measure a scheduler and worker on two cores"
    return [Finding(Verdict.PASS, text, advice)]


def rule_ring_vs_socket(raw: Raw, host: Facts) -> list[Finding]:
    """The ring against the Unix socket at small messages, and the size at which they meet."""
    ring, speedup = f.ring(raw), f.ring_speedup(raw)
    if ring is None or speedup is None:
        return []
    meet = f.crossover_bytes(raw)
    how = f"{speedup:.1f}x faster than" if speedup >= 1 else f"{1 / speedup:.1f}x slower than"
    text = (f"at 64 B a shared-memory ring ({ring}) is {how} a Unix socket here "
            f"({_us(f.rtt_us(raw, ring))} against {_us(f.rtt_us(raw, 'uds'))} per round trip, "
            f"on {f.main(raw)})")
    text += (f"; they meet at {meet} B" if meet is not None else
             f"; the ring stays ahead at every size measured, up to {max(f.sizes(raw))} B")
    return [Finding(Verdict.PASS, text, "send small, frequent messages (scheduling decisions, tokens) "
                    "through a shared-memory ring; large payloads cost their copies either way")]


def rule_ring_limit(raw: Raw, host: Facts) -> list[Finding]:
    """The spinning ring's 64 B round trip against the hardware's floor: twice the one-way handoff
    of one cache line between the same two CPUs, measured in the same run (falseshare's kernel)."""
    fraction, handoff, rtt = f.limit_fraction(raw), f.handoff_ns(raw), f.rtt_us(raw, "shm_spin")
    if fraction is None or handoff is None or rtt is None:
        return []
    cpus = (raw.get("handoff") or {}).get("cpus") or []
    text = (f"the spinning ring's 64 B round trip ({_us(rtt)}) reaches {fraction:.2f} of the physical limit: "
            f"twice the {handoff:.0f} ns one-way handoff of a cache line between CPUs "
            f"{' and '.join(str(c) for c in cpus)} (falseshare's kernel, this run), so it costs "
            f"{1 / fraction:.2f}x the limit")
    return [Finding(Verdict.PASS, text, "a round trip cannot beat two line handoffs: poll the message's "
                    "own slot (a sequence word beside the data), not shared head and tail words, and keep "
                    "small messages to 56 B so each travels in one line with its sequence word")]


def rule_wait_modes(raw: Raw, host: Facts) -> list[Finding]:
    """What spinning buys over sleeping on a futex or an eventfd, and what it costs in CPU."""
    spin, futex, efd = (f.rtt_us(raw, t) for t in ("shm_spin", "shm_futex", "shm_eventfd"))
    if futex is None or efd is None:
        return []
    sleep_text = (f"waking through a futex costs {_us(futex)} per round trip and through an eventfd "
                  f"{_us(efd)}, using {f.cpu_utilisation(raw, 'shm_futex') or 0:.2f} and "
                  f"{f.cpu_utilisation(raw, 'shm_eventfd') or 0:.2f} CPU-s per second of ping-pong")
    if spin is None:
        return [Finding(Verdict.PASS, sleep_text + "; spinning was not measured (one CPU: a spinning "
                        "receiver would hold it)", "")]
    text = (f"a spinning receiver answers in {_us(spin)} per round trip, {futex - spin:.1f} µs less "
            f"than a futex; it burns {f.cpu_utilisation(raw, 'shm_spin') or 0:.2f} CPU-s per second "
            f"(both ends spin); " + sleep_text)
    return [Finding(Verdict.PASS, text, "spin only on a core you can give away, and only while a reply "
                    "is due (spin a few µs, then sleep on a futex); otherwise sleep on a futex or eventfd")]


def rule_cross_node(raw: Raw, host: Facts) -> list[Finding]:
    """The penalty of a scheduler and worker on different NUMA nodes."""
    if "cross_node" not in f.measured_placements(raw):
        return []
    parts = [f"{t} {p:.2f}x" for t in ("uds", "shm_spin", "shm_futex") if (p := f.penalty(raw, "cross_node", t))]
    worst = max((p for t in ("uds", "shm_spin", "shm_futex") if (p := f.penalty(raw, "cross_node", t))), default=1.0)
    text = f"across NUMA nodes a 64 B round trip costs {', '.join(parts)} of {f.main(raw)}'s"
    advice = ("bind a scheduler and its workers to one node (numactl --cpunodebind, or perfprobe --bind)"
              if worst > 1.2 else "the cross-node penalty is small here")
    return [Finding(Verdict.PASS, text, advice)]


def rule_event_loop(raw: Raw, host: Facts) -> list[Finding]:
    """The overhead a Python event loop adds to each message, against the transport's own cost."""
    out = []
    compiled = f.rtt_us(raw, "uds")
    for loop in ("asyncio", "uvloop"):
        extra = f.event_loop_overhead_us(raw, loop)
        if extra is None or compiled is None:
            continue
        if extra <= 0:  # two medians of noisy round trips: the loop's came out no slower
            out.append(Finding(Verdict.PASS, f"{loop} adds no measurable time to a 64 B Unix-socket round trip "
                               f"({_us(f.event_loop_rtt_us(raw, loop))} against the compiled {_us(compiled)})",
                               "the event loop costs less than the transport here"))
            continue
        text = (f"{loop} adds {extra:.1f} µs to each 64 B Unix-socket round trip "
                f"({_us(f.event_loop_rtt_us(raw, loop))} against the compiled {_us(compiled)})")
        advice = ("the event loop dominates the transport: batch messages, or move the loop off Python "
                  "(a compiled thread, uvloop, or a shared-memory ring polled in native code)"
                  if extra > DOMINATES * compiled else "the event loop costs less than the transport here")
        out.append(Finding(Verdict.PASS, text, advice))
    skipped = [(loop, e["skipped"]) for loop, e in (raw.get("event_loop") or {}).items() if "skipped" in e]
    out += [Finding(Verdict.PASS, f"{loop} not measured: {why}", f"pip install {loop} to measure it") for loop, why in skipped]
    return out


def _cause_advice(raw: Raw, host: Facts) -> str:
    causes = f.likely_causes(raw, len(usable_cpu_list(host)))
    return ("likely cause: " + "; ".join(causes) if causes else
            "likely causes: other work on these CPUs, a CPU quota (cgroup cpu.max), a seccomp filter "
            "or a hypervisor time-sharing the vCPUs") + "; rerun on an idle host, pinned"


def rule_tcp_slow(raw: Raw, host: Facts) -> list[Finding]:
    """Loopback TCP far slower than a Unix socket: the loopback path is taxed (filters, quota)."""
    tcp, uds = f.rtt_us(raw, "tcp"), f.rtt_us(raw, "uds")
    if tcp is None or uds is None:
        return []
    ratio = tcp / uds
    text = f"loopback TCP round trip {_us(tcp)} is {ratio:.1f}x the Unix socket's {_us(uds)} at 64 B"
    if ratio <= TCP_MAX_RATIO:
        return [Finding(Verdict.PASS, text, "", confirm=("tcp",), figure=round(ratio, 3))]
    return [Finding(Verdict.WARN, text + f" (healthy hosts: under {TCP_MAX_RATIO:.0f}x)",
                    "netfilter/iptables rules or a packet filter on lo, or " + _cause_advice(raw, host),
                    confirm=("tcp",), figure=round(ratio, 3))]


def rule_ring_slow(raw: Raw, host: Facts) -> list[Finding]:
    """A shared-memory ring slower than a pipe: the ring's waits are being descheduled."""
    ring, pipe = f.ring(raw), f.rtt_us(raw, "pipe")
    shm = f.rtt_us(raw, ring) if ring else None
    if shm is None or pipe is None or f.main(raw) == "same_cpu":
        return []   # on one CPU every transport is a context switch: the order of waits decides, not the host
    limit = RING_OVER_PIPE_MAX if ring == "shm_spin" else FUTEX_OVER_PIPE_MAX
    text = f"the {ring} ring's 64 B round trip is {_us(shm)} against a pipe's {_us(pipe)}"
    if shm <= limit * pipe:
        return [Finding(Verdict.PASS, text, "", confirm=("ring",), figure=round(shm / pipe, 3))]
    return [Finding(Verdict.WARN, text + ": a ring should never be slower than a pipe",
                    _cause_advice(raw, host), confirm=("ring",), figure=round(shm / pipe, 3))]


def rule_cpu_quota(raw: Raw, host: Facts) -> list[Finding]:
    """A note when a cgroup CPU quota grants fewer than the two CPUs a round trip's two spinning
    ends need: the spinning ring then waits for the quota, not for the other core."""
    note = quota_bound_note(host, 2, "the round trips")
    return [Finding(Verdict.PASS, *note)] if note is not None else []


RULES: list[Rule] = [rule_placements, rule_ring_vs_socket, rule_ring_limit, rule_wait_modes, rule_cross_node, rule_event_loop,
                     rule_tcp_slow, rule_ring_slow, rule_cpu_quota]


def findings(raw: Raw, host: Facts) -> tuple[Finding, ...]:
    return tuple(item for rule in RULES for item in rule(raw, host))
