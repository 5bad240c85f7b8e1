"""`p2p` measure end to end on the CI host with a stand-in for cupy (as tests/test_pinned_measure.py):
peer copies are memmoves between real buffers, events read the host clock. This checks the plumbing
(skip paths, peer-access state restored, raw layout, buffers freed, judge on the result), not any
figure."""

from __future__ import annotations

import ctypes
import time
from types import SimpleNamespace

import pytest

from perfprobe import runner
from perfprobe.config import Knobs, RunConfig
from perfprobe.errors import GpuUnavailable, ProbeSkipped
from perfprobe.kernels import cuda_runtime, nvml
from perfprobe.model import Verdict
from perfprobe.probe import ProbeContext
from perfprobe.probes import p2p
from perfprobe.probes.p2p import measure
from perfprobe.progress import null_progress


class CudaError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status = status


class FakeRuntime:
    def __init__(self, count: int, peer: bool) -> None:
        self.count, self.peer = count, peer
        self.current = 0
        self.live: dict[int, ctypes.Array] = {}
        self.enabled: set[tuple[int, int]] = {(1, 0)} if count > 1 else set()  # found on, to be kept
        self.peer_copies = 0

    def getDeviceCount(self) -> int:
        return self.count

    def malloc(self, nbytes: int) -> int:
        buffer = ctypes.create_string_buffer(nbytes)
        self.live[ctypes.addressof(buffer)] = buffer
        return ctypes.addressof(buffer)

    def free(self, ptr: int) -> None:
        del self.live[ptr]

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        ctypes.memset(ptr, value, nbytes)

    def deviceSynchronize(self) -> None:
        pass

    def memGetInfo(self) -> tuple[int, int]:
        return 64 << 20, 16 << 30

    def deviceCanAccessPeer(self, device: int, peer: int) -> int:
        return int(self.peer)

    def deviceEnablePeerAccess(self, peer: int) -> None:
        if (self.current, peer) in self.enabled:
            raise CudaError(704)
        self.enabled.add((self.current, peer))

    def deviceDisablePeerAccess(self, peer: int) -> None:
        if (self.current, peer) not in self.enabled:
            raise CudaError(705)
        self.enabled.remove((self.current, peer))

    def memcpyPeerAsync(self, dst: int, dst_device: int, src: int, src_device: int, nbytes: int, stream: int) -> None:
        self.peer_copies += 1
        ctypes.memmove(dst, src, nbytes)

    def deviceGetPCIBusId(self, device: int) -> str:
        return f"0000:{device + 0x10:02x}:00.0"

    def getDeviceProperties(self, device: int) -> dict:
        return {"name": b"Fake GPU", "totalGlobalMem": 16 << 30, "asyncEngineCount": 2, "concurrentKernels": 1,
                "multiProcessorCount": 4, "major": 9, "minor": 0}

    def runtimeGetVersion(self) -> int:
        return 13000

    driverGetVersion = runtimeGetVersion


class FakeEvent:
    def __init__(self) -> None:
        self.at = 0.0

    def record(self, stream=None) -> None:
        time.sleep(1e-5)
        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass


def fake_cupy(runtime: FakeRuntime) -> SimpleNamespace:
    class Device:
        def __init__(self, index: int = 0) -> None:
            self.index = index

        def __enter__(self):
            self.before, runtime.current = runtime.current, self.index
            return self

        def __exit__(self, *exc) -> None:
            runtime.current = self.before

    stream = lambda non_blocking=False: SimpleNamespace(ptr=1, wait_event=lambda e: None)  # noqa: E731
    cuda = SimpleNamespace(runtime=runtime, Stream=stream, Event=FakeEvent, Device=Device,
                           get_elapsed_time=lambda a, b: (b.at - a.at) * 1e3)
    return SimpleNamespace(cuda=cuda)


@pytest.fixture
def fake(monkeypatch):
    def install(count: int = 3, peer: bool = True) -> FakeRuntime:
        runtime = FakeRuntime(count, peer)
        monkeypatch.setattr(cuda_runtime, "load_cupy", lambda: fake_cupy(runtime))
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
    result = p2p.judge(raw, {})
    assert "p2p_gbs.2.1" in result.metrics and result.metrics["peer_access.0.2"].value == 1


def test_no_peer_access_measures_only_the_staged_path(fake):
    fake(count=2, peer=False)
    raw = measure.measure(context((0, 1)))
    entry = raw["results"]["0.1"]
    assert entry["peer_enabled"] is False and "peer" not in entry and entry["staged"]["sweep"]
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
    def missing():
        raise GpuUnavailable("cupy is not installed", cuda_runtime.CUPY_HINT)

    monkeypatch.setattr(cuda_runtime, "load_cupy", missing)
    (result,) = runner.run(["p2p"], RunConfig()).results
    assert result.verdict is Verdict.SKIP and "cupy is not installed" in result.summary and result.device is None
    report = runner.run(["p2p"], RunConfig(require_gpu=True))
    assert report.results[0].verdict is Verdict.ERROR and runner.exit_code(report) == 3


def test_runner_hands_every_gpu_to_p2p_by_default(fake):
    fake(count=2)
    (result,) = runner.run(["p2p"], RunConfig(quick=True, options=Knobs(size=4 << 20))).results
    assert result.verdict in (Verdict.PASS, Verdict.WARN) and result.device is None
    assert "p2p_gbs.0.1" in result.metrics and "p2p_gbs.1.0" in result.metrics
