"""`perfprobe cache` through the real CLI: bad knobs are one line and exit 2; a tiny real run
(--max-size 64K, --quick) measures, judges and renders valid JSON on any host, in seconds."""

from __future__ import annotations

import json

import jsonschema
import pytest

from cli_invoke import invoke
from perfprobe import load_schema

SCHEMA = load_schema()


@pytest.mark.parametrize("argv", [
    ["--max-size", "lots"], ["--max-size", "-1G"], ["--max-size", "1K"], ["--max-size", "1.5G"],
    ["--repeats", "0"], ["--repeats", "many"], ["--repeats", "100000"],
])
def test_nonsense_knobs_exit_2(argv: list[str], capsys) -> None:
    code, out, err = invoke(["cache", *argv], capsys)
    assert code == 2 and out == ""


def test_tiny_real_run_gives_valid_json(capsys) -> None:
    pytest.importorskip("numba")
    code, out, _ = invoke(["cache", "--quick", "--json", "--max-size", "64K", "--repeats", "1"], capsys)
    report = json.loads(out)
    jsonschema.validate(report, SCHEMA)
    result = report["results"][0]
    assert code in (0, 1) and result["verdict"] in ("pass", "warn")
    assert result["metrics"]["latency_ns.L1"]["value"] > 0
    assert len(result["facts"]["curve"]) == 9  # 4 KiB to 64 KiB, two points a doubling
    assert result["facts"]["plan"]["limited_by"] == "--max-size"


def test_the_one_thread_figures_run_on_the_cpu_recorded_and_move_off_an_avoided_one() -> None:
    """facts.placement.one_thread names the CPU the calling thread timed on; with that CPU in
    RunConfig.avoid_cpus (the health check's confirmation) another core's CPU times them, where
    the process may use another."""
    import os

    pytest.importorskip("numba")
    from perfprobe.engine import runner
    from perfprobe.engine.config import Knobs, RunConfig

    def one_thread(avoid: tuple[int, ...]) -> int:
        config = RunConfig(quick=True, options=Knobs(max_size=64 << 10, repeats=1), avoid_cpus=avoid)
        (result,) = runner.run(["cache"], config).results
        placement = result.facts["placement"]
        assert placement["one_thread_pinned"] is True  # the calling thread's affinity, read back
        return int(placement["one_thread"])

    allowed = os.sched_getaffinity(0)
    first = one_thread(())
    assert first in allowed and os.sched_getaffinity(0) == allowed
    if len(allowed) > 1:
        assert one_thread((first,)) != first
