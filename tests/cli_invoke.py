"""Run the real CLI in-process for a test: perfprobe's main() always exits, so catch it."""

from __future__ import annotations

from typing import Any

import pytest

from perfprobe import cli


def invoke(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `perfprobe ARGV`."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err
