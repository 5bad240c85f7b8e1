"""ipc judgement on recorded numbers (tests/data/ipc_*.json: the 2-core KVM guest, the H200 host's
16-core Xeon) and on edits of them, and the plan."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.engine.model import Verdict
from perfprobe.probes.ipc import figures, judge, plan, rules

DATA = Path(__file__).parent / "data"
RECORDINGS = sorted(DATA.glob("ipc_kvm2c*.json"))
ALL_RECORDINGS = sorted(DATA.glob("ipc_*.json"))


def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A fresh parse of the recording each call: a test may edit it in place."""
    rec = json.loads(path.read_text())
    return rec["raw"]["ipc"], rec["host"]


def _set_rtt(raw: dict[str, Any], transport: str, us: float, placement: str | None = None) -> None:
    raw["runs"][placement or raw["main"]][transport]["64B"]["pingpong"]["rtt_us"]["median"] = us


def test_the_recordings_are_found():
    """The test below runs once per recording: an empty glob would make it one skip, passing."""
    assert {p.name for p in ALL_RECORDINGS} >= {"ipc_h200_full.json", "ipc_h200_quick.json",
                                                "ipc_kvm2c_quick.json"}, f"ipc_*.json under {DATA}"


@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.name)
def test_recorded_run_judges_with_every_named_metric(path: Path) -> None:
    raw, host = _load(path)
    result = judge(raw, host)
    for name in ("rtt_us.uds.64B", "rtt_us.uds_seqpacket.64B", "rtt_us.pipe.64B", "rtt_us.tcp.64B",
                 "rtt_us.shm_spin.64B", "rtt_us.shm_futex.64B", "rtt_us.shm_eventfd.64B", "rtt_p99_us.uds.64B",
                 "msgs_per_s.shm_futex.4K", "gbs.uds.1M", "cpu_s_per_msg.shm_spin", "crossover_bytes"):
        assert name in result.metrics, name
    # what asyncio adds, where it adds anything (the EPYC guest's loop beat the blocking compiled trip)
    adds = result.metrics["rtt_us.asyncio.64B"].value > result.metrics["rtt_us.uds.64B"].value
    assert ("asyncio_overhead_us" in result.metrics) == adds
    assert result.metrics["rtt_us.uds.64B"].unit == "µs"
    assert result.verdict is not Verdict.ERROR
    assert "two_cores" in result.findings[0].message and "smt_siblings" in result.findings[0].message


def test_placements_say_what_was_not_possible() -> None:
    raw, host = _load(RECORDINGS[0])
    text = rules.rule_placements(raw, host)[0].message
    assert "not possible here" in text and "no SMT" in text and "NUMA" in text


def test_tcp_far_slower_than_uds_warns_with_a_confirm_key() -> None:
    raw, host = _load(RECORDINGS[0])
    _set_rtt(raw, "tcp", figures.rtt_us(raw, "uds") * 10)  # type: ignore[operator]
    (finding,) = rules.rule_tcp_slow(raw, host)
    assert finding.verdict is Verdict.WARN and finding.confirm == ("tcp",)
    assert "10.0x" in finding.message


def test_healthy_tcp_is_a_pass_with_the_same_key() -> None:
    raw, host = _load(RECORDINGS[0])
    (finding,) = rules.rule_tcp_slow(raw, host)
    assert finding.verdict is Verdict.PASS and finding.confirm == ("tcp",)


def test_ring_slower_than_pipe_warns_with_cause() -> None:
    raw, host = _load(RECORDINGS[0])
    _set_rtt(raw, "shm_spin", figures.rtt_us(raw, "pipe") * 2)  # type: ignore[operator]
    raw["context"]["cpu_max"] = "50000 100000"
    (finding,) = rules.rule_ring_slow(raw, host)
    assert finding.verdict is Verdict.WARN and finding.confirm == ("ring",)
    assert "CPU quota" in finding.advice


def test_crossover_is_the_first_size_where_the_ring_stops_winning() -> None:
    raw, _ = _load(RECORDINGS[0])
    for label in ("64B", "4K", "64K", "1M"):
        raw["runs"]["two_cores"]["uds"][label]["pingpong"]["rtt_us"]["median"] = 10.0
        raw["runs"]["two_cores"]["shm_spin"][label]["pingpong"]["rtt_us"]["median"] = 2.0
    assert figures.crossover_bytes(raw) is None
    raw["runs"]["two_cores"]["shm_spin"]["64K"]["pingpong"]["rtt_us"]["median"] = 9.5
    assert figures.crossover_bytes(raw) == 64 << 10


def test_event_loop_dominating_advises_batching() -> None:
    raw, host = _load(RECORDINGS[0])
    raw["event_loop"]["asyncio"]["rtt_us"]["median"] = figures.rtt_us(raw, "uds") * 5  # type: ignore[operator]
    finding = rules.rule_event_loop(raw, host)[0]
    assert finding.verdict is Verdict.PASS and "batch messages" in finding.advice


def test_cross_node_penalty_is_a_pass_with_binding_advice() -> None:
    raw, host = _load(RECORDINGS[0])
    raw["placements"][3] = {"name": "cross_node", "cpus": [0, 8], "why": "two nodes"}
    raw["runs"]["cross_node"] = copy.deepcopy(raw["runs"]["same_cpu"])
    raw["runs"]["cross_node"]["uds"]["64B"]["pingpong"]["rtt_us"]["median"] = figures.rtt_us(raw, "uds") * 2  # type: ignore[operator]
    (finding,) = rules.rule_cross_node(raw, host)
    assert finding.verdict is Verdict.PASS and "2.00x" in finding.message and "bind" in finding.advice


def _facts(cores: list[list[int]], nodes: list[list[int]]) -> dict[str, Any]:
    cpus = sorted(c for core in cores for c in core)
    return {"cpus": {"usable": cpus, "cores": cores},
            "numa": {"nodes": [{"id": i, "cpus": n} for i, n in enumerate(nodes)]}}


def test_placements_on_the_h200_host_facts() -> None:
    host = json.loads((DATA / "host_h200_facts.json").read_text())
    found = {p.name: p for p in plan.placements(host, list(range(16)))}
    assert found["two_cores"].cpus == (0, 1) and found["same_cpu"].cpus == (0, 0)
    assert found["smt_siblings"].cpus is None and found["cross_node"].cpus is None
    assert plan.main_placement(list(found.values())).name == "two_cores"  # type: ignore[union-attr]


def test_placements_with_smt_and_two_nodes() -> None:
    host = _facts([[0, 4], [1, 5], [2, 6], [3, 7]], [[0, 1, 4, 5], [2, 3, 6, 7]])
    found = {p.name: p for p in plan.placements(host, list(range(8)))}
    assert found["smt_siblings"].cpus == (0, 4)
    assert found["two_cores"].cpus == (0, 1)
    assert found["cross_node"].cpus == (0, 2)
    bound = {p.name: p for p in plan.placements(host, list(range(8)), bound_node=1)}
    assert bound["cross_node"].cpus == (2, 0)


def test_one_cpu_measures_the_same_cpu_without_spinning() -> None:
    found = plan.placements(_facts([[0]], [[0]]), [0])
    main = plan.main_placement(found)
    assert main is not None and main.name == "same_cpu"
    assert "shm_spin" not in plan.transports_for(main.name)
    assert next(p for p in found if p.name == "two_cores").why == "one usable CPU"


@given(st.integers(min_value=0, max_value=30))
def test_size_labels(shift: int) -> None:
    label = plan.size_label(1 << shift)
    assert label.endswith(("B", "K", "M"))
    number = int(label[:-1])
    assert number * {"B": 1, "K": 1 << 10, "M": 1 << 20}[label[-1]] == 1 << shift


def test_ring_slots_hold_the_message_and_its_sequence_word_in_whole_lines() -> None:
    """Up to 56 B a message rides in one line with its sequence word, 64 B takes two (bench/ipc_ref.c
    lays the ring out the same way); the slots fill each direction's 4 MiB, 2 to 1024 of them."""
    assert [plan.slot_stride(s) for s in (8, 56, 57, 64, 4 << 10)] == [64, 64, 128, 128, (4 << 10) + 64]
    assert [plan.ring_layout(s)[0] for s in (64, 4 << 10, 64 << 10, 1 << 20)] == [1024, 1008, 63, 3]
    for shift in range(6, 21):
        slots, stride = plan.ring_layout(1 << shift)
        assert stride % 64 == 0 and stride >= (1 << shift) + 8 and 2 <= slots <= 1024
        assert slots * stride <= plan.RING_BYTES


def test_message_counts_stay_in_bounds() -> None:
    for each_us in (None, 0.01, 5.0, 1e6):
        count = plan.messages(64, plan.QUICK, each_us)
        assert plan.QUICK.min_messages <= count <= plan.QUICK.max_messages


def test_h200_recording_judges_uvloop_and_a_tenfold_ring() -> None:
    raw, host = _load(DATA / "ipc_h200_full.json")
    result = judge(raw, host)
    assert result.verdict is Verdict.PASS
    assert "uvloop_overhead_us" in result.metrics and result.metrics["uvloop_overhead_us"].value > 0  # type: ignore[operator]
    speedup = result.metrics["ring_speedup.64B"].value
    assert isinstance(speedup, float) and speedup > 5
    assert len(figures.sizes(raw)) == 8 and "rtt_us.shm_spin.256K" in result.metrics


def test_ring_against_pipe_is_not_judged_on_one_cpu() -> None:
    raw, host = _load(RECORDINGS[0])
    raw["main"] = "same_cpu"
    _set_rtt(raw, "shm_futex", figures.rtt_us(raw, "pipe") * 3)  # type: ignore[operator]
    assert rules.rule_ring_slow(raw, host) == []
    assert "slower than a Unix socket" in rules.rule_ring_vs_socket(raw, host)[0].message


@pytest.mark.parametrize("quota, noted", [(None, False), (0.2, True), (1.5, True), (2.0, False)])
def test_a_cpu_quota_below_two_cpus_is_named(quota: float | None, noted: bool) -> None:
    """Two spinning ends under a quota of fewer than two CPUs: said, as a note."""
    raw, host = _load(DATA / "ipc_kvm2c_quick.json")
    host["cgroup"] = {} if quota is None else {"cpu_quota_cpus": quota}
    said = [f for f in judge(raw, host).findings if "CPU quota" in f.message]
    assert bool(said) is noted and all(f.verdict is Verdict.PASS for f in said)


def test_a_ring_timed_several_round_trips_a_sample_has_no_p99() -> None:
    """The spinning ring's samples are means of 16 round trips: their tail is no round trip's tail,
    so no p99 is reported for it; the sockets, timed one round trip a sample, keep theirs."""
    raw, host = _load(DATA / "ipc_kvm2c_quick_slot.json")
    assert raw["runs"][raw["main"]]["shm_spin"]["64B"]["pingpong"]["batch"] > 1
    metrics = judge(raw, host).metrics
    assert "rtt_p99_us.shm_spin.64B" not in metrics and "rtt_us.shm_spin.64B" in metrics
    assert metrics["rtt_p99_us.uds.64B"].value is not None


def test_an_event_loop_no_slower_than_the_compiled_socket_adds_no_measurable_time() -> None:
    # the 2-vCPU Xeon guest, 2026-12-02: asyncio 62.6 µs against a compiled uds 74.6 (a negative
    # overhead in µs was a time no measurement can be, and compare refused the report)
    from perfprobe.probes.ipc import tables

    raw, host = _load(RECORDINGS[0])
    raw["event_loop"]["asyncio"]["rtt_us"]["median"] = figures.rtt_us(raw, "uds") * 0.84  # type: ignore[operator]
    finding = rules.rule_event_loop(raw, host)[0]
    assert finding.verdict is Verdict.PASS and "no measurable time" in finding.message
    assert "asyncio_overhead_us" not in tables.metrics(raw, host) and "rtt_us.asyncio.64B" in tables.metrics(raw, host)
    (loops,) = [t for t in tables.tables(raw) if t.title.startswith("64 B round trip through a Python event loop")]
    assert [row[2] for row in loops.rows if row[0] == "asyncio"] == [None]  # no negative "added µs" cell
