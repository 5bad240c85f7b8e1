"""The verdict-stability and planted-fault tools' pure parts, on small made-up reports."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import verdict_stability as vs  # noqa: E402


def _report(warn: str | None, verdict: str = "pass", value: float = 0.9) -> dict:
    findings = [{"verdict": "pass", "message": "fine 12 ns", "advice": ""}]
    if warn:
        findings.append({"verdict": "warn", "message": warn, "advice": ""})
    return {"host": {"cpu": {"model": "X"}, "cpus": {"online": [0, 1]}, "kernel": "6"},
            "results": [{"probe": "cache", "device": None, "verdict": verdict, "findings": findings,
                         "metrics": {"eff": {"value": value, "unit": "fraction"}}}]}


def test_numbers_do_not_split_a_finding() -> None:
    a = vs.finding_key("cache", None, {"verdict": "warn", "message": "line 512 B"})
    b = vs.finding_key("cache", None, {"verdict": "warn", "message": "line 128 B"})
    assert a == b == "cache warn: line # B"


def test_a_warn_in_one_run_of_three_is_one_flip() -> None:
    reports = [_report(None), _report("line 512 B", "warn"), _report(None)]
    summary = vs.summarise(reports, [0, 1, 0])
    assert summary["flips"] == 1
    assert summary["fired"] == {"cache warn: line # B": 1}


def test_identical_runs_have_no_flip() -> None:
    assert vs.summarise([_report(None)] * 4, [0] * 4)["flips"] == 0


def test_a_fraction_above_one_is_a_ceiling_breach() -> None:
    assert vs.ceiling_breaches(_report(None, value=1.02)) == ["cache: eff = 1.02 fraction"]
    assert vs.ceiling_breaches(_report(None, value=1.0)) == []


def test_a_hosts_section_is_replaced_not_duplicated(tmp_path: Path) -> None:
    out = tmp_path / "v.md"
    vs.write_section(out, "host A", "<!-- host: host A -->\nold\n<!-- end host -->\n")
    vs.write_section(out, "host B", "<!-- host: host B -->\nb\n<!-- end host -->\n")
    vs.write_section(out, "host A", "<!-- host: host A -->\nnew\n<!-- end host -->\n")
    text = out.read_text()
    assert text.count("host: host A") == 1 and "new" in text and "old" not in text and "\nb\n" in text


def test_a_ratio_named_efficiency_or_a_message_past_the_ideal_is_a_ceiling_breach() -> None:
    report = _report(None)
    report["results"][0]["metrics"] = {"best.efficiency": {"value": 1.02, "unit": "ratio"},
                                       "best.speedup": {"value": 2.5, "unit": "ratio"}}
    report["results"][0]["findings"].append({"verdict": "pass", "message": "x, 102% of the ideal 5.4 ms", "advice": ""})
    assert vs.ceiling_breaches(report) == ["cache: best.efficiency = 1.02 ratio", 'cache: "102% of the ideal"']
    report["results"][0]["metrics"]["best.efficiency"]["value"] = 1.0
    report["results"][0]["findings"][-1]["message"] = "at the ideal 6.0 ms (±2%), 93% of the ideal"
    assert vs.ceiling_breaches(report) == []


def test_notes_that_were_warns_are_counted() -> None:
    report = _report(None)
    report["results"][0]["findings"] += [
        {"verdict": "pass", "message": "not confirmed on a re-measurement: a then b", "advice": ""},
        {"verdict": "pass", "message": "held back (other processes kept 1.3 CPUs busy): x", "advice": ""}]
    assert vs.summarise([report], [0])["notes"] == {"not confirmed on a re-measurement": 1, "held back under load": 1}


import planted_faults as pf  # noqa: E402


def _probe_report(probe: str, *findings: tuple[str, str], verdict: str = "pass") -> dict:
    return {"results": [{"probe": probe, "verdict": verdict, "summary": "",
                         "findings": [{"verdict": v, "message": m, "advice": ""} for v, m in findings]}]}


def test_planted_memlock_is_found_from_the_host_note() -> None:
    note = ("pass", "Locked-memory limit (ulimit -l) is 1 MiB: it limits mlock and RDMA memory registration, "
                    "and no RDMA device here and no GPU; CUDA's pinned memory is not limited by it")
    assert pf.check_memlock({"host": (0, _probe_report("host", note), "")})[0]
    assert not pf.check_memlock({"host": (0, _probe_report("host"), "")})[0]


def test_planted_cpu_hog_is_found_when_load_is_named_and_only_the_l3_share_warns() -> None:
    cache = _probe_report("cache", ("warn", "L3 ends at about 8 MiB measured, but 32 MiB is reported"),
                          ("pass", "held back (other processes kept 2.0 CPUs busy): Cache line measured 512 B"),
                          ("pass", "Other processes kept 2.0 of the CPUs busy while this was measured"))
    falseshare = _probe_report("falseshare", ("pass", "other work took these CPUs during 90% of the timed runs"))
    assert pf.check_cpu_hog({"cache": (1, cache, ""), "falseshare": (0, falseshare, "")})[0]
    loud = _probe_report("falseshare", ("warn", "false sharing reaches 256 B, beyond the 64-byte line"),
                         ("pass", "other work took these CPUs during 90% of the timed runs"))
    assert not pf.check_cpu_hog({"cache": (1, cache, ""), "falseshare": (1, loud, "")})[0]


def test_planted_gpu_hog_is_found_when_both_probes_say_the_gpu_was_shared() -> None:
    said = ("pass", "the GPU was shared while measuring: 1 other process on it (pid 6264)")
    reports = {"pinned": (0, _probe_report("pinned", said), ""), "streams": (0, _probe_report("streams", said), "")}
    assert pf.check_gpu_busy(reports)[0]
    reports["streams"] = (1, _probe_report("streams", ("warn", "best: 4 chunks, 75% of the ideal")), "")
    assert not pf.check_gpu_busy(reports)[0]


def test_planted_fault_rows_of_other_runs_on_the_same_host_are_kept(tmp_path: Path) -> None:
    out = tmp_path / "p.md"
    vs.write_section(out, "H", "<!-- host: H -->\n## H\n\n| fault | found | last run |\n| --- | --- | --- |\n"
                               "| CUDA | 5 of 5 | ok |\n| GPU hog | 4 of 5 | old |\n<!-- end host -->\n")
    assert pf.kept_rows(out, "H", ["| GPU hog | 5 of 5 | new |"]) == ["| CUDA | 5 of 5 | ok |"]
    assert pf.kept_rows(out, "other", ["| x | 1 | y |"]) == []
