"""--prom and --junit read back by their own parsers (prometheus_client, junitparser); output paths
checked before anything runs (issue 14 item 3); a write that fails at the end still prints the report."""

from __future__ import annotations

import subprocess
import sys

import junitparser
import pytest
from prometheus_client.parser import text_string_to_metric_families

import fake_probes
from cli_invoke import invoke
from fleet_reports import DATA
from perfprobe.engine import runner
from perfprobe.engine.config import RunConfig
from perfprobe.engine.registry import all_probe_names
from perfprobe.render import junit, outputs, prom


@pytest.fixture(scope="module")
def h200_report():
    return runner.run(all_probe_names(), RunConfig(replay=DATA / "all_quick_h200x2.rec.json", device="all"))


def families(path):
    return {f.name: f for f in text_string_to_metric_families(path.read_text())}


def test_prom_has_every_numeric_metric_with_its_labels(h200_report, tmp_path):
    target = tmp_path / "perfprobe.prom"
    prom.write(h200_report, target)
    fams = families(target)
    samples = fams["perfprobe_metric"].samples
    expected = sum(1 for r in h200_report.results for m in r.metrics.values()
                   if isinstance(m.value, (int, float)) and not isinstance(m.value, bool) and not m.unstable)
    assert len(samples) == expected
    h2d = [s for s in samples if s.labels["metric"] == "pinned.h2d_gbs" and s.labels["device"] == "1"]
    assert h2d[0].labels["unit"] == "GB/s" and h2d[0].labels["probe"] == "pinned" and h2d[0].value > 10
    assert {s.labels["host"] for s in samples} == {str(h200_report.host.get("hostname") or "")}
    assert list(tmp_path.iterdir()) == [target]  # written through a temporary file and a rename


def test_prom_verdicts_and_timestamp(h200_report, tmp_path):
    target = tmp_path / "p.prom"
    prom.write(h200_report, target)
    fams = families(target)
    ones = {(s.labels["probe"], s.labels["device"], s.labels["verdict"]) for s in fams["perfprobe_verdict"].samples
            if s.value == 1}
    assert ones == {(r.probe, "" if r.device is None else str(r.device), r.verdict.value) for r in h200_report.results}
    assert "perfprobe_run_timestamp_seconds" in fams


def test_junit_one_case_per_probe_and_device(h200_report, tmp_path):
    target = tmp_path / "j.xml"
    junit.write(h200_report, target)
    xml = junitparser.JUnitXml.fromfile(str(target))
    cases = {case.name: case for suite in xml for case in suite}
    assert len(cases) == len(h200_report.results)
    for result in h200_report.results:
        case = cases[result.probe if result.device is None else f"{result.probe}[{result.device}]"]
        kinds = {type(r).__name__ for r in case.result}
        if result.verdict.value in ("warn", "error"):
            assert kinds == {"Failure"}
            finding = next(f for f in result.findings if f.verdict is result.verdict)
            assert finding.message in case.result[0].text and (not finding.advice or finding.advice in case.result[0].text)
        elif result.verdict.value == "skip":
            assert kinds == {"Skipped"}
        else:
            assert not case.result


@pytest.fixture
def fakes(monkeypatch):
    monkeypatch.setattr(runner, "load_probe", lambda name: fake_probes.PROBES["good"])
    monkeypatch.setattr(runner, "_read_host", lambda config: fake_probes.HOST)


@pytest.mark.parametrize("option", ["--output", "--record", "--prom", "--junit", "--html"])
@pytest.mark.parametrize("path", ["/proc/version", "/nonexistent/folder/x", "/tmp"])
def test_unwritable_outputs_stop_before_anything_runs(fakes, monkeypatch, capsys, option, path):
    monkeypatch.setattr(runner, "run", lambda *a, **k: pytest.fail("measured before checking the output path"))
    code, out, err = invoke(["cache", option, path], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and f"{option} {path}: cannot write" in err


def test_cache_output_to_proc_version_fails_at_once():
    """Issue 14 item 3, as the user ran it: exit 2, one line, nothing on stdout."""
    done = subprocess.run([sys.executable, "-m", "perfprobe", "cache", "--output", "/proc/version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "" and "nothing was run" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_write_that_fails_at_the_end_still_prints_the_report(fakes, monkeypatch, capsys, tmp_path):
    def broken(report, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(prom, "write", broken)
    code, out, err = invoke(["numa", "--json", "--prom", str(tmp_path / "p.prom")], capsys)
    assert code == 2 and '"results"' in out and "No space left on device" in err


def test_outputs_written_beside_the_report(fakes, capsys, tmp_path):
    code, out, _ = invoke(["numa", "--prom", str(tmp_path / "a.prom"), "--junit", str(tmp_path / "a.xml"),
                           "--output", str(tmp_path / "a.json")], capsys)
    assert code == 0 and {p.name for p in tmp_path.iterdir()} == {"a.prom", "a.xml", "a.json"}


def test_why_unwritable(tmp_path):
    assert outputs.why_unwritable(tmp_path / "new.json") is None
    assert outputs.why_unwritable(tmp_path) == "it is a folder"
    assert list(tmp_path.iterdir()) == []  # the check leaves nothing behind


def test_prom_to_a_fifo_is_written_in_place_not_renamed_over(h200_report, tmp_path):
    """As root, a rename over /dev/null replaced the device node; a non-regular file is written in place."""
    import os
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    prom.write(h200_report, fifo)
    reader.join(timeout=10)
    assert not fifo.is_file() and fifo.exists()  # still the FIFO, not a file renamed over it
    assert b"perfprobe_" in received[0]


REASON = "breaks a relation: all threads below one thread: 2.14 against read_gbs.L2.1t 20.1"


def _unstable_report():
    from perfprobe.engine.model import Metric, ProbeResult, Report, Spread, Verdict

    metrics = {"read_gbs.L2.1t": Metric(20.1, "GB/s", Spread(5, 20.1, 19.8, 20.4, mad=0.1)),
               "read_gbs.L2.all": Metric(2.14, "GB/s", Spread(5, 2.14, 1.9, 2.3, mad=0.1), unstable=REASON)}
    return Report("0", {"hostname": "box"}, (ProbeResult("cache", Verdict.PASS, "measured", metrics=metrics),))


def test_prom_leaves_an_unstable_value_out_and_names_it_in_its_own_gauge(tmp_path):
    target = tmp_path / "u.prom"
    prom.write(_unstable_report(), target)
    fams = families(target)
    measured = {s.labels["metric"]: s.value for s in fams["perfprobe_metric"].samples}
    assert measured == {"read_gbs.L2.1t": 20.1}
    unstable = fams["perfprobe_metric_unstable"].samples
    assert [(s.labels["probe"], s.labels["metric"], s.labels["unit"], s.labels["host"], s.value) for s in unstable] == [
        ("cache", "read_gbs.L2.all", "GB/s", "box", 1.0)]


def test_prom_writes_one_unstable_sample_per_unstable_figure(h200_report, tmp_path):
    target = tmp_path / "p.prom"
    prom.write(h200_report, target)
    fams = families(target)
    unstable = fams["perfprobe_metric_unstable"].samples if "perfprobe_metric_unstable" in fams else []
    assert len(unstable) == sum(1 for r in h200_report.results for m in r.metrics.values() if m.unstable)


def test_junit_lists_a_probes_unstable_figures_in_its_system_out(tmp_path):
    target = tmp_path / "u.xml"
    junit.write(_unstable_report(), target)
    case = next(c for suite in junitparser.JUnitXml.fromfile(str(target)) for c in suite)
    out = case.system_out
    assert "unstable, left out of judgement (1):" in out
    assert f"  read_gbs.L2.all = 2.14 GB/s — {REASON}" in out.splitlines()
    assert not any(line.startswith("  read_gbs.L2.1t") for line in out.splitlines())
    assert not case.result  # still a pass: unstable figures are not failures
