"""`perfprobe pinned` and `perfprobe streams` through the real CLI without a GPU: the skip path
(no cupy, or cupy with no device) and the replay of numbers recorded on an H200 host."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import fake_cuda
from cli_invoke import invoke
from perfprobe import load_schema
from perfprobe.engine import runner

DATA = Path(__file__).parent / "data"
SCHEMA = load_schema()


@pytest.fixture
def no_gpu(monkeypatch):
    fake_cuda.no_cupy(monkeypatch)
    host = json.loads((DATA / "pinned_h200.json").read_text())["host"]
    monkeypatch.setattr(runner, "_read_host", lambda config: host)


@pytest.mark.parametrize("probe", ["pinned", "streams"])
def test_without_a_gpu_the_probe_skips(no_gpu, probe: str, capsys) -> None:
    code, out, _ = invoke([probe, "--json"], capsys)
    result = json.loads(out)["results"][0]
    assert code == 0 and result["verdict"] == "skip" and "cupy" in result["summary"]


@pytest.mark.parametrize("probe", ["pinned", "streams"])
def test_without_a_gpu_require_gpu_is_an_error(no_gpu, probe: str, capsys) -> None:
    code, out, _ = invoke([probe, "--json", "--require-gpu"], capsys)
    assert code == 3 and json.loads(out)["verdict"] == "error"


@pytest.mark.parametrize("probe, recording", [("pinned", "pinned_h200.json"), ("streams", "streams_h200.json")])
def test_recorded_h200_run_replays_through_the_cli(probe: str, recording: str, capsys) -> None:
    code, out, _ = invoke([probe, "--json", "--replay", str(DATA / recording)], capsys)
    report = json.loads(out)
    assert code == 0 and report["results"][0]["verdict"] == "pass"
    assert report["results"][0]["tables"]
    jsonschema.validate(report, SCHEMA)
