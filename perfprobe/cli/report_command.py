"""`perfprobe report FILE... --html OUT`: draw saved runs without measuring anything again.

A FILE is a report written by `--output`/`--json`, a recording (`--record`; its raw numbers are judged
again by the probes' own rules, as `--replay` does), or captured host facts. One file gives the
report page; several files or a folder give the fleet page (hosts × key figures).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, List, Mapping, Optional, Sequence

import typer

from perfprobe.engine.config import RunConfig
from perfprobe.errors import UsageError

if TYPE_CHECKING:  # model.py is imported where a file is read, not at every start (perfprobe --help)
    from perfprobe.engine.model import Metric, ProbeResult, Report, Spread


def report(paths: Annotated[List[Path], typer.Argument(
               metavar="REPORT...", help="Saved reports (--output/--json), recordings, or folders of them.")],
           html: Annotated[Optional[Path], typer.Option(
               "--html", metavar="FILE", help="Write one self-contained HTML page (charts, verdicts, advice).")] = None,
           ) -> None:
    """Draw saved runs as an HTML page: one report, or a fleet (several files or a folder)."""
    raise typer.Exit(report_command(paths, html))


def report_command(paths: Sequence[Path], html: Path | None) -> int:
    """Load every path, write the HTML page (one report, or the fleet view), return the exit code."""
    if html is None:
        raise UsageError("report: nothing to write; give --html FILE")
    loaded = load_all(paths)
    from perfprobe.render import html as html_render

    if len(loaded) == 1 and not any(p.is_dir() for p in paths):
        html_render.write(loaded[0][1], html)
    else:
        html_render.write_fleet(loaded, html)
    return 0


def load_all(paths: Sequence[Path]) -> list[tuple[str, Report]]:
    """(label, report) for every file named or found in a named folder (its *.json, sorted)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.glob("*.json") if p.is_file())
            if not found:
                raise UsageError(f"report: {path}: a folder with no *.json reports in it")
            files.extend(found)
        else:
            files.append(path)
    return [(file.stem, load(file)) for file in files]


def load(path: Path) -> Report:
    """One file as a Report: a saved report, a recording replayed, or host facts judged. Read as
    untrusted (perfprobe/system/untrusted.py) and checked against its schema first: exit 2, one line."""
    from perfprobe.system import untrusted

    try:
        data = untrusted.parse(untrusted.read_file(path))
    except untrusted.InputError as exc:
        raise UsageError(f"report: {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"report: {path}: not a perfprobe report (a JSON object is expected)")
    kind = _kind(data)
    if kind is None:
        raise UsageError(f"report: {path}: not a perfprobe report, recording or host facts "
                         "(needs 'results', or 'host' and 'raw')")
    if kind == "report":
        _check_version(data, path)  # before the schema: another version's report fails it for that reason
    problem = untrusted.problem(data, kind)
    if problem:
        raise UsageError(f"report: {path}: {problem}")
    if kind == "report":
        return report_from_dict(data, path)
    if kind == "recording":
        return _replay(path, data["raw"])
    return _judge_host_facts(path, data)


def _kind(data: Mapping[str, Any]) -> str | None:
    """Which shipped schema a file's data is meant to follow: report, recording or host (facts)."""
    if "results" in data:
        return "report"
    if "host" in data and "raw" in data:
        return "recording"
    if "cpu" in data and "cpus" in data:  # captured host facts (host_*_facts.json)
        return "host"
    return None


def report_from_dict(data: Mapping[str, Any], path: Path) -> Report:
    """A Report from the JSON shape of perfprobe/schema/report.schema.json (this perfprobe's schema
    version): metrics with their repeats (`stats`) and `unstable` mark, the run's `disturbance`."""
    from perfprobe.engine.model import SCHEMA_VERSION, Report

    _check_version(data, path)
    try:
        results = tuple(_result(r) for r in data["results"])
        return Report(perfprobe_version=str(data.get("perfprobe_version", "?")), host=dict(data.get("host") or {}),
                      results=results, duration_s=float(data.get("duration_s") or 0.0),
                      schema_version=SCHEMA_VERSION, disturbance=dict(data.get("disturbance") or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"report: {path}: damaged report ({type(exc).__name__}: {exc})") from exc


def _check_version(data: Mapping[str, Any], path: Path) -> None:
    """UsageError (exit 2, one line) unless the report is of this perfprobe's schema version."""
    from perfprobe.engine.model import SCHEMA_VERSION

    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise UsageError(f"report: {path}: schema version {version!r}; this perfprobe reads {SCHEMA_VERSION}")


def _result(r: Mapping[str, Any]) -> ProbeResult:
    from perfprobe.engine.model import Curve, Finding, ProbeResult, Table, Verdict

    return ProbeResult(
        probe=str(r["probe"]), verdict=Verdict(r["verdict"]), summary=str(r.get("summary", "")),
        metrics={k: _metric(m) for k, m in (r.get("metrics") or {}).items()},
        findings=tuple(Finding(Verdict(f["verdict"]), str(f.get("message", "")), str(f.get("advice", "")),
                               confirmation=f.get("confirmation"))
                       for f in r.get("findings") or ()),
        facts=dict(r.get("facts") or {}), duration_s=float(r.get("duration_s") or 0.0),
        tables=tuple(Table(str(t["title"]), tuple(t["columns"]), tuple(tuple(row) for row in t["rows"]),
                           t.get("heat")) for t in r.get("tables") or ()),
        curves=tuple(Curve(str(c["title"]), str(c["x_label"]), str(c["y_label"]),
                           tuple((float(x), float(y)) for x, y in c["points"] if x is not None and y is not None),
                           bool(c.get("log_x", True)), bool(c.get("log_y", False)),
                           tuple((float(m["x"]), str(m["label"])) for m in c.get("marks") or () if m.get("x") is not None))
                     for c in r.get("curves") or ()),
        key_figure=str(r.get("key_figure", "")), device=r.get("device"))


def _metric(m: Mapping[str, Any]) -> Metric:
    from perfprobe.engine.model import Metric

    unstable = m.get("unstable")
    return Metric(m.get("value"), str(m.get("unit", "")), spread=_spread(m.get("stats")),
                  unstable=str(unstable) if unstable else None)


def _spread(stats: Any) -> Spread | None:
    """A metric's `stats` object as a model.Spread: None where the metric has none (not timed) or
    where a figure it needs was not finite (the JSON writes NaN as null)."""
    if stats is None:
        return None
    if not isinstance(stats, Mapping):
        raise TypeError(f"stats is {type(stats).__name__}, not an object")
    if any(stats.get(key) is None for key in ("n", "median", "min", "max")):
        return None
    from perfprobe.engine.model import Spread, placement_of

    def optional(key: str) -> float | None:
        value = stats.get(key)
        return None if value is None else float(value)

    return Spread(n=int(stats["n"]), median=float(stats["median"]), min=float(stats["min"]),
                  max=float(stats["max"]), mad=optional("mad"), iqr=optional("iqr"),
                  samples=tuple(float(v) for v in stats.get("samples") or ()),
                  trials=stats.get("trials") is True,
                  placement=placement_of(stats))


def _replay(path: Path, raw: Mapping[str, Any]) -> Report:
    """Judge a recording's raw numbers again, every probe and device it holds."""
    from perfprobe.engine import runner
    from perfprobe.engine.registry import all_probe_names

    recorded = {key.split("[", 1)[0] for key in raw}
    names = [name for name in all_probe_names() if name in recorded]
    if not names:
        raise UsageError(f"report: {path}: a recording of no probe this perfprobe knows ({', '.join(sorted(raw))})")
    return runner.run(names, RunConfig(replay=path, device="all"))


def _judge_host_facts(path: Path, facts: Mapping[str, Any]) -> Report:
    """Captured host facts are a recording of the host probe alone."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / f"{path.stem}.rec.json"
        recording.write_text(json.dumps({"host": facts, "raw": {"host": {}}}))
        return _replay(recording, {"host": {}})
