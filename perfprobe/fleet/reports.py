"""Reading reports for compare, fleet and the health check: files, folders, JSON lines on stdin.

Every input is read as untrusted (perfprobe/system/untrusted.py: a regular file or stdin, bounded in size
and depth, checked against the shipped schema, its figures finite and of their unit's sign) and
accounted for: a file that cannot be used becomes a `Rejected` with its first problem (shown as a
note; exit 2 for compare and healthcheck, and for a fleet with no usable report), never silently
dropped. A baseline file (baseline.py) is recognised, checked against its own schema and returned apart.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from perfprobe.engine.model import SCHEMA_VERSION, host_name
from perfprobe.errors import UsageError
from perfprobe.system import untrusted

BASELINE_KEY = "perfprobe_baseline"
"""The key that marks a baseline file (fleet --baseline-out; its version is the value). Here, not in
baseline.py, so that loading reports needs nothing of baseline.py, which imports this module."""
BASELINE_VERSION = 2
"""2: each metric keeps its hosts' values (`values`) and their repeats pooled (`samples`, at most
baseline.POOLED a metric), which compare and the health check test a report's repeats against."""


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
        raise UsageError(f"{what} {inputs.rejected[0].source}: {inputs.rejected[0].reason}")
    found = inputs.reports + inputs.baselines
    if len(found) != 1:
        raise UsageError(f"{what} {path}: holds {len(found)} reports; give one report or a baseline")
    return found[0]


def load_many(paths: Iterable[Path], stdin_text: str | None = None) -> Inputs:
    """Every report in files, folders (their *.json, *.jsonl) and JSON lines read from stdin."""
    inputs = Inputs()
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if not p.is_dir() and p.suffix in REPORT_SUFFIXES)
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


def read_stdin() -> str:
    """JSON lines piped to `fleet -`, bounded as a file is (untrusted.read_stream); exit 2 otherwise."""
    stream = getattr(sys.stdin, "buffer", None)
    try:
        if stream is not None:
            return untrusted.read_stream(stream)
        text = sys.stdin.read(untrusted.max_bytes() + 1)  # a text stream put in its place (tests)
    except untrusted.InputError as exc:
        raise UsageError(f"<stdin>: {exc}") from exc
    if len(text) > untrusted.max_bytes():
        raise UsageError(f"<stdin>: more than {untrusted.max_bytes()} characters, the limit on an input "
                         f"(set {untrusted.MAX_BYTES_ENV} to change it)")
    return text


def _load_file(path: Path, inputs: Inputs) -> None:
    try:
        text = untrusted.read_file(path)
    except untrusted.InputError as exc:
        inputs.rejected.append(Rejected(str(path), str(exc)))
        return
    _load_text(text, str(path), inputs)


def _load_text(text: str, source: str, inputs: Inputs) -> None:
    """A whole-file JSON document, or JSON lines (one report per line, the first line a whole object)."""
    if not text.strip():
        inputs.rejected.append(Rejected(source, "empty: no report in it"))
        return
    try:
        data = untrusted.parse(text)
    except untrusted.InputError as exc:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2 or not _one_object(lines[0][1]):
            inputs.rejected.append(Rejected(source, str(exc)))
            return
        for number, line in lines:
            _load_line(line, f"{source}:{number}", inputs)
        return
    _add(data, source, inputs)


def _one_object(line: str) -> bool:
    """Whether a line is a whole JSON object: the file is JSON lines, not one document broken off."""
    try:
        return isinstance(untrusted.parse(line), dict)
    except untrusted.InputError:
        return False


def _load_line(line: str, where: str, inputs: Inputs) -> None:
    try:
        data = untrusted.parse(line)
    except untrusted.InputError as exc:
        inputs.rejected.append(Rejected(where, str(exc)))
        return
    _add(data, where, inputs)


def _add(data: Any, source: str, inputs: Inputs) -> None:
    problem = baseline_problem(data) if is_baseline(data) else report_problem(data)
    if problem:
        inputs.rejected.append(Rejected(source, problem))
    else:
        (inputs.baselines if is_baseline(data) else inputs.reports).append(Loaded(source, data))


def report_problem(data: Any) -> str | None:
    """Why `data` is not a perfprobe report this version reads (its version, then the shipped
    schema, then its figures: finite, of their unit's sign), or None."""
    if not isinstance(data, dict) or "results" not in data or "host" not in data:
        return "not a perfprobe report (needs 'host' and 'results') or baseline (needs 'perfprobe_baseline')"
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        return f"schema_version {version!r}; this perfprobe reads version {SCHEMA_VERSION}"
    return untrusted.problem(data, "report")


def baseline_problem(data: Any) -> str | None:
    """Why `data` is not a baseline this version reads (its version, its schema, its figures), or None."""
    version = data.get(BASELINE_KEY) if isinstance(data, dict) else None
    if version != BASELINE_VERSION:
        return (f"baseline version {version!r}; this perfprobe reads version {BASELINE_VERSION} "
                "(write a new one with fleet --baseline-out)")
    return untrusted.problem(data, "baseline")


def result_key(result: Mapping[str, Any]) -> str:
    """'cache', or 'pinned[0]' for a GPU probe's result on device 0."""
    device = result.get("device")
    return str(result.get("probe")) if device is None else f"{result.get('probe')}[{device}]"


def probe_of(key: str) -> str:
    """'cache' of 'cache:latency_ns.L1', 'pinned' of 'pinned[1]:pinned.h2d_gbs' (a metric key)."""
    return key.split(":", 1)[0].split("[", 1)[0]


def numeric_metrics(report: Mapping[str, Any]) -> dict[str, tuple[float, str]]:
    """{"cache:latency_ns.L1": (value, unit)} for every numeric metric of every result; a figure
    marked unstable is left out (judged by nobody: no outlier, no baseline value)."""
    out: dict[str, tuple[float, str]] = {}
    for result in report.get("results") or []:
        for name, metric in (result.get("metrics") or {}).items():
            value: Any = metric.get("value") if isinstance(metric, dict) else None
            if _finite(value) and not metric.get("unstable"):
                out[f"{result_key(result)}:{name}"] = (float(value), str(metric.get("unit", "")))
    return out


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def verdicts(report: Mapping[str, Any]) -> dict[str, str]:
    """{"cache": "pass", "pinned[0]": "skip"}: each result's verdict."""
    return {result_key(r): str(r.get("verdict")) for r in report.get("results") or []}


def source_stem(source: str) -> str:
    name = Path(source.split(":")[0]).name
    for suffix in REPORT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name

