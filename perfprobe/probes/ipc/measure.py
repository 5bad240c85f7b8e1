"""Measure `perfprobe ipc`: round trips and one-way streams between this process and a worker.

Every placement possible here pins this process and the worker to its CPU pair; the main placement
measures every transport at every size (ping-pong and stream), the others the 64-byte round trip;
then the event-loop ping-pong. It returns plain numbers; figures.py reads them.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from perfprobe.engine.probe import ProbeContext
from perfprobe.probes.ipc import eventloop, plan
from perfprobe.probes.ipc.figures import HandoffRecord, IpcRaw, RingRecord
from perfprobe.probes.ipc.plan import LOOPS_KEY, RING_BYTES, RING_MODES, ROUND_TRIPS_KEY, SMALL, Placement, Settings
from perfprobe.probes.ipc.session import Session, WorkerFailed
from perfprobe.pure.stats import summarize
from perfprobe.system.bind import usable_cpus

METHOD = ("two processes (this one and a worker started with subprocess), each pinned to its CPU; the "
          "hot loops are numba nopython kernels calling libc (read/write/send/recv, futex through "
          "syscall, eventfd) and timing each round trip with clock_gettime(CLOCK_MONOTONIC); the ring "
          "is a single-producer/single-consumer ring per direction in a shared memfd mapping, polled "
          "in the slot (a sequence word at the end of each slot, cached indices, the tail published "
          "once a quarter ring, wait flags only when sleeping); CPU time from getrusage of both "
          "processes; the physical limit is twice the one-way handoff of one line between the main "
          "placement's CPUs, timed with falseshare's kernel in the same run")
PROTOCOL = "slot-polled"
ERRORS = {-1: "end of file (the peer closed)", -2: "timed out", -3: "aborted (the worker died)"}


def measure(ctx: ProbeContext) -> IpcRaw:
    """Every placement possible here, then the event loops; the worker is ended on every path."""
    settings: Settings = ctx.config.preset(plan.PRESETS)
    found = plan.placements(ctx.host, usable_cpus(ctx.host), ctx.config.bind)
    main = plan.main_placement(found)
    if main is None:
        raise WorkerFailed("no CPU to run on: the affinity mask is empty")
    before = _host_context()
    with Session() as session:
        runs: dict[str, Any] = {}
        work = [(p, _cases(p, main, settings, session.seq_sndbuf)) for p in found if p.cpus is not None]
        spin = 1 if "shm_spin" in plan.transports_for(main.name) else 0
        with ctx.progress("ipc", sum(len(c) for _, c in work) + 2 + spin) as task:
            handoff: list[HandoffRecord | None] = [None]

            def limit() -> None:   # the limit, right after the 64 B spinning ring, on the same CPUs
                handoff[0] = handoff_of(main, settings)
                task.advance()
            for placement, cases in work:
                hook = limit if placement.name == main.name else None
                runs[placement.name] = _placement(session, placement, cases, settings, task, hook)
            loops = _event_loops(session, main, settings, task)
    return {"method": METHOD, "quick": ctx.quick, "sizes": list(settings.sizes), "main": main.name,
            "placements": [plan.as_dict(p) for p in found], "runs": runs, "event_loop": loops,
            "context": _context_delta(before, _host_context()) | {"seqpacket_sndbuf": session.seq_sndbuf},
            "ring_bytes": RING_BYTES, "ring": ring_record(settings.sizes), "handoff": handoff[0]}


def ring_record(sizes: Iterable[int]) -> RingRecord:
    layouts = {plan.size_label(s): plan.ring_layout(s) for s in sizes}
    return {"protocol": PROTOCOL, "slot_bytes": {k: v[1] for k, v in layouts.items()},
            "slots": {k: v[0] for k, v in layouts.items()}}


def handoff_of(p: Placement, settings: Settings) -> HandoffRecord | None:
    """The one-way handoff of one line between the placement's two CPUs: falseshare's ping-pong
    kernel (two pinned threads of this process, one flag), half its round trip, settings'
    repeats; None on one CPU (no handoff there)."""
    if p.cpus is None or p.cpus[0] == p.cpus[1]:
        return None
    from perfprobe.kernels import falseshare_kernels as fk

    a, b = p.cpus
    probe = fk.run_pingpong(a, b, 2_000).span_ns / 2_000
    rounds = max(1_000, int(settings.handoff_ms * 1e6 / max(probe, 1.0)))
    runs = [fk.run_pingpong(a, b, rounds) for _ in range(settings.handoff_repeats)]
    return {"cpus": [a, b], "rounds": rounds, "disturbed_runs": sum(r.preempted for r in runs),
            "one_way_ns": summarize([r.span_ns / rounds / 2 for r in runs])}


def remeasure(ctx: ProbeContext, raw: IpcRaw, keys: tuple[str, ...]) -> IpcRaw:
    """Round trips measured again on the main placement, the rest of `raw` kept: for a warning's
    confirmation ("tcp", "ring") the 64-byte ones it rests on; for the stability re-measurement
    (RE_MEASURES) every size of a transport ("rtt.uds") or the event loops ("event loops")."""
    settings: Settings = ctx.config.preset(plan.PRESETS)
    main = plan.from_dict(next(p for p in raw["placements"] if p["name"] == raw["main"]))
    wanted = {"tcp": ("uds", "tcp"), "ring": ("pipe",) + tuple(RING_MODES)}
    transports = {t for key in keys for t in wanted.get(key, ())} & set(plan.transports_for(main.name))
    cases = [(t, SMALL, False) for t in plan.TRANSPORTS if t in transports]
    measured = raw["runs"][main.name]
    for key in keys:
        if key.startswith(ROUND_TRIPS_KEY):
            t = key[len(ROUND_TRIPS_KEY):]
            cases += [case for entry in measured.get(t, {}).values()
                      if (case := (t, int(entry["size"]), False)) not in cases]
    loops = LOOPS_KEY in keys
    again = IpcRaw(**raw)
    with Session() as session:
        with ctx.progress("ipc: re-measuring", len(cases) + (2 if loops else 0)) as task:
            fresh = _placement(session, main, cases, settings, task)
            if loops:
                again["event_loop"] = _event_loops(session, main, settings, task)
    again["runs"] = dict(raw["runs"], **{main.name: with_round_trips(measured, fresh)})
    if "ring" in keys and raw.get("handoff"):
        again["handoff"] = handoff_of(main, settings)
    return again


def with_round_trips(measured: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any]:
    """`measured` (transport -> size label -> entry) with each entry `fresh` timed again taking its
    round trips (`pingpong`); its stream, not timed again, is kept."""
    return {t: {label: {**entry, "pingpong": fresh[t][label]["pingpong"]} if label in fresh.get(t, {}) else entry
                for label, entry in sizes.items()} for t, sizes in measured.items()}


def _cases(p: Placement, main: Placement, settings: Settings, sndbuf: int) -> list[tuple[str, int, bool]]:
    """(transport, size, also a stream?) for one placement."""
    if p.name != main.name:
        return [(t, SMALL, False) for t in plan.transports_for(p.name)]
    seq_ok = set(plan.seqpacket_sizes(settings.sizes, sndbuf))
    return [(t, s, True) for t in plan.transports_for(p.name) for s in settings.sizes
            if t != "uds_seqpacket" or s in seq_ok]


def _placement(session: Session, p: Placement, cases: Iterable[tuple[str, int, bool]],
               settings: Settings, task: Any, after_spin: Callable[[], None] | None = None) -> dict[str, Any]:
    """Every case on one placement; `after_spin` runs right after the 64 B spinning ring's."""
    assert p.cpus is not None
    os.sched_setaffinity(0, {p.cpus[0]})
    session.pin_worker(p.cpus[1])
    out: dict[str, Any] = {}
    for transport, size, stream in cases:
        entry = {"size": size, "pingpong": _pingpong(session, transport, size, settings)}
        if stream:
            entry["stream"] = _stream(session, transport, size, settings)
        out.setdefault(transport, {})[plan.size_label(size)] = entry
        task.advance()
        if after_spin is not None and transport == "shm_spin" and size == SMALL:
            after_spin()
    return out


def _thread_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def _timeout_s(count: int, size: int) -> float:
    return 10.0 + count * size / 50e6   # no transport moves less than 50 MB/s


def _command(session: Session, op: str, transport: str, size: int, count: int) -> dict[str, Any]:
    cmd: dict[str, Any] = {"op": op, "transport": transport, "size": size, "count": count,
                           "timeout_s": _timeout_s(count, size)}
    if transport in RING_MODES:
        slots, stride = plan.ring_layout(size)
        session.k.ring_reset(session.ctl, session.data, slots, stride)   # the worker is idle between commands
        cmd.update(mode=RING_MODES[transport], slots=slots, stride=stride)
    session.command(cmd, _timeout_s(count, size) + 5.0)
    return cmd


def _parent_fds(session: Session, transport: str) -> tuple[int, int, bool, bool]:
    """(write fd, read fd, socket?, one message per recv?) of this side of a transport."""
    if transport == "pipe":
        return session.pipe_w, session.pipe_r, False, False
    sock = {"uds": session.uds, "uds_seqpacket": session.seq, "tcp": session.tcp}[transport]
    return sock.fileno(), sock.fileno(), True, transport == "uds_seqpacket"


def _run_kernel(session: Session, cmd: dict[str, Any], fd_kernel: Any, ring_kernel: Any, *args: Any,
                ring_only: tuple[Any, ...] = ()) -> Any:
    """The command's kernel: the ring's (with `ring_only` after `args`) or the file descriptors'."""
    if "mode" in cmd:
        deadline = time.monotonic_ns() + int(cmd["timeout_s"] * 1e9)
        return ring_kernel(session.ctl, session.data, cmd["slots"], cmd["stride"], *args, *ring_only, cmd["mode"],
                           session.efd_mine, session.efd_peer, session.scratch, deadline)
    wfd, rfd, sock, packet = _parent_fds(session, cmd["transport"])
    return fd_kernel(wfd, rfd, *args, sock, packet)


def _check(session: Session, err: int, reply: dict[str, Any], what: str) -> None:
    if err == 4:   # EINTR: a signal (Ctrl-C) reached this side; Python raises it now
        raise KeyboardInterrupt
    for side, code in (("this side", err), ("the worker", int(reply.get("err", 0)))):
        if code != 0:
            why = ERRORS.get(code) or os.strerror(code)
            raise session.failed(f"{what}: {side} saw {why}")


def _round_trips(session: Session, transport: str, size: int, count: int) -> tuple[np.ndarray, float, float, float]:
    """(ns per round trip of each sample, the worker's CPU s, this side's CPU s, wall s) of one
    ping-pong run of about `count` round trips, timed plan.timing_batch of them a sample."""
    batch = plan.timing_batch(transport, size)
    samples = max(1, count // batch)
    cmd = _command(session, "echo", transport, size, samples * batch)
    buf, lat = np.zeros(size, dtype=np.uint8), np.zeros(samples, dtype=np.int64)
    start, wall = _thread_cpu_s(), time.monotonic_ns()
    err = _run_kernel(session, cmd, session.k.fd_pingpong, session.k.ring_pingpong, buf, lat, ring_only=(batch,))
    wall_s, mine = (time.monotonic_ns() - wall) / 1e9, _thread_cpu_s() - start
    reply = session.finish(cmd["timeout_s"] + 5.0)
    _check(session, int(err), reply, f"{transport} ping-pong of {size} B")
    return lat, float(reply["cpu_s"]), mine, wall_s


def _pingpong(session: Session, transport: str, size: int, settings: Settings) -> dict[str, Any]:
    """Warm-up runs of growing length until one lasts settings.warm_ms (an idle vCPU or a core
    that has slept answers slowly for the first milliseconds), then one sized to settings.run_ms."""
    batch = plan.timing_batch(transport, size)
    n = plan.CALIBRATION_MESSAGES * batch   # samples, not round trips: the first ones wait for the worker
    while True:
        probe, _, _, _ = _round_trips(session, transport, size, n)
        if probe.sum() * batch / 1e6 >= settings.warm_ms or n >= settings.max_messages:
            break
        n = min(settings.max_messages, n * 8)
    count = plan.messages(size, settings, float(np.median(probe[probe.size // 2:])) / 1000.0)
    count = max(count, settings.min_messages * batch)   # at least min_messages samples
    lat, worker_cpu, mine, wall_s = _round_trips(session, transport, size, count)
    count = lat.size * batch
    kept = lat[int(lat.size * settings.warmup_fraction):] / 1000.0
    session.last_rtt_us = float(np.median(kept))
    cpu = mine + worker_cpu
    return {"messages": count, "batch": batch,
            "rtt_us": dict(summarize(kept.tolist()), p99=float(np.percentile(kept, 99))),
            "cpu_s_per_msg": cpu / (2 * count), "cpu_utilisation": cpu / wall_s if wall_s > 0 else None,
            "cpu_s": {"scheduler": mine, "worker": worker_cpu}}


def _stream(session: Session, transport: str, size: int, settings: Settings) -> dict[str, Any]:
    rtt_us = (session.last_rtt_us or 5.0)
    count = plan.messages(size, settings, rtt_us / 2)
    rates, cpus = [], []
    for _ in range(settings.stream_repeats):
        cmd = _command(session, "sink", transport, size, count)
        buf = np.zeros(size, dtype=np.uint8)
        start = _thread_cpu_s()
        ns, err = _run_kernel(session, cmd, session.k.fd_stream, session.k.ring_stream, buf, count)
        mine = _thread_cpu_s() - start
        reply = session.finish(cmd["timeout_s"] + 5.0)
        _check(session, int(err), reply, f"{transport} stream of {size} B")
        rates.append(count / (ns / 1e9))
        cpus.append((mine + float(reply["cpu_s"])) / count)
    return {"messages": count, "msgs_per_s": summarize(rates), "gbs": summarize([r * size / 1e9 for r in rates]),
            "cpu_s_per_msg": float(np.median(cpus))}


def _event_loops(session: Session, main: Placement, settings: Settings, task: Any) -> dict[str, Any]:
    """The 64-byte ping-pong written as asyncio streams, under each event loop installed."""
    assert main.cpus is not None
    os.sched_setaffinity(0, {main.cpus[0]})
    session.pin_worker(main.cpus[1])
    out: dict[str, Any] = {}
    for name in ("asyncio", "uvloop"):
        factory = eventloop.loop_factory(name)
        task.advance()
        if factory is None:
            out[name] = {"skipped": f"{name} is not installed"}
            continue
        count = settings.async_messages
        _command(session, "echo", name, SMALL, count)   # the worker's compiled echo on the loop's socket
        try:
            out[name] = eventloop.run_pingpong(factory, session.aio[name][0], SMALL, count,
                                               int(count * settings.warmup_fraction), _timeout_s(count, SMALL))
        except (OSError, EOFError, TimeoutError) as exc:
            raise session.failed(f"{name} ping-pong: {exc!r}") from exc
        reply = session.finish(10.0)
        _check(session, 0, reply, f"{name} ping-pong")
    return out


def _host_context() -> dict[str, Any]:
    """What can make IPC slow that is not the transport: load, steal time, a CPU quota, seccomp."""
    root = Path("/")
    steal = None
    try:
        fields = (root / "proc/stat").read_text().splitlines()[0].split()
        steal = int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else None
    except (OSError, ValueError, IndexError):
        pass
    return {"loadavg": list(os.getloadavg()), "steal_s": steal, "cpu_max": _read(root / "sys/fs/cgroup/cpu.max"),
            "seccomp": _seccomp()}


def _context_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    steal = (after["steal_s"] - before["steal_s"]) if after["steal_s"] is not None and before["steal_s"] is not None else None
    return dict(after, steal_s=steal, loadavg_before=before["loadavg"])


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _seccomp() -> int | None:
    for line in (_read(Path("/proc/self/status")) or "").splitlines():
        if line.startswith("Seccomp:"):
            return int(line.split()[1])
    return None
