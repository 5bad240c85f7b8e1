"""Reading files other jobs wrote: bounded, typed, parsed with a depth limit, checked against a schema.

Every file perfprobe reads (reports, baselines, recordings, captured host facts, the health check's
policy) passes through here before anything uses it, so a hostile or damaged file is one line and
exit 2 naming the file and its first problem, before anything is measured or written:
- the type: a regular file (checked with os.stat before opening, and fstat after an O_NONBLOCK open,
  so a FIFO never blocks) or stdin; never a device, a FIFO, a socket or a folder;
- the size: at most `max_bytes()` (MAX_BYTES_DEFAULT; `PERFPROBE_MAX_INPUT=256M` sets another),
  read no further than that even where the size the file states is wrong (/proc, a pipe);
- UTF-8 JSON nested at most MAX_DEPTH deep, counted on the text before json.loads (a JSON nested
  100,000 deep is refused, not a RecursionError); no NaN, Infinity or number too large for a float
  (1e999) anywhere, but in a recording's raw numbers (its recorder writes a NaN it measured);
- the JSON Schema the package ships (schema/*.schema.json, through the jsonschema library), then
  the figures: finite, and not negative where their unit cannot be (a latency, a bandwidth, a size).

Light to import: jsonschema is imported only when a file is checked.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, Iterator, Mapping

MAX_BYTES_ENV = "PERFPROBE_MAX_INPUT"
MAX_BYTES_DEFAULT = 64 << 20
"""64 MiB: a full report is about 100 KB, a baseline of one hardware group about 200 KB a dozen hosts."""
MAX_DEPTH = 64
"""perfprobe's own files nest 9 deep at most (a recording's raw numbers)."""

NON_NEGATIVE_UNITS = frozenset({
    "ns", "us", "µs", "ms", "s", "ms/GiB",                      # times
    "GB/s", "msgs/s", "GHz", "CPU-s/s",                         # rates
    "bytes", "B", "count", "cores", "warps", "branches", "fields", "flag", "bool",  # sizes and counts
})
"""Units no measurement can be below zero in; other units (ratio, x, cycles: a difference of two
timings) may be, but never NaN or infinite."""


class InputError(ValueError):
    """Why a file cannot be used, without its name (the caller names the file and the option)."""


def max_bytes() -> int:
    """The size limit: MAX_BYTES_DEFAULT, or PERFPROBE_MAX_INPUT (bytes, or K/M/G with a binary suffix)."""
    text = os.environ.get(MAX_BYTES_ENV)
    if not text:
        return MAX_BYTES_DEFAULT
    from perfprobe.pure.units import parse_size

    return int(parse_size(text, MAX_BYTES_ENV, minimum=1, maximum=1 << 40) or MAX_BYTES_DEFAULT)


def read_file(path: Path) -> str:
    """The text of a regular file, at most max_bytes(); InputError for anything else."""
    limit = max_bytes()
    try:
        _check_kind(os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        _check_kind(info.st_mode)  # what was opened, in case the path changed since os.stat
        if info.st_size > limit:
            raise InputError(_too_big(limit))
        return _decoded(_bounded(stream, limit))


def read_stream(stream: IO[bytes]) -> str:
    """stdin's text, at most max_bytes(): a pipe, a regular file or a socket, not a device or folder."""
    limit = max_bytes()
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):  # an in-memory stream (tests): nothing to stat
        mode = stat.S_IFIFO
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISDIR(mode):
        raise InputError(f"{_kind(mode)}, not a pipe or a file")
    return _decoded(_bounded(stream, limit))


def parse(text: str) -> Any:
    """JSON from untrusted text, its depth checked first (NaN and Infinity parse: `problem` names them)."""
    if not text.strip():
        raise InputError("empty: no JSON in it")
    check_depth(text)
    try:
        return json.loads(text)
    except RecursionError as exc:  # not reached after check_depth; kept so no traceback can escape
        raise InputError(f"nested deeper than {MAX_DEPTH} levels") from exc
    except ValueError as exc:
        raise InputError(f"not JSON, or truncated ({_first_words(str(exc))})") from exc


def load(path: Path, schema: str) -> Any:
    """A file read, parsed and checked (`problem`) against schema/`schema`.schema.json."""
    data = parse(read_file(path))
    found = problem(data, schema)
    if found:
        raise InputError(found)
    return data


def problem(data: Any, schema: str) -> str | None:
    """The first problem of parsed data meant to follow `schema`: a number that is not finite (NaN,
    Infinity, 1e999; a recording's raw numbers may hold the NaN its recorder measured), a place
    that breaks the schema, a figure of the wrong sign for its unit. None when there is none."""
    numbers = data.get("host") if schema == "recording" and isinstance(data, dict) else data
    return nonfinite_problem(numbers) or schema_problem(data, schema) or figure_problem(data, schema)


def nonfinite_problem(data: Any) -> str | None:
    """Where the first NaN or infinite number is, or None (walked without recursion: depth is checked)."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            word = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
            return f"{'at ' + where + ': ' if where else ''}{word} is not a finite number (a number too large, or NaN)"
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKETS = str.maketrans("[{]}", "(())")


def check_depth(text: str) -> None:
    """InputError when the text nests arrays or objects deeper than MAX_DEPTH (strings skipped).

    Works on the brackets alone: each pass removes the innermost pairs, so whatever is left after
    MAX_DEPTH passes is deeper than that (or unbalanced, which json.loads then names)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).translate(_BRACKETS)
    for _ in range(MAX_DEPTH):
        if "()" not in brackets:
            break
        brackets = brackets.replace("()", "")
    if "()" in brackets or brackets.count("(") > MAX_DEPTH:
        raise InputError(f"nested deeper than {MAX_DEPTH} levels")


def schema_problem(data: Any, name: str) -> str | None:
    """The first place where `data` breaks schema/`name`.schema.json, in words; None when it holds."""
    error = next(iter(sorted(_validator(name).iter_errors(data), key=_error_order)), None)
    if error is None:
        return None
    where = _path(error.absolute_path)
    return f"{'at ' + where + ': ' if where else ''}{_first_words(error.message, 120)} (schema {name})"


def figure_problem(data: Any, schema: str) -> str | None:
    """The first figure negative where its unit cannot be; None when all hold (that every number of
    a report or baseline is finite, `problem` has already checked with nonfinite_problem)."""
    figures = _report_figures(data) if schema == "report" else _baseline_figures(data) if schema == "baseline" else ()
    for where, unit, value in figures:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # the schema has already said what a value must be
        if value < 0 and unit in NON_NEGATIVE_UNITS:
            return f"at {where}: {value:g} {unit} is negative, which no measurement in {unit} can be"
    return None


def _report_figures(report: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    for i, result in enumerate(report.get("results") or ()):
        for name, metric in (result.get("metrics") or {}).items():
            where, unit = f"results[{i}].metrics.{name}", str(metric.get("unit", ""))
            yield f"{where}.value", unit, metric.get("value")
            yield from _stats_figures(metric.get("stats") or {}, f"{where}.stats", unit)


def _stats_figures(stats: Mapping[str, Any], where: str, unit: str) -> Iterator[tuple[str, str, Any]]:
    for key in ("median", "min", "max", "mad", "iqr"):
        yield f"{where}.{key}", unit, stats.get(key)
    for j, sample in enumerate(stats.get("samples") or ()):
        yield f"{where}.samples[{j}]", unit, sample


def _baseline_figures(baseline: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    for i, group in enumerate(baseline.get("groups") or ()):
        for name, metric in (group.get("metrics") or {}).items():
            where, unit = f"groups[{i}].metrics.{name}", str(metric.get("unit", ""))
            yield f"{where}.median", unit, metric.get("median")
            yield f"{where}.mad", unit, metric.get("mad")
            for key in ("values", "samples"):
                for j, value in enumerate(metric.get(key) or ()):
                    yield f"{where}.{key}[{j}]", unit, value


@lru_cache(maxsize=None)
def _validator(name: str) -> Any:
    """A validator for schema/`name`.schema.json (each one stands alone: nothing is fetched).
    Without jsonschema (a runtime dependency, so an install that skipped it) no file can be judged:
    a usage error (one line, exit 2) saying what to install, never a traceback and never an
    unvalidated pass."""
    try:
        import jsonschema
    except ImportError as exc:
        from perfprobe.errors import UsageError

        raise UsageError("input files cannot be validated: the jsonschema package is not installed "
                         "(pip install jsonschema, or reinstall perfprobe)") from exc

    schema = _schema(name)
    return jsonschema.validators.validator_for(schema)(schema)


def _schema(name: str) -> dict[str, Any]:
    """A shipped schema; `host` is a report's host object, its definitions carried along."""
    from perfprobe import schema_path

    if name == "host":
        report = _schema("report")
        return {"$schema": report["$schema"], "$defs": report["$defs"], "$ref": "#/$defs/host"}
    loaded: dict[str, Any] = json.loads(schema_path().with_name(f"{name}.schema.json").read_text(encoding="utf-8"))
    return loaded


def _error_order(error: Any) -> tuple[int, list[str]]:
    """The shallowest problem first, then in document order: the one a person should fix first."""
    return len(error.absolute_path), [str(p) for p in error.absolute_path]


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def _check_kind(mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise InputError(f"{_kind(mode)}, not a regular file")


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((word for test, word in kinds if test(mode)), "not a file")


def _bounded(stream: IO[bytes], limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        try:
            chunk = stream.read(min(1 << 20, limit + 1 - size))
        except BlockingIOError:  # a non-blocking descriptor with nothing yet (not a regular file)
            raise InputError("no data ready (not a regular file)") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    raise InputError(_too_big(limit))


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})") from exc


def _too_big(limit: int) -> str:
    from perfprobe.pure.units import format_bytes

    return f"larger than {format_bytes(limit)}, the limit on an input file (set {MAX_BYTES_ENV} to change it)"


def _first_words(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
