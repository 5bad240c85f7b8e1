"""node_exporter's textfile format: every metric, each probe's verdict and the run's time.

Written through prometheus_client's `write_to_textfile`, which writes a temporary file and renames
it, so node_exporter never reads half a file. Labels: probe, metric, unit, device ("" for CPU
probes), host. Non-numeric metrics (text) have no place in Prometheus and are left out.

An unstable figure (model.Metric.unstable: its repeats disagreed, or it broke a physical relation,
still after a re-measurement) is judged by nobody, and an alert rule or a dashboard's threshold on
`perfprobe_metric` is a judgement: so its value is left out of `perfprobe_metric`, and the figure is
named instead by `perfprobe_metric_unstable{probe, metric, unit, device, host} 1`. A rule can then
tell "not measured" from "measured but unstable" (`absent()` alone cannot), and an L1 read of
1353 GB/s from a disturbed run never reaches a graph as if it were a measurement. The reason is
free text and stays out of the labels (every new wording would be a new series); the JSON has it.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

from perfprobe.engine.model import Report, Verdict, host_name

VERDICTS = [v.value for v in Verdict]


def registry(report: Report) -> Any:
    from prometheus_client import CollectorRegistry, Gauge

    reg = CollectorRegistry()
    host = _host(report)
    metric = Gauge("perfprobe_metric", "A figure perfprobe measured (see the metric and unit labels).",
                   ["probe", "metric", "unit", "device", "host"], registry=reg)
    unstable = Gauge("perfprobe_metric_unstable",
                     "1 for a figure left out as unstable (its value is not in perfprobe_metric; the JSON says why).",
                     ["probe", "metric", "unit", "device", "host"], registry=reg)
    verdict = Gauge("perfprobe_verdict", "1 for the verdict a probe reached on a device, 0 for the others.",
                    ["probe", "device", "host", "verdict"], registry=reg)
    severity = Gauge("perfprobe_verdict_severity", "A probe's verdict as a number: 0 pass, 1 skip, 2 warn, 3 error.",
                     ["probe", "device", "host"], registry=reg)
    duration = Gauge("perfprobe_probe_duration_seconds", "How long a probe ran.", ["probe", "device", "host"],
                     registry=reg)
    for result in report.results:
        device = "" if result.device is None else str(result.device)
        for name, m in result.metrics.items():
            if m.unstable:
                unstable.labels(result.probe, name, m.unit, device, host).set(1)
            elif isinstance(m.value, (int, float)) and not isinstance(m.value, bool) and math.isfinite(m.value):
                metric.labels(result.probe, name, m.unit, device, host).set(m.value)
        for value in VERDICTS:
            verdict.labels(result.probe, device, host, value).set(1 if result.verdict.value == value else 0)
        severity.labels(result.probe, device, host).set(result.verdict.severity)
        duration.labels(result.probe, device, host).set(result.duration_s)
    run = Gauge("perfprobe_run_timestamp_seconds", "When the run started (Unix time).", ["host"], registry=reg)
    run.labels(host).set(_timestamp(report))
    worst = Gauge("perfprobe_run_verdict_severity", "The run's worst verdict: 0 pass, 1 skip, 2 warn, 3 error.",
                  ["host"], registry=reg)
    worst.labels(host).set(report.verdict.severity)
    return reg


def write(report: Report, path: Path) -> None:
    """Write the textfile atomically (a temporary file beside `path`, then a rename).

    A path that exists and is not a regular file (/dev/null, a FIFO, /dev/stdout) is written in
    place: renaming over it would replace the device node itself when run as root."""
    from prometheus_client import generate_latest, write_to_textfile

    if path.exists() and not path.is_file():
        with open(path, "wb") as stream:
            stream.write(generate_latest(registry(report)))
        return
    write_to_textfile(str(path), registry(report))


def _host(report: Report) -> str:
    return host_name(report.host) or ""


def _timestamp(report: Report) -> float:
    text = report.host.get("time_utc")
    if isinstance(text, str):
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return float("nan")
