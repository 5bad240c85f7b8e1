"""Judging the cache probe: each rule on numbers recorded on a real host or built (labelled
synthetic) from typical figures; silent on a healthy host, loud where one thing is off. Also the
replay of a recorded run through the real CLI, valid against the report schema, and figures that
cannot be right (issue 14 item 12) left out with a note, never shown."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from perfprobe import cli, load_schema
from perfprobe.engine.model import Verdict
from perfprobe.probes.cache import judge
from perfprobe.probes.cache.figures import implausible_all, read_figures
from perfprobe.probes.cache.measure import once_more_if_implausible
from perfprobe.probes.cache.rules import RULES

DATA = Path(__file__).parent / "data"
SCHEMA = load_schema()
REQUIRED = ["latency_ns.L1", "latency_ns.L2", "latency_ns.L3", "latency_ns.DRAM", "size_bytes.L1",
            "size_bytes.L2", "size_bytes.L3", "read_gbs.L1.1t", "read_gbs.L1.all", "read_gbs.DRAM.1t",
            "read_gbs.DRAM.all", "triad_gbs.DRAM.1t", "triad_gbs.DRAM.all", "line_bytes",
            "seq_over_random"]
# The full KVM recording was taken while another job held the second vCPU: its all-thread L1
# figures (read 0.58 and triad 1.2 GB/s beside 76 and 158 for one thread) and L2 triad (1.9
# beside 27) cannot be right, and are left out; the quick one's L2 read (3.3 beside 59) likewise.
LEFT_OUT = {"cache_kvm2c_full.json": {"read_gbs.L1.all", "triad_gbs.L1.all", "triad_gbs.L2.all"},
            "cache_kvm2c_quick.json": {"read_gbs.L2.all"}, "cache_synthetic_healthy.json": set()}
# Both KVM recordings warn on DRAM latency (and the quick one on all threads below one). Some of
# their L2 figures break the cache's relations and are marked unstable, but those warns rest on
# DRAM figures (Probe.rests_on), which are not: they stand, as before issue 25.
EXIT = {"cache_kvm2c_full.json": 1, "cache_kvm2c_quick.json": 1, "cache_synthetic_healthy.json": 0}
HELD_BACK: dict[str, list[str]] = {"cache_kvm2c_full.json": [], "cache_kvm2c_quick.json": [],
                                   "cache_synthetic_healthy.json": []}


def _load(name: str) -> tuple[dict, dict]:
    data = json.loads((DATA / name).read_text())
    if name.startswith("cache_synthetic"):  # a bare-metal server: its facts borrowed the KVM guest's virtio devices
        data["host"].pop("pci_devices", None)
    return data["raw"]["cache"], data["host"]


def _warnings(name: str) -> list[str]:
    raw, host = _load(name)
    return [f.message for f in judge(raw, host).findings if f.verdict is Verdict.WARN]


def test_healthy_server_passes_with_advice() -> None:
    raw, host = _load("cache_synthetic_healthy.json")
    assessment = judge(raw, host)
    assert assessment.verdict is Verdict.PASS
    assert all(f.advice for f in assessment.findings)
    assert set(REQUIRED) <= set(assessment.metrics)
    assert assessment.metrics["line_bytes"].value == 64
    assert assessment.metrics["fetch_bytes.DRAM"].value == 128


@pytest.mark.parametrize("variant, expected", [
    ("small_l3", "L3 ends at about"),
    ("remote_dram", "DRAM random latency"),
    ("line_128", "Cache line measured 128 B, reported 64 B"),
    ("no_prefetch", "prefetchers look disabled"),
    ("memory_cap", "capped at 64 MiB"),
])
def test_each_fault_raises_its_own_warning_only(variant: str, expected: str) -> None:
    warnings = _warnings(f"cache_synthetic_{variant}.json")
    assert len(warnings) == 1 and expected in warnings[0]


def test_capped_but_past_the_llc_is_said_not_warned() -> None:
    raw, host = _load("cache_synthetic_healthy.json")
    raw["plan"].update(limited_by="memory", wanted_bytes=raw["plan"]["max_bytes"] * 2)
    findings = judge(raw, host).findings
    capped = [f for f in findings if "capped" in f.message]
    assert len(capped) == 1 and capped[0].verdict is Verdict.PASS


def test_without_thp_the_pages_comparison_is_a_note() -> None:
    raw, host = _load("cache_synthetic_healthy.json")
    raw["pages"] = {"size_bytes": raw["pages"]["size_bytes"], "skipped": "transparent huge pages are never"}
    assessment = judge(raw, host)
    assert assessment.verdict is Verdict.PASS and "latency_ns.DRAM_2M_pages" not in assessment.metrics
    assert any("Huge pages not compared" in f.message for f in assessment.findings)


def test_recorded_kvm_run_names_its_small_l3_share_as_a_vms_share() -> None:
    """Recorded on the 2-vCPU KVM guest: its L3 share is far below the 300 MiB reported, which is
    true of every shared VM (issue 12): a pass with the figure and the advice, not a warn."""
    raw, host = _load("cache_kvm2c_full.json")
    assessment = judge(raw, host)
    l3 = next(f for f in assessment.findings if f.message.startswith("L3 ends at about"))
    assert l3.verdict is Verdict.PASS and "a VM's share (virtio devices), true of every shared VM" in l3.message
    raw["hypervisor"] = True
    assert "a VM's share (the CPU's hypervisor flag)" in " ".join(f.message for f in judge(raw, host).findings)
    assert set(REQUIRED) - LEFT_OUT["cache_kvm2c_full.json"] <= set(assessment.metrics)
    assert assessment.metrics["line_bytes"].value == 64
    levels = {lv["name"]: lv for lv in assessment.facts["levels"]}
    assert 24 << 10 <= levels["L1"]["end_bytes"] <= 96 << 10


def test_curve_and_tables_carry_the_whole_measurement() -> None:
    raw, host = _load("cache_kvm2c_full.json")
    assessment = judge(raw, host)
    curve = assessment.curves[0]
    assert len(curve.points) == len(raw["curve"]["sizes_bytes"])
    assert [label.split()[0] for _, label in curve.marks] == ["L1", "L2", "L3"]
    assert len(assessment.facts["curve"]) == len(curve.points)
    assert assessment.tables[0].rows[-1][0] == "DRAM"


@pytest.mark.parametrize("recording", ["cache_kvm2c_full.json", "cache_kvm2c_quick.json",
                                       "cache_synthetic_healthy.json"])
def test_replay_through_the_cli_validates_against_the_schema(recording: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["cache", "--json", "--replay", str(DATA / recording)])
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, SCHEMA)
    result = report["results"][0]
    assert exit_info.value.code == EXIT[recording] and result["probe"] == "cache"
    assert result["verdict"] == ("warn" if EXIT[recording] else "pass")
    assert set(REQUIRED) - LEFT_OUT[recording] <= set(result["metrics"])
    assert not LEFT_OUT[recording] & set(result["metrics"])
    held = [f["message"] for f in result["findings"] if f["message"].startswith("held back (unstable figures")]
    assert [m.partition("): ")[2][:len(w)] for m, w in zip(held, HELD_BACK[recording])] == HELD_BACK[recording]
    assert len(held) == len(HELD_BACK[recording])


@pytest.mark.parametrize("busy, threads, warned", [
    (None, 2, False), (0.1, 2, False), (1.1, 2, True), (2.0, 128, False), (20.0, 128, True)])
def test_background_load_is_said_when_it_matters(busy, threads, warned) -> None:
    raw, host = _load("cache_synthetic_healthy.json")
    raw["background_cpus"] = busy
    raw["plan"]["threads"] = threads
    found = [f for f in judge(raw, host).findings if "Other processes" in f.message]
    assert bool(found) is warned and all(f.verdict is Verdict.PASS for f in found)  # named, a note


def test_background_meter_reads_proc_stat(tmp_path) -> None:
    from perfprobe.probes.cache.background import BackgroundMeter, _busy_seconds

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 1000 5 0 0 0 0 0\ncpu0 50 0 25 500 2 0 0 0 0 0\n")
    assert _busy_seconds(stat) == pytest.approx(150 / __import__("os").sysconf("SC_CLK_TCK"))
    meter = BackgroundMeter(stat)
    assert meter.share() == 0.0  # nothing moved: nobody else was busy
    assert BackgroundMeter(tmp_path / "missing").share() is None


def test_an_all_thread_figure_far_below_one_thread_is_left_out_with_a_note() -> None:
    """Issue 14 item 12, on the recorded KVM run: L1 "read GB/s all 0.58" beside 76 for one thread."""
    raw, host = _load("cache_kvm2c_full.json")
    assessment = judge(raw, host)
    assert "read_gbs.L1.all" not in assessment.metrics and "read_gbs.L1.1t" in assessment.metrics
    row = next(r for r in assessment.tables[0].rows if r[0] == "L1")
    assert row[4] == 76.2 and row[5] is None and row[7] is None  # read 1t shown, both "all" left out
    notes = [f for f in assessment.findings if f.message.startswith("Left out")]
    assert len(notes) == 1 and notes[0].verdict is Verdict.PASS and "0.58 GB/s" in notes[0].message
    assert "re-measured" not in notes[0].message  # recorded before measure() re-measured
    assert {lo["metric"] for lo in assessment.facts["left_out"]} == LEFT_OUT["cache_kvm2c_full.json"]


def test_figures_that_stand_are_never_left_out() -> None:
    raw, host = _load("cache_synthetic_healthy.json")
    assessment = judge(raw, host)
    assert not any(f.message.startswith("Left out") for f in assessment.findings)
    assert "left_out" not in assessment.facts


@pytest.mark.parametrize("one, many, implausible", [
    (207.0, 0.2, True), (76.2, 0.58, True), (100.0, 9.9, True), (100.0, 10.0, False),
    (14.2, 7.3, False), (0.0, 0.0, False)])
def test_implausible_is_below_a_tenth_of_one_thread(one: float, many: float, implausible: bool) -> None:
    assert implausible_all(one, many) is implausible


def test_a_re_measured_figure_that_stands_is_shown_and_one_that_does_not_says_so() -> None:
    raw, host = _load("cache_kvm2c_full.json")
    l1 = raw["bandwidth"]["L1"]
    l1["read_gbs"]["first_all"] = l1["read_gbs"]["all"]
    l1["read_gbs"]["all"] = {**l1["read_gbs"]["all"], "median": 150.0}  # the second run stood
    l1["triad_gbs"]["first_all"] = l1["triad_gbs"]["all"]                 # the second run did not
    assessment = judge(raw, host)
    assert assessment.metrics["read_gbs.L1.all"].value == 150.0
    note = next(f.message for f in assessment.findings if f.message.startswith("Left out"))
    assert "L1 triad all threads 1.2 GB/s beside one thread's 158 (re-measured once, still so)" in note
    assert "L1 read" not in note


def test_measure_runs_an_implausible_figure_once_more_and_only_once() -> None:
    runs = iter([{"1t": {"median": 207.0}, "all": {"median": 0.2}},
                 {"1t": {"median": 205.0}, "all": {"median": 380.0}},
                 {"1t": {"median": 1.0}, "all": {"median": 1.0}}])
    kept = once_more_if_implausible(lambda: next(runs))
    assert kept["all"]["median"] == 380.0 and kept["first_all"] == {"median": 0.2}
    bad = iter([{"1t": {"median": 207.0}, "all": {"median": 0.2}}] * 3)
    twice = once_more_if_implausible(lambda: next(bad))
    assert twice["first_all"]["median"] == 0.2 and twice["all"]["median"] == 0.2
    good = iter([{"1t": {"median": 10.0}, "all": {"median": 19.0}}])
    assert "first_all" not in once_more_if_implausible(lambda: next(good))


def test_rules_are_named_and_ordered() -> None:
    assert [r.__name__ for r in RULES][:2] == ["rule_memory_cap", "rule_level_sizes"]
    assert all(r.__name__.startswith("rule_") for r in RULES)
    raw, host = _load("cache_synthetic_healthy.json")
    fig = read_figures(raw, host)
    assert [f for r in RULES for f in r(fig, host)] == list(judge(raw, host).findings)


def _line_warns(raw: dict, host: dict) -> list:
    return [f for f in judge(raw, host).findings if f.confirm == ("line",)]


@pytest.mark.parametrize("name", ["cache_zen4_quick_busy_512.json", "cache_zen4_quick_line_128_synthetic.json",
                                  "cache_h200_quick_r1.json"])
def test_the_noisy_line_sweeps_of_issue_12_read_64_bytes(name: str) -> None:
    """Zen 4 guest (real: the old rule said 512 B; synthetic-from-real: 128 B) and the H200's Xeon."""
    from perfprobe.probes.cache.curve import _first_lasting

    raw, host = _load(name)
    assessment = judge(raw, host)
    assert assessment.metrics["line_bytes"].value == 64
    (line,) = _line_warns(raw, host)
    assert line.verdict is Verdict.PASS and line.message.startswith("Cache line 64 B, as reported")
    cached = [p["min"] for p in raw["line"]["cached_ns"]]
    old = _first_lasting(raw["line"]["offsets_bytes"], cached, min(cached[:2]) * 1.25)
    assert old == {"cache_zen4_quick_busy_512.json": 512, "cache_zen4_quick_line_128_synthetic.json": 128,
                   "cache_h200_quick_r1.json": 64}[name]


def test_a_line_warn_waits_for_the_false_sharing_edge_and_disagreement_is_a_note() -> None:
    raw, host = _load("cache_synthetic_line_128.json")
    (first,) = _line_warns(raw, host)
    assert first.verdict is Verdict.WARN and first.figure == 128  # to be confirmed on a re-measurement
    raw["coherency"] = {"edge_bytes": 64}
    (second,) = _line_warns(raw, host)
    assert second.verdict is Verdict.PASS and "false-sharing edge 64 B" in second.message
    raw["coherency"] = {"edge_bytes": 128}
    (agreed,) = _line_warns(raw, host)
    assert agreed.verdict is Verdict.WARN and "(false-sharing edge 128 B)" in agreed.message


def test_a_line_wider_than_what_a_dram_miss_brings_is_a_note() -> None:
    raw, host = _load("cache_synthetic_line_128.json")
    for point, ns in zip(raw["line"]["dram_ns"], [96, 96, 96, 190, 190, 190, 190]):
        point["min"] = point["median"] = ns  # the second line misses from 64 B: a miss brings 64 B
    assert figures_of(raw, host)["fetch_bytes"] == 64
    (line,) = _line_warns(raw, host)
    assert line.verdict is Verdict.PASS and "a miss never brings less than a line" in line.message


def figures_of(raw: dict, host: dict) -> dict:
    return dict(read_figures(raw, host).line)


def test_under_load_the_timing_warns_and_level_shares_are_held_back() -> None:
    raw, host = _load("cache_synthetic_no_prefetch.json")
    raw["background_cpus"] = 20.0
    found = judge(raw, host).findings
    assert not [f for f in found if f.verdict is Verdict.WARN]
    assert any(f.message.startswith("held back (other processes kept 20.0 CPUs busy): Over") for f in found)
    raw, host = _load("cache_synthetic_small_l3.json")
    assert any("L3 ends at" in f.message and f.verdict is Verdict.WARN for f in judge(raw, host).findings)
    raw["background_cpus"] = 20.0
    found = judge(raw, host).findings
    assert not [f for f in found if f.verdict is Verdict.WARN]
    assert any(f.message.startswith("held back (other processes kept 20.0 CPUs busy): L3 ends at") for f in found)


@pytest.mark.parametrize("quota, noted", [(None, False), (0.2, True), (64.0, False)])
def test_a_cpu_quota_below_the_threads_is_named(quota: float | None, noted: bool) -> None:
    """The all-thread runs under a quota of fewer CPUs than threads: said, never a warn."""
    raw, host = _load("cache_kvm2c_quick.json")
    host = {**host, "cgroup": {} if quota is None else {"cpu_quota_cpus": quota}}
    result = judge(raw, host)
    said = [f for f in result.findings if "CPU quota" in f.message]
    assert bool(said) is noted and all(f.verdict is Verdict.PASS for f in said)
    assert result.verdict is judge(raw, {**host, "cgroup": {}}).verdict


def test_a_sweep_figure_left_out_shifts_no_other_into_its_row() -> None:
    raw, host = _load("cache_epyc2c_quick.json")
    raw["sweep"]["read_gbs"][0]["median"] = 0.0   # no figure at 1 thread: 2 threads' stays on its own row
    rows = next(t for t in judge(raw, host).tables if t.title.startswith("DRAM bandwidth against threads")).rows
    assert [(row[0], row[2]) for row in rows] == [(1, None), (2, round(raw["sweep"]["read_gbs"][1]["median"], 1))]
