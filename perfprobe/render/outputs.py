"""The output files of a run (--output, --record, --prom, --junit, --html): checked before anything
runs, written after, and a failure at the end never loses the report (it is still printed).

`check_writable` is the one place that decides whether a path can be written: an existing file must
open for appending (nothing is changed), a new one must be creatable in its folder (a probe file is
made and removed). Exit 2, one line, before measuring (README: exit 2 means nothing runs).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

from perfprobe.errors import UsageError

OPTIONS = ("output", "record", "prom", "junit", "html")


def targets(config: Any) -> dict[str, Path]:
    """{"--prom": path, ...}: the output paths a RunConfig asks for."""
    return {f"--{name}": getattr(config, name) for name in OPTIONS if getattr(config, name, None) is not None}


def check_writable(paths: Mapping[str, Path]) -> None:
    """Raise UsageError naming the first option whose path cannot be written (and why)."""
    for option, path in paths.items():
        problem = why_unwritable(Path(path))
        if problem:
            raise UsageError(f"{option} {path}: cannot write ({problem}); nothing was run")
    if "--html" in paths and importlib.util.find_spec("perfprobe.render.html") is None:
        raise UsageError("--html: this perfprobe has no HTML renderer (perfprobe.render.html); "
                         "use --output and render it later")


def why_unwritable(path: Path) -> str | None:
    """None when `path` can be written; else the reason, as the OS words it."""
    if path.is_dir():
        return "it is a folder"
    if path.exists() or path.is_symlink():
        try:
            with open(path, "ab"):
                pass
        except OSError as exc:
            return exc.strerror or str(exc)
        return None
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return f"no such folder {folder}"
    try:
        fd, probe = tempfile.mkstemp(prefix=".perfprobe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    os.unlink(probe)
    return None


def write_all(report: Any, config: Any, json_text: str | None = None) -> list[str]:
    """Write every output file the run asked for (not --record: the runner writes it); one error line
    per file that could not be written, [] when all were."""
    writers: dict[str, Callable[[Any, Path], None]] = {"output": _json_writer(json_text), "prom": _prom,
                                                        "junit": _junit, "html": _html}
    errors = []
    for name, write in writers.items():
        path = getattr(config, name, None)
        if path is None:
            continue
        try:
            write(report, Path(path))
        except (OSError, UsageError) as exc:
            errors.append(f"--{name} {path}: cannot write ({getattr(exc, 'strerror', None) or exc})")
    return errors


def _json_writer(text: str | None) -> Callable[[Any, Path], None]:
    def write(report: Any, path: Path) -> None:
        from perfprobe.render.json import report_to_json

        path.write_text((text if text is not None else report_to_json(report)) + "\n")

    return write


def _prom(report: Any, path: Path) -> None:
    from perfprobe.render import prom

    prom.write(report, path)


def _junit(report: Any, path: Path) -> None:
    from perfprobe.render import junit

    junit.write(report, path)


def _html(report: Any, path: Path) -> None:
    try:
        from perfprobe.render import html  # type: ignore[attr-defined,unused-ignore]
    except ImportError as exc:
        raise UsageError("this perfprobe has no HTML renderer (perfprobe.render.html)") from exc
    html.write(report, path)
