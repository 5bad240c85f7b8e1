"""`p2p` measure end to end on the CI host with a stand-in for cupy (as tests/test_pinned_measure.py):
peer copies are memmoves between real buffers, events read the host clock. This checks the plumbing
(skip paths, peer-access state restored, raw layout, buffers freed, judge on the result), not any
figure."""

from __future__ import annotations

import pytest

import fake_cuda
from fake_cuda import FakeRuntime
from perfprobe.engine import runner
from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.engine.model import Verdict
from perfprobe.engine.probe import ProbeContext
from perfprobe.engine.progress import null_progress
from perfprobe.errors import ProbeSkipped
from perfprobe.kernels import nvml
from perfprobe.probes import p2p
from perfprobe.probes.p2p import figures, measure
from typed_shape import undeclared


@pytest.fixture
def fake(monkeypatch):
    def install(count: int = 3, peer: bool = True) -> FakeRuntime:
        runtime = FakeRuntime(count, peer=peer, free_bytes=64 << 20, bus_id=lambda device: f"0000:{device + 0x10:02x}:00.0")
        fake_cuda.install(monkeypatch, runtime)
        monkeypatch.setattr(nvml, "p2p_topology", lambda buses: {"gpus": {}, "pairs": {}, "error": "no NVML"})
        return runtime
    return install


def context(devices: tuple[int, ...], quick: bool = True) -> ProbeContext:
    host = {"gpus": [{"pci_bus_id": "0000:10:00.0", "numa_node": 0}]}
    return ProbeContext(RunConfig(quick=quick, options=Knobs(size=8 << 20)), host, null_progress, None, devices)


def test_every_pair_measured_state_restored_buffers_freed(fake):
    runtime = fake(count=3)
    raw = measure.measure(context((0, 1, 2)))
    assert raw["pairs"] == [[0, 1], [0, 2], [1, 2]] and not raw["sampled"]
    assert set(raw["results"]) == {"0.1", "1.0", "0.2", "2.0", "1.2", "2.1"}
    assert raw["results"]["1.0"]["found_enabled"] is True and raw["results"]["0.1"]["found_enabled"] is False
    assert runtime.enabled == {(1, 0)}  # what was found on stays on; what the probe enabled is off again
    assert runtime.live == {} and runtime.peer_copies > 0
    assert raw["budget"]["top_bytes"] == 8 << 20 and raw["devices"][0]["numa_node"] == 0
    assert raw["results"]["0.1"]["peer"]["bidir"]["gbs"]["median"] > 0
    assert undeclared(raw, figures.P2pRaw) == []
    result = p2p.judge(raw, {})
    assert "p2p_gbs.2.1" in result.metrics and result.metrics["peer_access.0.2"].value == 1


def test_no_peer_access_measures_only_the_staged_path(fake):
    fake(count=2, peer=False)
    raw = measure.measure(context((0, 1)))
    entry = raw["results"]["0.1"]
    assert entry["peer_enabled"] is False and "peer" not in entry and entry["staged"]["sweep"]
    assert undeclared(raw, figures.P2pRaw) == []
    assert p2p.judge(raw, {}).metrics["p2p_gbs.0.1"].value is None


def test_one_gpu_is_a_skip_with_the_reason(fake):
    fake(count=1)
    with pytest.raises(ProbeSkipped, match="one GPU: nothing to pair"):
        measure.measure(context((0,)))
    (result,) = runner.run(["p2p"], RunConfig()).results
    assert result.verdict is Verdict.SKIP and result.summary == "one GPU: nothing to pair"
    (result,) = runner.run(["p2p"], RunConfig(require_gpu=True)).results
    assert result.verdict is Verdict.SKIP  # a GPU is there: nothing to pair is not a missing GPU


def test_no_gpu_skips_like_the_other_gpu_probes_and_errors_under_require_gpu(monkeypatch):
    fake_cuda.no_cupy(monkeypatch)
    (result,) = runner.run(["p2p"], RunConfig()).results
    assert result.verdict is Verdict.SKIP and "cupy is not installed" in result.summary and result.device is None
    report = runner.run(["p2p"], RunConfig(require_gpu=True))
    assert report.results[0].verdict is Verdict.ERROR and runner.exit_code(report) == 3


def test_runner_hands_every_gpu_to_p2p_by_default(fake):
    fake(count=2)
    (result,) = runner.run(["p2p"], RunConfig(quick=True, options=Knobs(size=4 << 20))).results
    assert result.verdict in (Verdict.PASS, Verdict.WARN) and result.device is None
    assert "p2p_gbs.0.1" in result.metrics and "p2p_gbs.1.0" in result.metrics
