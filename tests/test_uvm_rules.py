"""uvm judgement on numbers recorded on a real H200 host (tests/data/uvm_h200_*.json), and on small
variations of them for the branches that host cannot show. No kernel runs here."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from perfprobe import cli, load_schema
from perfprobe.engine.model import Verdict
from perfprobe.probes import uvm
from perfprobe.probes.uvm import figures
from typed_shape import undeclared

DATA = Path(__file__).parent / "data"
RECORDINGS = sorted(DATA.glob("uvm_h200_*.json"))


def recorded(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())["raw"]["uvm[0]"]


def messages(raw: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f.verdict.value, f.message, f.advice) for f in uvm.judge(raw, {}).findings]


def find(raw: dict[str, Any], text: str) -> tuple[str, str, str]:
    hits = [m for m in messages(raw) if text in m[1]]
    assert len(hits) == 1, (text, messages(raw))
    return hits[0]


def test_there_are_recordings() -> None:
    assert len(RECORDINGS) >= 4


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_every_healthy_h200_recording_passes_on_demand_and_prefetch_to_host(path: Path) -> None:
    """Issue 12: on-demand slower than a prefetch and a prefetch to the host slower than a copy are
    true of every CUDA host: passes with the figures, the healthy range and the advice (exit 0)."""
    raw = json.loads(path.read_text())["raw"]["uvm[0]"]
    assessment = uvm.judge(raw, {})
    assert assessment.verdict is Verdict.PASS
    verdict, message, advice = find(raw, "slower on demand (page faults)")
    assert verdict == "pass" and "cudaMemPrefetchAsync" in advice and "healthy hosts: 3.1–5.4×" in message
    assert find(raw, "moving GPU results to the host by prefetch")[0] == "pass"
    assert find(raw, "zero-copy about matches copy-then-read")[0] == "pass"
    assert find(raw, "pageableMemoryAccess 0")[0] == "pass"
    assert {t.title.split(" (")[0] for t in assessment.tables} == {
        "Unified-memory attributes", "GPU reads host-written data", "CPU reads GPU-written data",
        "Zero-copy against copy-then-read"}


def test_figures_of_the_1gib_run_match_the_recorded_times() -> None:
    raw = recorded("uvm_h200_1g_run1.json")
    assert figures.slowdown(raw, "managed_on_demand", "managed_prefetch") == pytest.approx(5.33, abs=0.01)
    assert figures.gbs(raw, "explicit_copy") == pytest.approx(54.7, abs=0.1)
    assert figures.ratio_to_reference(raw, "managed_prefetch") == pytest.approx(0.902, abs=0.001)
    assert figures.move_s(raw, "host_prefetch") == pytest.approx(0.06645, abs=1e-5)
    verdict, message, _ = find(raw, "slower on demand (page faults)")
    assert message.startswith("GPU reads of host-written managed memory are 5.3× slower")
    assert "9.27 GB/s against 49.4 GB/s" in message


def test_metrics_and_key_figure() -> None:
    raw = recorded("uvm_h200_4g_run2.json")
    assessment = uvm.judge(raw, {})
    assert assessment.metrics["gbs.managed_prefetch"].unit == "GB/s"
    assert assessment.metrics["ratio.explicit_copy"].value == 1.0
    assert assessment.metrics["attr.concurrentManagedAccess"].value == 1
    assert assessment.key_figure == "on-demand 0.27× copy, prefetch 0.91× copy"
    assert assessment.facts["api_used"]["prefetch to host"].startswith("cuda.bindings")


def test_one_reading_thread_vs_sixteen_on_the_way_back() -> None:
    one = recorded("uvm_h200_1g_run1.json")  # single-threaded host reader
    many = recorded("uvm_h200_1g_run2.json")  # 16 reader threads
    assert "takes 1.03× the time" in find(one, "on demand takes")[1]
    verdict, message, advice = find(many, "faster on demand than after a prefetch to the host")
    assert verdict == "pass" and "16 reading threads" in message and "faster still" in advice


def test_skipped_paths_show_in_the_table_with_their_reason() -> None:
    raw = recorded("uvm_h200_1g_run2.json")
    table = uvm.judge(raw, {}).tables[1]
    row = next(r for r in table.rows if r[0] == "pageable_direct")
    assert "pageableMemoryAccess" in str(row[1]) and row[2] is None


def _changed(name: str, **paths: float) -> dict[str, Any]:
    """A recorded raw with some paths' median times replaced (seconds)."""
    raw = copy.deepcopy(recorded(name))
    for path, seconds in paths.items():
        raw["paths"][path]["time_s"]["median"] = seconds
    return raw


def test_on_demand_close_to_prefetch_passes() -> None:
    raw = _changed("uvm_h200_1g_run2.json", managed_on_demand=0.030)
    assert find(raw, "slower on demand")[0] == "pass"


def test_on_demand_far_beyond_healthy_hosts_warns_and_says_how_far() -> None:
    prefetch = figures.median_s(recorded("uvm_h200_1g_run2.json"), "managed_prefetch") or 0.0
    raw = _changed("uvm_h200_1g_run2.json", managed_on_demand=12 * prefetch)  # 12x: over 2 x 5.4
    verdict, message, _ = find(raw, "slower on demand")
    assert verdict == "warn" and "2.2× the highest seen on healthy hosts (3.1–5.4×" in message
    just_inside = _changed("uvm_h200_1g_run2.json", managed_on_demand=10.5 * prefetch)
    assert find(just_inside, "slower on demand")[0] == "pass"


def test_preferred_location_is_advised_only_where_it_helped() -> None:
    raw = _changed("uvm_h200_1g_run2.json", managed_advise_preferred_gpu=0.025)
    advice = find(raw, "slower on demand (page faults)")[2]
    assert "cudaMemAdviseSetPreferredLocation" in advice
    assert "SetPreferredLocation" not in find(recorded("uvm_h200_1g_run2.json"),
                                               "slower on demand (page faults)")[2]


def test_zero_copy_that_wins_one_pass_gets_a_break_even() -> None:
    raw = _changed("uvm_h200_1g_run2.json", zero_copy=0.015)
    verdict, message, advice = find(raw, "wins a single pass")
    assert "copying wins from about" in message and "once" in advice


def test_break_even_passes_arithmetic() -> None:
    raw = {"passes": 8, "paths": {
        "explicit_copy": {"time_s": {"median": 0.020}},          # copy 0.019 + kernel 0.001
        "explicit_copy_passes": {"time_s": {"median": 0.027}},   # copy 0.019 + 8 × 0.001
        "zero_copy_passes": {"time_s": {"median": 0.080}}}}      # 0.010 per pass
    assert figures.break_even_passes(raw) == pytest.approx(0.019 / 0.009)


def test_zero_copy_slower_even_for_one_pass() -> None:
    raw = _changed("uvm_h200_1g_run2.json", zero_copy=0.040)
    assert "copy to device memory explicitly" in find(raw, "slower than copy-then-read even")[2]


def test_no_managed_memory_and_no_concurrent_access_warn() -> None:
    raw = copy.deepcopy(recorded("uvm_h200_1g_run2.json"))
    raw["attributes"]["concurrentManagedAccess"] = 0
    assert find(raw, "all-or-nothing")[0] == "warn"
    raw["attributes"]["managedMemory"] = 0
    assert find(raw, "cannot allocate managed")[0] == "warn"


def test_pageable_access_measured_is_reported_with_how() -> None:
    raw = copy.deepcopy(recorded("uvm_h200_1g_run2.json"))
    raw["attributes"].update(pageableMemoryAccess=1, pageableMemoryAccessUsesHostPageTables=1)
    raw["paths"]["pageable_direct"] = copy.deepcopy(raw["paths"]["zero_copy"])
    assert "through the host's page tables" in find(raw, "plain malloc'd memory")[1]


def test_an_unavailable_api_path_warns_with_its_reason() -> None:
    raw = copy.deepcopy(recorded("uvm_h200_1g_run2.json"))
    raw["paths"]["host_prefetch"] = {"skipped": "prefetch to host: cupy's call failed and "
                                     "cuda-bindings is not installed", "unavailable": True}
    verdict, message, advice = find(raw, "could not be measured")
    assert verdict == "warn" and "pip install cuda-bindings" in advice
    assert not any("by prefetch is" in m[1] for m in messages(raw))


def test_a_capped_size_is_said() -> None:
    raw = copy.deepcopy(recorded("uvm_h200_256m_quick_run2.json"))
    raw["size_note"] = "capped at a quarter of the GPU's free memory"
    assert find(raw, "MiB buffers")[1] == ("measured with 256 MiB buffers (capped at a quarter of "
                                           "the GPU's free memory)")


def test_replay_through_the_cli_is_valid_against_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["uvm", "--replay", str(DATA / "uvm_h200_4g_run2.json"), "--json"])
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, load_schema())
    assert exit_info.value.code == 0  # a healthy H200: every effect is true of every CUDA host
    result = report["results"][0]
    assert result["verdict"] == "pass" and result["device"] == 0
    assert result["metrics"]["gbs.explicit_copy"]["value"] == pytest.approx(54.86, abs=0.01)


@pytest.mark.parametrize("path", [*RECORDINGS, DATA / "all_quick_h200x2.rec.json"], ids=lambda p: p.name)
def test_the_recordings_hold_only_what_uvm_raw_names(path: Path) -> None:
    """figures.UvmRaw names every key the recordings hold, with its type (the shape rules and tables read)."""
    runs = {key: raw for key, raw in json.loads(path.read_text())["raw"].items() if key.startswith("uvm[")}
    assert runs
    assert {key: undeclared(raw, figures.UvmRaw) for key, raw in runs.items()} == {key: [] for key in runs}
