"""`perfprobe gpumem` through the real CLI without a GPU: the skip path, --require-gpu, bad --size,
the replay of numbers recorded on an H200 (schema-valid), and its place in `perfprobe all`."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import fake_cuda
from cli_invoke import invoke
from perfprobe import load_schema
from perfprobe.engine import runner
from perfprobe.engine.registry import all_probe_names, load_probe

DATA = Path(__file__).parent / "data"


@pytest.fixture
def no_gpu(monkeypatch):
    fake_cuda.no_cupy(monkeypatch)
    host = json.loads((DATA / "gpumem_h200.json").read_text())["host"]
    monkeypatch.setattr(runner, "_read_host", lambda config: host)


def test_without_a_gpu_gpumem_skips(no_gpu, capsys) -> None:
    code, out, _ = invoke(["gpumem", "--json"], capsys)
    result = json.loads(out)["results"][0]
    assert code == 0 and result["probe"] == "gpumem" and result["verdict"] == "skip" and "cupy" in result["summary"]


def test_without_a_gpu_require_gpu_is_an_error(no_gpu, capsys) -> None:
    code, out, _ = invoke(["gpumem", "--json", "--require-gpu"], capsys)
    assert code == 3 and json.loads(out)["verdict"] == "error"


def test_a_size_under_16m_is_one_line_exit_2(capsys) -> None:
    code, _, err = invoke(["gpumem", "--size", "1M"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--size" in err


@pytest.mark.parametrize("name", ["gpumem_h200.json", "gpumem_h200_quick.json"])
def test_recorded_h200_run_replays_through_the_cli(name: str, capsys) -> None:
    code, out, _ = invoke(["gpumem", "--json", "--replay", str(DATA / name)], capsys)
    report = json.loads(out)
    result = report["results"][0]
    assert code == 0 and result["verdict"] == "pass" and result["device"] == 0
    assert len(result["tables"]) == 8 and len(result["curves"]) == 2
    jsonschema.validate(report, load_schema())


def test_the_synthetic_slow_gpu_replays_as_a_warning(capsys) -> None:
    code, out, _ = invoke(["gpumem", "--json", "--replay", str(DATA / "gpumem_synthetic_slow_gpu.json")], capsys)
    assert code == 1 and json.loads(out)["results"][0]["verdict"] == "warn"


def test_gpumem_runs_per_device_after_uvm_in_perfprobe_all() -> None:
    names = all_probe_names()
    assert names.index("gpumem") == names.index("uvm") + 1
    assert load_probe("gpumem").needs_gpu
