"""Run the real CLI in-process for a test: perfprobe's main() always exits, so catch it."""

from __future__ import annotations

import contextlib
import io
import traceback
from typing import Any

import pytest

from perfprobe import cli


def invoke(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `perfprobe ARGV`."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def run_captured(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `perfprobe ARGV` in-process, for the fuzzers: anything that
    escapes main() comes back as code -1 with its traceback as stderr (the traceback is the finding)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
        except BaseException:  # noqa: BLE001 - a traceback (or a measurement started) is the finding
            return -1, out.getvalue(), traceback.format_exc()
        else:
            code = 0
    return code, out.getvalue(), err.getvalue()
