"""Whole runs recorded on real GPU hosts, replayed through the real CLI: same verdicts, valid JSON."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from perfprobe import cli, load_schema

DATA = Path(__file__).resolve().parent / "data"
SCHEMA = load_schema()


def test_two_gpu_quick_run_replays_with_every_device(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["all", "--device", "all", "--json", "--replay", str(DATA / "all_quick_h200x2.rec.json")])
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, SCHEMA)
    assert [(r["probe"], r["device"]) for r in report["results"] if r["device"] is not None] == [
        ("pinned", 0), ("pinned", 1), ("streams", 0), ("streams", 1), ("uvm", 0), ("uvm", 1)]
    recorded = json.loads((DATA.parents[1] / "docs" / "results" / "all-quick-h200x2.json").read_text())
    assert [r["verdict"] for r in report["results"]] == [r["verdict"] for r in recorded["results"]]
    assert exit_info.value.code == 1
