"""Renderers see only a Report: the rich table for people, JSON (valid against the schema) for machines."""

from __future__ import annotations

import json

import jsonschema
import pytest
from rich.console import Console

import fake_probes
from perfprobe import load_schema, runner
from perfprobe.config import RunConfig
from perfprobe.model import Curve
from perfprobe.render.json import report_to_dict, report_to_json
from perfprobe.render.plot import plot_lines
from perfprobe.render.table import render_report

SCHEMA = load_schema()


@pytest.fixture
def report(monkeypatch):
    monkeypatch.setattr(runner, "load_probe", lambda name: fake_probes.PROBES[name])
    monkeypatch.setattr(runner, "_read_host", lambda config: fake_probes.HOST)
    return runner.run(["good", "warny", "skippy", "boom", "gpu"], RunConfig())


def test_json_report_validates_and_names_the_worst_verdict(report):
    data = json.loads(report_to_json(report))
    jsonschema.validate(data, SCHEMA)
    assert data["verdict"] == "error"
    assert data["results"][0]["metrics"]["latency_ns.L1"] == {"value": 1.5, "unit": "ns"}
    assert data["results"][1]["metrics"]["x"]["value"] is None  # NaN is not JSON
    assert data["results"][4]["device"] == 0


def test_schema_rejects_a_report_without_verdict(report):
    data = report_to_dict(report)
    del data["verdict"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA)


def test_table_shows_verdicts_advice_and_summary(report):
    console = Console(record=True, width=120, no_color=True)
    render_report(report, console)
    text = console.export_text()
    for expected in ("PASS", "WARN", "SKIP", "ERROR", "→ do better", "Summary", "L1 1.5 ns", "Overall"):
        assert expected in text
    assert "pip install cupy[cuda]" in text  # advice is text, never rich markup


def test_plot_draws_points_and_marks():
    curve = Curve("latency", "bytes", "ns", ((4096.0, 1.0), (65536.0, 3.0), (1 << 24, 80.0)),
                  marks=((32768.0, "L1d"),))
    lines = plot_lines(curve)
    body = "\n".join(lines)
    assert body.count("●") == 3 and "┆" in body and "L1d" in body
    assert "4K" in lines[-2] and "16M" in lines[-2]


def test_plot_with_too_few_points_says_so():
    assert "too few points" in plot_lines(Curve("c", "x", "y", ((1.0, 1.0),)))[0]
