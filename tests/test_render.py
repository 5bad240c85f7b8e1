"""Renderers see only a Report: the rich table for people, JSON (valid against the schema) for machines."""

from __future__ import annotations

import json

import jsonschema
import pytest
from rich.console import Console

import fake_probes
from perfprobe import load_schema
from perfprobe.engine import runner
from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Curve
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


# --- spread and unstable figures (issue 25 items 1 and 2) -----------------------------------------

REASON = "repeats disagree: MAD 30% of the median (bound 10%)"


def _timed_report():
    from perfprobe.engine.model import Metric, ProbeResult, Report, Spread, Table, Verdict

    metrics = {"read_gbs.L1.1t": Metric(73.5, "GB/s", Spread(5, 73.5, 70.1, 78.0, mad=2.13, iqr=3.0)),
               "read_gbs.L1.all": Metric(1353.0, "GB/s", Spread(5, 1353.0, 19.6, 1400.0, mad=410.0), unstable=REASON),
               "line_bytes": Metric(64, "bytes")}
    bare = ProbeResult("cache", Verdict.PASS, "measured", metrics=metrics)
    tabled = ProbeResult("pinned", Verdict.PASS, "copied", metrics=metrics, device=0,
                         tables=(Table("Copy bandwidth", ("size", "GB/s"), (("1 MiB", 43.5),)),))
    return Report("0", {}, (bare, tabled))


def _text(report, **console_options):
    import io

    stream = io.StringIO()
    render_report(report, Console(file=stream, width=140, highlight=False, **console_options))
    return stream.getvalue()


def test_terminal_shows_each_timed_figure_with_its_mad_and_repeats():
    text = _text(_timed_report(), color_system=None)
    row = next(line for line in text.splitlines() if "read_gbs.L1.1t" in line)
    assert "73.5 ±2.1" in row and "GB/s" in row and "n=5" in row
    assert next(line for line in text.splitlines() if "line_bytes" in line).count("±") == 0  # not timed


def test_terminal_marks_unstable_figures_and_lists_them_after_the_results():
    text = _text(_timed_report(), color_system=None)
    row = next(line for line in text.splitlines() if "│ read_gbs.L1.all" in line)
    assert "1,353 ±410" in row and "unstable: repeats disagree" in row
    tail = text[text.index("Overall"):]
    assert "Left out of judgement: 2 unstable figures" in tail
    assert f"cache:read_gbs.L1.all  1,353 ±410 GB/s — {REASON}" in tail
    assert f"pinned:read_gbs.L1.all (GPU 0)  1,353 ±410 GB/s — {REASON}" in tail


def test_a_result_drawn_as_tables_says_how_far_its_repeats_spread():
    text = _text(_timed_report(), color_system=None)
    section = text[text.index("pinned (GPU 0)"):text.index("Summary")]
    assert "repeats: 2 timed figures, n=5, MAD ≤ 2.9% of the median (widest: read_gbs.L1.1t 73.5 ±2.1 GB/s)" in section
    assert "1 unstable (listed at the end)" in section


def test_unstable_mark_is_coloured_on_a_terminal_and_plain_without_colour():
    coloured = _text(_timed_report(), force_terminal=True, color_system="standard")
    plain = _text(_timed_report(), force_terminal=True, color_system=None)  # NO_COLOR, as cli._stdout_console
    assert "\x1b[33munstable: repeats disagree" in coloured
    assert "\x1b" not in plain and "unstable: repeats disagree" in plain


def test_figures_without_repeats_keep_the_three_column_table(report):
    console = Console(record=True, width=120, no_color=True)
    render_report(report, console)
    text = console.export_text()
    assert "repeats" not in text and "Left out of judgement" not in text and "±" not in text
