"""`perfprobe report --html`: every recording in tests/data becomes a page, fleets rank their outliers,
saved reports round-trip, bad input is one line and exit 2 (the browser checks: test_html_browser.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfprobe import cli
from perfprobe.cli.report_command import load, load_all, report_from_dict
from perfprobe.engine.model import Verdict
from perfprobe.render import html
from perfprobe.render.html_fleet import distances, key_values
from perfprobe.render.json import report_to_dict

DATA = Path(__file__).resolve().parent / "data"


def recordings() -> list[Path]:
    """Every recording (host + raw) and every captured host-facts file in tests/data."""
    found = []
    for path in sorted(DATA.glob("*.json")):
        data = json.loads(path.read_text())
        if ("host" in data and "raw" in data) or ("cpu" in data and "cpus" in data):
            found.append(path)
    return found


def run_report(*args: str) -> int:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["report", *args])
    return int(exit_info.value.code or 0)


@pytest.mark.parametrize("recording", recordings(), ids=lambda p: p.stem)
def test_every_recording_renders_with_its_findings_and_no_remote_resource(recording, tmp_path):
    out = tmp_path / "x.html"
    assert run_report(str(recording), "--html", str(out)) == 0
    page = out.read_text()
    report = load(recording)
    assert report.results
    assert re.search(r"<(script|link|img|iframe)[^>]+(src|href)=\"?(https?:)?//", page) is None
    assert page.count("Plotly.newPlot(") == page.count("<figure data-chart=")  # every figure draws
    for result in report.results:
        assert f'id="{result.probe if result.device is None else f"{result.probe}-gpu{result.device}"}"' in page
        for finding in result.findings:
            assert html.esc(finding.message) in page
            assert html.esc(finding.advice) in page


EXPECTED_CHARTS = {
    "cache_kvm2c_full": ["cache-latency0", "cache-bandwidth"],
    "falseshare_kvm_2cpu": ["falseshare-spacing", "falseshare-matrix2"],
    "numa_emulated_two_node_tcg": ["numa-matrix1", "numa-matrix2", "numa-matrix3"],
    "pinned_h200": ["pinned-bandwidth-gpu0"],
    "streams_h200": ["streams-sweep-gpu0"],
    "uvm_h200_1g_run1": ["uvm-paths0-gpu0", "uvm-paths1-gpu0"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_CHARTS))
def test_each_probe_draws_its_own_charts(name):
    page = html.render(load(DATA / f"{name}.json"))
    drawn = re.findall(r'<figure data-chart="([^"]+)"', page)
    assert drawn == EXPECTED_CHARTS[name]
    for key in drawn:
        assert f'Plotly.newPlot(                        "chart-{key}"' in page or f'"chart-{key}"' in page


def test_latency_chart_carries_the_reported_level_marks_and_units():
    page = html.render(load(DATA / "cache_kvm2c_full.json"))
    for label in ("L1 48 KiB", "L2 2 MiB", "L3 300 MiB"):
        assert label in page
    assert '"type":"log"' in page
    assert "<b>units:</b> ns per load against working set (bytes)" in page


def test_streams_sweep_marks_the_best_configuration():
    report = load(DATA / "streams_h200.json")
    best = report.results[0].metrics
    page = html.render(report)
    assert int(best["best.chunks"].value) == 64 and int(best["best.streams"].value) == 8  # type: ignore[arg-type]
    assert ("★ best" in page or "\\u2605 best" in page) and '"type":"rect"' in page


def test_two_gpu_run_has_a_section_per_device():
    page = html.render(load(DATA / "all_quick_h200x2.rec.json"))
    for anchor in ("pinned-gpu0", "pinned-gpu1", "streams-gpu1", "uvm-gpu1"):
        assert f'id="{anchor}"' in page
    assert "2 × NVIDIA H200" in page  # the host in the header


def test_saved_report_round_trips_and_renders_the_same(tmp_path):
    report = load(DATA / "all_quick_h200x2.rec.json")
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(report_to_dict(report)))
    again = load(saved)
    assert report_to_dict(again) == report_to_dict(report)
    assert report_to_dict(report_from_dict(report_to_dict(again), saved)) == report_to_dict(report)
    assert html.render(again).count("<figure") == html.render(report).count("<figure")


def test_fleet_puts_the_planted_outliers_first(tmp_path):
    fleet = load_all(sorted(DATA.glob("cache_synthetic_*.json")))
    out = tmp_path / "fleet.html"
    html.write_fleet(fleet, out)
    page = out.read_text()
    rows = re.findall(r"<tr><td>(cache_synthetic_[a-z0-9_]+)</td>", page)
    assert rows[-1] == "cache_synthetic_healthy" and len(rows) == 6
    planted = {"cache_synthetic_remote_dram", "cache_synthetic_no_prefetch", "cache_synthetic_small_l3",
               "cache_synthetic_line_128"}
    assert set(rows[:4]) == planted


def test_identical_hosts_are_not_outliers():
    report = load(DATA / "cache_synthetic_healthy.json")
    from perfprobe.render.html_fleet import Host

    hosts = [Host(f"n{i}", report, key_values(report)) for i in range(5)]
    assert all(abs(d) < 1e-9 for d in distances(hosts, sorted(hosts[0].values)).values())


def test_folder_of_reports_gives_the_fleet_page(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("uvm_h200_1g_run1", "uvm_h200_1g_run2", "uvm_h200_1g_run3"):
        (folder / f"{name}.json").write_text(json.dumps(report_to_dict(load(DATA / f"{name}.json"))))
    out = tmp_path / "fleet.html"
    assert run_report(str(folder), "--html", str(out)) == 0
    assert "perfprobe fleet: 3 reports, 1 hardware group" in out.read_text()


@pytest.mark.parametrize("content, message", [
    ("{not json", "not JSON"),
    ('{"schema_version": 1, "results": []}', "schema version 1; this perfprobe reads 2"),
    ('{"schema_version": 2, "results": [{"probe": "cache"}]}', "is a required property (schema report)"),
    ('{"schema_version": 2, "results": [{"probe": "cache", "verdict": "pass", "metrics": '
     '{"x": {"value": 1, "unit": "ns", "stats": [1, 2]}}}]}', "is a required property (schema report)"),
    ('[1, 2]', "not a perfprobe report"),
    ('{"sizes_bytes": [1]}', "not a perfprobe report, recording or host facts"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert run_report(str(bad), "--html", str(tmp_path / "x.html")) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not (tmp_path / "x.html").exists()


def test_missing_html_option_empty_folder_and_unwritable_output(tmp_path, capsys):
    assert run_report(str(DATA / "streams_h200.json")) == 2
    assert "give --html FILE" in capsys.readouterr().err
    assert run_report(str(tmp_path), "--html", str(tmp_path / "x.html")) == 2
    assert "no *.json reports" in capsys.readouterr().err
    assert run_report(str(DATA / "streams_h200.json"), "--html", str(tmp_path / "no" / "x.html")) == 2
    assert "cannot write" in capsys.readouterr().err


def test_cli_start_up_does_not_import_plotly():
    code = "import sys, perfprobe.cli; print('plotly' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_skipped_probe_still_gets_a_section_with_its_reason():
    report = load(DATA / "all_quick_h200x2.rec.json")
    page = html.render(report)
    assert all(r.verdict is not Verdict.ERROR for r in report.results)
    assert page.count('<section class="result"') == len(report.results)


# --- spread as error bars, unstable figures marked (issue 25 items 1 and 2) -----------------------

REASON = "repeats disagree: MAD 30% of the median (bound 10%)"


def _plain(report):
    """The report with no metric carrying repeats or an unstable mark (whatever the probes now give)."""
    import dataclasses

    return dataclasses.replace(report, results=tuple(
        dataclasses.replace(r, metrics={k: dataclasses.replace(m, spread=None, unstable=None)
                                        for k, m in r.metrics.items()}) for r in report.results))


def _with_spread(report, unstable: set[str]):
    """The report with only the GB/s metrics of cache and uvm given repeats (min 0.9×, max 1.05× the
    value, MAD 2%), and only the metrics named in `unstable` marked."""
    import dataclasses

    from perfprobe.engine.model import Spread

    results = []
    for result in _plain(report).results:
        metrics = {}
        for name, m in result.metrics.items():
            if result.probe in ("cache", "uvm") and m.unit == "GB/s" and isinstance(m.value, float):
                v = m.value
                m = dataclasses.replace(m, spread=Spread(5, v, 0.9 * v, 1.05 * v, mad=0.02 * v),
                                        unstable=REASON if name in unstable else None)
            metrics[name] = m
        results.append(dataclasses.replace(result, metrics=metrics))
    return dataclasses.replace(report, results=tuple(results))


def _chart(result, key):
    from perfprobe.render.html_charts import charts_for

    return next(c for c in charts_for(result) if c.key == key)


def test_cache_bandwidth_bars_carry_the_min_max_of_each_metrics_repeats():
    report = _with_spread(load(DATA / "cache_kvm2c_full.json"), set())
    result = report.results[0]
    chart = _chart(result, "cache-bandwidth")
    read_1t = next(t for t in chart.figure.data if t.name == "read, 1 thread")
    value = result.metrics["read_gbs.L1.1t"].value
    at = list(read_1t.x).index("L1")
    assert read_1t.error_y.array[at] == pytest.approx(0.05 * value)
    assert read_1t.error_y.arrayminus[at] == pytest.approx(0.1 * value)
    assert "MAD" in read_1t.hovertext[at] and "n=5" in read_1t.hovertext[at]
    assert "bars: min–max of repeats" in chart.units
    page = html.render(report)
    assert '"error_y":{"array":[' in page and "<th>± MAD</th>" in page


def test_charts_of_figures_without_repeats_draw_no_error_bars():
    chart = _chart(_plain(load(DATA / "cache_kvm2c_full.json")).results[0], "cache-bandwidth")
    assert all(trace.error_y.array is None for trace in chart.figure.data)
    assert "bars" not in chart.units


def test_unstable_figure_is_hollow_named_in_hover_and_legend_and_listed():
    report = _with_spread(load(DATA / "cache_kvm2c_full.json"), {"read_gbs.L2.all"})
    chart = _chart(report.results[0], "cache-bandwidth")
    read_all = next(t for t in chart.figure.data if t.name == "read, all threads")
    at = list(read_all.x).index("L2")
    assert read_all.marker.color[at] == "rgba(0,0,0,0)" and read_all.marker.line.width[at] == 2
    assert all(c != "rgba(0,0,0,0)" for i, c in enumerate(read_all.marker.color) if i != at)
    assert REASON in read_all.hovertext[at]
    assert any(t.name == "hollow: unstable, left out of judgement" for t in chart.figure.data)
    page = html.render(report)
    assert page.count('data-unstable="report"') == 1 and page.count('data-unstable="result"') == 1
    assert "<b>cache:read_gbs.L2.all</b> = " in page and html.esc(REASON) in page


def test_uvm_bars_take_the_error_bars_of_their_paths_metric():
    report = _with_spread(load(DATA / "uvm_h200_1g_run1.json"), {"gbs.zero_copy"})
    result = report.results[0]
    bars = _chart(result, "uvm-paths0-gpu0").figure.data[0]
    paths = list(bars.y)
    copy = paths.index("explicit_copy")
    assert bars.error_x.array[copy] == pytest.approx(bars.x[copy] * 1.05 - bars.x[copy], rel=0.02)
    assert bars.marker.color[paths.index("zero_copy")] == "rgba(0,0,0,0)"
    assert page_has_no_remote_resource(html.render(report))


def page_has_no_remote_resource(page: str) -> bool:
    return re.search(r"<(script|link|img|iframe)[^>]+(src|href)=\"?(https?:)?//", page) is None


def test_saved_report_round_trips_stats_and_unstable_into_the_page(tmp_path):
    import jsonschema

    from perfprobe import load_schema

    report = _with_spread(load(DATA / "cache_kvm2c_full.json"), {"read_gbs.L2.all"})
    saved = tmp_path / "run.json"
    data = report_to_dict(report)
    jsonschema.validate(data, load_schema())
    saved.write_text(json.dumps(data))
    again = load(saved)
    before, after = report.results[0].metrics, again.results[0].metrics
    spread, kept = before["read_gbs.L1.1t"].spread, after["read_gbs.L1.1t"].spread
    assert spread is not None and kept is not None and kept.n == spread.n == 5
    for field in ("median", "min", "max", "mad"):
        assert getattr(kept, field) == pytest.approx(getattr(spread, field), rel=1e-6)  # JSON keeps 6 digits
    assert after["read_gbs.L2.all"].unstable == REASON and after["latency_ns.L1"].spread is None
    assert report_to_dict(again) == data
    out = tmp_path / "x.html"
    assert run_report(str(saved), "--html", str(out)) == 0
    page = out.read_text()
    assert '"error_y":{"array":[' in page and 'data-unstable="report"' in page


def test_fleet_leaves_an_unstable_key_figure_out_of_the_outliers(tmp_path):
    import dataclasses

    from perfprobe.render.html_fleet import Host, unstable_values

    healthy = _plain(load(DATA / "cache_synthetic_healthy.json"))
    remote = _plain(load(DATA / "cache_synthetic_remote_dram.json"))
    marked = dataclasses.replace(remote, results=tuple(
        dataclasses.replace(r, metrics={k: dataclasses.replace(m, unstable=REASON) if k == "latency_ns.DRAM" else m
                                        for k, m in r.metrics.items()}) for r in remote.results))
    column = "cache latency_ns.DRAM"
    assert column not in key_values(marked) and column in unstable_values(marked)
    hosts = [Host(f"n{i}", healthy, key_values(healthy)) for i in range(4)]
    assert abs(distances(hosts + [Host("odd", remote, key_values(remote))], [column])[("odd", column)]) > 3.5
    hosts.append(Host("odd", marked, key_values(marked), unstable_values(marked)))
    assert ("odd", column) not in distances(hosts, [column])  # the outlier it was, unjudged once unstable
    out = tmp_path / "fleet.html"
    html.write_fleet([(f"n{i}", healthy) for i in range(4)] + [("odd", marked)], out)
    page = out.read_text()
    assert 'data-unstable="fleet"' in page and "unstable" in page and html.esc(REASON) in page
