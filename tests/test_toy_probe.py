"""A probe defined inside tests/ (tests/toy_probe/) and registered here gets everything a probe gets:
a command with its options and their range checks, JSON, the terminal table, HTML, Prometheus,
JUnit, compare and fleet output, and its rules in the README's gathering, with no file outside
tests/ changed. docs/DEVELOPING.md's "How to add a probe" is these steps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pytest

import fake_probes
from cli_invoke import invoke
from perfprobe import load_schema
from perfprobe.engine import registry, runner

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Run:
    """The toy registered after every built-in probe; a fake, quiet host (named per call): no load
    watch, so a busy test machine does not mark the runs disturbed (compare calls nothing then)."""
    monkeypatch.setitem(registry.PROBE_MODULES, "toy", "toy_probe")
    monkeypatch.setattr(runner._LoadWatch, "start", classmethod(lambda cls, config: None))
    host = {"name": "toyhost"}
    monkeypatch.setattr(runner, "_read_host", lambda config: {**fake_probes.HOST, "hostname": host["name"]})

    def run(*argv: str, hostname: str = "toyhost") -> tuple[int, str, str]:
        host["name"] = hostname
        return invoke(list(argv), capsys)

    return run


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfprobe: error:") and "Traceback" not in err
    return lines[0]


def test_the_toy_has_a_command_with_its_options(toy: Run) -> None:
    code, out, _ = toy("--help")
    assert code == 0 and "toy " in out and "Toy: a probe defined inside tests/" in out
    code, out, _ = toy("toy", "--help")
    assert code == 0
    for words in ("--width N", "Counters to update, 1 to 64", "--span BYTES", "at least 4K", "--json", "--quick",
                  "--bind NODE", "--prom FILE", "--junit FILE", "--html FILE"):
        assert words in out, words
    assert "--device" not in out and "--require-gpu" not in out  # not a GPU probe


@pytest.mark.parametrize("argv, needle", [
    (["--width", "0"], "--width 0: must be from 1 to 64"),
    (["--width", "65"], "--width 65: must be from 1 to 64"),
    (["--width", "x"], "--width"),
    (["--span", "1K"], "--span 1K: must be between 4 KiB"),
    (["--span", "lots"], "not a size"),
])
def test_its_ranges_are_checked_before_anything_runs(toy: Run, argv: list[str], needle: str) -> None:
    code, out, err = toy("toy", *argv)
    assert code == 2 and out == ""
    assert needle in one_error_line(err)


def test_json_and_the_terminal(toy: Run) -> None:
    code, out, _ = toy("toy", "--json", "--width", "3")
    report = json.loads(out)
    jsonschema.validate(report, load_schema())
    (result,) = report["results"]
    assert code == 0 and result["probe"] == "toy" and result["verdict"] == "pass"
    assert result["metrics"]["ns_per_update"]["value"] == pytest.approx(30.045, abs=0.01) and result["metrics"]["width"]["value"] == 3
    code, out, _ = toy("toy", "--quick")
    assert code == 0 and "PASS" in out and "4 counters, 40 ns per update" in out


def test_a_warn_reaches_every_output_file(toy: Run, tmp_path: Path) -> None:
    files = {kind: tmp_path / f"toy.{kind}" for kind in ("json", "html", "prom", "xml")}
    code, out, _ = toy("toy", "--width", "12", "-o", str(files["json"]), "--html", str(files["html"]),
                       "--prom", str(files["prom"]), "--junit", str(files["xml"]))
    assert code == 1 and "WARN" in out and "update fewer counters (--width)" in out
    assert json.loads(files["json"].read_text())["results"][0]["verdict"] == "warn"
    assert "updates take 120 ns, over 100 ns" in files["html"].read_text()
    prom = files["prom"].read_text()
    assert 'probe="toy"' in prom and 'metric="ns_per_update"' in prom
    junit = files["xml"].read_text()
    assert 'name="toy"' in junit and "<failure" in junit and "update fewer counters" in junit


def test_a_recording_replays_to_the_same_verdict(toy: Run, tmp_path: Path) -> None:
    recording = tmp_path / "toy.rec.json"
    assert toy("toy", "--width", "12", "--record", str(recording))[0] == 1
    code, out, _ = toy("toy", "--replay", str(recording), "--json")
    assert code == 1 and json.loads(out)["results"][0]["metrics"]["width"]["value"] == 12


def test_compare_judges_its_declared_key_figure(toy: Run, tmp_path: Path) -> None:
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    toy("toy", "--width", "3", "-o", str(base))
    toy("toy", "--width", "6", "-o", str(new))
    code, out, _ = toy("compare", str(base), str(new), "--json")
    found = json.dumps(json.loads(out))
    assert code == 1 and "toy:ns_per_update" in found
    code, out, _ = toy("compare", str(base), str(base))
    assert code == 0


def test_the_fleet_names_an_outlying_host(toy: Run, tmp_path: Path) -> None:
    folder = tmp_path / "fleet"
    folder.mkdir()
    for index, width in enumerate((3, 3, 3, 3, 9), start=1):
        toy("toy", "--width", str(width), "-o", str(folder / f"n{index}.json"), hostname=f"n{index}")
    code, out, _ = toy("fleet", str(folder), "--json")
    outliers = {(o["host"], o["metric"]) for group in json.loads(out)["groups"] for o in group["outliers"]}
    assert code == 1 and ("n5", "toy:ns_per_update") in outliers
    page = tmp_path / "fleet.html"
    assert toy("report", str(folder), "--html", str(page))[0] == 0
    assert "toy ns_per_update" in page.read_text() and "toy width" in page.read_text()  # its headline figures


def test_its_rules_are_gathered_into_the_readme(toy: Run) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "readme_rules.py"
    spec = importlib.util.spec_from_file_location("readme_rules", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    section = module.rules_section()
    assert "### toy ([tests/toy_probe/toy.md](tests/toy_probe/toy.md))" in section
    assert "| slow updates | over 100 ns per update | warn |" in section
