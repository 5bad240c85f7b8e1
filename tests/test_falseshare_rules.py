"""falseshare judgement on numbers: each rule on built raw data, and judge() on numbers recorded on
real hosts (tests/data/falseshare_*.json) — no kernel runs here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfprobe import load_schema
from perfprobe.engine.model import Verdict
from perfprobe.probes.falseshare import figures, judge, rules

DATA = Path(__file__).parent / "data"
RECORDINGS = sorted(DATA.glob("falseshare_*.json"))
HOST_64 = {"caches": [{"level": 1, "type": "Data", "line_bytes": 64}]}
SPACINGS = [8, 16, 32, 64, 128, 256]
FALSE_SHARING = [30.0, 30.0, 30.0, 7.5, 7.4, 7.3]


def stat(value: float, repeats: int = 5) -> dict:
    return {"median": value, "min": value * 0.9, "max": value * 1.1, "iqr": 0.0, "repeats": repeats}


def make_raw(atomic=FALSE_SHARING, plain=(0.42,) * 6, single=(7.0, 0.4), true=(35.0, 0.5),
             smt=(), disturbed=0, plain_ok=True) -> dict:
    """A raw dict in measure()'s shape: 2 threads on CPUs 0 and 1."""
    def c(kind, threads, spacing, ns):
        return {"kind": kind, "threads": threads, "cpus": list(range(threads)), "spacing_bytes": spacing,
                "iterations": 1000, "ns_per_update": stat(ns), "disturbed_runs": disturbed}
    cases = [c(k, 2, s, v) for k, costs in (("atomic", atomic), ("plain", plain)) for s, v in zip(SPACINGS, costs)]
    cases += [c("atomic", 2, 0, true[0]), c("plain", 2, 0, true[1])]
    cases += [c("atomic", 1, 256, single[0]), c("plain", 1, 256, single[1])]
    return {"method": "test", "threads": 2, "thread_counts": [2], "usable_cpus": [0, 1],
            "placement": {"2": {"cpus": [0, 1], "smt_shared": list(smt)}}, "spacings_bytes": SPACINGS,
            "cases": cases, "plain_check": {"touches_memory": plain_ok, "how": "test"},
            "pingpong": {"cpus": [0, 1], "sampled": False, "usable": 2,
                         "pairs": [{"a": 0, "b": 1, "rounds": 10, "one_way_ns": stat(80.0)}]},
            "repeats": 5, "quick": False}


def verdicts(assessment) -> list[Verdict]:
    return [f.verdict for f in assessment.findings]


def messages(assessment) -> str:
    return " | ".join(f.message for f in assessment.findings)


@pytest.mark.parametrize("costs, distance", [
    ({8: 30, 16: 30, 32: 30, 64: 10, 128: 10.5, 256: 10}, 64),
    ({8: 30, 16: 30, 32: 30, 64: 12, 128: 10.2, 256: 10}, 128),   # 64 B is 20% over: not yet
    ({8: 10, 16: 10, 32: 10, 64: 10, 128: 10, 256: 10}, 8),
    ({8: 30, 16: 9, 32: 30, 64: 10, 128: 10, 256: 10}, 64),       # a dip below must not end it early
    ({8: 30, 16: 30, 32: 30, 64: 30, 128: 30, 256: 10}, 256),
])
def test_distance_is_where_every_wider_spacing_is_within_15_percent(costs, distance):
    assert figures.destructive_distance(costs) == distance


@pytest.mark.parametrize("distance, line, pad", [(64, 64, 64), (128, 64, 128), (8, 64, 64),
                                                  (96, None, 128), (8, None, 8), (256, 128, 256)])
def test_padding_covers_distance_and_line_as_a_power_of_two(distance, line, pad):
    assert figures.padding(distance, line) == pad


def test_line_size_comes_from_the_l1_data_cache():
    host = {"caches": [{"level": 2, "type": "Unified", "line_bytes": 128},
                       {"level": 1, "type": "Instruction", "line_bytes": 32},
                       {"level": 1, "type": "Data", "line_bytes": 64}]}
    assert figures.line_bytes(host) == 64
    assert figures.line_bytes({"caches": []}) is None and figures.line_bytes({}) is None


def test_a_healthy_host_passes_with_the_figures():
    result = judge(make_raw(), HOST_64)
    assert result.verdict is Verdict.PASS, messages(result)
    m = result.metrics
    assert m["destructive_distance_bytes"].value == 64 and m["recommended_padding_bytes"].value == 64
    assert m["slowdown.atomic.8B"].value == pytest.approx(30 / 7.3, abs=1e-3)
    assert m["core_to_core_ns.0.1"].value == 80.0 and m["threads"].value == 2
    for kind in ("atomic", "plain"):
        for s in SPACINGS:
            assert f"ns_per_update.{kind}.{s}B" in m and f"slowdown.{kind}.{s}B" in m
    assert "alignas(64)" in result.findings[1].advice
    assert result.findings[0].message == "placement: 2 threads on CPUs 0, 1 (distinct physical cores)"
    assert result.key_figure.startswith("pad 64 B")


def test_distance_beyond_the_line_warns_to_pad_further():
    result = judge(make_raw(atomic=[30, 30, 30, 25, 7.4, 7.3]), HOST_64)
    assert result.verdict is Verdict.WARN
    assert "reaches 128 B, beyond the 64-byte line" in messages(result)
    assert result.metrics["recommended_padding_bytes"].value == 128


def test_distance_at_the_widest_spacing_asks_for_a_wider_sweep():
    result = judge(make_raw(atomic=[30, 30, 30, 30, 30, 7.3]), HOST_64)
    assert "--max-spacing 512" in messages(result)


def test_unknown_line_size_still_gives_padding():
    result = judge(make_raw(), {"caches": []})
    assert result.metrics["coherency_line_bytes"].value is None
    assert result.metrics["recommended_padding_bytes"].value == 64
    assert "not reported" in messages(result)


def test_padded_counters_on_smt_siblings_do_not_scale_and_that_is_a_note():
    result = judge(make_raw(atomic=[30, 30, 30, 14, 14, 14], single=(7.0, 0.4), smt=[[0, 1]]), HOST_64)
    assert result.verdict is Verdict.PASS
    assert "do not scale" in messages(result) and "SMT siblings share a core here ([[0, 1]])" in messages(result)
    assert result.metrics["scaling_efficiency.atomic"].value == pytest.approx(0.5)


def test_padded_counters_that_do_not_scale_on_bare_metal_distinct_cores_warn():
    result = judge(make_raw(atomic=[30, 30, 30, 14, 14, 14], single=(7.0, 0.4)), HOST_64)
    warned = [f for f in result.findings if f.verdict is Verdict.WARN]
    assert len(warned) == 1 and "do not scale" in warned[0].message and warned[0].confirm == ("scaling",)


def test_in_a_vm_padded_counters_that_do_not_scale_are_a_note():
    """Issue 12: the H200 guest's bench run said 45%, 73%, 69%, 79% (4 of 5 runs, confirmed each
    time): true of a VM's vCPUs, not a fault of the host (synthetic-from-real recording)."""
    recording = json.loads((DATA / "falseshare_h200_quick_45pct_synthetic.json").read_text())
    result = judge(recording["raw"]["falseshare"], recording["host"])
    assert result.verdict is Verdict.PASS, messages(result)
    assert "at 45% of one thread's speed (fastest repeats): this is a VM (virtio devices)" in messages(result)
    raw = make_raw(atomic=[30, 30, 30, 14, 14, 14], single=(7.0, 0.4))
    raw["hypervisor"] = True
    assert "this is a VM (the CPU's hypervisor flag)" in messages(judge(raw, HOST_64))


def test_no_contention_at_all_warns_that_the_distance_means_nothing():
    result = judge(make_raw(atomic=[8, 8, 8, 7.5, 7.4, 7.3], true=(8.0, 1.0)), HOST_64)
    assert "no false sharing measured" in messages(result)


def test_a_plain_loop_that_skips_memory_warns():
    assert "unreliable" in messages(judge(make_raw(plain_ok=False), HOST_64))


def test_a_busy_host_is_named_and_its_timing_warns_held_back():
    result = judge(make_raw(atomic=[30, 30, 30, 25, 7.4, 7.3], disturbed=2), HOST_64)
    assert result.verdict is Verdict.PASS
    assert "other work took these CPUs during 40%" in messages(result)
    assert "held back (other work took these CPUs during 40% of the timed runs): false sharing reaches 128 B" \
        in messages(result)
    assert result.metrics["disturbed_runs_fraction"].value == pytest.approx(0.4)


def test_tables_per_kind_and_a_symmetric_core_matrix():
    result = judge(make_raw(), HOST_64)
    atomic, plain, cores = result.tables
    assert len(atomic.rows) == len(SPACINGS) + 2 and atomic.rows[-2][0] == "one shared counter"
    assert cores.heat == "row" and cores.columns == ("from \\ to", "0", "1")
    assert cores.rows == (("CPU 0", None, 80.0), ("CPU 1", 80.0, None))


def test_the_recordings_are_found():
    """The test below runs once per recording: an empty glob would make it one skip, passing."""
    assert {p.name for p in RECORDINGS} >= {
        "falseshare_h200_quick_45pct_synthetic.json", "falseshare_h200_quick_r1.json", "falseshare_h200_quick_r2.json",
        "falseshare_kvm_2cpu.json", "falseshare_kvm_2cpu_busy.json", "falseshare_zen4_busy_synthetic.json",
    }, f"falseshare_*.json under {DATA}"


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_recorded_hosts_are_judged_with_every_metric(path):
    recording = json.loads(path.read_text())
    raw, host = recording["raw"]["falseshare"], recording["host"]
    result = judge(raw, host)
    for kind in ("atomic", "plain"):
        for s in raw["spacings_bytes"]:
            assert f"ns_per_update.{kind}.{s}B" in result.metrics
    distance = result.metrics["destructive_distance_bytes"].value
    assert distance in raw["spacings_bytes"]
    assert result.metrics["recommended_padding_bytes"].value >= max(distance, figures.line_bytes(host) or 0)
    pairs = raw["pingpong"]["pairs"]
    assert all(f"core_to_core_ns.{p['a']}.{p['b']}" in result.metrics for p in pairs)


def test_busy_kvm_recording_gives_64_bytes_and_says_the_host_was_busy():
    recording = json.loads((DATA / "falseshare_kvm_2cpu_busy.json").read_text())
    result = judge(recording["raw"]["falseshare"], recording["host"])
    m = result.metrics
    assert m["destructive_distance_bytes"].value == 64 and m["recommended_padding_bytes"].value == 64
    assert m["slowdown.atomic.8B"].value >= 2  # the done-when: 8 B costs at least twice 256 B
    assert result.verdict is Verdict.PASS and "other work took these CPUs during 23%" in messages(result)


@pytest.mark.parametrize("name", ["falseshare_h200_quick_r1", "falseshare_h200_quick_r2"])
def test_the_h200_runs_that_warned_now_pass_on_their_fastest_repeats(name):
    """Issue 12, real: on the H200's 16-vCPU guest r1 warned 'padded counters do not scale' (45%)
    and r2 'false sharing reaches 256 B' from bimodal medians; the fastest repeats say 64 B, ~85%."""
    recording = json.loads((DATA / f"{name}.json").read_text())
    result = judge(recording["raw"]["falseshare"], recording["host"])
    assert result.verdict is Verdict.PASS, messages(result)
    assert result.metrics["destructive_distance_bytes"].value == 64
    assert result.metrics["scaling_efficiency.atomic"].value >= 0.8


def test_the_busy_zen4_run_holds_its_timing_warns_back_and_names_the_load():
    recording = json.loads((DATA / "falseshare_zen4_busy_synthetic.json").read_text())
    result = judge(recording["raw"]["falseshare"], recording["host"])
    assert result.verdict is Verdict.PASS
    assert "held back (other work took these CPUs during 36% of the timed runs): false sharing reaches 256 B" \
        in messages(result)


def test_a_warn_carries_the_keys_it_is_confirmed_on():
    warned = [f for f in judge(make_raw(atomic=[30, 30, 30, 25, 7.4, 7.3]), HOST_64).findings
              if f.verdict is Verdict.WARN]
    assert [(f.confirm, f.figure) for f in warned] == [(("atomic", "distance"), 128)]


def test_replay_through_the_cli_exits_0_on_a_busy_host(capsys):
    from perfprobe import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["falseshare", "--replay", str(DATA / "falseshare_kvm_2cpu_busy.json"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0 and report["results"][0]["verdict"] == "pass"
    assert report["results"][0]["metrics"]["destructive_distance_bytes"]["value"] == 64
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(report, load_schema())


def test_quiet_kvm_recording_passes_with_64_byte_padding():
    recording = json.loads((DATA / "falseshare_kvm_2cpu.json").read_text())
    result = judge(recording["raw"]["falseshare"], recording["host"])
    m = result.metrics
    assert result.verdict is Verdict.PASS, messages(result)
    assert m["destructive_distance_bytes"].value == 64 and m["recommended_padding_bytes"].value == 64
    assert m["coherency_line_bytes"].value == 64
    assert m["slowdown.atomic.8B"].value == pytest.approx(4.17, abs=0.01)
    assert m["scaling_efficiency.atomic"].value >= 0.8


def test_many_threads_give_the_metrics_and_two_thread_columns_beside_them():
    raw = make_raw()
    two = [dict(c) for c in raw["cases"] if c["threads"] == 2 and c["spacing_bytes"]]
    four = [{**c, "threads": 4, "cpus": [0, 1, 2, 3], "ns_per_update": stat(c["ns_per_update"]["median"] * 2)}
            for c in raw["cases"] if c["threads"] == 2]
    raw.update(threads=4, thread_counts=[2, 4], cases=two + four + [c for c in raw["cases"] if c["threads"] == 1])
    raw["placement"]["4"] = {"cpus": [0, 1, 2, 3], "smt_shared": [[0, 2]]}
    result = judge(raw, HOST_64)
    assert result.metrics["threads"].value == 4
    assert result.metrics["ns_per_update.atomic.8B"].value == pytest.approx(60.0)
    assert result.tables[0].columns[1:4] == ("ns/update (2 thr)", "min-max (2 thr)", "slowdown (2 thr)")
    assert len(result.tables[0].columns) == 7
    assert "do not scale" in messages(result) and "SMT siblings share a core here ([[0, 2]])" in messages(result)


def test_rules_run_in_their_documented_order():
    assert [rule.__name__ for rule in rules.RULES] == [
        "rule_placement", "rule_distance", "rule_contention", "rule_scaling", "rule_plain_check", "rule_busy",
        "rule_cpu_quota"]
    found = rules.findings(make_raw(atomic=[30, 30, 30, 25, 7.4, 7.3], disturbed=2), HOST_64)
    assert [f.message.split(":")[0] for f in found][:1] == ["placement"]
    assert "beyond the 64-byte line" in found[1].message and "other work" in found[-1].message


@pytest.mark.parametrize("quota, noted", [(None, False), (0.2, True), (1.5, True), (2.0, False), (8.0, False)])
def test_a_cpu_quota_below_the_threads_is_named(quota, noted):
    """2 threads under a quota of fewer CPUs: the quota bounds the figures, and the report says so."""
    host = {**HOST_64, "cgroup": {} if quota is None else {"cpu_quota_cpus": quota}}
    result = judge(make_raw(), host)
    said = [f for f in result.findings if "CPU quota" in f.message]
    assert bool(said) is noted
    if noted:
        assert said[0].verdict is Verdict.PASS and f"{quota:g} CPUs" in said[0].message
        assert "2 threads" in said[0].message
