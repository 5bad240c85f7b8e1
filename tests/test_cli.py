"""The CLI end to end, without kernels: exit codes, one-line errors, --json purity, --output."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fake_probes
from cli_invoke import invoke
from perfprobe.engine import runner


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    chosen = {"probe": "good"}
    monkeypatch.setattr(runner, "load_probe", lambda name: fake_probes.PROBES[chosen["probe"]])
    monkeypatch.setattr(runner, "_read_host", lambda config: fake_probes.HOST)
    monkeypatch.setattr(runner, "_apply_binding",
                        lambda config, host: None if config.bind is None else {"node": config.bind})
    return chosen


def test_json_goes_alone_on_stdout(capsys):
    code, out, err = invoke(["numa", "--json"], capsys)
    assert code == 0
    assert json.loads(out)["results"][0]["verdict"] == "pass"


def test_output_file_gets_the_json_too(tmp_path, capsys):
    target = tmp_path / "report.json"
    code, out, _ = invoke(["numa", "--output", str(target)], capsys)
    assert code == 0 and "PASS" in out
    assert json.loads(target.read_text())["verdict"] == "pass"


@pytest.mark.parametrize("probe, expected", [("warny", 1), ("boom", 3), ("skippy", 0), ("gpu", 0)])
def test_exit_codes_follow_the_worst_verdict(fakes, probe, expected, capsys):
    fakes["probe"] = probe
    assert invoke(["numa"], capsys)[0] == expected


def test_require_gpu_turns_missing_gpu_into_exit_3(fakes, capsys):
    fakes["probe"] = "gpu"
    code, out, _ = invoke(["pinned", "--json", "--require-gpu"], capsys)
    assert code == 3 and json.loads(out)["verdict"] == "error"


@pytest.mark.parametrize("argv, needle", [
    (["host", "--no-such-option"], "--no-such-option"),
    (["cache", "--max-size", "-5"], "--max-size"),
    (["cache", "--repeats", "0"], "--repeats"),
    (["falseshare", "--max-spacing", "300"], "power of two"),
    (["falseshare", "--max-spacing", "128"], "between 256 B"),
    (["pinned", "--device", "gpu0"], "--device"),
    (["streams", "--size", "2M"], "between 4 MiB"),
    (["pinned", "--size", "32K"], "between 64 KiB"),
    (["numa", "--bind", "-1"], "--bind"),
    (["nosuchcommand"], "nosuchcommand"),
    (["host", "--fsroot", "/nonexistent"], "/nonexistent"),
])
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    code, out, err = invoke(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_version_and_bare_help(capsys):
    code, out, _ = invoke(["--version"], capsys)
    assert code == 0 and out.startswith("perfprobe ")
    code, out, _ = invoke([], capsys)
    assert code == 0 and "cache" in out


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(argv=st.lists(st.sampled_from(["--json", "--quick", "--bind", "--max-size", "--repeats", "x", "-3",
                                 "1G", "0", "--nope", "--output"]), max_size=4))
def test_any_cache_arguments_end_in_a_known_exit_code(argv, capsys):
    if "--output" in argv:
        return  # writing files to arbitrary names is covered above
    code, out, err = invoke(["cache", *argv], capsys)
    assert code in (0, 2)
    assert "Traceback" not in err
    if code == 2:
        assert err.count("\n") == 1
