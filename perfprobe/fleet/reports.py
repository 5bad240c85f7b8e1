"""Reading reports for compare and fleet: files, folders, JSON lines on stdin, and what each one holds.

Every input is accounted for: a file that cannot be used becomes a `Rejected` with its reason (shown
as a note), never silently dropped. A baseline file (baseline.py) is recognised and returned apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from perfprobe.errors import UsageError
from perfprobe.model import SCHEMA_VERSION, host_name

BASELINE_KEY = "perfprobe_baseline"
"""The key that marks a baseline file (fleet --baseline-out; its version is the value). Here, not in
baseline.py, so that loading reports needs nothing of baseline.py, which imports this module."""


def is_baseline(data: Any) -> bool:
    return isinstance(data, dict) and BASELINE_KEY in data


REPORT_SUFFIXES = (".json", ".jsonl", ".ndjson")


@dataclass(frozen=True)
class Loaded:
    """One report and where it came from ("file.json", "file.jsonl:3", "<stdin>:2")."""

    source: str
    data: Mapping[str, Any]

    @property
    def name(self) -> str:
        """The host this report is of: the Slurm node name, else the host name, else the file's stem."""
        host = self.data.get("host") or {}
        return host_name(host) or source_stem(self.source)


@dataclass(frozen=True)
class Rejected:
    source: str
    reason: str


@dataclass
class Inputs:
    reports: list[Loaded] = field(default_factory=list)
    baselines: list[Loaded] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


def load_one(path: Path, what: str) -> Loaded:
    """One report or baseline file for `compare`/`healthcheck`: anything unusable is exit 2, one line."""
    inputs = Inputs()
    _load_file(path, inputs)
    if inputs.rejected:
        raise UsageError(f"{what} {path}: {inputs.rejected[0].reason}")
    found = inputs.reports + inputs.baselines
    if len(found) != 1:
        raise UsageError(f"{what} {path}: holds {len(found)} reports; give one report or a baseline")
    return found[0]


def load_many(paths: Iterable[Path], stdin_text: str | None = None) -> Inputs:
    """Every report in files, folders (their *.json, *.jsonl) and JSON lines read from stdin."""
    inputs = Inputs()
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in REPORT_SUFFIXES)
            if not files:
                raise UsageError(f"{path}: a folder with no reports (*.json, *.jsonl) in it")
            for file in files:
                _load_file(file, inputs)
        elif path.exists():
            _load_file(path, inputs)
        else:
            raise UsageError(f"{path}: no such file or folder")
    if stdin_text is not None:
        _load_text(stdin_text, "<stdin>", inputs)
    return inputs


def _load_file(path: Path, inputs: Inputs) -> None:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        inputs.rejected.append(Rejected(str(path), f"cannot read ({exc.strerror or exc})"))
        return
    _load_text(text, str(path), inputs)


def _load_text(text: str, source: str, inputs: Inputs) -> None:
    """A whole-file JSON document, or JSON lines (one report per line)."""
    if not text.strip():
        inputs.rejected.append(Rejected(source, "empty: no report in it"))
        return
    try:
        _add(json.loads(text), source, inputs)
        return
    except ValueError as exc:
        whole_error = exc
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) < 2:
        inputs.rejected.append(Rejected(source, f"not JSON, or truncated ({_short(whole_error)})"))
        return
    for number, line in lines:
        where = f"{source}:{number}"
        try:
            _add(json.loads(line), where, inputs)
        except ValueError as exc:
            inputs.rejected.append(Rejected(where, f"not JSON, or truncated ({_short(exc)})"))


def _add(data: Any, source: str, inputs: Inputs) -> None:
    if is_baseline(data):
        inputs.baselines.append(Loaded(source, data))
        return
    problem = report_problem(data)
    if problem:
        inputs.rejected.append(Rejected(source, problem))
    else:
        inputs.reports.append(Loaded(source, data))


def report_problem(data: Any) -> str | None:
    """Why `data` is not a perfprobe report this version reads, or None."""
    if not isinstance(data, dict) or "results" not in data or "host" not in data:
        return "not a perfprobe report (needs 'host' and 'results')"
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        return f"schema_version {version!r}; this perfprobe reads version {SCHEMA_VERSION}"
    if not isinstance(data["results"], list) or not isinstance(data["host"], dict):
        return "not a perfprobe report ('host' must be an object, 'results' a list)"
    return None


def result_key(result: Mapping[str, Any]) -> str:
    """'cache', or 'pinned[0]' for a GPU probe's result on device 0."""
    device = result.get("device")
    return str(result.get("probe")) if device is None else f"{result.get('probe')}[{device}]"


def numeric_metrics(report: Mapping[str, Any]) -> dict[str, tuple[float, str]]:
    """{"cache:latency_ns.L1": (value, unit)} for every numeric metric of every result; a figure
    marked unstable is left out (judged by nobody: no outlier, no baseline value)."""
    out: dict[str, tuple[float, str]] = {}
    for result in report.get("results") or []:
        for name, metric in (result.get("metrics") or {}).items():
            value = metric.get("value") if isinstance(metric, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not metric.get("unstable"):
                out[f"{result_key(result)}:{name}"] = (float(value), str(metric.get("unit", "")))
    return out


def verdicts(report: Mapping[str, Any]) -> dict[str, str]:
    """{"cache": "pass", "pinned[0]": "skip"}: each result's verdict."""
    return {result_key(r): str(r.get("verdict")) for r in report.get("results") or []}


def source_stem(source: str) -> str:
    name = Path(source.split(":")[0]).name
    for suffix in REPORT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _short(exc: Exception) -> str:
    return str(exc).split(":")[0] if len(str(exc)) > 60 else str(exc)
