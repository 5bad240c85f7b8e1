"""`pinned` measure end to end on the CI host with a stand-in for cupy: copies are real memmoves
between real buffers, events read the host clock. This checks the plumbing (buffers, sizes, raw
layout, freeing, judge on the result), not any figure: figures come from the GPU host's recordings."""

from __future__ import annotations

import pytest

import fake_cuda
from fake_cuda import FakeRuntime, install
from perfprobe.engine.model import Verdict
from perfprobe.engine.probe import ProbeContext
from perfprobe.errors import UsageError
from perfprobe.probes import pinned
from perfprobe.probes.pinned import measure, plan


@pytest.fixture
def runtime(monkeypatch) -> FakeRuntime:
    runtime = FakeRuntime()
    install(monkeypatch, runtime)
    return runtime


def context(quick: bool, max_size: int) -> ProbeContext:
    return fake_cuda.context(max_size, quick)


@pytest.mark.parametrize("quick", [False, True])
def test_measure_fills_every_size_frees_everything_and_judges(runtime: FakeRuntime, quick: bool) -> None:
    raw = measure.measure(context(quick, 1 << 20))
    assert raw["sizes_bytes"] == plan.sweep_sizes(1 << 20, plan.PRESETS.pick(quick))
    for mode, directions in (("pageable", ("h2d", "d2h")), ("pinned", ("h2d", "d2h", "bidir"))):
        for direction in directions:
            assert len(raw[mode][direction]) == len(raw["sizes_bytes"])
    assert not runtime.live and not runtime.registered  # every allocation freed, nothing left pinned
    assert raw["budget"] == {"requested_bytes": 1 << 20, "top_bytes": 1 << 20, "capped_by": None}
    assert raw["device"]["name"] == "Fake GPU"
    result = pinned.judge(raw, {"gpus": []})
    assert result.verdict in (Verdict.PASS, Verdict.WARN) and result.tables


def test_measure_frees_everything_when_a_copy_fails(runtime: FakeRuntime, monkeypatch) -> None:
    calls = {"n": 0}
    copy = runtime.memcpyAsync

    def failing(*args):
        calls["n"] += 1
        if calls["n"] == 30:
            raise RuntimeError("cudaErrorLaunchFailure: unspecified launch failure")
        return copy(*args)

    monkeypatch.setattr(runtime, "memcpyAsync", failing)
    with pytest.raises(RuntimeError, match="cudaErrorLaunchFailure"):
        measure.measure(context(False, 1 << 20))
    assert not runtime.live


def test_size_below_64k_is_a_usage_error_before_anything_runs() -> None:
    config = context(False, 1000).config
    with pytest.raises(UsageError, match="64K"):
        pinned.PROBE.check_knobs(config, {})  # type: ignore[misc]
    pinned.PROBE.check_knobs(context(False, 64 << 10).config, {})  # type: ignore[misc]
