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
