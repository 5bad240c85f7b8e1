"""An install without jsonschema (a runtime dependency skipped) judges no file: one line, exit 2,
never a traceback and never an unvalidated pass."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cli_invoke import invoke
from fleet_reports import replayed
from perfprobe.system import untrusted


@pytest.mark.parametrize("command", ["compare", "fleet"])
def test_no_jsonschema_is_one_line_and_exit_2(command: str, tmp_path: Path, monkeypatch, capsys) -> None:
    report = tmp_path / "run.json"
    report.write_text(json.dumps(replayed("cache_kvm2c_quick.json", ("host", "cache"))))
    argv = [command, str(report), str(report)] if command == "compare" else [command, str(report)]
    untrusted._validator.cache_clear()
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # `import jsonschema` now raises ImportError
    try:
        code, out, err = invoke(argv, capsys)
    finally:
        untrusted._validator.cache_clear()
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "the jsonschema package is not installed" in err
    monkeypatch.undo()  # jsonschema back as it was
    assert invoke(argv, capsys)[0] in (0, 1)  # with it, the same file is read and judged
