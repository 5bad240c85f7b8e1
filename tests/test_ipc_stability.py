"""ipc's round trips carry their messages' statistics and its streams their runs', its relations name
impossible figures, and its wider spread bound lets single messages' jitter through (stability.py),
on numbers recorded on real hosts (tests/data/ipc_*.json)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import probe_stability as shared
from perfprobe.engine.stability import SPREAD_BOUND, unstable
from perfprobe.probes import ipc
from perfprobe.pure.stats import metric, summarize

DATA = Path(__file__).parent / "data"
RECORDINGS = sorted(DATA.glob("ipc_*.json"))
QUIET = ["ipc_h200_full.json", "ipc_h200_quick.json"]


judged = partial(shared.judged, ipc)
broken = partial(shared.broken, ipc)

planted = shared.planted


def test_round_trips_and_streams_carry_their_samples():
    metrics = judged("ipc_h200_full.json")
    rtt, stream = metrics["rtt_us.uds.64B"].spread, metrics["gbs.shm_spin.64K"].spread
    assert rtt.n > 100 and rtt.min < metrics["rtt_us.uds.64B"].value < rtt.max   # one sample a message
    assert stream.n == 3                                                         # one a run
    assert metrics["rtt_us.same_cpu.uds.64B"].spread.n > 100 and metrics["rtt_us.asyncio.64B"].spread.n > 100
    for bare in ("rtt_p99_us.uds.64B", "cpu_s_per_msg.uds", "ring_speedup.64B", "crossover_bytes"):
        assert metrics[bare].spread is None, bare


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_no_recording_breaks_a_relation(path):
    assert unstable(judged(path.name), ipc.PROBE.relations, float("inf")) == {}


@pytest.mark.parametrize("name", QUIET)
def test_the_quiet_hosts_round_trips_stay_under_the_bound(name):
    """Without their samples the recordings keep IQR and extremes: an IQR under the bound keeps the
    MAD under it too (half the samples lie within the IQR, and the median among them)."""
    for key, m in judged(name).items():
        if m.spread is not None and m.spread.n >= 3:
            assert m.spread.iqr / m.spread.median <= ipc.PROBE.spread_bound + 0.05, key
    assert ipc.PROBE.spread_bound > SPREAD_BOUND


def test_a_large_message_faster_than_a_smaller_one_is_named():
    metrics = judged("ipc_h200_full.json")   # uds: 4K 12.1, 16K 14.2, 64K 34.1, 256K 69.6, 1M 294 µs
    found = broken(planted(metrics, "rtt_us.uds.16K", 80.0))
    assert list(found) == ["rtt_us.uds.16K"] and "256 KiB or more faster" in found["rtt_us.uds.16K"]
    found = broken(planted(metrics, "rtt_us.uds.256K", 340.0))   # above 1.1 x 1M's 294
    assert list(found) == ["rtt_us.uds.256K"]
    assert broken(planted(metrics, "rtt_us.uds.64K", 69.64 * 1.08)) == {}   # within the allowance


def test_messages_up_to_64k_are_not_ordered_among_themselves():
    """On a VM a blocking round trip up to 64 KiB is mostly an idle vCPU's wake-up: the EPYC guest
    read 4 KiB above 64 KiB in 17 of 100 quick runs (ipc.SIZE_NOISE)."""
    metrics = judged("ipc_h200_full.json")
    assert broken(planted(metrics, "rtt_us.uds.4K", 37.3)) == {}   # above 16K's 14.2 and 64K's 34.1


def test_sizes_below_4k_are_not_ordered():
    metrics = judged("ipc_h200_full.json")
    assert broken(planted(metrics, "rtt_us.uds.64B", 13.0)) == {}   # above 256 B's 11.5 and 4K's 12.1


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_an_event_loop_faster_than_the_compiled_socket_is_named(loop):
    found = broken(planted(judged("ipc_h200_full.json"), f"rtt_us.{loop}.64B", 5.0))   # uds: 11.5 µs
    assert list(found) == [f"rtt_us.{loop}.64B"]


def test_an_event_loop_a_little_faster_than_the_blocking_compiled_round_trip_of_a_vm_stands():
    """The 2-vCPU EPYC guest: asyncio 32.9 µs against a compiled 42.7 (0.77x), the loop's Python
    work sparing it the idle vCPU's wake-up (ipc.LOOP_FLOOR); under half of it is still named."""
    metrics = judged("ipc_epyc2c_quick_loop_below.json")
    loop, compiled = metrics["rtt_us.asyncio.64B"].value, metrics["rtt_us.uds.64B"].value
    assert 0.7 < loop / compiled < 0.8
    assert "rtt_us.asyncio.64B" not in broken(metrics)
    assert "rtt_us.asyncio.64B" in broken(planted(metrics, "rtt_us.asyncio.64B", 0.45 * compiled))


def test_the_bound_passes_a_quiet_same_cpu_round_trip_and_names_a_preempted_stream():
    quiet = metric(summarize([4.0] * 40 + [5.126] * 20 + [6.2] * 40), "µs")   # MAD 18-22%, like same_cpu uds
    preempted = metric(summarize([287.0, 760.9, 8684.3, 3900.0, 420.0]), "µs")
    assert broken({"rtt_us.same_cpu.uds.64B": quiet}) == {}
    assert "repeats disagree" in broken({"rtt_us.uds.1M": preempted})["rtt_us.uds.1M"]


@pytest.mark.parametrize("name, figure, key", [
    ("ipc_epyc2c_quick_tcp1m_spread.json", "rtt_us.tcp.1M", "rtt.tcp"),
    ("ipc_epyc2c_quick_asyncio_spread.json", "rtt_us.asyncio.64B", "event loops"),
])
def test_one_spread_figure_is_re_measured_alone(name, figure, key):
    """The recorded runs whose one unstable figure re-measured the whole probe (1.4 s on the EPYC
    guest): its key times that transport's round trips (or the event loops) only."""
    found = broken(judged(name))
    assert list(found) == [figure]
    assert ipc.PROBE.remeasure_keys(found) == (key,)


def test_what_no_key_times_again_re_measures_the_whole_probe():
    keys = ipc.PROBE.remeasure_keys
    assert keys(["rtt_us.uds.4K", "rtt_p99_us.uds.1M", "rtt_us.tcp.64B"]) == ("rtt.uds", "rtt.tcp")
    assert keys(["rtt_us.same_cpu.tcp.64B"]) is None          # another placement: the whole probe
    assert keys(["rtt_us.tcp.1M", "gbs.tcp.1M"]) is None      # a stream: the whole probe
    assert keys(["ring_limit_fraction.64B"]) is None


def test_round_trips_timed_again_keep_the_streams_of_their_sizes():
    from perfprobe.probes.ipc.measure import with_round_trips

    measured = {"tcp": {"64B": {"size": 64, "pingpong": "old", "stream": "kept"},
                        "1M": {"size": 1 << 20, "pingpong": "old", "stream": "kept"}},
                "uds": {"64B": {"size": 64, "pingpong": "old", "stream": "kept"}}}
    fresh = {"tcp": {"1M": {"size": 1 << 20, "pingpong": "new"}}}
    merged = with_round_trips(measured, fresh)
    assert merged["tcp"]["1M"] == {"size": 1 << 20, "pingpong": "new", "stream": "kept"}
    assert merged["tcp"]["64B"] == measured["tcp"]["64B"] and merged["uds"] == measured["uds"]


def test_a_transports_round_trips_and_the_event_loops_are_timed_again_for_real():
    """measure.remeasure on a recorded run, for real (a worker, every size of tcp, the loops): the
    tcp round trips and the loops are new, every other number of the recording is kept."""
    import contextlib
    import os

    from perfprobe.engine.config import RunConfig
    from perfprobe.engine.probe import ProbeContext
    from perfprobe.host import read_host_facts
    from perfprobe.probes.ipc import measure

    raw, _ = shared.recorded("ipc_epyc2c_quick_tcp1m_spread.json", "ipc")
    main = next(p for p in raw["placements"] if p["name"] == raw["main"])
    if not set(main["cpus"]) <= os.sched_getaffinity(0):
        pytest.skip(f"the recording's CPUs {main['cpus']} are not all usable here")

    class Task:
        def advance(self, steps: float = 1) -> None:
            pass

    @contextlib.contextmanager
    def progress(name: str, total: float):
        yield Task()

    ctx = ProbeContext(RunConfig(quick=True), read_host_facts(), progress)
    again = measure.remeasure(ctx, raw, ("rtt.tcp", "event loops"))
    before, after = raw["runs"][raw["main"]], again["runs"][raw["main"]]
    assert set(after["tcp"]) == set(before["tcp"])
    for label, entry in after["tcp"].items():
        assert entry["pingpong"] != before["tcp"][label]["pingpong"] and entry["stream"] == before["tcp"][label]["stream"]
    assert after["uds"] == before["uds"] and again["runs"]["same_cpu"] == raw["runs"]["same_cpu"]
    assert again["event_loop"] != raw["event_loop"] and again["handoff"] == raw["handoff"]
