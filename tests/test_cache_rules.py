"""Judging the cache probe: each rule on numbers recorded on a real host or built (labelled
synthetic) from typical figures; silent on a healthy host, loud where one thing is off. Also the
replay of a recorded run through the real CLI, valid against the report schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from perfprobe import cli
from perfprobe.model import Verdict
from perfprobe.probes.cache import judge

DATA = Path(__file__).parent / "data"
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "report.schema.json").read_text())
REQUIRED = ["latency_ns.L1", "latency_ns.L2", "latency_ns.L3", "latency_ns.DRAM", "size_bytes.L1",
            "size_bytes.L2", "size_bytes.L3", "read_gbs.L1.1t", "read_gbs.L1.all", "read_gbs.DRAM.1t",
            "read_gbs.DRAM.all", "triad_gbs.DRAM.1t", "triad_gbs.DRAM.all", "line_bytes",
            "seq_over_random"]


def _load(name: str) -> tuple[dict, dict]:
    data = json.loads((DATA / name).read_text())
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


def test_recorded_kvm_run_warns_about_its_small_l3_share() -> None:
    """Recorded on the 2-vCPU KVM guest: its L3 share is far below the 300 MiB reported."""
    raw, host = _load("cache_kvm2c_full.json")
    assessment = judge(raw, host)
    warned = [f.message for f in assessment.findings if f.verdict is Verdict.WARN]
    assert any(m.startswith("L3 ends at about") for m in warned)
    assert set(REQUIRED) <= set(assessment.metrics)
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
    assert exit_info.value.code in (0, 1) and result["probe"] == "cache"
    assert set(REQUIRED) <= set(result["metrics"])


@pytest.mark.parametrize("busy, threads, warned", [
    (None, 2, False), (0.1, 2, False), (1.1, 2, True), (2.0, 128, False), (20.0, 128, True)])
def test_background_load_is_said_when_it_matters(busy, threads, warned) -> None:
    raw, host = _load("cache_synthetic_healthy.json")
    raw["background_cpus"] = busy
    raw["plan"]["threads"] = threads
    found = [f for f in judge(raw, host).findings if "Other processes" in f.message]
    assert bool(found) is warned and all(f.verdict is Verdict.WARN for f in found)


def test_background_meter_reads_proc_stat(tmp_path) -> None:
    from perfprobe.probes.cache_background import BackgroundMeter, _busy_seconds

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 1000 5 0 0 0 0 0\ncpu0 50 0 25 500 2 0 0 0 0 0\n")
    assert _busy_seconds(stat) == pytest.approx(150 / __import__("os").sysconf("SC_CLK_TCK"))
    meter = BackgroundMeter(stat)
    assert meter.share() == 0.0  # nothing moved: nobody else was busy
    assert BackgroundMeter(tmp_path / "missing").share() is None
